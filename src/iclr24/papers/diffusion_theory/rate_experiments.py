"""Rate experiments: exact TV(q_1, p_1) of the two samplers against the number of steps T.

For a 1-D Gaussian-mixture target the score is known exactly (or perturbed in a controlled way),
so the only errors left are the discretisation (and the grid, ~1e-6). TV is always measured
against q_1 = law of X_1 (which depends on T through beta_1 = T^{-c0}), never against p_data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .densities import propagate_density_1d, pushforward_density_1d, tv_1d
from .mixtures import GaussianMixture
from .samplers import ScoreFn
from .schedule import alpha_bars, li_schedule

__all__ = ["density_tv_sweep", "ode_tv_sweep", "perturbed_score"]


def perturbed_score(mixture: GaussianMixture, eps: float,
                    g: Callable[[np.ndarray], np.ndarray] = np.tanh) -> ScoreFn:
    """s_t = s*_t + eps * g(x): a score estimate with a controlled error (g fixed and smooth,
    so the Jacobian error is also proportional to eps)."""
    if not isinstance(mixture, GaussianMixture):
        raise TypeError("mixture must be a GaussianMixture")
    eps = float(eps)

    def score(x, alpha_bar):
        return mixture.score(x, alpha_bar) + eps * g(x)

    return score


def _check(mixture, Ts):
    if not isinstance(mixture, GaussianMixture) or mixture.dim != 1:
        raise ValueError("mixture must be a 1-D GaussianMixture")
    Ts = [int(T) for T in Ts]
    if not Ts:
        raise ValueError("Ts must list at least one number of steps")
    return Ts


def ode_tv_sweep(mixture: GaussianMixture, Ts: Sequence[int], *, n_grid: int = 200_000,
                 c0: float = 2.0, c1: float = 6.0, score_fn: ScoreFn | None = None) -> np.ndarray:
    """TV(q_1, p_1) of the deterministic sampler for each T (push-forward of a dense grid);
    ``score_fn`` defaults to the exact score of ``mixture``."""
    Ts = _check(mixture, Ts)
    score_fn = score_fn or mixture.score
    out = []
    for T in Ts:
        betas = li_schedule(T, c0, c1)
        y, p = pushforward_density_1d(score_fn, betas, n_grid)
        out.append(tv_1d(p, mixture.noised(alpha_bars(betas)[0]).pdf(y), y))
    return np.array(out)


def density_tv_sweep(mixture: GaussianMixture, Ts: Sequence[int], grid: np.ndarray, *,
                     noise: str | None = "inside", c0: float = 2.0, c1: float = 6.0,
                     score_fn: ScoreFn | None = None, reference: ScoreFn | None = None
                     ) -> np.ndarray:
    """TV of the grid-propagated sampler output (``noise`` as in
    :func:`propagate_density_1d`: "inside"/"outside" DDPM, None = deterministic) against q_1 for
    each T, or, with ``reference``, against the same sampler run with that score instead."""
    Ts = _check(mixture, Ts)
    score_fn = score_fn or mixture.score
    out = []
    for T in Ts:
        betas = li_schedule(T, c0, c1)
        p = propagate_density_1d(score_fn, betas, grid, noise=noise)
        if reference is None:
            q = mixture.noised(alpha_bars(betas)[0]).pdf(grid)
        else:
            q = propagate_density_1d(reference, betas, grid, noise=noise)
        out.append(tv_1d(p, q, grid))
    return np.array(out)
