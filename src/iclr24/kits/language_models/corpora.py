"""Offline byte corpora with deterministic train / held-out splits (no download, ever).

Stand-ins for the datasets of "Language Modeling Is Compression" (Sec. 3.1):

* text  — :func:`pydoc_topics_corpus`: CPython's bundled ``pydoc_data.topics`` (English
  documentation prose, ≈465k characters, UTF-8), split by topic: sorted topic names, every
  ``heldout_every``-th topic held out. Stands in for enwik8/9 (stricter: the paper's enwik9
  contains enwik8, our held-out topics never appear in training).
* code  — :func:`stdlib_source_corpus`: the standard library's ``.py`` files, split by file.
* image — :func:`image_patch_corpus`: scikit-learn's two bundled photos, grayscale as the mean
  over RGB (the paper's ImageNet recipe), cut into non-overlapping 32×64 patches = 2048 bytes;
  ``china.jpg`` trains, ``flower.jpg`` is held out. :func:`digits_corpus`: the 8×8 digits.
* audio — :func:`synthetic_audio_corpus`: seeded 16 kHz clips (harmonic partials with vibrato,
  AR(2)-filtered noise, amplitude envelopes) as 16-bit PCM, converted to 8-bit unsigned with
  ``(x >> 8) + 128`` like the paper's LibriSpeech pipeline (``audioop`` is gone in Python 3.13).
* noise — :func:`random_bytes_corpus`: uniform random bytes, the incompressible sanity row.

Every corpus is a :class:`Corpus` of ``train`` and ``heldout`` bytes; :func:`chunk_bytes` cuts
them into the fixed-size chunks (2048 bytes in the paper) that are compressed independently.
"""

from __future__ import annotations

import functools
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = [
    "Corpus",
    "chunk_bytes",
    "digits_corpus",
    "image_patch_corpus",
    "pcm16_to_uint8",
    "pydoc_topics_corpus",
    "random_bytes_corpus",
    "stdlib_source_corpus",
    "synthesize_audio_clip",
    "synthetic_audio_corpus",
]


@dataclass(frozen=True)
class Corpus:
    """Train and held-out bytes of one data source."""

    name: str
    train: bytes
    heldout: bytes
    description: str = ""

    def chunks(self, split: Literal["train", "heldout"] = "heldout", chunk_size: int = 2048,
               max_chunks: int | None = None) -> list[bytes]:
        """Non-overlapping ``chunk_size``-byte chunks of a split (a short tail is dropped)."""
        if split not in ("train", "heldout"):
            raise ValueError(f"split must be 'train' or 'heldout', got {split!r}")
        return chunk_bytes(getattr(self, split), chunk_size, max_chunks=max_chunks)


def chunk_bytes(data: bytes, chunk_size: int = 2048, *, max_chunks: int | None = None,
                keep_tail: bool = False) -> list[bytes]:
    """Cut ``data`` into consecutive ``chunk_size``-byte slices (paper: 2048)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if max_chunks is not None and max_chunks < 0:
        raise ValueError(f"max_chunks must be >= 0 or None, got {max_chunks!r}")
    data = bytes(data)
    stop = len(data) if keep_tail else len(data) - len(data) % chunk_size
    out = [data[i:i + chunk_size] for i in range(0, stop, chunk_size)]
    return out if max_chunks is None else out[:max_chunks]


def _check_every(heldout_every: int) -> None:
    if not isinstance(heldout_every, int) or heldout_every < 2:
        raise ValueError(f"heldout_every must be an int >= 2, got {heldout_every!r}")


@functools.lru_cache(maxsize=4)
def pydoc_topics_corpus(heldout_fraction: float = 0.2) -> Corpus:
    """CPython documentation prose split by topic: walking the topics in sorted-name order, a
    topic is held out whenever the held-out share of the text seen so far is below
    ``heldout_fraction`` (deterministic, ≈20% of the bytes for the default; topics differ
    widely in length, so a plain every-5th-topic rule would hold out only ≈7%)."""
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in (0, 1), got {heldout_fraction!r}")
    from pydoc_data.topics import topics

    names = sorted(topics)
    train, held = [], []
    n_train = n_held = 0
    for name in names:
        text = topics[name]
        if n_held < heldout_fraction * (n_train + n_held + len(text)):
            held.append(text)
            n_held += len(text)
        else:
            train.append(text)
            n_train += len(text)
    join = "\n\n".join
    return Corpus("pydoc_topics", join(train).encode("utf-8"), join(held).encode("utf-8"),
                  "CPython pydoc_data.topics, split by topic")


@functools.lru_cache(maxsize=4)
def stdlib_source_corpus(max_bytes: int = 2_000_000, heldout_every: int = 5) -> Corpus:
    """Python standard-library sources (``.py`` files of the top-level stdlib directory, sorted
    by name), split by file; at most ``max_bytes`` in total."""
    _check_every(heldout_every)
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(root.glob("*.py"))
    if not files:
        raise FileNotFoundError(f"no .py files in the standard library at {root}")
    train, held, total = bytearray(), bytearray(), 0
    for i, f in enumerate(files):
        if total >= max_bytes:
            break
        text = f.read_bytes()[: max_bytes - total]
        total += len(text)
        (held if i % heldout_every == heldout_every - 1 else train).extend(text + b"\n")
    return Corpus("stdlib_source", bytes(train), bytes(held), f"Python stdlib sources in {root}")


def _grayscale_patches(image: np.ndarray, patch: tuple[int, int]) -> list[bytes]:
    gray = image.astype(np.float64).mean(axis=-1).astype(np.uint8)  # mean over RGB, as paper
    ph, pw = patch
    out = []
    for r in range(0, gray.shape[0] - ph + 1, ph):
        for c in range(0, gray.shape[1] - pw + 1, pw):
            out.append(gray[r:r + ph, c:c + pw].tobytes())
    return out


@functools.lru_cache(maxsize=4)
def image_patch_corpus(patch: tuple[int, int] = (32, 64)) -> Corpus:
    """Grayscale 32×64 patches (2048 bytes) of scikit-learn's sample photos; china.jpg trains,
    flower.jpg is held out. Each split is its patches concatenated, in raster order."""
    if len(patch) != 2 or min(patch) < 1:
        raise ValueError(f"patch must be (height, width) with positive sides, got {patch!r}")
    from sklearn.datasets import load_sample_images

    images = load_sample_images().images  # [china, flower], (427, 640, 3) uint8
    train = b"".join(_grayscale_patches(images[0], patch))
    held = b"".join(_grayscale_patches(images[1], patch))
    return Corpus("image_patches", train, held,
                  f"scikit-learn sample images, grayscale {patch[0]}x{patch[1]} patches")


@functools.lru_cache(maxsize=2)
def digits_corpus(heldout_every: int = 5) -> Corpus:
    """scikit-learn's 1797 8×8 digits (values 0..16 as bytes), every 5th image held out."""
    _check_every(heldout_every)
    from sklearn.datasets import load_digits

    images = load_digits().images.astype(np.uint8)  # (1797, 8, 8)
    idx = np.arange(len(images))
    held = idx % heldout_every == heldout_every - 1
    return Corpus("digits", images[~held].tobytes(), images[held].tobytes(),
                  "scikit-learn digits, 8x8, values 0..16")


