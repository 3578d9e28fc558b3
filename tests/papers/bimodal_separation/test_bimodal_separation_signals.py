"""STFT round trips, the procedural sound classes and the corpora."""

import numpy as np
import pytest
import torch

from iclr24.papers.bimodal_separation import (
    CLIP_SAMPLES,
    SAMPLE_RATE,
    SOUND_CLASSES,
    heldout_compositions,
    istft_with_phase,
    natural_mixtures,
    single_source_clips,
    stft,
    synthesize_source,
)


def test_unit_mask_with_mixture_phase_returns_the_mixture():
    x = torch.randn(3, CLIP_SAMPLES, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for n_fft, hop in ((256, 128), (256, 64)):
        spec = stft(x, n_fft, hop)
        back = istft_with_phase(spec.abs(), spec, n_fft, hop, CLIP_SAMPLES)
        assert torch.allclose(back, x, atol=1e-10)
        # a 0/1 mask splits the mixture into two parts that add back up to it
        mask = (torch.rand(spec.shape, generator=torch.Generator().manual_seed(1)) > 0.5).double()
        a = istft_with_phase(mask * spec.abs(), spec, n_fft, hop, CLIP_SAMPLES)
        b = istft_with_phase((1 - mask) * spec.abs(), spec, n_fft, hop, CLIP_SAMPLES)
        assert torch.allclose(a + b, x, atol=1e-10)


def test_istft_with_phase_broadcasts_the_reference():
    x = torch.randn(2, 1000, dtype=torch.float64)
    spec = stft(x, 256, 128)
    mags = torch.stack([spec.abs(), 0.5 * spec.abs()], dim=1)  # (2, 2, F, T)
    out = istft_with_phase(mags, spec[:, None], 256, 128, 1000)
    assert out.shape == (2, 2, 1000)
    assert torch.allclose(out[:, 1], 0.5 * x, atol=1e-10)


def test_stft_rejects_a_1d_wave():
    with pytest.raises(ValueError, match="wave must be a \\(batch, samples\\)"):
        stft(torch.zeros(100), 256, 128)


def _band_energy(x, low, high):
    spec = np.abs(np.fft.rfft(x)) ** 2
    f = np.fft.rfftfreq(x.size, 1 / SAMPLE_RATE)
    return spec[(f >= low) & (f <= high)].sum() / spec.sum()


def test_sound_classes_have_unit_rms_and_their_spectral_signature():
    rng = np.random.default_rng(0)
    bands = {"whistle": (500, 1000), "bass": (70, 1000), "siren": (200, 1600),
             "beeps": (950, 1850), "hiss": (2150, 4000), "rumble": (0, 190),
             "chord": (240, 700)}
    for name in SOUND_CLASSES:
        x = synthesize_source(name, rng)
        assert x.shape == (CLIP_SAMPLES,)
        assert np.isclose(np.sqrt(np.mean(x ** 2)), 1.0)
        if name in bands:
            assert _band_energy(x, *bands[name]) > 0.9, name
    clicks = synthesize_source("clicks", rng)
    assert np.mean(np.abs(clicks) > 1e-6) < 0.5  # sparse impulse train
    with pytest.raises(ValueError, match="name must be one of"):
        synthesize_source("violin", rng)


def test_natural_mixtures_sum_their_sources_and_caption_them():
    corpus, sources = natural_mixtures(20, 3, return_sources=True)
    again = natural_mixtures(20, 3)
    assert np.array_equal(corpus.waves, again.waves) and corpus.captions == again.captions
    for wave, cap, src in zip(corpus.waves, corpus.captions, sources):
        words = cap.split(" and ")
        assert 2 <= len(words) <= 3 and len(set(words)) == len(words)
        assert set(words) <= set(SOUND_CLASSES) and src.shape[0] == len(words)
        assert np.allclose(wave, src.sum(0), atol=1e-5)
    assert not np.array_equal(natural_mixtures(20, 4).waves, corpus.waves)


def test_corpora_are_independent_streams_and_balanced():
    clap = single_source_clips(16, 0, purpose="clap")
    sup = single_source_clips(16, 0, purpose="supervised")
    assert np.array_equal(np.bincount(clap.labels), [2] * 8)
    held = single_source_clips(16, 0, purpose="clap_test")
    assert not np.allclose(clap.waves[:4], sup.waves[:4])
    assert not np.allclose(clap.waves[:4], held.waves[:4])
    assert not np.allclose(sup.waves[:4], held.waves[:4])
    test = heldout_compositions(10, 0)
    assert test.sources.shape == (10, 2, CLIP_SAMPLES)
    assert np.all(test.labels[:, 0] != test.labels[:, 1])
    assert np.allclose(np.sqrt(np.mean(test.sources.astype(float) ** 2, -1)), 0.5, atol=1e-4)
    with pytest.raises(ValueError, match="purpose must be one of"):
        single_source_clips(4, 0, purpose="test")
    with pytest.raises(TypeError, match="n must be an int"):
        natural_mixtures(2.5, 0)
