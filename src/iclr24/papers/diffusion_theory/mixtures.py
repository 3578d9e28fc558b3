"""Gaussian mixtures: data distributions whose noised laws and scores are known exactly.

p_data = sum_k pi_k N(mu_k, S_k)  =>  q_t = sum_k pi_k N(sqrt(abar_t) mu_k, abar_t S_k + (1 - abar_t) I)
and the score s*_t(x) = sum_k w_k(x) [-(abar_t S_k + (1 - abar_t) I)^{-1} (x - sqrt(abar_t) mu_k)],
w_k(x) the posterior component weights, computed with a max-shifted logsumexp (naive
normalisation underflows when 1 - abar_t is small; numpy's own reductions are used because
scipy's logsumexp costs ~4x more on the 2e5-point grids of the rate experiments).
"""

from __future__ import annotations

import numpy as np

__all__ = ["GaussianMixture"]


class GaussianMixture:
    """sum_k weights[k] N(means[k], covs[k]) on R^d.

    weights: (K,) positive, summing to 1; means: (K, d) (or (K,) for d = 1); covs: (K, d, d)
    symmetric positive definite (or (K,) variances for d = 1).
    """

    def __init__(self, weights, means, covs):
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or w.size == 0 or np.any(~np.isfinite(w)) or np.any(w <= 0):
            raise ValueError(f"weights must be a non-empty 1-D array of positive numbers, got {w}")
        if abs(w.sum() - 1) > 1e-9:
            raise ValueError(f"weights must sum to 1, got sum {w.sum():.12g}")
        m = np.asarray(means, dtype=np.float64)
        if m.ndim == 1:
            m = m[:, None]
        if m.ndim != 2 or m.shape[0] != w.size:
            raise ValueError(f"means must have shape (K, d) with K = {w.size}, got {m.shape}")
        c = np.asarray(covs, dtype=np.float64)
        d = m.shape[1]
        if c.ndim == 1 and d == 1:
            c = c[:, None, None]
        if c.shape != (w.size, d, d):
            raise ValueError(f"covs must have shape {(w.size, d, d)}, got {c.shape}")
        if not np.allclose(c, np.swapaxes(c, 1, 2)):
            raise ValueError("covs must be symmetric")
        try:
            np.linalg.cholesky(c)
        except np.linalg.LinAlgError:
            raise ValueError("covs must be positive definite (non-positive variance or a "
                             "singular covariance)") from None
        self.weights, self.means, self.covs = w, m, c
        self.dim = d
        self._prec = np.linalg.inv(c)
        self._logdet = np.linalg.slogdet(c)[1]

    def noised(self, alpha_bar: float) -> GaussianMixture:
        """Law of sqrt(abar) X + sqrt(1 - abar) W, X ~ self, W ~ N(0, I)."""
        ab = _check_alpha_bar(alpha_bar)
        eye = np.eye(self.dim)
        return GaussianMixture(self.weights, np.sqrt(ab) * self.means,
                               ab * self.covs + (1 - ab) * eye)

    def _as_points(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.dim == 1 and x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must have shape (n, {self.dim}), got {x.shape}")
        return x

    def _component_terms(self, x: np.ndarray):
        if self.dim == 1:  # fast path: scalar precisions, no einsum
            diff = x - self.means[:, 0]                                # (n, K)
            prec = self._prec[:, 0, 0]
            pdiff = (prec * diff)[:, :, None]
            logc = (np.log(self.weights) - 0.5 * (self._logdet + np.log(2 * np.pi))
                    - 0.5 * prec * diff ** 2)
            return logc, pdiff
        diff = x[:, None, :] - self.means[None]                       # (n, K, d)
        pdiff = np.einsum("kij,nkj->nki", self._prec, diff)           # S_k^{-1} (x - mu_k)
        quad = np.einsum("nki,nki->nk", diff, pdiff)
        logc = (np.log(self.weights) - 0.5 * (self._logdet + self.dim * np.log(2 * np.pi))
                - 0.5 * quad)                                         # log pi_k N(x; mu_k, S_k)
        return logc, pdiff

    def log_prob(self, x) -> np.ndarray:
        """log density at x: (n, d) -> (n,)."""
        logc, _ = self._component_terms(self._as_points(x))
        return _logsumexp(logc)[:, 0]

    def pdf(self, x) -> np.ndarray:
        """density at x: (n, d) -> (n,)."""
        return np.exp(self.log_prob(x))

    def score(self, x, alpha_bar: float = 1.0) -> np.ndarray:
        """grad log q(x) of the mixture noised to ``alpha_bar`` (1.0: the mixture itself);
        x: (n, d) -> (n, d)."""
        gm = self if alpha_bar == 1.0 else self.noised(alpha_bar)
        logc, pdiff = gm._component_terms(gm._as_points(x))
        w = np.exp(logc - _logsumexp(logc))    # posterior weights w_k(x)
        if self.dim == 1:
            out = -(w * pdiff[:, :, 0]).sum(axis=1, keepdims=True)
        else:
            out = -np.einsum("nk,nki->ni", w, pdiff)
        return out[:, 0] if self.dim == 1 and np.ndim(x) == 1 else out

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n draws, shape (n, d)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        k = rng.choice(self.weights.size, size=n, p=self.weights)
        z = rng.standard_normal((n, self.dim))
        chol = np.linalg.cholesky(self.covs)
        return self.means[k] + np.einsum("nij,nj->ni", chol[k], z)


def _logsumexp(a: np.ndarray) -> np.ndarray:
    """log sum_k exp(a[:, k]) for (n, K), shifted by the row maximum; shape (n, 1)."""
    top = a.max(axis=1, keepdims=True)
    return top + np.log(np.exp(a - top).sum(axis=1, keepdims=True))


def _check_alpha_bar(alpha_bar: float) -> float:
    ab = float(alpha_bar)
    if not 0 <= ab <= 1:
        raise ValueError(f"alpha_bar must be in [0, 1], got {alpha_bar!r}")
    return ab
