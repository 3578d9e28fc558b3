"""What the weak arm sees, and bss_eval on the test compositions."""

import numpy as np
import pytest
import torch

from iclr24.papers.bimodal_separation import (
    SOUND_CLASSES,
    BiModalSeparator,
    Synthesizer,
    TextConditionedUNet,
    TinyCLAP,
    check_test_sources,
    evaluate_separation,
    heldout_compositions,
    natural_mixtures,
    parse_caption,
    score_separation,
    synthesize_source,
    train_separator,
    weak_batches,
)
from iclr24.papers.bimodal_separation import (
    TestCompositions as Compositions,
)


def test_the_weak_arm_never_sees_a_single_source_clip(one_torch_thread, monkeypatch):
    """Every waveform the weak arm trains on is a natural mixture of >= 2 classes (captioned
    with >= 2 phrases), never one of the sources behind it."""
    corpus, sources = natural_mixtures(10, 0, return_sources=True)
    torch.manual_seed(0)
    clap = TinyCLAP(SOUND_CLASSES).requires_grad_(False)
    sep = BiModalSeparator(TextConditionedUNet(129, cond_dim=64), Synthesizer(8, 64), clap)
    seen = []
    original = BiModalSeparator.training_losses

    def spy(self, batch, terms):
        seen.append(batch)
        return original(self, batch, terms)

    monkeypatch.setattr(BiModalSeparator, "training_losses", spy)
    train_separator(sep, weak_batches(corpus, 3), steps=3, seed=0)
    assert len(seen) == 3
    flat_sources = np.concatenate(sources)  # every single source of the corpus
    unit = flat_sources / np.linalg.norm(flat_sources, axis=1, keepdims=True)
    for batch in seen:
        waves = batch.mixtures.reshape(-1, batch.mixtures.shape[-1]).numpy()
        for caps in batch.captions:
            assert all(sum(parse_caption(c, 3)[2]) >= 2 for c in caps)
        # each training wave is a corpus mixture, and none is (a multiple of) a single source
        assert all(any(np.allclose(w, m) for m in corpus.waves) for w in waves)
        cos = np.abs(waves / np.linalg.norm(waves, axis=1, keepdims=True) @ unit.T)
        assert cos.max() < 0.95


class _Oracle:
    """A stand-in separator that returns chosen estimates (for the metric tests): the source its
    query names plus 10% of the other ("leak"), the mixture ("mixture"), or the *other* source
    plus 10% of the named one ("wrong": it answers the wrong query)."""

    def __init__(self, comps, mode):
        self.comps, self.mode = comps, mode

    def eval(self):
        return self

    def separate(self, mixture, texts, sample_rate):
        if self.mode == "mixture":
            return mixture
        idx = [SOUND_CLASSES.index(t) for t in texts]
        n = mixture.shape[0]
        src = torch.as_tensor(self.comps.sources)
        rows = torch.as_tensor([self._row(mixture, i) for i in range(n)])
        k = torch.as_tensor([int(np.flatnonzero(self.comps.labels[int(r)] == c)[0])
                             for r, c in zip(rows, idx)])
        if self.mode == "wrong":
            k = 1 - k
        return src[rows, k] + 0.1 * src[rows, 1 - k]

    def _row(self, mixture, i):
        mixes = self.comps.sources.sum(1)
        return int(np.argmin(np.abs(mixes - mixture[i].numpy()).sum(1)))


def test_evaluate_separation_against_mir_eval():
    import mir_eval

    comps = heldout_compositions(4, 0)
    leak = evaluate_separation(_Oracle(comps, "leak"), comps)
    mix = evaluate_separation(_Oracle(comps, "mixture"), comps)
    assert leak["sdr"].shape == (4, 2)
    assert np.allclose(mix["sdr"], mix["sdr_mixture"], atol=1e-4)  # float32 estimates
    assert np.all(leak["sdr"] > 15) and np.all(np.abs(mix["sdr"]) < 3)
    for i in range(1):
        ref = comps.sources[i].astype(np.float64)
        est = ref + 0.1 * ref[::-1]
        sdr, *_ = mir_eval.separation.bss_eval_sources(ref, est, compute_permutation=False)
        assert np.allclose(leak["sdr"][i], sdr, atol=1e-3)


def test_an_estimate_that_answers_the_wrong_query_scores_badly():
    """No permutation search: the query decides which source an estimate is scored against
    (a permutation search would credit the swapped answers with about +20 dB)."""
    import mir_eval

    comps = heldout_compositions(4, 0)
    wrong = evaluate_separation(_Oracle(comps, "wrong"), comps)
    assert np.all(wrong["sdr"] < 0) and wrong["sdr"].mean() < -5
    assert np.all(wrong["si_sdr"] < -10)
    ref = comps.sources[0].astype(np.float64)
    est = ref[::-1] + 0.1 * ref
    sdr, *_ = mir_eval.separation.bss_eval_sources(ref, est, compute_permutation=False)
    assert np.allclose(wrong["sdr"][0], sdr, atol=1e-3)
    # the same estimates in the right order score high: the order is all that changed
    right = score_separation(comps.sources, (comps.sources[:, ::-1] + 0.1 * comps.sources)[:, ::-1])
    assert np.all(right["sdr"] > 15)
    swapped = score_separation(comps.sources, comps.sources[:, ::-1] + 0.1 * comps.sources)
    assert np.allclose(swapped["sdr"], wrong["sdr"], atol=1e-3)


