"""Inter-party correlation of a vertical split: Pcor, Icor and the estimated beta.

VertiBench (Wu et al., ICLR 2024), Section 3.2 ("correlation-based split"), mirrored on the
official ``CorrelationEvaluator``:

* the feature correlation matrix R (Spearman by default; constant columns give NaN, set to 0;
  missing values are handled pairwise, as ``pandas.DataFrame.corr`` does in the official code);
* Pcor of two parties = std of the singular values of the block R[i-block, j-block] (ddof 1),
  divided by sqrt(min(d_i, d_j)); a block with fewer than two singular values scores 0;
* Icor = (1/K) sum_i [ (1/(K-1)) sum_{j != i} Pcor(j, i) - Pcor(i, i) ]: the mean inter-party
  minus inner-party correlation. Larger Icor means MORE correlation across parties;
* beta_hat of a split = clip((Icor - Icor_min) / (Icor_max - Icor_min), 0, 1).

The official code switches to a randomized SVD (400 components, 4 power iterations, padded with
zeros) for blocks with at least 100 features; :func:`pcor` does the same. The batched
:func:`icor_for_permutations` (used by the genetic search) always uses the exact spectrum, and
uses the symmetric eigen-decomposition for the diagonal blocks (singular values of a symmetric
matrix are the absolute eigenvalues), which gives the same numbers faster.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

__all__ = [
    "correlation_matrix",
    "equal_party_sizes",
    "estimate_beta",
    "icor",
    "icor_for_permutations",
    "pcor",
    "pcor_matrix",
    "split_icor",
]

_EXACT_SVD_BELOW = 100


def _check_matrix(X: np.ndarray, name: str = "X") -> np.ndarray:
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number):
        raise TypeError(f"{name} must be numeric; got dtype {X.dtype}")
    return X.astype(float, copy=False)


def correlation_matrix(X: np.ndarray, method: str = "spearman") -> np.ndarray:
    """Feature-feature correlation matrix; undefined entries (a constant column) are 0.

    X: (n_samples, n_features); returns (n_features, n_features).
    ``method``: "spearman" (rank correlation with average ranks for ties, as pandas computes
    it) or "pearson".

    Missing values (NaN) are handled pairwise, as the official evaluator does (it calls
    ``pandas.DataFrame.corr``): each entry uses the rows where both columns are present (for
    Spearman, ranked among those rows). A pair with fewer than 2 such rows is 0. A column with
    fewer than 2 present values, or any infinite value, is refused.
    """
    X = _check_matrix(X)
    if X.shape[0] < 2:
        raise ValueError(f"X needs at least 2 samples to compute correlations; got {X.shape[0]}")
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson'; got {method!r}")
    if np.isinf(X).any():
        cols = np.flatnonzero(np.isinf(X).any(axis=0)).tolist()
        raise ValueError(f"X has infinite values in columns {cols}; correlations are undefined")
    missing = np.isnan(X)
    if missing.any():
        present = (~missing).sum(axis=0)
        if (present < 2).any():
            cols = np.flatnonzero(present < 2).tolist()
            raise ValueError(f"X columns {cols} have fewer than 2 non-NaN values")
        import pandas as pd

        corr = pd.DataFrame(X).corr(method=method, min_periods=2).to_numpy()
        return np.nan_to_num(corr, nan=0.0)
    Z = rankdata(X, axis=0) if method == "spearman" else X  # Spearman = Pearson on ranks
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.corrcoef(Z, rowvar=False)
    corr = np.atleast_2d(corr)
    return np.nan_to_num(corr, nan=0.0)


def _pcor_from_singular_values(s: np.ndarray, d: int) -> np.ndarray:
    # Pcor = std(sigma, ddof=1) / sqrt(min(d_i, d_j)); 0 when fewer than 2 singular values
    if d < 2:
        return np.zeros(s.shape[:-1])
    return np.std(s, axis=-1, ddof=1) / np.sqrt(d)


def pcor(block: np.ndarray, *, random_state: int = 0) -> float:
    """Pcor of one correlation block ``block = R[party_i, party_j]`` of shape (d_i, d_j).

    Exact SVD when min(d_i, d_j) < 100, randomized SVD (400 components, 4 power iterations,
    zero-padded) otherwise, as the official evaluator does.
    """
    block = _check_matrix(block, "block")
    if np.isnan(block).any():
        raise ValueError("block contains NaN; replace NaN correlations by 0 first")
    d = min(block.shape)
    if d < 2:
        return 0.0
    if d < _EXACT_SVD_BELOW:
        s = np.linalg.svd(block, compute_uv=False)
    else:
        from sklearn.utils.extmath import randomized_svd

        k = min(400, d)
        _, s, _ = randomized_svd(block, n_components=k, n_oversamples=10, n_iter=4,
                                 random_state=random_state)
        s = np.concatenate([s, np.zeros(d - s.shape[0])])
    return float(_pcor_from_singular_values(s, d))


def _check_sizes(party_sizes: Sequence[int], n_features: int) -> np.ndarray:
    sizes = np.asarray(party_sizes)
    if sizes.ndim != 1 or sizes.size < 1 or not np.issubdtype(sizes.dtype, np.integer):
        raise ValueError(f"party_sizes must be a non-empty 1-D sequence of ints; got {party_sizes!r}")
    if (sizes < 0).any():
        raise ValueError(f"party_sizes must be non-negative; got {party_sizes!r}")
    if int(sizes.sum()) != n_features:
        raise ValueError(f"party_sizes must sum to the correlation matrix size {n_features}; "
                         f"got sum {int(sizes.sum())}")
    return sizes.astype(int)


def pcor_matrix(corr: np.ndarray, party_sizes: Sequence[int]) -> np.ndarray:
    """(K, K) matrix of Pcor(i, j) over the contiguous party blocks of ``corr``.

    corr: (d, d) correlation matrix whose rows/columns are ordered party by party;
    party_sizes: K ints summing to d.
    """
    corr = _check_matrix(corr, "corr")
    if corr.shape[0] != corr.shape[1]:
        raise ValueError(f"corr must be square; got shape {corr.shape}")
    sizes = _check_sizes(party_sizes, corr.shape[0])
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    K = sizes.size
    out = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            out[i, j] = pcor(corr[cuts[i]:cuts[i + 1], cuts[j]:cuts[j + 1]])
    return out


def _icor_from_pcors(P: np.ndarray) -> np.ndarray:
    """P: (..., K, K) Pcor matrices -> (...,) Icor values."""
    K = P.shape[-1]
    if K < 2:
        raise ValueError("Icor needs at least 2 parties")
    col_sums = P.sum(axis=-2)  # sum_j Pcor(j, i) including j = i
    diag = np.diagonal(P, axis1=-2, axis2=-1)
    inter = (col_sums - diag) / (K - 1)
    # Icor = mean_i [ mean_{j != i} Pcor(j, i) - Pcor(i, i) ]
    return np.mean(inter - diag, axis=-1)


def icor(corr: np.ndarray, party_sizes: Sequence[int]) -> float:
    """Icor of a split: mean inter-party minus inner-party Pcor (higher = more cross-party
    correlation). corr: (d, d) ordered party by party; party_sizes: K >= 2 ints summing to d."""
    if len(party_sizes) < 2:
        raise ValueError(f"Icor needs at least 2 parties; got party_sizes={list(party_sizes)!r}")
    return float(_icor_from_pcors(pcor_matrix(corr, party_sizes)))


def icor_for_permutations(corr: np.ndarray, orders: np.ndarray,
                          party_sizes: Sequence[int]) -> np.ndarray:
    """Icor of many candidate splits at once (exact spectra, batched).

    corr: (d, d); orders: (n, d) permutations of range(d) (party blocks are contiguous in each
    order); party_sizes: K >= 2 ints summing to d. Returns (n,).
    """
    corr = _check_matrix(corr, "corr")
    orders = np.asarray(orders)
    if orders.ndim == 1:
        orders = orders[None, :]
    d = corr.shape[0]
    if orders.ndim != 2 or orders.shape[1] != d:
        raise ValueError(f"orders must have shape (n, {d}); got {orders.shape}")
    sizes = _check_sizes(party_sizes, d)
    K = sizes.size
    if K < 2:
        raise ValueError("Icor needs at least 2 parties")
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    n = orders.shape[0]
    P = np.zeros((n, K, K))
    for i in range(K):
        rows = orders[:, cuts[i]:cuts[i + 1]]
        di = sizes[i]
        for j in range(i, K):
            dj = sizes[j]
            dmin = min(di, dj)
            if dmin < 2:
                continue
            cols = orders[:, cuts[j]:cuts[j + 1]]
            blocks = corr[rows[:, :, None], cols[:, None, :]]  # (n, d_i, d_j)
            if i == j:
                s = np.abs(np.linalg.eigvalsh(blocks))  # symmetric: sigma = |lambda|
            else:
                s = np.linalg.svd(blocks, compute_uv=False)
            p = _pcor_from_singular_values(s, dmin)
            P[:, i, j] = p
            P[:, j, i] = p  # R symmetric: Pcor(i, j) = Pcor(j, i)
    return _icor_from_pcors(P)


def split_icor(Xs: Sequence[np.ndarray], method: str = "spearman") -> float:
    """Icor of a given vertical split: Xs is a list of K party matrices (n, d_k)."""
    Xs = _check_parties(Xs)
    return icor(correlation_matrix(np.concatenate(Xs, axis=1), method),
                [X.shape[1] for X in Xs])


def _check_parties(Xs: Sequence[np.ndarray]) -> list[np.ndarray]:
    if isinstance(Xs, np.ndarray) or not isinstance(Xs, Sequence) or len(Xs) < 2:
        raise ValueError("Xs must be a list of at least 2 party matrices (n_samples, d_k)")
    Xs = [_check_matrix(X, f"Xs[{k}]") for k, X in enumerate(Xs)]
    n = Xs[0].shape[0]
    for k, X in enumerate(Xs):
        if X.shape[0] != n:
            raise ValueError(f"all parties must hold the same samples; Xs[0] has {n} rows, "
                             f"Xs[{k}] has {X.shape[0]}")
    return Xs


def estimate_beta(Xs: Sequence[np.ndarray] | float, icor_min: float, icor_max: float,
                  method: str = "spearman", clip: bool = True) -> float:
    """beta_hat = (Icor - Icor_min) / (Icor_max - Icor_min), clipped to [0, 1].

    ``Xs`` is either a list of party matrices (its Icor is computed) or an Icor value.
    ``icor_min``/``icor_max`` are the extremes for the dataset (``CorrelationSplitter.fit``).
    """
    if not icor_max > icor_min:
        raise ValueError(f"icor_max must exceed icor_min; got icor_min={icor_min}, "
                         f"icor_max={icor_max}")
    if isinstance(Xs, (int, float, np.floating)):
        value = float(Xs)
    else:
        value = split_icor(Xs, method)
    beta = (value - icor_min) / (icor_max - icor_min)
    return float(np.clip(beta, 0.0, 1.0)) if clip else float(beta)


def equal_party_sizes(n_features: int, n_parties: int) -> list[int]:
    """Party sizes of an equal split of d columns (numpy ``array_split`` sizes)."""
    if not isinstance(n_parties, (int, np.integer)) or n_parties < 1:
        raise ValueError(f"n_parties must be a positive int; got {n_parties!r}")
    if n_parties > n_features:
        raise ValueError(f"n_parties={n_parties} is larger than the number of features "
                         f"{n_features}")
    return [len(a) for a in np.array_split(np.arange(n_features), n_parties)]
