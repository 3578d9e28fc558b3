"""The synthetic IV domain of the official code (``datasets/data_IV.py``), re-implemented.

m instruments with compliance c_z = 0.5, except the first max(1, 5% m) (c = 1) and the last
max(1, 5% m) (c = 0); confounder U ~ N(0, conf_strength^2); x ~ Bernoulli(clip(c_z + U, 0, 1));
X = (x, 1 - x); Y = X^T theta + U + eps with eps ~ N(0, 1) if x = 1 else N(0, 0.1^2)
(heteroskedastic); theta = (1, -1). The official fixed "oracle" policy is kept under the name
``official_fixed_probs``: it is not the optimum here (``asymptotics.optimal_probs`` is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SyntheticIV", "check_probs"]


def check_probs(probs, m: int) -> np.ndarray:
    """Instrument probabilities as float64 (m,), validated (non-negative, sum 1)."""
    p = np.asarray(probs, dtype=np.float64).reshape(-1)
    if p.shape != (m,) or not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"probs must be {m} non-negative numbers, got {probs!r}")
    if abs(p.sum() - 1) > 1e-6:
        raise ValueError(f"instrument probabilities must sum to 1, got sum {p.sum():.8g}")
    return p / p.sum()                                     # renormalise in float64


@dataclass(frozen=True)
class SyntheticIV:
    """The official synthetic IV simulator; ``sample(n, probs, rng)`` draws n units."""

    n_instruments: int = 5
    conf_strength: float = 0.5
    theta: tuple[float, float] = (1.0, -1.0)

    def __post_init__(self):
        if isinstance(self.n_instruments, bool) or not isinstance(self.n_instruments, int) \
                or self.n_instruments < 2:
            raise ValueError(f"n_instruments must be an int >= 2, got {self.n_instruments!r}")
        if not self.conf_strength >= 0:
            raise ValueError(f"conf_strength must be >= 0, got {self.conf_strength!r}")

    @property
    def compliance(self) -> np.ndarray:
        m = self.n_instruments
        c = np.full(m, 0.5)
        edge = max(1, int(0.05 * m))
        c[:edge], c[m - edge:] = 1.0, 0.0
        return c

    def official_fixed_probs(self) -> np.ndarray:
        """The official code's fixed "oracle": 0.95 on the first (strongest) instrument, 0.05 on
        the last. Not optimal on this domain (its own comment restricts it to homoskedastic
        noise and confounding 0.1): see :func:`~.asymptotics.optimal_probs`."""
        p = np.zeros(self.n_instruments)
        p[0], p[-1] = 0.95, 0.05
        return p

    def sample(self, n: int, probs, rng: np.random.Generator):
        """(X (n, 2), Y (n,), Z (n, m) one-hot, behaviour probability of each Z (n,))."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        m = self.n_instruments
        p = check_probs(probs, m)
        z = rng.choice(m, size=n, p=p)
        u = self.conf_strength * rng.standard_normal(n)
        x = (rng.random(n) < np.clip(self.compliance[z] + u, 0, 1)).astype(float)
        X = np.stack([x, 1 - x], axis=1)
        eps = np.where(x == 1, 1.0, 0.1) * rng.standard_normal(n)
        Y = X @ np.asarray(self.theta) + u + eps
        return X, Y, np.eye(m)[z], p[z]
