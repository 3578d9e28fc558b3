"""The spec's synthetic fairness data (no protected-attribute data set ships offline).

z ~ Bernoulli(0.35) (group 1 = minority); x in R^6 ~ N(m_z, I) with the minority mean shifted by
0.7 on two coordinates; y = 1[beta . x + b_z + noise > 0], b_z set so the positive rates are about
0.45 (group 0) and 0.25 (group 1); then 5% of group 0's and 12% of group 1's labels are flipped.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BETA", "make_fairness_data"]

BETA = np.array([1.0, 0.8, -0.6, 0.5, 0.0, 0.3])


def make_fairness_data(n: int = 6000, seed: int = 0, *, minority: float = 0.35,
                       base_rates: tuple[float, float] = (0.45, 0.25),
                       flip: tuple[float, float] = (0.05, 0.12)
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X (n, 6), y (n,), group (n,)) with group 1 the minority."""
    if not isinstance(n, int) or n < 20:
        raise ValueError(f"n must be an int >= 20, got {n!r}")
    rng = np.random.default_rng(seed)
    z = (rng.random(n) < minority).astype(np.int64)
    means = np.zeros((2, 6))
    means[1, :2] = 0.7
    X = rng.normal(size=(n, 6)) + means[z]
    latent = X @ BETA + rng.normal(0, 0.5, n)
    y = np.zeros(n, dtype=np.int64)
    for g in (0, 1):
        m = z == g
        b = -np.quantile(latent[m], 1 - base_rates[g])  # positive rate of group g = base_rates[g]
        y[m] = (latent[m] + b > 0).astype(np.int64)
        flips = m & (rng.random(n) < flip[g])
        y[flips] = 1 - y[flips]
    return X, y, z
