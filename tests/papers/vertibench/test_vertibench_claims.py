"""Every VertiBench claim runs at smoke scale and yields what its rule needs; determinism."""

import math

import numpy as np
import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.vertibench.claims import (
    algorithm_sensitivity,
    alpha_controls_importance,
    beta_controls_correlation,
)


@pytest.mark.parametrize("claim_obj", [alpha_controls_importance, beta_controls_correlation,
                                       algorithm_sensitivity], ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert m.tables and m.figure is not None
    claim_obj.verdict(m.metrics, Scale.SMOKE)  # evaluates without error (value not asserted)


def test_same_seed_same_numbers():
    a = alpha_controls_importance(Scale.SMOKE, 3)
    b = alpha_controls_importance(Scale.SMOKE, 3)
    assert a.metrics == b.metrics
    assert a.tables == b.tables


def test_algorithm_sensitivity_rule_reads_intervals():
    """Negative control: the same algorithm on both sides of a gap (no sensitivity at all)
    gives gaps that do not move with alpha or beta, and the rule does not hold."""
    from iclr24.claims import Estimate

    gaps = [0.004, -0.002, 0.010, 0.001, -0.006]
    null = {"gap_alpha_diff": Estimate.difference(gaps, gaps[::-1]),
            "gap_beta_diff": Estimate.difference(gaps, gaps[1:] + gaps[:1]),
            "splitnn_acc_range": 0.004}
    assert algorithm_sensitivity.verdict(null, Scale.SMALL) == "inconclusive"
    flat = dict(null, gap_alpha_diff=Estimate.difference([0.0, 0.0, 0.0], [0.01, 0.01, 0.01]))
    assert algorithm_sensitivity.verdict(flat, Scale.SMALL) == "fails"


def test_alpha_rule_does_not_hold_for_a_splitter_that_ignores_alpha():
    """Negative control: random equal-size splits drawn at every 'alpha' (the baseline passed
    as the method), with real per-feature importances, give no alpha trend."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from iclr24.papers.vertibench import (
        RandomEqualSplitter,
        estimate_alpha,
        importance_shares,
        party_importance_from_shapley,
    )
    from iclr24.papers.vertibench.claims import _importance_rule_metrics

    X, y = load_breast_cancer(return_X_y=True)
    Z = StandardScaler().fit_transform(X)
    coef = LogisticRegression(max_iter=2000).fit(Z, y).coef_[0]
    phi = np.abs(Z * coef)  # linear-model Shapley values |x_j w_j| (rows x features)
    alphas = [0.1, 1.0, 10.0, 100.0]
    hats, stds = {}, {}
    for i, a in enumerate(alphas):
        splitter = RandomEqualSplitter(4, rng=i)
        hats[a], stds[a] = [], []
        for _ in range(10):
            imp = party_importance_from_shapley(phi, splitter.split_indices(X.shape[1]))
            hats[a].append(estimate_alpha(imp))
            stds[a].append(float(np.std(importance_shares(imp))))
    metrics = _importance_rule_metrics(hats, stds)
    assert alpha_controls_importance.verdict(metrics, Scale.SMALL) != "holds"
    assert abs(metrics["spearman_log_alpha"]) < 0.7


def test_beta_rule_does_not_hold_for_a_splitter_that_ignores_beta():
    """Negative control: random equal-size splits at every requested beta, measured on the
    Icor scale of a real fit, neither hit beta nor order Icor by beta."""
    from sklearn.datasets import make_classification

    from iclr24.papers.vertibench import BRKGAConfig, CorrelationSplitter, RandomEqualSplitter
    from iclr24.papers.vertibench.claims import _correlation_rule_metrics

    X, _ = make_classification(n_samples=300, n_features=12, n_informative=4, n_redundant=4,
                               random_state=0)
    ga = BRKGAConfig(10, 30, 5, 0.7, 10)
    cs = CorrelationSplitter(3, rng=0, fit_brkga=ga, split_brkga=ga).fit(X)
    rand = RandomEqualSplitter(3, rng=1)
    hats, icors = {}, {}
    for b in (0.0, 0.5, 1.0):
        parts = [rand.split_indices(12) for _ in range(3)]
        hats[b] = [cs.beta_of(p) for p in parts]
        icors[b] = [cs.icor_of(p) for p in parts]
    metrics = _correlation_rule_metrics(hats, icors)
    assert beta_controls_correlation.verdict(metrics, Scale.SMALL) != "holds"
    assert metrics["max_abs_beta_error"] > 0.1
