"""The LCOT embedding for the uniform reference and the LCOT distance (paper Sec. 3).

Everything lives on the circle S^1 identified with [0, 1). For a discrete measure
nu = sum_i w_i delta_{y_i} with CDF F_nu(x) = nu([0, x)), extended to the real line by
F_nu(x + k) = F_nu(x) + k, the generalised inverse is F_nu^{-1}(q) = inf{x : F_nu(x) > q}
(so F_nu^{-1}(q + k) = F_nu^{-1}(q) + k). For the uniform reference mu = Unif(S^1) the optimal
circular shift has the closed form (paper's key lemma)

    alpha*(nu) = E_nu[x] - 1/2          (plain mean of the [0, 1) coordinates)

and the embedding is the displacement of the optimal Monge map Unif -> nu,

    nu_hat(x) = F_nu^{-1}(x - alpha*(nu)) - x,   stored in [-1/2, 1/2).

The LCOT distance is the circular L2 distance between embeddings,

    LCOT_2(nu_1, nu_2) = ( int_0^1 |nu_hat_1(x) - nu_hat_2(x)|_{S^1}^2 dx )^{1/2},

with |d|_{S^1} = min(|d|, 1 - |d|) (for d already reduced mod 1). We evaluate nu_hat on the grid
x_m = m / M, m = 0..M-1 (official code: M = 1000; POT: M = 100) and average; ``grid_size=None``
in :func:`lcot_distance` instead integrates exactly over the breakpoints of both quantile
functions (the official ``lcot_dist_continuous`` idea, extended here to the uniform measure with
a closed-form antiderivative).

The quantile is looked up with ``searchsorted`` on the periodically extended arrays
(y - 1, y, y + 1) and (c - 1, c, c + 1), where c are the cumulative weights; it is the
right-continuous inverse, so an atom exactly at 0 and an atom just below 1 are both handled
by the same code path as interior atoms.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "circular_abs",
    "circular_quantile",
    "coerce_measures",
    "embed_measures",
    "lcot_distance",
    "lcot_embedding",
    "lcot_pairwise",
    "validate_measure",
    "wrap_half",
]

_DEFAULT_GRID = 1000


def wrap_half(d: ArrayLike) -> NDArray[np.float64]:
    """Reduce ``d`` modulo 1 into [-1/2, 1/2) (a displacement on the circle)."""
    d = np.asarray(d, dtype=np.float64)
    return d - np.floor(d + 0.5)


def circular_abs(d: ArrayLike) -> NDArray[np.float64]:
    """|d|_{S^1} = min over k in Z of |d - k|, in [0, 1/2]."""
    d = np.asarray(d, dtype=np.float64)
    return np.abs(d - np.round(d))


def _check_grid_size(grid_size: object, name: str = "grid_size") -> int:
    if isinstance(grid_size, bool) or not isinstance(grid_size, (int, np.integer)):
        raise TypeError(f"{name} must be a positive int, got {grid_size!r}")
    if grid_size < 1:
        raise ValueError(f"{name} must be >= 1, got {grid_size}")
    return int(grid_size)


def validate_measure(values: ArrayLike, weights: ArrayLike | None = None, *,
                     name: str = "values") -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Check and normalise a (batch of) discrete circular measure(s).

    values:  (..., N) atom positions in [0, 1).
    weights: None (uniform) or (..., N) non-negative masses, summing to > 0 per measure;
             they are normalised to sum to 1.
    Returns float64 arrays ``(values, weights)`` of the same shape (..., N), unsorted.
    """
    wname = "u_weights" if name == "u" else ("v_weights" if name == "v" else "weights")
    try:
        v = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers in [0, 1), got {type(values).__name__}"
                        ) from None
    if v.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension (..., N); got a scalar")
    if v.shape[-1] == 0:
        raise ValueError(f"{name} must contain at least one atom (last axis N >= 1)")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} must be finite")
    if np.any(v < 0.0) or np.any(v >= 1.0):
        raise ValueError(f"{name} must lie in [0, 1) (angles theta in [-pi, pi) map to "
                         f"(theta + pi) / (2 pi)); got min {v.min():.6g}, max {v.max():.6g}")
    if weights is None:
        w = np.full(v.shape, 1.0 / v.shape[-1])
        return v, w
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{wname} must be an array of numbers, got {type(weights).__name__}"
                        ) from None
    if w.shape != v.shape:
        raise ValueError(f"{wname} must have the same shape as {name}: {v.shape}, got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{wname} must be finite and non-negative")
    total = w.sum(axis=-1, keepdims=True)
    if np.any(total <= 0):
        raise ValueError(f"{wname} must have a positive sum for every measure")
    return v, w / total


