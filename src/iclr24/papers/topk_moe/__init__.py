"""Statistical Perspective of Top-K Sparse Softmax Gating Mixture of Experts (Nguyen, Akbarian,
Yan & Ho, ICLR 2024; arXiv 2309.13850): the MLE of a Gaussian MoE with a top-K softmax gate,
its Voronoi losses, and rate experiments.

How the code maps to the paper:

- ``moe``: the model p_G(y | x) with TopK(., K) logits (non-selected experts weight exactly 0) and
  its EM fit -> :class:`TopKGaussianMoE` (``sample``, ``log_prob``, ``log_gate``, ``fit``);
- ``voronoi``: Voronoi cells A_j, the losses D_1 (exact specification) and D_2
  (over-specification), the expected Hellinger distance -> :func:`voronoi_cells`,
  :func:`voronoi_loss_exact`, :func:`voronoi_loss_over`, :func:`expected_hellinger`;
- ``simulation``: the spec's d = 1 settings, near-truth initialisation, one replication.

Out of reach: the paper's sample sizes (at small, exact specification runs n = 2e3..1.6e4 with
10 replications, over-specification n = 1e3..2e4 with 12) and its multivariate settings.
The exploratory sparse over-specified case (k = 4, K = 3) is run at small sizes and only
reported. The rate studies start EM near the truth, as in the public code (rates from far
starts would mix optimisation failure into the statistics), and the exact-specification study
keeps the best of two such starts. For a user's own data ``fit`` needs no ``init``: it starts
from ``TopKGaussianMoE.default_init`` (ours: k-means on (x, y), least-squares experts, a
logistic gate on the cluster labels), ``n_init`` times, and keeps the highest likelihood; far
starts can end at poor local maxima, so use several. Dense-gate fits can finish EM with a Newton polish
of the same likelihood (``TopKGaussianMoE(polish=True)``): over-specified EM crawls.
"""

from .moe import TopKGaussianMoE
from .simulation import exact_truth, near_truth_init, over_truth, sparse_over_replication
from .voronoi import (
    RBAR,
    expected_hellinger,
    voronoi_cells,
    voronoi_loss_exact,
    voronoi_loss_over,
)

__all__ = [
    "RBAR",
    "TopKGaussianMoE",
    "exact_truth",
    "expected_hellinger",
    "near_truth_init",
    "over_truth",
    "sparse_over_replication",
    "voronoi_cells",
    "voronoi_loss_exact",
    "voronoi_loss_over",
]
