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
    train_separator,
    weak_batches,
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
    """A stand-in separator that returns chosen estimates (for the metric tests)."""

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
        k = torch.as_tensor([int(np.flatnonzero(self.comps.labels[self._row(mixture, i)] == c)[0])
                             for i, c in zip(range(n), idx)])
        rows = torch.as_tensor([self._row(mixture, i) for i in range(n)])
        return src[rows, k] + 0.1 * torch.as_tensor(self.comps.sources[rows, 1 - k])

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
