"""Smoke runs of both LRR claims, negative controls of their rules, and their learning
controls: untrained arms (the null a sceptic tries first) read inconclusive, measured at
smoke."""

import dataclasses

import pytest

from iclr24.claims import Scale, seed_difference
from iclr24.papers.lrr import ExperimentConfig, majority_floor, make_data, run_arm
from iclr24.papers.lrr import claims as lrr_claims
from iclr24.papers.lrr.claims import motion_stream, surrogate_tasks


@pytest.mark.parametrize(
    "claim_obj, keys",
    [(surrogate_tasks, ["gain", "gain_contained", "lrr_acc", "lrr_acc_tf", "lrr_look_acc",
                        "final_only_acc", "final_only_acc_contained", "learned_lrr",
                        "learned_final_only_visible", "floor_acc", "floor_acc_visible"]),
     (motion_stream, ["motion_gain", "motion_gain_contained", "lrr_acc", "spatial_only_acc",
                      "learned_lrr", "learned_spatial_only", "floor_acc"])],
    ids=lambda x: getattr(x, "name", ""))
def test_smoke_claim(claim_obj, keys, check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claim_obj, keys)
    assert m.figure is not None and len(m.tables["per_seed"]) == 2
    assert m.metrics["learned_lrr"] == pytest.approx(m.metrics["lrr_acc"]
                                                     - m.metrics["floor_acc"])


def test_untrained_arms_read_inconclusive(monkeypatch, one_torch_thread):
    """The null arm measured: both arms trained for one step (untrained) at smoke. Whatever
    their difference, the learning control is false and the verdict is inconclusive."""
    monkeypatch.setattr(lrr_claims, "_SMOKE", dataclasses.replace(
        lrr_claims._SMOKE, steps=1, n_train=40, n_test=60))
    for claim_obj, learned in ((surrogate_tasks, "learned_lrr"),
                               (motion_stream, "learned_spatial_only")):
        m = claim_obj(Scale.SMOKE, 0)
        assert m.metrics[learned] <= 0
        judgement = claim_obj.judge(m.metrics, Scale.SMOKE)
        assert judgement.verdict == "inconclusive"
        assert "test bed cannot tell" in judgement.reason


def _learnt(**gains):
    """Metrics of arms that beat the floor (control true) plus the given gains."""
    ok = seed_difference([0.5, 0.52, 0.49], [0.05, 0.04, 0.05])
    return {"learned_lrr": ok, "learned_final_only_visible": ok, "learned_spatial_only": ok,
            **gains}


def test_learning_control_decides_before_the_rule():
    big = seed_difference([0.55, 0.52, 0.58], [0.03, 0.02, 0.04])
    good = _learnt(gain=big, gain_contained=big)
    assert surrogate_tasks.verdict(good, Scale.SMALL) == "holds"
    # a baseline that cannot read a visible snitch off the last frame is a straw man
    straw = {**good, "learned_final_only_visible": seed_difference([0.04, 0.05, 0.06],
                                                                   [0.05, 0.04, 0.05])}
    assert surrogate_tasks.verdict(straw, Scale.SMALL) == "inconclusive"
    # LRR at the floor: nothing learnt, whatever the gain says
    flat = {**good, "learned_lrr": seed_difference([0.05, 0.04, 0.05], [0.05, 0.04, 0.05])}
    assert surrogate_tasks.verdict(flat, Scale.SMALL) == "inconclusive"
    motion = _learnt(motion_gain=big, motion_gain_contained=big)
    assert motion_stream.verdict(motion, Scale.SMALL) == "holds"
    motion["learned_spatial_only"] = -0.01
    assert motion_stream.verdict(motion, Scale.SMOKE) == "inconclusive"


def test_majority_floor_is_the_most_frequent_training_cell():
    cfg = ExperimentConfig(n_train=60, n_test=50, n_frames=8)
    train, test = make_data(cfg, 3)
    floor = majority_floor((train, test))
    cells = [v.final_cell for v in train]
    mode = max(range(36), key=lambda c: (cells.count(c), -c))
    hits = [v.final_cell == mode for v in test]
    assert floor["acc"] == pytest.approx(sum(hits) / len(hits))
    vis = [h for h, v in zip(hits, test) if not v.contained_at_end]
    assert floor["acc_visible"] == pytest.approx(sum(vis) / len(vis))
    with pytest.raises(ValueError, match="non-empty"):
        majority_floor((train, []))


def _paired(a, b):
    return seed_difference(a, b)


def test_surrogate_rule_negative_control():
    """The baseline passed as the method: zero paired gain, the rule does not hold; a method
    better overall but not on the contained subset does not hold either."""
    base = [0.31, 0.28, 0.33]
    null = _learnt(gain=_paired(base, base), gain_contained=_paired(base, base))
    assert surrogate_tasks.verdict(null, Scale.SMALL) == "fails"
    half = _learnt(gain=_paired([0.5, 0.52, 0.49], base),
                   gain_contained=_paired([0.30, 0.35, 0.31], base))
    assert surrogate_tasks.verdict(half, Scale.SMALL) != "holds"
    good = _learnt(gain=_paired([0.55, 0.52, 0.58], base),
                   gain_contained=_paired([0.6, 0.5, 0.55], base))
    assert surrogate_tasks.verdict(good, Scale.SMALL) == "holds"


def test_motion_rule_negative_control():
    base = [0.4, 0.42, 0.38]
    null = _learnt(motion_gain=_paired(base, base), motion_gain_contained=_paired(base, base))
    assert motion_stream.verdict(null, Scale.SMALL) == "fails"
    noisy = _learnt(motion_gain=_paired([0.41, 0.40, 0.40], base),
                    motion_gain_contained=_paired([0.45, 0.40, 0.36], base))
    assert motion_stream.verdict(noisy, Scale.SMALL) != "holds"


def test_null_method_arm_measured(one_torch_thread):
    """Measured negative control: scoring the final-answer-only arm against itself (same data,
    same seed) gives exactly zero gain, which the rule refuses."""
    cfg = ExperimentConfig(n_train=40, n_test=30, n_frames=8, steps=5, batch_size=8)
    data = make_data(cfg, 0)
    a = run_arm("final_only", cfg, 0, data)
    b = run_arm("final_only", cfg, 0, data)
    assert a == b
    metrics = _learnt(gain=a["acc"] - b["acc"],
                      gain_contained=a["acc_contained"] - b["acc_contained"])
    assert surrogate_tasks.verdict(metrics, Scale.SMOKE) == "fails"
    with pytest.raises(ValueError, match="arm must be one of"):
        run_arm("lrr_plus", cfg, 0, data)
