"""Learning Large DAGs is Harder than You Think: Many Losses are Minimal for the Wrong DAG
(Seng, Zecevic, Dhami & Kersting, ICLR 2024; identification from the abstract): square-based DAG
scores depend on the measurement scale, and explicit rescalings make a wrong DAG optimal.

How the code maps to the paper:

- ``sem``: random DAGs and linear / additive-noise SEMs, population covariance;
- ``scores``: population residual variances, LS and LL scores, the exact score-optimal order by
  subset DP, the rescaling attack (AM-GM construction), consistency of an order with a DAG;
- ``metrics``: SHD, varsortability;
- ``learners``: DAGMA (square loss), DAGMA-nonlinear (MLPs, log-MSE score), PC and GOLEM
  behind one call;
- ``experiments``: one replication of each claim, with its null arm.

- ``golem``: a compact GOLEM-EV/NV (likelihood score + soft DAG penalty, L-BFGS-B).

Out of reach: the paper's real data (e.g. Sachs) - nothing ships offline - and NOTEARS-MLP /
GraN-DAG (gcastle does not install with our torch). The ``nonlinear_rescaling`` claim runs
DAGMA-nonlinear with ~4% of its default Adam steps (at a 10x step size) on d = 5, n = 500
(the spec: d = 8, n = 1000): one default fit would take ~13 min of CPU here, and even the
reduced run (260 s of CPU for 6 fits, before its null arm added 3 more) is beyond the smoke
budget, so that claim runs at small and full only. ``varsortability`` counts node pairs per
path length as Reisach et al.'s reference code does (not every path).
"""

from .golem import golem, golem_score
from .learners import LEARNERS, run_learner
from .metrics import shd, varsortability
from .scores import (
    best_order_exact,
    is_consistent_order,
    ll_score,
    ls_score,
    order_residual_variances,
    population_residual_variances,
    rescale_covariance,
    scale_attack,
)
from .sem import is_dag, population_covariance, simulate_anm, simulate_dag, simulate_linear_sem

__all__ = [
    "LEARNERS",
    "best_order_exact",
    "golem",
    "golem_score",
    "is_consistent_order",
    "is_dag",
    "ll_score",
    "ls_score",
    "order_residual_variances",
    "population_covariance",
    "population_residual_variances",
    "rescale_covariance",
    "run_learner",
    "scale_attack",
    "shd",
    "simulate_anm",
    "simulate_dag",
    "simulate_linear_sem",
    "varsortability",
]
