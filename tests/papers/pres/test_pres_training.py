"""train_tgn / evaluate_ap: protocol (chronological batches, resets, detach), determinism,
the gamma = 0 reduction, PRES gradients, clear errors on bad streams."""

import math

import pytest
import torch

from iclr24.papers.pres import (
    TGNConfig,
    TGNLinkModel,
    check_temporal_data,
    evaluate_ap,
    make_drifting_stream,
    split_sizes,
    train_tgn,
)

CFG = TGNConfig(memory_dim=8, time_dim=8, embedding_dim=8)


@pytest.fixture(scope="module")
def stream():
    return make_drifting_stream(num_users=40, num_items=20, num_events=600, num_clusters=4,
                                seed=0)


def test_split_is_chronological_70_15_15():
    assert split_sizes(1000) == (700, 850)
    assert split_sizes(20_000) == (14_000, 17_000)


def test_batches_are_chronological_and_state_resets_each_epoch(stream, monkeypatch,
                                                                one_torch_thread):
    seen, resets = [], []
    score, reset = TGNLinkModel.score, TGNLinkModel.reset_state

    def spy_score(self, src, dst, *args, **kwargs):
        if self.training:
            seen.append((src.clone(), dst.clone()))
        return score(self, src, dst, *args, **kwargs)

    def spy_reset(self):
        resets.append(int(self.neighbor_loader.cur_e_id))
        reset(self)
        assert self.neighbor_loader.cur_e_id == 0
        assert float((self.memory.base if self.uses_pres else self.memory).memory.abs().sum()) == 0

    monkeypatch.setattr(TGNLinkModel, "score", spy_score)
    monkeypatch.setattr(TGNLinkModel, "reset_state", spy_reset)
    run = train_tgn(stream, batch_size=64, epochs=2, use_pres=True, config=CFG, seed=0)
    n_train = split_sizes(stream.num_events)[0]
    per_epoch = math.ceil(n_train / 64)
    assert len(seen) == 2 * per_epoch and [h["batches"] for h in run.history] == [per_epoch] * 2
    assert resets == [0, n_train]  # reset at the start of each epoch, after a full pass
    epoch = seen[:per_epoch]
    assert torch.equal(torch.cat([s for s, _ in epoch]), stream.src[:n_train])  # in order
    assert torch.equal(torch.cat([d for _, d in epoch]), stream.dst[:n_train])


def test_memory_is_detached_and_model_ends_in_eval(stream, one_torch_thread):
    run = train_tgn(stream, batch_size=100, epochs=1, use_pres=True, config=CFG, seed=0)
    assert not run.model.training
    assert run.model.memory.base.memory.grad_fn is None
    assert set(run.history[0]) >= {"loss", "bce", "coherence", "seconds", "cpu_seconds", "gamma"}
    assert run.history[0]["coherence"] > 0


def test_same_seed_same_numbers_and_val_test_differ(stream, one_torch_thread):
    a = train_tgn(stream, batch_size=100, epochs=1, config=CFG, seed=3)
    b = train_tgn(stream, batch_size=100, epochs=1, config=CFG, seed=3)
    assert a.history[0]["loss"] == b.history[0]["loss"]
    test_a = evaluate_ap(a, stream, "test")
    assert test_a == evaluate_ap(b, stream, "test")
    assert test_a == evaluate_ap(a, stream, "test")  # evaluation restarts from the same state
    val = evaluate_ap(a, stream, "val")
    assert val != test_a and 0.0 <= val["ap"] <= 1.0 and 0.0 <= test_a["auc"] <= 1.0


def test_gamma_zero_without_coherence_is_plain_tgn(stream, one_torch_thread):
    plain = train_tgn(stream, batch_size=100, epochs=2, config=CFG, seed=1)
    zero = train_tgn(stream, batch_size=100, epochs=2, use_pres=True, gamma=0.0, beta=0.0,
                     config=CFG, seed=1)
    assert [h["loss"] for h in plain.history] == [h["loss"] for h in zero.history]
    assert torch.equal(plain.model.memory.memory, zero.model.memory.base.memory)
    assert evaluate_ap(plain, stream) == evaluate_ap(zero, stream)
    # the key step present: gamma > 0 changes the memory
    half = train_tgn(stream, batch_size=100, epochs=2, use_pres=True, gamma=0.5, beta=0.0,
                     config=CFG, seed=1)
    assert not torch.equal(plain.model.memory.memory, half.model.memory.base.memory)


