"""Template matching: label(kernel) = argmax_template cos(kernel, template); a kernel is
"identified" when that cosine is >= tau. Kernels with near-zero norm (dead channels) are
excluded from the denominator and counted apart. Plus the two chance controls: pixel-permuted
kernels (same values, structure destroyed) and Gaussian random kernels."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "TemplateMatch",
    "as_kernel_array",
    "match_templates",
    "permute_pixels",
    "random_kernels",
]


def as_kernel_array(kernels, name: str = "kernels") -> np.ndarray:
    """(N, k, k) float64 from a tensor/array; raises on other shapes or non-finite values."""
    if isinstance(kernels, torch.Tensor):
        kernels = kernels.detach().cpu().numpy()
    a = np.asarray(kernels, dtype=np.float64)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise ValueError(f"{name} must have shape (N, k, k), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _check_tau(tau) -> float:
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.floating)) or \
            not 0 < tau <= 1:
        raise ValueError(f"tau must be in (0, 1], got {tau!r}")
    return float(tau)


@dataclass(frozen=True)
class TemplateMatch:
    """Per kernel: best cosine ``scores`` (N,), ``best`` template index (N,), ``dead`` (N,)
    (norm below ``min_norm``: excluded), ``identified`` (N,) (score >= tau and not dead)."""

    scores: np.ndarray
    best: np.ndarray
    dead: np.ndarray
    identified: np.ndarray
    tau: float
    labels: tuple[str, ...] | None = None

    @property
    def n_dead(self) -> int:
        return int(self.dead.sum())

    @property
    def coverage(self) -> float:
        """Share of live kernels matched at tau (NaN if every kernel is dead)."""
        live = int((~self.dead).sum())
        return float(self.identified.sum() / live) if live else float("nan")

    def best_labels(self) -> list[str | None]:
        """The best template's label per kernel (None for dead kernels)."""
        if self.labels is None:
            raise ValueError("match_templates was called without labels")
        return [None if d else self.labels[b] for b, d in zip(self.best, self.dead)]


def match_templates(kernels, templates, tau: float = 0.7, labels=None,
                    min_norm: float = 1e-6) -> TemplateMatch:
    """Match kernels (N, k, k) against templates (T, k, k) by cosine similarity (sign kept)."""
    tau = _check_tau(tau)
    k = as_kernel_array(kernels)
    t = as_kernel_array(templates, "templates")
    if k.shape[1:] != t.shape[1:]:
        raise ValueError(f"kernel size {k.shape[1:]} does not match the template bank's "
                         f"{t.shape[1:]}; build a bank for this size")
    if labels is not None and len(labels) != t.shape[0]:
        raise ValueError(f"labels has {len(labels)} entries for {t.shape[0]} templates")
    kf, tf = k.reshape(len(k), -1), t.reshape(len(t), -1)
    norms = np.linalg.norm(kf, axis=1)
    dead = norms < min_norm
    kn = kf / np.where(dead, 1.0, norms)[:, None]
    tn = tf / np.linalg.norm(tf, axis=1, keepdims=True)
    cos = kn @ tn.T  # (N, T) cosine similarities
    best = cos.argmax(axis=1)
    scores = np.where(dead, np.nan, cos[np.arange(len(k)), best])
    identified = ~dead & (np.nan_to_num(scores, nan=-1.0) >= tau)
    return TemplateMatch(scores, best, dead, identified, tau,
                         None if labels is None else tuple(labels))


def permute_pixels(kernels, seed: int = 0) -> np.ndarray:
    """Each kernel's pixels randomly permuted (its own permutation): keeps the value
    distribution, destroys spatial structure."""
    k = as_kernel_array(kernels)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}")
    rng = np.random.default_rng(seed)
    flat = k.reshape(len(k), -1)
    idx = np.argsort(rng.random(flat.shape), axis=1)
    return np.take_along_axis(flat, idx, axis=1).reshape(k.shape)


def random_kernels(n: int, k: int, seed: int = 0) -> np.ndarray:
    """``n`` i.i.d. Gaussian k x k kernels (the chance baseline of a template bank)."""
    for name, v in (("n", n), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}")
    return np.random.default_rng(seed).normal(size=(n, k, k))
