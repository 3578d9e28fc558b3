"""Split-conformal quantiles and per-exit sets."""

import numpy as np
import pytest

from iclr24.papers.early_exit import (
    conformal_quantile,
    conformal_quantiles,
    conformal_sets,
    nonconformity_scores,
    set_coverage,
)


def test_quantile_is_the_kth_order_statistic():
    s = np.arange(1, 20) / 20.0          # n = 19
    # level ceil(20 * 0.9) / 19 = 18/19; numpy's position (n - 1) * level = 17.05, "higher"
    # rounds it up to index 18
    assert conformal_quantile(s, 0.1) == pytest.approx(s[18])
    assert conformal_quantile(s, 0.5) == pytest.approx(s[10])   # 10/19 * 18 = 9.47 -> 10
    assert conformal_quantile(s, 0.01) == pytest.approx(s[-1])    # level capped at 1
    assert conformal_quantile(np.array([]), 0.05) == pytest.approx(0.95)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.2, 1.5, True])
def test_alpha_outside_the_unit_interval_is_refused(alpha):
    with pytest.raises(ValueError, match="alpha"):
        conformal_quantile(np.ones(5), alpha)
    with pytest.raises(ValueError, match="alpha"):
        conformal_quantiles(np.ones(5), np.zeros(5, int), alpha, num_exits=2)


def test_per_exit_quantiles_and_the_fallback():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=100)
    e = np.where(np.arange(100) < 90, 0, 1)        # exit 1 has 10 samples -> fallback
    all_scores = np.stack([s, s * 0.5], 1)
    q = conformal_quantiles(s, e, 0.1, num_exits=2, all_scores=all_scores)
    assert q[0] == pytest.approx(conformal_quantile(s[e == 0], 0.1))
    assert q[1] == pytest.approx(conformal_quantile(all_scores[:, 1], 0.1))
    q = conformal_quantiles(s, e, 0.1, num_exits=2)
    assert q[1] == pytest.approx(conformal_quantile(s, 0.1))
    with pytest.raises(ValueError, match="val_exits"):
        conformal_quantiles(s, e + 5, 0.1, num_exits=2)


def test_exchangeable_data_reach_the_target_coverage():
    rng = np.random.default_rng(1)
    covs = []
    for _ in range(200):
        logits = rng.normal(size=(300, 5)) * 2
        p = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
        y = (rng.uniform(size=(300, 1)) > np.cumsum(p, 1)).sum(1)   # labels drawn from p
        q = conformal_quantile(nonconformity_scores(p[:150], y[:150]), 0.1)
        covs.append(set_coverage(conformal_sets(p[150:], q), y[150:])[0])
    assert 0.9 <= np.mean(covs) <= 0.9 + 2 / 151 + 0.01


def test_sets_and_coverage_by_hand():
    p = np.array([[0.7, 0.2, 0.1], [0.4, 0.35, 0.25]])
    S = conformal_sets(p, np.array([0.5, 0.7]))     # keep p >= 0.5 / p >= 0.3
    assert S.tolist() == [[True, False, False], [True, True, False]]
    assert set_coverage(S, np.array([0, 2])) == (0.5, 1.5)
    np.testing.assert_allclose(nonconformity_scores(p, np.array([1, 0])), [0.8, 0.6])
