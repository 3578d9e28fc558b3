"""Stage I of Chameleon: shadow populations and adaptive label-flip poisoning (official
Algorithm 2, ``AdaptivePoison.run_poison_phase``).

A *population* is a set of models that share one challenge set: model ``i`` trains on its random
base set (challenge points excluded), the challenge points its membership mask marks IN, and the
current poison set. The mask is balanced: every challenge point is IN in exactly half of the
models, so each point has as many member as non-member models.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Population",
    "adaptive_poison_counts",
    "balanced_membership_masks",
    "draw_population",
    "label_flip",
    "make_poison_set",
    "train_population",
    "true_label_confidence",
]

PredictProba = Callable[[np.ndarray], np.ndarray]
TrainFn = Callable[[np.ndarray, np.ndarray, np.random.Generator], PredictProba]


def _check_labels(y: np.ndarray, num_classes: int) -> np.ndarray:
    """y must be integer labels in [0, num_classes): a label >= C would be silently wrapped by
    the mod-C poison label into another class."""
    y = np.asarray(y)
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2, got {num_classes!r}")
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"y must lie in [0, num_classes={num_classes}), got labels in "
                         f"[{y.min()}, {y.max()}]")
    return y


def _check_features(X: np.ndarray) -> np.ndarray:
    """X must be a finite (n, d) array: NaN features give NaN confidences, which silently
    compare false against t_p and freeze every count at 0."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D (n, d) array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinite features")
    return X


def label_flip(y: np.ndarray, num_classes: int) -> np.ndarray:
    """The official poison label y' = (y + 1) mod C (y checked to lie in [0, C))."""
    return (_check_labels(y, num_classes) + 1) % num_classes


def _check_challenge(n_rows: int, challenge_idx: np.ndarray) -> np.ndarray:
    idx = np.asarray(challenge_idx)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("challenge_idx must be a non-empty 1-D array of integer row indices")
    if idx.min() < 0 or idx.max() >= n_rows:
        raise ValueError(f"challenge_idx out of range: indices must lie in [0, {n_rows}), got "
                         f"[{idx.min()}, {idx.max()}]")
    if np.unique(idx).size != idx.size:
        raise ValueError("challenge_idx must not repeat an index")
    return idx


