"""A compressor as a conditional generative model (paper Sec. 3.4, "Compressors as generative
models"):

    p_C(x_t = b | x_<t) ∝ 2^{−ℓ_C(x_<t b)}        (ℓ_C: code length in bits of compressor C)

``ℓ_C`` is byte-granular for gzip (8 · output bytes), so many of the 256 candidates tie and the
distribution is flat: gzip is a poor predictor at short contexts, which the claim measures as
bits per byte of the true continuation. ``temperature`` τ sharpens p ∝ 2^{−ℓ/τ}.
"""

from __future__ import annotations

import numpy as np

from iclr24.kits.language_models import Compressor

__all__ = ["compressor_as_sampler", "compressor_continuation_bits", "compressor_log_probs"]


def compressor_log_probs(compressor: Compressor, prefix: bytes,
                         temperature: float = 1.0) -> np.ndarray:
    """(256,) natural-log probabilities of the next byte after ``prefix`` under C."""
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor must be a Compressor, got {type(compressor).__name__}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    prefix = bytes(prefix)
    bits = np.array([8.0 * len(compressor.compress(prefix + bytes([b]))) for b in range(256)])
    z = -bits * np.log(2) / temperature  # log 2^{−ℓ/τ}
    z -= z.max()
    return z - np.log(np.exp(z).sum())


def compressor_continuation_bits(compressor: Compressor, context: bytes,
                                 continuation: bytes) -> float:
    """−Σ_t log2 p_C(c_t | context c_<t): bits the compressor-model spends on the continuation."""
    total, prefix = 0.0, bytes(context)
    for b in bytes(continuation):
        total -= compressor_log_probs(compressor, prefix)[b] / np.log(2)
        prefix += bytes([b])
    return float(total)


def compressor_as_sampler(compressor: Compressor, prompt: bytes, n: int, *,
                          temperature: float = 1.0,
                          rng: np.random.Generator | None = None) -> bytes:
    """Sample ``n`` bytes after ``prompt`` autoregressively from p_C."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    rng = rng if rng is not None else np.random.default_rng(0)
    out = bytearray(prompt)
    for _ in range(n):
        p = np.exp(compressor_log_probs(compressor, bytes(out), temperature))
        out.append(int(rng.choice(256, p=p / p.sum())))
    return bytes(out[len(prompt):])
