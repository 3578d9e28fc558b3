"""Voronoi losses between mixing measures and the expected Hellinger distance (Nguyen et al.,
ICLR 2024, Sec. 3-4).

Atoms omega_i = (beta_1i, a_i, b_i, sigma_i) (sigma a variance); the Voronoi cell of true atom j
is A_j = {i : ||omega_i - omega*_j|| <= ||omega_i - omega*_l|| for all l}. Gate parameters are
first expressed relative to each model's reference expert (softmax is invariant to a common
shift of the logits), so the losses ignore that shift.

D_1 (exact specification): sum_j |sum_{i in A_j} exp(beta_0i) - exp(beta*_0j)|
      + sum_j sum_{i in A_j} exp(beta_0i) (||dbeta_1|| + ||da|| + |db| + |dsigma|).
D_2 (over-specification): the same weight term and first powers for singleton cells; for a cell
      with |A_j| = m > 1 the powers rbar(m) on ||dbeta_1|| and |db| and rbar(m)/2 on ||da|| and
      |dsigma|, rbar(2) = 4, rbar(3) = 6. This exponent assignment is the one of the dense
      softmax-gating analysis (Nguyen, Nguyen & Ho 2023) that the top-K paper builds on; we could
      not check it against the top-K theorem's text, so it is a documented assumption.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .moe import TopKGaussianMoE

__all__ = [
    "RBAR",
    "expected_hellinger",
    "voronoi_cells",
    "voronoi_loss_exact",
    "voronoi_loss_over",
]

RBAR = {2: 4, 3: 6}


def _atoms(model: TopKGaussianMoE):
    if not isinstance(model, TopKGaussianMoE):
        raise TypeError(f"expected a TopKGaussianMoE, got {type(model).__name__}")
    gc, gi, ec, ei, var = model._params()
    r = model.reference
    return gc - gc[r], gi - gi[r], ec, ei, var


def voronoi_cells(est: TopKGaussianMoE, true: TopKGaussianMoE) -> list[np.ndarray]:
    """A_j for each true atom j: indices of the fitted atoms closest to omega*_j."""
    gc, _, ec, ei, var = _atoms(est)
    tgc, _, tec, tei, tvar = _atoms(true)
    if gc.shape[1] != tgc.shape[1]:
        raise ValueError("est and true must have the same covariate dimension")
    omega = np.hstack([gc, ec, ei[:, None], var[:, None]])
    omega_t = np.hstack([tgc, tec, tei[:, None], tvar[:, None]])
    dist = np.linalg.norm(omega[:, None, :] - omega_t[None], axis=2)
    nearest = dist.argmin(axis=1)
    return [np.flatnonzero(nearest == j) for j in range(true.n_experts)]


def _differences(est, true, cells):
    gc, gi, ec, ei, var = _atoms(est)
    tgc, tgi, tec, tei, tvar = _atoms(true)
    weight_term = sum(abs(np.exp(gi[c]).sum() - np.exp(tgi[j])) for j, c in enumerate(cells))
    per_cell = []
    for j, c in enumerate(cells):
        per_cell.append((np.exp(gi[c]),
                         np.linalg.norm(gc[c] - tgc[j], axis=1),
                         np.linalg.norm(ec[c] - tec[j], axis=1),
                         np.abs(ei[c] - tei[j]),
                         np.abs(var[c] - tvar[j])))
    return float(weight_term), per_cell


def voronoi_loss_exact(est: TopKGaussianMoE, true: TopKGaussianMoE) -> float:
    """D_1(est, true) (not symmetric: cells are those of the true atoms)."""
    cells = voronoi_cells(est, true)
    total, per_cell = _differences(est, true, cells)
    for w, db1, da, db, dv in per_cell:
        total += float((w * (db1 + da + db + dv)).sum())
    return total


def voronoi_loss_over(est: TopKGaussianMoE, true: TopKGaussianMoE,
                      rbar: Mapping[int, float] = RBAR) -> float:
    """D_2(est, true) with the exponents rbar(|A_j|) for cells of 2 or more atoms."""
    cells = voronoi_cells(est, true)
    total, per_cell = _differences(est, true, cells)
    for c, (w, db1, da, db, dv) in zip(cells, per_cell):
        m = len(c)
        if m <= 1:
            total += float((w * (db1 + da + db + dv)).sum())
            continue
        if m not in rbar:
            raise ValueError(f"rbar has no exponent for a Voronoi cell of {m} atoms "
                             f"(known: {sorted(rbar)})")
        r = float(rbar[m])
        total += float((w * (db1 ** r + db ** r + da ** (r / 2) + dv ** (r / 2))).sum())
    return total


def expected_hellinger(est: TopKGaussianMoE, true: TopKGaussianMoE, X_mc,
                       y_grid) -> float:
    """E_X[h(p_est(. | X), p_true(. | X))], X over the Monte Carlo sample ``X_mc`` (m, d), y by
    the trapezoid rule on ``y_grid`` (increasing, covering the responses);
    h(p, q)^2 = 1/2 int (sqrt p - sqrt q)^2 dy."""
    X = np.asarray(X_mc, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    y = np.asarray(y_grid, dtype=np.float64)
    if y.ndim != 1 or y.size < 3 or np.any(np.diff(y) <= 0):
        raise ValueError("y_grid must be an increasing 1-D grid of at least 3 points")
    m, G = X.shape[0], y.size
    Xr = np.repeat(X, G, axis=0)
    yr = np.tile(y, m)
    p = np.exp(est.log_prob(Xr, yr)).reshape(m, G)
    q = np.exp(true.log_prob(Xr, yr)).reshape(m, G)
    h2 = 0.5 * np.trapezoid((np.sqrt(p) - np.sqrt(q)) ** 2, y, axis=1)
    return float(np.sqrt(np.clip(h2, 0, 1)).mean())