def test_coherence_term_has_gradient_unless_detached(stream, one_torch_thread):
    live = train_tgn(stream, batch_size=100, epochs=1, use_pres=True, gamma=0.0, beta=5.0,
                     config=CFG, seed=2)
    dead = train_tgn(stream, batch_size=100, epochs=1, use_pres=True, gamma=0.0, beta=5.0,
                     detach_coherence=True, config=CFG, seed=2)
    plain = train_tgn(stream, batch_size=100, epochs=1, config=CFG, seed=2)
    # detached: a constant added to the loss, the same parameters as plain TGN
    assert torch.equal(dead.model.memory.base.memory, plain.model.memory.memory)
    assert not torch.equal(live.model.memory.base.memory, plain.model.memory.memory)


def test_learnable_gamma_moves(stream, one_torch_thread):
    run = train_tgn(stream, batch_size=50, epochs=1, use_pres=True, gamma=0.5,
                    learnable_gamma=True, config=CFG, seed=0)
    assert run.history[0]["gamma"] != 0.5 and 0.0 < run.history[0]["gamma"] < 1.0


def test_unsorted_timestamps_are_refused(stream):
    bad = stream.clone()
    bad.t = bad.t.flip(0)
    with pytest.raises(ValueError, match=r"data.t must be sorted \(non-decreasing\)"):
        train_tgn(bad, batch_size=100, epochs=1, config=CFG)
    with pytest.raises(ValueError, match="must be sorted"):
        check_temporal_data(bad)


def test_node_ids_beyond_the_memory_are_refused(stream, one_torch_thread):
    run = train_tgn(stream, batch_size=200, epochs=1, config=CFG, seed=0)
    bigger = stream.clone()
    bigger.dst = bigger.dst.clone()
    bigger.dst[-1] = run.model.num_nodes + 5
    with pytest.raises(ValueError, match=f"memory has {run.model.num_nodes} nodes"):
        evaluate_ap(run, bigger, "test")


def test_non_finite_edge_features_are_refused(stream):
    bad = stream.clone()
    bad.msg = bad.msg.clone()
    bad.msg[7, 2] = float("nan")
    with pytest.raises(ValueError, match="data.msg must be finite; event 7"):
        train_tgn(bad, batch_size=100, epochs=1, config=CFG)
    bad.msg[7, 2] = float("inf")
    with pytest.raises(ValueError, match="data.msg must be finite; event 7"):
        check_temporal_data(bad)


def test_pres_defaults_to_the_official_placement(stream, one_torch_thread):
    run = train_tgn(stream, batch_size=300, epochs=1, use_pres=True, config=CFG)
    assert run.model.memory.store_fused is False


def test_other_bad_arguments(stream):
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        train_tgn(stream, batch_size=0)
    for beta in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="beta must be a finite number >= 0"):
            train_tgn(stream, beta=beta)
    for lr in (0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="TGNConfig.lr must be a finite number > 0"):
            TGNConfig(lr=lr)
    with pytest.raises(ValueError, match="coherence must be one of"):
        train_tgn(stream, coherence="l1")
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\]"):
        train_tgn(stream, batch_size=200, epochs=1, use_pres=True, gamma=1.2, config=CFG)
    with pytest.raises(TypeError, match="TemporalData"):
        train_tgn({"src": stream.src})
    with pytest.raises(ValueError, match="embedding_dim"):
        TGNConfig(embedding_dim=7, heads=2)
    run = train_tgn(stream, batch_size=300, epochs=1, config=CFG)
    with pytest.raises(ValueError, match="split must be 'val' or 'test'"):
        evaluate_ap(run, stream, "train")


def test_package_docstring_example_runs_and_beats_chance(one_torch_thread):
    """The Usage block of the package docstring, run as written: a meaningful AP, not chance."""
    from iclr24.papers import pres

    block = pres.__doc__.split("Usage::", 1)[1].strip().split("\n\n")[0]
    lines = [line.strip() for line in block.splitlines()]
    code, last = "\n".join(lines[:-1]), lines[-1]
    namespace: dict = {}
    exec(compile(code, "pres.__doc__", "exec"), namespace)  # noqa: S102 (our own docstring)
    ap = eval(last.split("#")[0], namespace)
    assert 0.7 < ap <= 1.0
