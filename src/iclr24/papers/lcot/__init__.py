"""LCOT: Linear Circular Optimal Transport (R. Diaz Martin, I. Medri, Y. Bai, X. Liu, K. Yan,
G. K. Rohde, S. Kolouri; ICLR 2024; arXiv 2310.06002; official code mint-vu/LCOT).

What the paper does. Circular OT (COT, the 2-Wasserstein distance on S^1 = [0, 1)) needs a 1-D
search over a "cut" per pair of measures and gives no vector representation. LCOT linearises COT
at the uniform reference: each measure gets a closed-form embedding, the displacement of the
optimal Monge map from Unif,

    nu_hat(x) = F_nu^{-1}(x - E_nu[x] + 1/2) - x,                 (paper Sec. 3, key lemma)

and LCOT_2(nu_1, nu_2) = || |nu_hat_1 - nu_hat_2|_{S^1} ||_{L^2(dx)}. It is a metric, equals COT
when one argument is the uniform measure, upper-bounds COT, and costs O(K) embeddings + O(K^2 M)
cheap distances for K measures instead of O(K^2) shift searches.

How the code maps to it.
- :mod:`.embedding`: the closed-form embedding (:func:`lcot_embedding`, batched), the LCOT distance
  (:func:`lcot_distance`: on the grid x_m = m/M, or exact with ``grid_size=None``), all-pairs
  :func:`lcot_pairwise`, the extended quantile :func:`circular_quantile`.
- :mod:`.geodesics`: interpolation (Fig. 3), barycenters (Exp. 3), push-forward back to measures.
- :mod:`.transformer`: :class:`LCOTEmbedding`, a scikit-learn transformer.
- :mod:`.baselines`: COT (POT's binary search), OT on [0, 1) cut at 0 (POT's ``wasserstein_1d``),
  histogram L2, each single-pair and pairwise.
- :mod:`.synthetic_measures`: the six-class generator of the official Experiment 2.
- ``claims.py``: ``speedup`` (Fig. 4), ``fidelity`` (LCOT vs COT on Exp. 2 data), ``classification``
  (the MDS separation of Exp. 2, turned into k-NN / logistic-regression accuracies).

What differs / is scaled down.
- Only the uniform reference is implemented (the paper's closed-form case and its experiments);
  a general reference needs one COT shift search per measure and is not provided.
- Interpolation and the default barycenter use the short-arc (circular) difference of embeddings,
  which equals the paper's linear average wherever embeddings differ by less than 1/2 and avoids
  sending mass to the antipode where they straddle the cut; ``mode="linear"`` gives the literal
  average.
- The paper's Exp. 2 result is an MDS picture; our classification accuracies are our own
  operationalisation of "separates the classes as well as COT" (stated in the claim).
- POT >= 0.9.6 ships ``ot.lp.linear_circular_ot``; in POT 0.9.7 it is not exact (a one-atom shift
  in its quantile lookup), so it is not used (a test documents the discrepancy).

Usage::

    from iclr24.papers.lcot import lcot_embedding, lcot_pairwise, lcot_distance
    E = LCOTEmbedding(grid_size=1000).fit_transform(list_of_atom_arrays)   # (K, 1000)
    D = lcot_pairwise(E)                                                   # (K, K)
"""

from .baselines import (
    circular_histogram,
    cot_distance,
    cot_pairwise,
    histogram_l2,
    histogram_l2_pairwise,
    ot_interval_distance,
    ot_interval_pairwise,
)
from .embedding import (
    circular_abs,
    circular_quantile,
    embed_measures,
    lcot_distance,
    lcot_embedding,
    lcot_pairwise,
    wrap_half,
)
from .geodesics import (
    embedding_to_measure,
    lcot_barycenter,
    lcot_interpolate,
    mean_embedding,
    von_mises_kde,
)
from .synthetic_measures import (
    EXPERIMENT2_CLASSES,
    Experiment2Config,
    angles_to_unit,
    experiment2_measures,
)


def __getattr__(name: str):
    # scikit-learn is imported only when the transformer is used, keeping this package light
    if name == "LCOTEmbedding":
        from .transformer import LCOTEmbedding

        return LCOTEmbedding
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXPERIMENT2_CLASSES",
    "Experiment2Config",
    "LCOTEmbedding",
    "angles_to_unit",
    "circular_abs",
    "circular_histogram",
    "circular_quantile",
    "cot_distance",
    "cot_pairwise",
    "embed_measures",
    "embedding_to_measure",
    "experiment2_measures",
    "histogram_l2",
    "histogram_l2_pairwise",
    "lcot_barycenter",
    "lcot_distance",
    "lcot_embedding",
    "lcot_interpolate",
    "lcot_pairwise",
    "mean_embedding",
    "ot_interval_distance",
    "ot_interval_pairwise",
    "von_mises_kde",
    "wrap_half",
]
