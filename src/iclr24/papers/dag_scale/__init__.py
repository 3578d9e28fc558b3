"""Learning Large DAGs is Harder than You Think: Many Losses are Minimal for the Wrong DAG
(Seng, Zecevic, Dhami & Kersting, ICLR 2024; identification from the abstract): square-based DAG
scores depend on the measurement scale, and explicit rescalings make a wrong DAG optimal.

How the code maps to the paper:

- ``sem``: random DAGs and linear / additive-noise SEMs, population covariance;
- ``scores``: population residual variances, LS and LL scores, the exact score-optimal order by
  subset DP, the rescaling attack (AM-GM construction), consistency of an order with a DAG;
- ``metrics``: SHD, varsortability;
- ``learners``: DAGMA (square loss and equal-variance likelihood) and PC behind one call;
- ``experiments``: one replication of each claim.

- ``golem``: a compact GOLEM-EV/NV (likelihood score + soft DAG penalty, L-BFGS-B).

Out of reach: the paper's real data (e.g. Sachs) - nothing ships offline - and its nonlinear
learners (NOTEARS-MLP, GraN-DAG; the ``nonlinear_rescaling`` claim is not implemented, only the
ANM simulator is: DAGMA-nonlinear took ~65 s of CPU per fit at d = 6, n = 500 with a tenth of
its default iterations, beyond the claim budgets).
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
