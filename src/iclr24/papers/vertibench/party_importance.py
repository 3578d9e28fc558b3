"""Party importance of a vertical split: Shapley importance per party and the estimated alpha.

VertiBench (Wu et al., ICLR 2024), Section 3.1 ("importance-based split"), mirrored on the
official ``ImportanceEvaluator``:

* train any model on ALL features; compute Shapley values phi (n_rows, d) with shap's
  Permutation explainer on a random sample of ceil(sample_rate * n) rows;
* party importance I_j = mean over the sampled rows of sum_{f in party j} |phi_f|
  (abs per feature first, then summed over the party, then averaged over rows);
* a symmetric Dirichlet Dir(alpha 1_K) component has variance (K-1) / (K^2 (K alpha + 1)),
  so from the normalised shares s_j = I_j / sum I with population variance v,
  alpha_hat = (K - 1 - K^2 v) / (K^3 v). alpha_hat is clipped to ``[alpha_min, alpha_max]``
  because v outside (0, (K-1)/K^2) has no Dirichlet counterpart (v = 0 gives infinity, a
  single party holding everything gives 0).

Shapley values of a fixed model do not depend on how columns are split, so when many splits of
one dataset are scored, compute :func:`feature_shapley` once and call
:func:`party_importance_from_shapley` per split (this is what the claims do).

shap's Permutation explainer draws permutations from numpy's global RNG; :func:`feature_shapley`
seeds it from the explicit ``seed`` and restores the previous global state afterwards, so calls
are deterministic and leave no trace. shap compiles its masking kernels with numba in every new
process (~9-14 s of CPU, 30 times the explanation itself here); :func:`cache_shap_kernels` asks
numba to keep the compiled kernels on disk (numba's own cache, beside shap's sources or in
``NUMBA_CACHE_DIR``), so only the first process pays.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "cache_shap_kernels",
    "dirichlet_share_variance",
    "estimate_alpha",
    "feature_shapley",
    "importance_shares",
    "party_importance",
    "party_importance_from_shapley",
]


def _as_rng(rng: int | np.random.Generator | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be None, an int seed or a numpy Generator; got {type(rng)}")


def cache_shap_kernels() -> list[str]:
    """Turn on numba's on-disk cache for shap's jitted masking kernels (before their first
    compile in this process; a no-op for kernels already cached). Returns the kernels' names."""
    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher
    from shap.maskers import _tabular
    from shap.utils import _masked_model

    names = []
    for module in (_masked_model, _tabular):
        for name, kernel in vars(module).items():
            if isinstance(kernel, CPUDispatcher):
                if isinstance(kernel._cache, NullCache) and not kernel.overloads:
                    kernel.enable_caching()
                names.append(f"{module.__name__}.{name}")
    return names


def feature_shapley(predict_fn: Callable[[np.ndarray], np.ndarray], X: np.ndarray,
                    n_explain: int, *, seed: int = 0, max_evals: int | None = None,
                    background_size: int = 100) -> np.ndarray:
    """Shapley values of every feature on ``n_explain`` rows sampled from X.

    predict_fn: maps (m, d) -> (m,) (e.g. ``lambda Z: clf.predict_proba(Z)[:, 1]``) or (m, C);
    for C outputs the |phi| are summed over outputs later. X: (n, d).
    Returns phi: (n_explain, d) or (n_explain, d, C).
    max_evals defaults to max(500, 2 d + 1) as in the official evaluator.
    """
    import shap

    if not callable(predict_fn):
        raise TypeError("predict_fn must be callable: (m, d) array -> (m,) or (m, C) predictions")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}")
    n, d = X.shape
    if not isinstance(n_explain, (int, np.integer)) or not 1 <= n_explain <= n:
        raise ValueError(f"n_explain must be an int in [1, {n}]; got {n_explain!r}")
    if not isinstance(background_size, (int, np.integer)) or background_size < 1:
        raise ValueError(f"background_size must be a positive int; got {background_size!r}")
    if max_evals is None:
        max_evals = max(500, 2 * d + 1)
    if max_evals < 2 * d + 1:
        raise ValueError(f"max_evals must be at least 2 * n_features + 1 = {2 * d + 1}; "
                         f"got {max_evals}")
    cache_shap_kernels()
    saved = np.random.get_state()
    try:
        masker = shap.maskers.Independent(X, max_samples=background_size)
        # the explainer reseeds numpy's GLOBAL RNG (from the OS when seed is None) and draws its
        # permutations from it; we pass our seed and restore the caller's state below
        explainer = shap.explainers.Permutation(predict_fn, masker, seed=seed)
        rows = shap.sample(X, n_explain, random_state=seed)
        phi = explainer(rows, max_evals=max_evals, silent=True).values
    finally:
        np.random.set_state(saved)
    return np.asarray(phi, dtype=float)


def _check_indices(indices: Sequence[np.ndarray], d: int) -> list[np.ndarray]:
    if isinstance(indices, np.ndarray) or not isinstance(indices, Sequence) or len(indices) < 1:
        raise ValueError("indices must be a list of per-party column-index arrays")
    out = [np.asarray(ix, dtype=int).reshape(-1) for ix in indices]
    allc = np.concatenate(out) if out else np.array([], dtype=int)
    if allc.size and (allc.min() < 0 or allc.max() >= d):
        raise ValueError(f"indices must lie in [0, {d}); got values outside")
    if np.unique(allc).size != allc.size:
        raise ValueError("indices must not assign a feature to two parties")
    return out


