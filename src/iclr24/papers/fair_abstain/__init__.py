"""Fair Classifiers that Abstain without Harm (T. Yin, J.-F. Ton, R. Guo, Y. Yao, M. Liu,
Y. Liu; ICLR 2024; arXiv 2310.06205; official code tsy19/FAN).

What the paper does. A post-hoc wrapper (FAN) around a trained binary classifier that may
abstain. On a training sample an integer program picks which samples to abstain on (and which
accepted labels to flip) so that (i) each group abstains at most delta_g, (ii) a group-fairness
disparity (DP, equal opportunity, equalised odds) of the accepted predictions is <= eps, and
(iii) no group's error on what it still predicts exceeds its base error (up to eta). Two
surrogate networks learn the abstain and predict decisions for test data. The paper also
characterises when the program is feasible (how much abstention a tolerance needs).

How the code maps to it.
- :mod:`.ip`: :func:`solve_abstention_ip` (the exact 16-variable counts program by default, the
  3n-variable per-sample program of ``src/IP.py`` as reference, both ``scipy.optimize.milp``),
  :func:`assign_within_cells`, :func:`min_feasible_abstention` (exact, delta as a variable),
  :func:`min_abstention_dp_closed_form` (the same minimum in closed form, DP, abstention only),
  :class:`IPResult` (an infeasible setting is a status).
- :mod:`.abstainer`: :class:`FairAbstainer` (``fit(X, y, group)``, ``predict`` with -1 =
  abstain, ``abstain_mask``), :func:`abstention_report`, :func:`disparity_full_group` vs
  :func:`disparity_accepted_only`, the baseline :func:`per_group_confidence_abstention`,
  :func:`fit_surrogate` (early stopping on validation BCE, the official schedule).
- :mod:`.synthetic`: the spec's synthetic data with a binary group.
- ``claims.py``: ``ip_correctness``, ``abstention_vs_confidence_baseline``,
  ``feasibility_frontier``.

What differs / is out of reach. The paper's Adult, COMPAS and Law data download at call time, so
the claims use the spec's synthetic generator; LTD and FSCS are not reimplemented (the
per-group confidence-abstention baseline stands in). Surrogates are scikit-learn MLPs (64, 64)
without dropout instead of the official 300-unit torch nets (same stopping: validation BCE,
patience 20, 20-500 epochs); A's threshold is calibrated per group on the fit sample. In the
claims the base classifier is fitted on [x, z], the inputs FAN's surrogates get. Within a cell
samples are ranked closest-to-the-boundary first (``order="official"`` ranks by raw score, as
the official code). The paper's feasibility theorem was not retrievable offline: the claim
checks a closed form derived here from the same program (:func:`min_abstention_dp_closed_form`).

Usage::

    from iclr24.papers.fair_abstain import FairAbstainer
    fan = FairAbstainer(fitted_clf, fairness="dp", epsilon=0.03, delta=0.2).fit(X, y, group)
    pred = fan.predict(X_test, group_test)        # -1 = abstain (defer to a human)
"""

from .abstainer import (
    ABSTAIN,
    FairAbstainer,
    abstention_report,
    disparity_accepted_only,
    disparity_full_group,
    fit_surrogate,
    per_group_confidence_abstention,
)
from .ip import (
    FAIRNESS,
    IPResult,
    assign_within_cells,
    min_abstention_dp_closed_form,
    min_feasible_abstention,
    solve_abstention_ip,
)
from .synthetic import make_fairness_data

__all__ = [
    "ABSTAIN",
    "FAIRNESS",
    "FairAbstainer",
    "IPResult",
    "abstention_report",
    "assign_within_cells",
    "disparity_accepted_only",
    "disparity_full_group",
    "fit_surrogate",
    "make_fairness_data",
    "min_abstention_dp_closed_form",
    "min_feasible_abstention",
    "per_group_confidence_abstention",
    "solve_abstention_ip",
]