def pcm16_to_uint8(samples: np.ndarray) -> bytes:
    """16-bit signed PCM -> 8-bit unsigned: ``(x >> 8) + 128`` (the paper's lin2lin + bias)."""
    x = np.asarray(samples)
    if x.dtype != np.int16:
        raise TypeError(f"samples must be int16 PCM, got dtype {x.dtype}")
    return ((x.astype(np.int32) >> 8) + 128).astype(np.uint8).tobytes()


def synthesize_audio_clip(rng: np.random.Generator, seconds: float = 1.0,
                          sample_rate: int = 16_000) -> np.ndarray:
    """One clip of int16 PCM: 3–5 harmonic partials with vibrato, AR(2)-filtered noise and a
    slow amplitude envelope (a voice-like, not white, signal)."""
    n = round(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    f0 = rng.uniform(100.0, 300.0)
    vib_rate, vib_depth = rng.uniform(3.0, 7.0), rng.uniform(0.005, 0.02)
    # instantaneous frequency f0·(1 + d·sin(2π r t)); phase = 2π ∫ f dt
    phase = 2 * np.pi * np.cumsum(f0 * (1 + vib_depth * np.sin(2 * np.pi * vib_rate * t))) \
        / sample_rate
    signal = np.zeros(n)
    for k in range(1, int(rng.integers(3, 6)) + 1):
        signal += rng.uniform(0.3, 1.0) / k * np.sin(k * phase + rng.uniform(0, 2 * np.pi))
    # AR(2) noise: e_t = a1 e_{t-1} + a2 e_{t-2} + w_t (a resonant, coloured noise)
    a1, a2 = rng.uniform(1.2, 1.8), -rng.uniform(0.82, 0.95)
    from scipy.signal import lfilter

    noise = lfilter([1.0], [1.0, -a1, -a2], rng.normal(0.0, 1.0, n))
    noise /= noise.std() + 1e-12
    signal = signal / (np.abs(signal).max() + 1e-12) + rng.uniform(0.02, 0.1) * noise
    envelope = 0.5 * (1 - np.cos(2 * np.pi * np.minimum(1.0, t / max(seconds, 1e-9))))
    envelope = 0.3 + 0.7 * envelope * (0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(0.5, 2) * t))
    x = signal * envelope
    x = x / (np.abs(x).max() + 1e-12) * rng.uniform(0.3, 0.9) * 32767
    return x.astype(np.int16)


def synthetic_audio_corpus(n_train_clips: int = 8, n_heldout_clips: int = 4,
                           seconds: float = 1.0, seed: int = 0) -> Corpus:
    """Seeded synthetic 16 kHz clips as 8-bit unsigned bytes (``seconds·16000`` bytes each);
    train and held-out clips come from independent child streams of ``seed``."""
    if n_train_clips < 0 or n_heldout_clips < 0:
        raise ValueError("clip counts must be >= 0")
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    train_rng, held_rng = (np.random.default_rng(s)
                           for s in np.random.SeedSequence(seed).spawn(2))
    train = b"".join(pcm16_to_uint8(synthesize_audio_clip(train_rng, seconds))
                     for _ in range(n_train_clips))
    held = b"".join(pcm16_to_uint8(synthesize_audio_clip(held_rng, seconds))
                    for _ in range(n_heldout_clips))
    return Corpus("synthetic_audio", train, held, "synthesized 16 kHz clips, 8-bit unsigned")


def random_bytes_corpus(n_train: int = 0, n_heldout: int = 65_536, seed: int = 0) -> Corpus:
    """Uniform random bytes from ``numpy.random.default_rng(seed)`` (incompressible)."""
    if n_train < 0 or n_heldout < 0:
        raise ValueError("sizes must be >= 0")
    rng = np.random.default_rng(seed)
    return Corpus("random_bytes", rng.integers(0, 256, n_train, dtype=np.uint8).tobytes(),
                  rng.integers(0, 256, n_heldout, dtype=np.uint8).tobytes(), "uniform bytes")
