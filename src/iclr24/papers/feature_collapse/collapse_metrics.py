"""Feature-collapse diagnostics (paper Sec. 2 figures; official notebooks' PCA cells).

The notebooks look at a PCA of the embedding rows of the concepts (after LayerNorm when the
network uses it) and of the classifier blocks u_{k,l} grouped by z_{k,l}, and print the first
three singular values; collapse shows as n_c tight clusters and sigma_{n_c} << sigma_{n_c - 1}.
The scalar summaries here are our proposal (the paper's exact statistic is not specified):

- ``within_concept_ratio(E, concept)`` = sum_w ||e_w - m_{alpha(w)}||^2 / sum_w ||e_w - m||^2:
  0 for perfect collapse onto the concept means, ~1 when concepts do not separate;
- ``pca_spectrum_ratio(E, k)`` = sigma_k / sigma_1 of the centred rows (k = n_c: n_c collapsed
  points span an (n_c - 1)-dimensional affine set, so sigma_{n_c} -> 0);
- ``norm_frequency_spearman(E, freq)``: rank correlation between ||e_w|| and mu_beta(w), the
  signature of the no-LayerNorm, long-tailed regime;
- ``norm_spread(E)`` = std / mean of the row norms: the *size* of any norm variation (a rank
  correlation also sees variations of 1e-5, e.g. LayerNorm's eps at tiny embeddings);
- ``classifier_block_ratio(U, Z)``: the within-concept ratio of the blocks u_{k,l} grouped by
  z_{k,l}.
"""

from __future__ import annotations

import numpy as np

__all__ = ["classifier_block_ratio", "layer_norm_rows", "norm_frequency_spearman",
           "norm_spread", "pca_spectrum_ratio", "within_concept_ratio"]


def _matrix(E, name: str) -> np.ndarray:
    if hasattr(E, "detach"):
        E = E.detach().cpu().numpy()
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 2:
        raise ValueError(f"{name} must be a 2-D array with at least 2 rows, got shape {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError(f"{name} must be finite")
    return E


def layer_norm_rows(E, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm without affine parameters, row by row (what the network applies to W)."""
    E = _matrix(E, "E")
    mean = E.mean(axis=1, keepdims=True)
    var = E.var(axis=1, keepdims=True)
    return (E - mean) / np.sqrt(var + eps)


def within_concept_ratio(E, concept_of_word) -> float:
    """sum_w ||e_w - m_alpha(w)||^2 / sum_w ||e_w - m||^2 for rows E (n_words, d)."""
    E = _matrix(E, "E")
    c = np.asarray(concept_of_word)
    if c.shape != (E.shape[0],):
        raise ValueError(f"concept_of_word must have one entry per row of E ({E.shape[0]}), got "
                         f"shape {c.shape}")
    total = np.sum((E - E.mean(axis=0)) ** 2)
    if total == 0:
        raise ValueError("all rows of E are identical: the ratio is undefined")
    within = 0.0
    for a in np.unique(c):
        rows = E[c == a]
        within += np.sum((rows - rows.mean(axis=0)) ** 2)  # ||e_w - m_alpha||^2
    return float(within / total)


def pca_spectrum_ratio(E, k: int = 3) -> float:
    """sigma_k / sigma_1 of the centred rows of E (the PCA singular values)."""
    E = _matrix(E, "E")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= min(E.shape):
        raise ValueError(f"k must be an int in [1, {min(E.shape)}], got {k!r}")
    s = np.linalg.svd(E - E.mean(axis=0), compute_uv=False)
    if s[0] == 0:
        raise ValueError("all rows of E are identical: the spectrum ratio is undefined")
    return float(s[k - 1] / s[0])


def norm_frequency_spearman(E, frequency) -> float:
    """Spearman rank correlation between row norms ||e_w|| and word frequencies mu(w)."""
    from scipy.stats import spearmanr

    E = _matrix(E, "E")
    f = np.asarray(frequency, dtype=np.float64)
    if f.shape != (E.shape[0],):
        raise ValueError(f"frequency must have one entry per row of E ({E.shape[0]}), got shape "
                         f"{f.shape}")
    norms = np.linalg.norm(E, axis=1)
    if np.ptp(norms) <= 1e-9 * max(norms.max(), 1e-300) or np.ptp(f) == 0:
        return 0.0  # a constant has no rank order: no dependence on frequency
    return float(spearmanr(norms, f).statistic)


def norm_spread(E) -> float:
    """Coefficient of variation std(||e_w||) / mean(||e_w||) of the row norms."""
    norms = np.linalg.norm(_matrix(E, "E"), axis=1)
    if norms.mean() == 0:
        raise ValueError("all rows of E are zero: the spread is undefined")
    return float(norms.std() / norms.mean())


def classifier_block_ratio(U, Z) -> float:
    """Within-concept ratio of the classifier blocks: U (K, L d) reshaped to u_{k,l} in R^d,
    grouped by the latent concept z_{k,l} (Z: (K, L))."""
    Z = np.asarray(Z)
    U = _matrix(U, "U")
    if Z.ndim != 2 or Z.shape[0] != U.shape[0] or U.shape[1] % Z.shape[1]:
        raise ValueError(f"Z must be (K, L) with K = {U.shape[0]} rows and L dividing "
                         f"{U.shape[1]}, got shape {Z.shape}")
    blocks = U.reshape(Z.shape[0] * Z.shape[1], U.shape[1] // Z.shape[1])
    return within_concept_ratio(blocks, Z.reshape(-1))