def make_poison_set(X: np.ndarray, y: np.ndarray, challenge_idx: np.ndarray, counts: np.ndarray,
                    num_classes: int,
                    label_fn: Callable[[np.ndarray, int], np.ndarray] = label_flip
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``counts[j]`` replicas of challenge point ``x_j`` labelled ``label_fn(y_j, C)``.

    X: (n, d); y: (n,); challenge_idx, counts: (k,). Returns ``(Xp (sum counts, d), yp)``.
    """
    X, y = _check_features(X), _check_labels(y, num_classes)
    idx = _check_challenge(X.shape[0], challenge_idx)
    counts = np.asarray(counts)
    if counts.shape != idx.shape or not np.issubdtype(counts.dtype, np.integer) \
            or counts.min() < 0:
        raise ValueError(f"counts must be non-negative ints of shape {idx.shape}, got "
                         f"{counts.shape} {counts.dtype}")
    rows = np.repeat(idx, counts)
    return X[rows], label_fn(y[rows], num_classes).astype(y.dtype)


def balanced_membership_masks(n_models: int, n_points: int, rng: np.random.Generator
                              ) -> np.ndarray:
    """(n_models, n_points) bool: column j marks the models in which point j is IN, exactly
    ``n_models / 2`` per column (an independent random half per point)."""
    if isinstance(n_models, bool) or not isinstance(n_models, (int, np.integer)) \
            or n_models < 2 or n_models % 2:
        raise ValueError(f"the number of shadow/target models must be an even int >= 2 (every "
                         f"point IN in exactly half), got {n_models!r}")
    half = np.zeros(n_models, dtype=bool)
    half[: n_models // 2] = True
    return np.stack([rng.permutation(half) for _ in range(n_points)], axis=1)


@dataclass(frozen=True)
class Population:
    """Models sharing one challenge set: ``masks`` (m, k) IN/OUT, ``base_sets[i]`` the rows of
    model i's random base set (never a challenge row), ``seeds[i]`` its training seed."""

    challenge_idx: np.ndarray
    masks: np.ndarray
    base_sets: tuple[np.ndarray, ...]
    seeds: tuple[int, ...]

    @property
    def n_models(self) -> int:
        return self.masks.shape[0]

    def training_rows(self, i: int) -> np.ndarray:
        """Model i's clean training rows: its base set plus its IN challenge points."""
        return np.concatenate([self.base_sets[i], self.challenge_idx[self.masks[i]]])


def draw_population(n_rows: int, challenge_idx: np.ndarray, n_models: int,
                    rng: np.random.Generator, base_fraction: float = 0.5) -> Population:
    """Balanced masks, base sets of ``round(base_fraction * #non-challenge rows)`` rows drawn
    without replacement from the non-challenge rows, and one training seed per model."""
    idx = _check_challenge(n_rows, challenge_idx)
    if not 0 < base_fraction <= 1:
        raise ValueError(f"base_fraction must be in (0, 1], got {base_fraction!r}")
    masks = balanced_membership_masks(n_models, idx.size, rng)
    pool = np.setdiff1d(np.arange(n_rows), idx)
    size = round(base_fraction * pool.size)
    bases = tuple(np.sort(rng.choice(pool, size, replace=False)) for _ in range(n_models))
    seeds = tuple(int(s) for s in rng.integers(0, 2**62, n_models))
    return Population(idx, masks, bases, seeds)


def train_population(train_fn: TrainFn, X: np.ndarray, y: np.ndarray, population: Population,
                     poison: tuple[np.ndarray, np.ndarray] | None = None) -> list[PredictProba]:
    """Train every model of ``population``: base set + IN challenge points + ``poison`` (the
    same poisons in every model, whatever its membership). Model i uses ``seeds[i]``."""
    models = []
    for i in range(population.n_models):
        rows = population.training_rows(i)
        Xi, yi = X[rows], y[rows]
        if poison is not None and len(poison[1]):
            Xi, yi = np.concatenate([Xi, poison[0]]), np.concatenate([yi, poison[1]])
        models.append(train_fn(Xi, yi, np.random.default_rng(population.seeds[i])))
    return models


def true_label_confidence(models: Sequence[PredictProba], X: np.ndarray, y: np.ndarray
                          ) -> np.ndarray:
    """(m, k): softmax confidence of each model on the true label of each point."""
    return np.stack([np.asarray(f(X))[np.arange(len(y)), y] for f in models])


def adaptive_poison_counts(train_fn: TrainFn, X: np.ndarray, y: np.ndarray,
                           challenge_idx: np.ndarray, num_classes: int, *, n_shadow: int = 8,
                           threshold: float = 0.13, k_max: int = 8,
                           rng: np.random.Generator, base_fraction: float = 0.5,
                           population: Population | None = None
                           ) -> tuple[np.ndarray, Population, list[PredictProba]]:
    """Adaptive poison counts k_j (official Algorithm 2).

    For n = 0, 1, ...: train the shadows with the current poison set; for every still-active
    point j take c_j = mean true-label confidence over the shadows where j is OUT; if
    c_j > threshold and n < k_max then k_j += 1, else j freezes for good. Stop when no count
    changed. Round n = k_max can only freeze, so its shadows are not trained (same counts).
    ``population`` reuses given masks/base sets/seeds (else drawn from ``rng``).

    Returns ``(counts (k,), population, shadows_0)``: the shadows of round 0 (zero poisons) are
    what the official neighbourhood search uses.
    """
    X, y = _check_features(X), _check_labels(y, num_classes)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
    idx = _check_challenge(X.shape[0], challenge_idx)
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be in (0, 1), got {threshold!r}")
    if isinstance(k_max, bool) or not isinstance(k_max, (int, np.integer)) or k_max < 0:
        raise ValueError(f"k_max must be a non-negative int, got {k_max!r}")
    pop = population or draw_population(X.shape[0], idx, n_shadow, rng, base_fraction)
    counts = np.zeros(idx.size, dtype=np.int64)
    active = np.ones(idx.size, dtype=bool)
    shadows_0: list[PredictProba] = []
    for n in range(k_max):  # round k_max could only freeze, so it is not trained
        shadows = train_population(train_fn, X, y, pop,
                                   make_poison_set(X, y, idx, counts, num_classes))
        if n == 0:
            shadows_0 = shadows
        conf = true_label_confidence(shadows, X[idx], y[idx])
        out = ~pop.masks
        c_bar = (conf * out).sum(0) / out.sum(0)  # mean over OUT shadows only
        grow = active & (c_bar > threshold)
        active &= grow  # counts freeze permanently once at or below t_p
        counts += grow
        if not grow.any():
            break
    return counts, pop, shadows_0
