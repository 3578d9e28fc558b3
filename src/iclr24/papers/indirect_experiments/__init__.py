"""Adaptive Instrument Design for Indirect Experiments (Chandak, Shankar, Syrgkanis & Brunskill,
ICLR 2024; arXiv 2312.02438; official code yashchandak/IndirectExpDesign): choose the
data-collection policy over instruments to minimise the MSE of the final IV estimate, with
influence-function policy gradients, a sub-sampling bootstrap and rejection-sampling
off-policy correction (DIA).

How the code maps to the paper:

- ``iv_data``: the official synthetic IV domain -> :class:`SyntheticIV`;
- ``tsls``: weighted 2SLS and its influence function (official ``get_inf`` form by default,
  leave-one-out form on request) -> :func:`tsls`, :func:`tsls_influence`, :func:`is_identified`;
- ``asymptotics``: closed-form asymptotic MSE of 2SLS on the synthetic domain, the policy that
  minimises it (the reference DIA is judged against; the official fixed "oracle" is not optimal
  here) and the gradient DIA estimates -> :func:`asymptotic_mse`, :func:`optimal_probs`,
  :func:`surrogate_gradient`;
- ``design``: the policy, the DIA gradient (influence or REINFORCE), Adam with linear decay, and
  the round-by-round experiment -> :class:`InstrumentPolicy`, :class:`DIADesigner`,
  :func:`run_adaptive_experiment`;
- ``experiments``: one replication of each claim.

Out of reach: the conditional-IV and non-linear estimators (MLP nuisances with Hessian-inverse
influence functions) and the TripAdvisor semi-synthetic domain, whose data do not ship offline.
"""

from .asymptotics import asymptotic_mse, optimal_probs, surrogate_gradient
from .design import (
    DIADesigner,
    InstrumentPolicy,
    instrument_index,
    run_adaptive_experiment,
    subsample_size,
)
from .iv_data import SyntheticIV
from .tsls import is_identified, tsls, tsls_influence

__all__ = [
    "DIADesigner",
    "InstrumentPolicy",
    "SyntheticIV",
    "asymptotic_mse",
    "instrument_index",
    "is_identified",
    "optimal_probs",
    "run_adaptive_experiment",
    "subsample_size",
    "surrogate_gradient",
    "tsls",
    "tsls_influence",
]
