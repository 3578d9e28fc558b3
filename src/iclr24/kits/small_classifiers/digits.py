"""scikit-learn's bundled digits (1,797 8x8 images, 10 classes) with deterministic splits.

The data ships inside the scikit-learn wheel, so nothing is downloaded. Splits are stratified by
class and fixed by ``seed``; scaling statistics come from the first (training) part only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["DigitsSplit", "load_digits_split", "stratified_split_indices"]

_SCALINGS = ("unit", "standard", "none")


@dataclass(frozen=True)
class DigitsSplit:
    """Parts of the digits data: ``X[k]`` (n_k, 64) float32 and ``y[k]`` (n_k,) int64 for each
    part ``k`` in ``names`` (e.g. ``("train", "val", "test")``); ``indices[k]`` are the rows of
    the full data set (after class filtering) each part holds."""

    names: tuple[str, ...]
    X: dict[str, np.ndarray]
    y: dict[str, np.ndarray]
    indices: dict[str, np.ndarray]
    num_classes: int

    def part(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        if name not in self.X:
            raise KeyError(f"no part {name!r}; parts are {self.names}")
        return self.X[name], self.y[name]


def stratified_split_indices(y: np.ndarray, fractions: Sequence[float], seed: int
                             ) -> list[np.ndarray]:
    """Split ``range(len(y))`` into ``len(fractions)`` disjoint, class-stratified parts.

    Within each class the rows are shuffled with ``numpy.random.default_rng(seed)`` and cut at the
    cumulative fractions (rounded); the last part takes the remainder, so every row lands in
    exactly one part. Each part is returned sorted.
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y must be a non-empty 1-D array, got shape {y.shape}")
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or fr.size < 1 or np.any(fr <= 0) or abs(fr.sum() - 1.0) > 1e-9:
        raise ValueError(f"fractions must be positive and sum to 1, got {list(fractions)!r}")
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[] for _ in fr]
    cuts = np.cumsum(fr)[:-1]
    for c in np.unique(y):
        rows = rng.permutation(np.flatnonzero(y == c))
        bounds = np.rint(cuts * rows.size).astype(int)
        for k, chunk in enumerate(np.split(rows, bounds)):
            parts[k].append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts]


def load_digits_split(fractions: Sequence[float] = (0.6, 0.2, 0.2),
                      names: Sequence[str] = ("train", "val", "test"), *,
                      scaling: str = "unit", classes: Sequence[int] | None = None,
                      seed: int = 0) -> DigitsSplit:
    """Digits split into stratified parts.

    fractions: one positive fraction per part (sum 1); names: their names (same length).
    scaling: ``"unit"`` (pixels / 16, in [0, 1]), ``"standard"`` (zero mean, unit variance per
    pixel with the first part's statistics; constant pixels keep scale 1) or ``"none"``.
    classes: keep only these digit classes (labels are re-indexed 0..len(classes)-1 in the
    given order); default all ten.
    """
    from sklearn.datasets import load_digits

    if scaling not in _SCALINGS:
        raise ValueError(f"scaling must be one of {_SCALINGS}, got {scaling!r}")
    names = tuple(names)
    if len(names) != len(tuple(fractions)) or len(set(names)) != len(names):
        raise ValueError(f"names must be distinct, one per fraction; got {names} for "
                         f"{list(fractions)}")
    data = load_digits()
    X = data.data.astype(np.float64)
    y = data.target.astype(np.int64)
    if classes is not None:
        classes = [int(c) for c in classes]
        if not classes or len(set(classes)) != len(classes) or not set(classes) <= set(range(10)):
            raise ValueError(f"classes must be distinct digits 0..9, got {classes!r}")
        keep = np.isin(y, classes)
        remap = {c: i for i, c in enumerate(classes)}
        X, y = X[keep], np.array([remap[int(v)] for v in y[keep]], dtype=np.int64)
    idx = stratified_split_indices(y, fractions, seed)
    if scaling == "unit":
        X = X / 16.0
    elif scaling == "standard":
        ref = X[idx[0]]
        sd = ref.std(axis=0)
        X = (X - ref.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    X = X.astype(np.float32)
    return DigitsSplit(
        names=names,
        X={n: X[i] for n, i in zip(names, idx)},
        y={n: y[i] for n, i in zip(names, idx)},
        indices=dict(zip(names, idx)),
        num_classes=int(y.max()) + 1,
    )
