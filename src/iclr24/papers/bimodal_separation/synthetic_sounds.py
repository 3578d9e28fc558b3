"""Procedural sound classes with known captions: the laptop-scale stand-in for AudioCaps,
MUSIC and VGGSound (out of reach here: downloads, and far too big for a 2-core CPU).

Eight classes, each with a one-word text label, synthesised as 0.5 s clips at 8 kHz
(``CLIP_SAMPLES``; the paper's clips are 8.2 s at 16 kHz) with random parameters and gains per
instance (``SOUND_CLASSES``):

- ``whistle``: a pure tone, 600-900 Hz, slight vibrato;
- ``bass``: a harmonic stack on f0 in 80-150 Hz (6 partials, 1/k amplitudes);
- ``siren``: an FM sweep, carrier 400-1200 Hz, 1-3 Hz modulation;
- ``beeps``: tone bursts (1.0-1.8 kHz) switched on and off 3-6 times a second;
- ``hiss``: white noise high-passed above 2.2 kHz;
- ``rumble``: white noise low-passed below 180 Hz;
- ``clicks``: an impulse train (8-20 per second) of short decaying clicks;
- ``chord``: three tones of a major triad on a root in 250-450 Hz.

What each corpus holds (the separator's weak arm must never see a single-source clip):

- :func:`natural_mixtures`: the *weak* training corpus. Each item is one waveform holding 2-3
  different classes and its caption ``"whistle and hiss and clicks"``; the single sources are
  not returned (``return_sources=True`` exists only so tests can check what the corpus holds).
- :func:`single_source_clips`: single-source clips with their class; used for the tiny CLAP's
  *separate* pretraining corpus (its own random stream) and for the supervised upper-bound arm.
- :func:`heldout_compositions`: pairs of held-out single sources of two different classes, each
  scaled to the same RMS, for bss_eval on single-source extraction (the paper's test protocol).

Every corpus draws from its own stream ``np.random.default_rng([seed, stream])``, so the same
seed gives independent CLAP-pretraining, training and test instances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CLIP_SAMPLES",
    "SAMPLE_RATE",
    "SOUND_CLASSES",
    "MixtureCorpus",
    "SourceClips",
    "TestCompositions",
    "heldout_compositions",
    "natural_mixtures",
    "single_source_clips",
    "synthesize_source",
]

SAMPLE_RATE = 8000
CLIP_SAMPLES = 4000
SOUND_CLASSES: tuple[str, ...] = ("whistle", "bass", "siren", "beeps", "hiss", "rumble",
                                  "clicks", "chord")

# independent random streams per corpus (the second entry of the generator's seed sequence)
_STREAM_CLAP, _STREAM_WEAK, _STREAM_SUPERVISED, _STREAM_TEST = 11, 12, 13, 14
_STREAM_CLAP_TEST = 15


def _check_count(name: str, value: object, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _band_noise(rng: np.random.Generator, n: int, sr: int, low: float, high: float) -> np.ndarray:
    """White noise restricted to [low, high] Hz by zeroing FFT bins."""
    spec = np.fft.rfft(rng.standard_normal(n))
    f = np.fft.rfftfreq(n, 1.0 / sr)
    spec[(f < low) | (f > high)] = 0.0
    return np.fft.irfft(spec, n)


def synthesize_source(name: str, rng: np.random.Generator, n_samples: int = CLIP_SAMPLES,
                      sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """One random instance of class ``name``: float64 wave of shape ``(n_samples,)`` with unit
    RMS (gains are applied by the corpora)."""
    if name not in SOUND_CLASSES:
        raise ValueError(f"name must be one of {SOUND_CLASSES}, got {name!r}")
    n_samples = _check_count("n_samples", n_samples, 64)
    sample_rate = _check_count("sample_rate", sample_rate, 1000)
    t = np.arange(n_samples) / sample_rate
    phase = rng.uniform(0, 2 * np.pi)
    if name == "whistle":
        f0 = rng.uniform(600, 900)
        vib = rng.uniform(2, 6)
        x = np.sin(2 * np.pi * f0 * t + 3.0 * np.sin(2 * np.pi * vib * t) + phase)
    elif name == "bass":
        f0 = rng.uniform(80, 150)
        x = sum(np.sin(2 * np.pi * k * f0 * t + k * phase) / k for k in range(1, 7))
    elif name == "siren":
        fc, fm = rng.uniform(400, 1200), rng.uniform(1, 3)
        dev = rng.uniform(150, 350)
        x = np.sin(2 * np.pi * fc * t + dev / fm * np.sin(2 * np.pi * fm * t) + phase)
    elif name == "beeps":
        f0, rate = rng.uniform(1000, 1800), rng.uniform(3, 6)
        gate = (np.sin(2 * np.pi * rate * t + phase) > 0).astype(float)
        x = gate * np.sin(2 * np.pi * f0 * t)
    elif name == "hiss":
        x = _band_noise(rng, n_samples, sample_rate, 2200, sample_rate / 2)
    elif name == "rumble":
        x = _band_noise(rng, n_samples, sample_rate, 20, 180)
    elif name == "clicks":
        rate = rng.uniform(8, 20)
        x = np.zeros(n_samples)
        start = int(rng.integers(0, max(1, int(sample_rate / rate))))
        click = np.exp(-np.arange(40) / 6.0) * np.cos(np.pi * 0.7 * np.arange(40))
        for s in range(start, n_samples - 40, int(sample_rate / rate)):
            x[s:s + 40] += click
    else:  # chord
        root = rng.uniform(250, 450)
        x = sum(np.sin(2 * np.pi * root * r * t + i * phase)
                for i, r in enumerate((1.0, 1.25, 1.5)))
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x ** 2))


@dataclass(frozen=True)
class MixtureCorpus:
    """Natural mixtures and their captions (the weak arm's whole training data).

    waves: (n, n_samples) float32; captions: n strings ``"a and b[ and c]"``.
    """

    waves: np.ndarray
    captions: tuple[str, ...]
    sample_rate: int


@dataclass(frozen=True)
class SourceClips:
    """Single-source clips: waves (n, n_samples) float32, labels (n,) class indices."""

    waves: np.ndarray
    labels: np.ndarray
    sample_rate: int


@dataclass(frozen=True)
class TestCompositions:
    """Two-source test compositions: sources (n, 2, n_samples) float32 (each at the same RMS),
    labels (n, 2) class indices (two different classes per row)."""

    sources: np.ndarray
    labels: np.ndarray
    sample_rate: int


def natural_mixtures(n: int, seed: int, *, n_samples: int = CLIP_SAMPLES,
                     sample_rate: int = SAMPLE_RATE, max_sources: int = 3,
                     return_sources: bool = False):
    """``n`` natural mixtures of 2..``max_sources`` different classes, gains in [0.3, 1] (RMS),
    with captions naming the classes in random order.

    Returns a :class:`MixtureCorpus`; with ``return_sources=True`` also a list of the
    ``(k_i, n_samples)`` source arrays behind each mixture (for tests only: training code never
    asks for them).
    """
    n = _check_count("n", n)
    max_sources = _check_count("max_sources", max_sources, 2)
    if max_sources > len(SOUND_CLASSES):
        raise ValueError(f"max_sources must be <= {len(SOUND_CLASSES)}, got {max_sources}")
    rng = np.random.default_rng([seed, _STREAM_WEAK])
    waves = np.empty((n, n_samples), dtype=np.float32)
    captions, sources = [], []
    for i in range(n):
        k = int(rng.integers(2, max_sources + 1))
        classes = rng.choice(len(SOUND_CLASSES), size=k, replace=False)
        parts = np.stack([rng.uniform(0.3, 1.0) * synthesize_source(SOUND_CLASSES[c], rng,
                                                                     n_samples, sample_rate)
                          for c in classes])
        waves[i] = parts.sum(axis=0)
        captions.append(" and ".join(SOUND_CLASSES[c] for c in classes))
        sources.append(parts.astype(np.float32))
    corpus = MixtureCorpus(waves, tuple(captions), sample_rate)
    return (corpus, sources) if return_sources else corpus


def single_source_clips(n: int, seed: int, *, purpose: str, n_samples: int = CLIP_SAMPLES,
                        sample_rate: int = SAMPLE_RATE) -> SourceClips:
    """``n`` single-source clips, classes balanced in turn, gains in [0.3, 1].

    purpose: ``"clap"`` (the tiny CLAP's separate pretraining corpus), ``"clap_test"`` (held-out
    clips to check the frozen CLAP) or ``"supervised"`` (the supervised upper-bound arm); each
    has its own random stream.
    """
    n = _check_count("n", n)
    streams = {"clap": _STREAM_CLAP, "clap_test": _STREAM_CLAP_TEST,
               "supervised": _STREAM_SUPERVISED}
    if purpose not in streams:
        raise ValueError(f"purpose must be one of {tuple(streams)}, got {purpose!r}")
    rng = np.random.default_rng([seed, streams[purpose]])
    labels = rng.permutation(np.arange(n) % len(SOUND_CLASSES))
    waves = np.stack([rng.uniform(0.3, 1.0) * synthesize_source(SOUND_CLASSES[c], rng, n_samples,
                                                                 sample_rate)
                      for c in labels]).astype(np.float32)
    return SourceClips(waves, labels.astype(np.int64), sample_rate)


def heldout_compositions(n: int, seed: int, *, n_samples: int = CLIP_SAMPLES,
                      sample_rate: int = SAMPLE_RATE, rms: float = 0.5) -> TestCompositions:
    """``n`` held-out pairs of single sources of two different classes, each at RMS ``rms``
    (0 dB input SNR), for single-source extraction."""
    n = _check_count("n", n)
    if not rms > 0:
        raise ValueError(f"rms must be > 0, got {rms!r}")
    rng = np.random.default_rng([seed, _STREAM_TEST])
    labels = np.stack([rng.choice(len(SOUND_CLASSES), size=2, replace=False) for _ in range(n)])
    sources = np.stack([[rms * synthesize_source(SOUND_CLASSES[c], rng, n_samples, sample_rate)
                         for c in row] for row in labels]).astype(np.float32)
    return TestCompositions(sources, labels.astype(np.int64), sample_rate)