def test_score_separation_si_sdr_closed_form():
    comps = heldout_compositions(3, 1)
    ref = comps.sources.astype(np.float64)
    g = np.random.default_rng(0)
    est = 0.7 * ref + 0.05 * g.standard_normal(ref.shape)
    out = score_separation(ref, est)
    alpha = (est * ref).sum(-1, keepdims=True) / (ref ** 2).sum(-1, keepdims=True)
    target = alpha * ref  # SI-SDR = 10 log10 |a s|^2 / |a s - s_hat|^2
    expect = 10 * np.log10((target ** 2).sum(-1) / ((target - est) ** 2).sum(-1))
    assert np.allclose(out["si_sdr"], expect, atol=1e-6)
    assert out["sdr"].shape == (3, 2) and np.all(out["sdr"] >= out["si_sdr"] - 1e-6)


def test_score_separation_bad_inputs():
    ref = heldout_compositions(2, 0).sources
    with pytest.raises(ValueError, match="same shape"):
        score_separation(ref, ref[:, :1])
    with pytest.raises(ValueError, match="estimates must be \\(n, n_src, samples\\)"):
        score_separation(ref, ref[0])
    bad = ref.copy()
    bad[0, 0, 5] = np.nan
    with pytest.raises(ValueError, match="estimates must be finite"):
        score_separation(ref, bad)
    with pytest.raises(ValueError, match="more than 512 samples"):
        score_separation(ref[..., :400], ref[..., :400])
    with pytest.raises(ValueError, match="references is empty"):
        score_separation(ref[:0], ref[:0])
    with pytest.raises(TypeError, match="real numbers"):
        score_separation(ref.astype(complex), ref)


class _Recorder:
    """A separator stub for user compositions: returns 0.9 x the source its query names plus 1%
    of the mixture, and records every query."""

    def __init__(self, comps, names):
        self.comps, self.names, self.queries = comps, names, []

    def eval(self):
        return self

    def separate(self, mixture, texts, sample_rate):
        assert sample_rate == self.comps.sample_rate
        self.queries.extend(texts)
        n = mixture.shape[0]
        mixes = torch.as_tensor(self.comps.sources).sum(1)
        out = []
        for i, t in zip(range(n), texts):
            r = int(torch.argmin((mixes - mixture[i]).abs().sum(1)))
            k = int(np.flatnonzero(self.comps.labels[r] == self.names.index(t))[0])
            out.append(0.9 * torch.as_tensor(self.comps.sources[r, k]) + 0.01 * mixture[i])
        return torch.stack(out)


def test_evaluate_separation_scores_a_users_own_queries_and_three_sources():
    rng = np.random.default_rng(0)
    names = ["a flute", "traffic noise", "a dog barking"]  # the user's own queries
    labels = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    kinds = ("siren", "hiss", "clicks")  # procedural stand-ins for the user's recordings
    sources = np.stack([[synthesize_source(kinds[c], rng, 2000, 16000) for c in row]
                        for row in labels]).astype(np.float32)
    comps = Compositions(sources, labels, 16000)
    stub = _Recorder(comps, names)
    out = evaluate_separation(stub, comps, class_names=names, batch_size=2)
    assert out["sdr"].shape == (3, 3) and set(stub.queries) == set(names)
    assert np.all(out["sdr"] > 20) and np.all(out["si_sdr"] > 20)  # 1% leak: about 35 dB
    assert np.all(out["sdr_mixture"] < out["sdr"] - 20)  # two other sources at equal level
    with pytest.raises(ValueError, match="labels must index class_names"):
        evaluate_separation(stub, comps, class_names=names[:2])
    with pytest.raises(TypeError, match="class_names must be a sequence of query strings"):
        evaluate_separation(stub, comps, class_names="a flute")
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        evaluate_separation(stub, comps, class_names=names, batch_size=0)
    with pytest.raises(TypeError, match="compositions must be TestCompositions"):
        evaluate_separation(stub, sources, class_names=names)


def test_near_silent_test_sources_are_rejected():
    comps = heldout_compositions(3, 0)
    src = comps.sources.copy()
    src[1, 0] *= 1e-3  # -60 dB
    with pytest.raises(ValueError, match="test source 0 of composition 1 is near-silent"):
        check_test_sources(src)
    src[1, 0] = 0
    with pytest.raises(ValueError, match="near-silent"):
        check_test_sources(src)
    check_test_sources(comps.sources)
    with pytest.raises(ValueError, match="sources must be \\(n, n_src, samples\\)"):
        check_test_sources(src[0])
