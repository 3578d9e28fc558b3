"""The laptop-scale rate experiments of the spec (d = 1, X ~ N(0, 1), as the public EM code).

- ``exact_truth()``: k* = 3 experts, top-K* = 2; gate slopes (2, 0, -2), intercepts 0 (expert 2 is
  the reference), experts a* = (-1, 0.5, 1.5), b* = (1, -1, 0.5), variances (0.01, 0.04, 0.02);
  the active pair is {1, 2} for x > 0 and {2, 3} for x < 0.
- ``over_truth()``: k* = 2, K* = 2 (dense softmax): experts 1 and 3 of the above, gate slopes (2, 0).
- ``near_truth_init``: EM starts at the truth plus Gaussian perturbations of scale
  0.005 n^{-0.083} (0.0005 n^{-1/4} for variances), as the public code does; ``split`` duplicates
  one true atom into two (intercepts beta_0 - log 2 each) for over-specified fits.
- ``exact_replication`` / ``over_replication``: one data set of size n, the fits and their losses;
  module-level so that joblib workers can import them.

Out of reach: the paper's own sample sizes and replication counts (we keep n <= 1e4 and 6
replications at small: EM on the over-specified fit needs hundreds of iterations).
"""

from __future__ import annotations

import numpy as np

from .moe import TopKGaussianMoE
from .voronoi import expected_hellinger, voronoi_cells, voronoi_loss_exact, voronoi_loss_over

__all__ = [
    "exact_replication",
    "exact_truth",
    "near_truth_init",
    "over_replication",
    "over_truth",
]

Y_GRID = np.linspace(-8, 8, 1281)


def exact_truth() -> TopKGaussianMoE:
    return TopKGaussianMoE(3, 2, reference=1).set_params(
        [[2.0], [0.0], [-2.0]], [0.0, 0.0, 0.0], [[-1.0], [0.5], [1.5]], [1.0, -1.0, 0.5],
        [0.01, 0.04, 0.02])


def over_truth() -> TopKGaussianMoE:
    return TopKGaussianMoE(2, 2, reference=1).set_params(
        [[2.0], [0.0]], [0.0, 0.0], [[-1.0], [1.5]], [1.0, 0.5], [0.01, 0.02])


def near_truth_init(true: TopKGaussianMoE, n: int, rng: np.random.Generator, *,
                    top_k: int | None = None, split: int | None = None) -> TopKGaussianMoE:
    """A starting model near ``true`` (see the module docstring); with ``split`` = j, atom j is
    duplicated, giving n_experts + 1 atoms, and ``top_k`` defaults to all of them."""
    gc, gi, ec, ei, var = (np.array(p, dtype=float) for p in true._params())
    ref, k = true.reference, true.n_experts
    if split is not None:
        if not 0 <= split < k or split == ref:
            raise ValueError(f"split must index a non-reference expert, got {split!r}")
        idx = np.r_[np.arange(k), split]
        gc, gi, ec, ei, var = gc[idx], gi[idx], ec[idx], ei[idx], var[idx]
        gi[[split, -1]] -= np.log(2.0)
    m = gc.shape[0]
    scale, vscale = 0.005 * n ** -0.083, 0.0005 * n ** -0.25
    free = np.arange(m) != ref
    gc[free] += scale * rng.standard_normal(gc[free].shape)
    gi[free] += scale * rng.standard_normal(free.sum())
    ec += scale * rng.standard_normal(ec.shape)
    ei += scale * rng.standard_normal(m)
    var = np.abs(var + vscale * rng.standard_normal(m))
    k_fit = top_k if top_k is not None else (m if split is not None else true.top_k)
    return TopKGaussianMoE(m, k_fit, reference=ref).set_params(gc, gi, ec, ei, var)


def _data(true, n, rng):
    X = rng.standard_normal((n, 1))
    return X, true.sample(X, rng)


def exact_replication(rng: np.random.Generator, n: int, n_mc: int = 2000,
                      max_iter: int = 2000) -> dict:
    """Exact specification: fit k = 3, K = 2 by EM; D_1 and the expected Hellinger distance."""
    true = exact_truth()
    X, y = _data(true, n, rng)
    est = TopKGaussianMoE(3, 2, reference=1, max_iter=max_iter).fit(
        X, y, init=near_truth_init(true, n, rng))
    X_mc = rng.standard_normal((n_mc, 1))
    return {"d1": voronoi_loss_exact(est, true),
            "hellinger": expected_hellinger(est, true, X_mc, Y_GRID), "n_iter": est.n_iter_}


def over_replication(rng: np.random.Generator, n: int, n_mc: int = 2000,
                     max_iter: int = 2000) -> dict:
    """Over-specification on one data set of the k* = 2 truth: the exact fit (k = 2, K = 2) and
    the over-specified fit (k = 3, K = 3, two atoms started near expert 1). Reports the raw
    max_{i in A_1} |db_i| and |dsigma_i|, D_2 and the expected Hellinger distance of both."""
    true = over_truth()
    X, y = _data(true, n, rng)
    X_mc = rng.standard_normal((n_mc, 1))
    out = {}
    for name, init in (("exact", near_truth_init(true, n, rng)),
                       ("over", near_truth_init(true, n, rng, split=0))):
        est = TopKGaussianMoE(init.n_experts, init.top_k, reference=1,
                              max_iter=max_iter).fit(X, y, init=init)
        cell = voronoi_cells(est, true)[0]
        out[f"db_{name}"] = float(np.abs(est.expert_intercept_[cell] - 1.0).max()) \
            if cell.size else np.inf
        out[f"dsigma_{name}"] = float(np.abs(est.variances_[cell] - 0.01).max()) \
            if cell.size else np.inf
        out[f"cell_size_{name}"] = int(cell.size)
        out[f"d2_{name}"] = voronoi_loss_over(est, true)
        out[f"hellinger_{name}"] = expected_hellinger(est, true, X_mc, Y_GRID)
        out[f"n_iter_{name}"] = est.n_iter_
    return out