def party_importance_from_shapley(phi: np.ndarray, indices: Sequence[np.ndarray]) -> np.ndarray:
    """I_j = mean_rows sum_{f in party j} |phi_f| (summing |phi| over outputs if phi is 3-D).

    phi: (n_rows, d) or (n_rows, d, C); indices: K arrays of column ids. Returns (K,).
    """
    phi = np.asarray(phi, dtype=float)
    if phi.ndim == 3:
        absphi = np.abs(phi).sum(axis=2)
    elif phi.ndim == 2:
        absphi = np.abs(phi)
    else:
        raise ValueError(f"phi must be (n_rows, d) or (n_rows, d, C); got shape {phi.shape}")
    parts = _check_indices(indices, absphi.shape[1])
    # I_j = E_rows[ sum_{f in j} |phi_f| ]
    return np.array([absphi[:, ix].sum(axis=1).mean() if ix.size else 0.0 for ix in parts])


def party_importance(Xs: Sequence[np.ndarray], predict_fn: Callable[[np.ndarray], np.ndarray],
                     sample_rate: float = 0.01, rng: int | np.random.Generator | None = None,
                     *, max_evals: int | None = None, background_size: int = 100) -> np.ndarray:
    """Shapley importance of each party of a vertical split.

    Xs: K party matrices (n, d_k) in the column order ``predict_fn`` expects once concatenated;
    predict_fn: (m, sum d_k) -> (m,) or (m, C). Explains ceil(sample_rate * n) rows (at least
    2, as the official code requires). Returns (K,) importances I_j.
    """
    if isinstance(Xs, np.ndarray) or not isinstance(Xs, Sequence) or len(Xs) < 1:
        raise ValueError("Xs must be a list of party matrices (n_samples, d_k)")
    Xs = [np.asarray(X, dtype=float) for X in Xs]
    for k, X in enumerate(Xs):
        if X.ndim != 2 or X.shape[0] != Xs[0].shape[0]:
            raise ValueError(f"Xs[{k}] must be 2-D with {Xs[0].shape[0]} rows; got {X.shape}")
    if not (isinstance(sample_rate, (int, float)) and 0 < sample_rate <= 1):
        raise ValueError(f"sample_rate must be in (0, 1]; got {sample_rate!r}")
    X = np.concatenate(Xs, axis=1)
    n = X.shape[0]
    n_explain = math.ceil(sample_rate * n)
    if n_explain < 2:
        raise ValueError(f"sample_rate={sample_rate} explains {n_explain} row(s) of {n}; "
                         "at least 2 are needed for meaningful Shapley importance")
    seed = int(_as_rng(rng).integers(2**31 - 1))
    phi = feature_shapley(predict_fn, X, n_explain, seed=seed, max_evals=max_evals,
                          background_size=background_size)
    cuts = np.concatenate([[0], np.cumsum([x.shape[1] for x in Xs])])
    return party_importance_from_shapley(
        phi, [np.arange(cuts[k], cuts[k + 1]) for k in range(len(Xs))])


def importance_shares(importances: Sequence[float]) -> np.ndarray:
    """Normalised shares s_j = I_j / sum_k I_k. importances: (K,) non-negative."""
    imp = np.asarray(importances, dtype=float)
    if imp.ndim != 1 or imp.size < 2:
        raise ValueError(f"importances must be a 1-D array of at least 2 parties; got {imp.shape}")
    if (imp < 0).any() or not np.isfinite(imp).all():
        raise ValueError("importances must be finite and non-negative")
    total = imp.sum()
    if total <= 0:
        raise ValueError("importances must not all be zero")
    return imp / total


def dirichlet_share_variance(alpha: float, n_parties: int) -> float:
    """Var of one component of a symmetric Dir(alpha 1_K): (K-1) / (K^2 (K alpha + 1))."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0; got {alpha!r}")
    if not isinstance(n_parties, (int, np.integer)) or n_parties < 2:
        raise ValueError(f"n_parties must be an int >= 2; got {n_parties!r}")
    K = n_parties
    return (K - 1) / (K**2 * (K * alpha + 1))


def estimate_alpha(importances: Sequence[float], *, alpha_min: float = 1e-3,
                   alpha_max: float = 1e3) -> float:
    """alpha_hat = (K - 1 - K^2 v) / (K^3 v), v = population variance of the shares, clipped.

    importances: (K,) party importances (any positive scale). Returns a float in
    [alpha_min, alpha_max] (v = 0 -> alpha_max; v >= (K-1)/K^2 -> alpha_min).
    """
    if not 0 < alpha_min < alpha_max:
        raise ValueError(f"need 0 < alpha_min < alpha_max; got {alpha_min}, {alpha_max}")
    s = importance_shares(importances)
    K = s.size
    v = float(np.var(s))  # ddof = 0
    if v <= 0:
        return float(alpha_max)
    alpha = (K - 1 - K**2 * v) / (K**3 * v)  # invert Var = (K-1)/(K^2 (K alpha + 1))
    return float(np.clip(alpha, alpha_min, alpha_max))