def _sorted_cdf(v: NDArray[np.float64], w: NDArray[np.float64]
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Sort atoms along the last axis; return (sorted values, cumulative weights with c_N = 1)."""
    order = np.argsort(v, axis=-1, kind="stable")
    ys = np.take_along_axis(v, order, axis=-1)
    ws = np.take_along_axis(w, order, axis=-1)
    c = np.cumsum(ws, axis=-1)
    c = c / c[..., -1:]  # exact 1 at the end, so the extended arrays tile without gaps
    return ys, c


def _quantile_rows(ys: NDArray[np.float64], c: NDArray[np.float64],
                   q: NDArray[np.float64]) -> NDArray[np.float64]:
    """F^{-1}(q) for q in [-1, 2), rows of (B, N) sorted atoms / cumulative weights, q (B, M)."""
    out = np.empty_like(q)
    for b in range(ys.shape[0]):
        # periodic extension with drift: F^{-1}(q + k) = F^{-1}(q) + k for k = -1, 0, 1
        y_ext = np.concatenate([ys[b] - 1.0, ys[b], ys[b] + 1.0])
        c_ext = np.concatenate([c[b] - 1.0, c[b], c[b] + 1.0])
        # inf{x : F(x) > q}: the first atom whose cumulative mass exceeds q (right inverse)
        idx = np.searchsorted(c_ext, q[b], side="right")
        out[b] = y_ext[np.minimum(idx, y_ext.size - 1)]
    return out


def circular_quantile(values: ArrayLike, q: ArrayLike, weights: ArrayLike | None = None
                      ) -> NDArray[np.float64]:
    """The extended generalised inverse F_nu^{-1}(q) = inf{x : F_nu(x) > q}, for any real q.

    values: (N,) atoms in [0, 1); weights: None or (N,); q: any shape.
    Satisfies F^{-1}(q + k) = F^{-1}(q) + k for integers k.
    """
    v, w = validate_measure(values, weights)
    if v.ndim != 1:
        raise ValueError(f"values must be 1-D (N,), got shape {v.shape}")
    qq = np.asarray(q, dtype=np.float64)
    if not np.all(np.isfinite(qq)):
        raise ValueError("q must be finite")
    ys, c = _sorted_cdf(v, w)
    k = np.floor(qq)
    frac = qq - k
    return _quantile_rows(ys[None], c[None], frac.reshape(1, -1))[0].reshape(qq.shape) + k


def lcot_embedding(values: ArrayLike, weights: ArrayLike | None = None, *,
                   grid_size: int = _DEFAULT_GRID) -> NDArray[np.float64]:
    """LCOT embedding of discrete circular measure(s) w.r.t. the uniform reference.

    values:  (..., N) atoms in [0, 1) (batched over leading dims).
    weights: None (uniform 1/N) or (..., N) non-negative masses (normalised here).
    grid_size: M, the number of grid points x_m = m / M.
    Returns (..., M): nu_hat(x_m) = F^{-1}(x_m - E[x] + 1/2) - x_m, wrapped to [-1/2, 1/2).
    Cost O(N log N + M) per measure.
    """
    m = _check_grid_size(grid_size)
    v, w = validate_measure(values, weights)
    lead = v.shape[:-1]
    v2 = v.reshape(-1, v.shape[-1])
    w2 = w.reshape(-1, w.shape[-1])
    ys, c = _sorted_cdf(v2, w2)
    alpha = np.sum(w2 * v2, axis=-1, keepdims=True) - 0.5  # alpha* = E_nu[x] - 1/2
    x = np.arange(m, dtype=np.float64) / m
    q = x[None, :] - alpha  # in (-1/2, 3/2): inside the extended arrays' range [-1, 2)
    monge = _quantile_rows(ys, c, q)  # optimal map T(x) = F^{-1}(x - alpha*)
    emb = wrap_half(monge - x[None, :])  # nu_hat(x) = T(x) - x, |nu_hat| <= 1/2
    return emb.reshape(*lead, m)


def _check_embeddings(e: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(e, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (K, grid_size) of embeddings, "
                         f"got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have grid_size >= 1 columns")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def lcot_pairwise(embeddings: ArrayLike, other: ArrayLike | None = None, *,
                  chunk_elements: int = 4_000_000) -> NDArray[np.float64]:
    """All LCOT distances between embeddings, with the circular difference.

    embeddings: (K, M); other: None (then ``embeddings`` itself) or (L, M).
    Returns (K, L) with D[i, j] = sqrt(mean_m |e_i[m] - f_j[m]|_{S^1}^2). Work is O(K L M),
    done in row chunks of about ``chunk_elements`` array elements to bound memory.
    """
    a = _check_embeddings(embeddings, "embeddings")
    b = a if other is None else _check_embeddings(other, "other")
    if b.shape[1] != a.shape[1]:
        raise ValueError(f"embeddings and other must share grid_size; got {a.shape[1]} and "
                         f"{b.shape[1]}")
    k, m = a.shape
    out = np.empty((k, b.shape[0]))
    rows = max(1, int(chunk_elements) // max(1, b.shape[0] * m))
    for start in range(0, k, rows):
        diff = a[start:start + rows, None, :] - b[None, :, :]
        # |d|_{S^1}^2, averaged over the grid = the integral over dmu(x) = dx
        out[start:start + rows] = np.sqrt(np.mean(circular_abs(diff) ** 2, axis=-1))
    if other is None:
        np.fill_diagonal(out, 0.0)
        out = np.maximum(out, out.T)  # exact symmetry despite float summation order
    return out


def _breakpoints(ys: NDArray[np.float64], c: NDArray[np.float64], alpha: float
                 ) -> NDArray[np.float64]:
    # F^{-1}(x - alpha) jumps where x - alpha = c_i + k, i.e. at x = (c_i + alpha) mod 1
    return np.mod(c + alpha, 1.0)


def _antiderivative_circ_sq(s: NDArray[np.float64]) -> NDArray[np.float64]:
    """G(s) = int_0^s |t|_{S^1}^2 dt (the integrand has period 1 and integral 1/12 per period)."""
    n = np.floor(s)
    t = s - n
    h = np.where(t <= 0.5, t ** 3 / 3.0, 1.0 / 12.0 - (1.0 - t) ** 3 / 3.0)
    return n / 12.0 + h


def _exact_lcot_sq(u: tuple[NDArray, NDArray], v: tuple[NDArray, NDArray] | None) -> float:
    yu, cu = _sorted_cdf(*u)
    alpha_u = float(np.sum(u[0] * u[1]) - 0.5)
    cuts = [_breakpoints(yu, cu, alpha_u)]
    if v is not None:
        yv, cv = _sorted_cdf(*v)
        alpha_v = float(np.sum(v[0] * v[1]) - 0.5)
        cuts.append(_breakpoints(yv, cv, alpha_v))
    edges = np.unique(np.concatenate([np.array([0.0, 1.0])] + cuts))
    a, b = edges[:-1], edges[1:]
    mid = 0.5 * (a + b)
    tu = _quantile_rows(yu[None], cu[None], (mid - alpha_u)[None])[0]  # constant on [a, b)
    if v is not None:
        tv = _quantile_rows(yv[None], cv[None], (mid - alpha_v)[None])[0]
        # nu_hat_1 - nu_hat_2 = T_1(x) - T_2(x) is piecewise constant on the merged pieces
        return float(np.sum((b - a) * circular_abs(tu - tv) ** 2))
    # against Unif the embedding is 0: int_a^b |T - x|_{S^1}^2 dx = G(b - T) - G(a - T)
    return float(np.sum(_antiderivative_circ_sq(b - tu) - _antiderivative_circ_sq(a - tu)))


def lcot_distance(u: ArrayLike, v: ArrayLike | None = None, u_weights: ArrayLike | None = None,
                  v_weights: ArrayLike | None = None, *,
                  grid_size: int | None = _DEFAULT_GRID) -> float:
    """LCOT_2 distance between two discrete circular measures (reference: uniform).

    u, v: (N,), (N',) atoms in [0, 1); ``v=None`` means the uniform measure on the circle, where
          LCOT equals COT (paper: LCOT(nu, Unif) = COT(nu, Unif)).
    u_weights, v_weights: None (uniform) or masses of the same length.
    grid_size: M grid points for the embedding integral; ``None`` integrates exactly over the
          breakpoints of both quantile functions (O((N + N') log(N + N'))).
    Returns the distance itself (not squared; POT's LCOT helpers return the square).
    """
    uu = validate_measure(u, u_weights, name="u")
    if uu[0].ndim != 1:
        raise ValueError(f"u must be 1-D (N,), got shape {uu[0].shape}; use lcot_embedding + "
                         "lcot_pairwise for batches")
    vv = None
    if v is not None:
        vv = validate_measure(v, v_weights, name="v")
        if vv[0].ndim != 1:
            raise ValueError(f"v must be 1-D (N,), got shape {vv[0].shape}")
    elif v_weights is not None:
        raise ValueError("v_weights given but v is None (None means the uniform measure)")
    if grid_size is None:
        return float(np.sqrt(max(_exact_lcot_sq(uu, vv), 0.0)))
    m = _check_grid_size(grid_size)
    eu = lcot_embedding(uu[0], uu[1], grid_size=m)
    ev = np.zeros(m) if vv is None else lcot_embedding(vv[0], vv[1], grid_size=m)
    return float(np.sqrt(np.mean(circular_abs(eu - ev) ** 2)))


def embed_measures(measures: Sequence, *, grid_size: int = _DEFAULT_GRID,
                   name: str = "measures") -> NDArray[np.float64]:
    """Embed a list of measures of possibly different sizes -> (K, grid_size).

    Each item is an array of atoms in [0, 1) (uniform weights) or a pair (values, weights).
    """
    items = coerce_measures(measures, name=name)
    m = _check_grid_size(grid_size)
    out = np.empty((len(items), m))
    for i, (vals, w) in enumerate(items):
        out[i] = lcot_embedding(vals, w, grid_size=m)
    return out


def coerce_measures(measures: Sequence, *, name: str = "measures"
                    ) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """Validate a list of measures: items are value arrays or (values, weights) pairs."""
    if isinstance(measures, np.ndarray) and measures.dtype != object:
        if measures.ndim != 2:
            raise ValueError(f"{name} as an array must be 2-D (K, N) of atoms in [0, 1), got "
                             f"shape {measures.shape}")
        measures = list(measures)
    if isinstance(measures, (str, bytes)) or not isinstance(measures, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a list of measures (arrays of atoms in [0, 1) or "
                        f"(values, weights) pairs), got {type(measures).__name__}")
    if len(measures) == 0:
        raise ValueError(f"{name} must contain at least one measure")
    out = []
    for i, item in enumerate(measures):
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"{name}[{i}] as a tuple must be (values, weights), got "
                                 f"{len(item)} items")
            vals, w = item
        else:
            vals, w = item, None
        v, ww = validate_measure(vals, w, name=f"{name}[{i}]")
        if v.ndim != 1:
            raise ValueError(f"{name}[{i}] must be a 1-D array of atoms, got shape {v.shape}")
        out.append((v, ww))
    return out
