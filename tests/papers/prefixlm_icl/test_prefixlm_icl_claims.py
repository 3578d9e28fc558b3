"""Smoke runs of the three claims, each with its null arm (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers (holds / fails / control
false)."""

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.prefixlm_icl import ICLTrainConfig, sample_icl_batch
from iclr24.papers.prefixlm_icl.claims import (
    _lsa_metrics,
    _rel_gap,
    _train_arms,
    _trained_metrics,
    lsa_convergence,
    stationary_vs_n,
    trained_prefix_vs_causal,
)

VERDICTS = {"holds", "fails", "inconclusive"}
KEYS = {
    "lsa_convergence": {"ratio", "prefix_rel_mse", "causal_rel_mse", "prefix_gap", "causal_gap",
                        "eta_lmax", "null_prefix_rel_mse"},
    "stationary_vs_n": {"rel_mu_gap", "mu_gap", "zero_mu_gap", "null_rel_mu_gap",
                        "null_rel_mu_gap_low", "prefix_max_mse", "rel_mu_monotone",
                        "causal_mse_mu3"},
    "trained_prefix_vs_causal": {"log_ratio", "null_log_ratio", "null_log_ratio_low",
                                 "prefix_minus_online_gd", "ratio", "prefix_mse", "causal_mse",
                                 "prefix_null_mse", "lsq_mse", "online_gd_mse",
                                 "zero_predictor_mse", "n_seeds"},
}


@pytest.fixture(scope="module")
def smoke():
    return {c.name: c(Scale.SMOKE, 0)
            for c in (lsa_convergence, stationary_vs_n, trained_prefix_vs_causal)}


@pytest.mark.parametrize("claim_obj", [lsa_convergence, stationary_vs_n, trained_prefix_vs_causal],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj, smoke):
    m = smoke[claim_obj.name]
    assert isinstance(m, Measurement)
    assert KEYS[claim_obj.name] <= set(m.metrics)
    for v in m.metrics.values():
        assert math.isfinite(v.value if isinstance(v, Estimate) else v)
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in VERDICTS
    assert m.figure is not None


def test_exact_claims_hold_at_smoke():
    # exact recursions, no training: a failure here is a bug, not noise
    assert lsa_convergence.verdict(lsa_convergence(Scale.SMOKE, 1).metrics, "smoke") == "holds"
    assert stationary_vs_n.verdict(stationary_vs_n(Scale.SMOKE, 1).metrics, "smoke") == "holds"


def test_lsa_null_arm_from_the_run(smoke):
    m = smoke["lsa_convergence"].metrics
    assert 0 < m["eta_lmax"] < 2  # the official eta = 0.04 is inside the stability bound
    # the null arm (context labels of another prompt) cannot predict the queries
    assert m["null_prefix_rel_mse"] > 0.1
    null = {**m, "prefix_rel_mse": m["null_prefix_rel_mse"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert lsa_convergence.verdict(null, scale) != "holds"
    # a step size beyond 2 / lambda_max: the test bed cannot tell
    unstable = {**m, "eta_lmax": 2.5}
    assert lsa_convergence.judge(unstable, Scale.SMALL).reason.startswith("the test bed")
    assert lsa_convergence.verdict(unstable, Scale.SMALL) == "inconclusive"


def test_lsa_negative_control_baseline_as_method():
    b = sample_icl_batch(8, 40, 20, 16, x_dist="uniform", rng=3)
    X, y, Xq, yq = b.x[:, :40], b.y[:, :40, 0], b.x[:, 40:], b.y[:, 40:, 0]
    controls = {"eta_lmax": 1.0, "null_prefix_rel_mse": 1.0}
    metrics, _ = _lsa_metrics(X, y, Xq, yq, 200, 0.04, method="causal", baseline="causal")
    assert lsa_convergence.verdict({**metrics, **controls}, "small") != "holds"
    # key step removed: too few layers to reach the least-squares solution
    metrics, _ = _lsa_metrics(X, y, Xq, yq, 5, 0.04)
    assert lsa_convergence.verdict({**metrics, **controls}, "small") != "holds"


def test_rel_gap_known_answer():
    # causal 10x worse relative to the zero predictor at "hi": log10 = 1
    assert _rel_gap([2.0, 2.0], [10.0, 10.0], [0.1, 0.3], [10.0, 10.0]) == pytest.approx(1.0)
    # the same growth in both: scale alone, 0
    assert _rel_gap([8.0], [40.0], [1.0], [5.0]) == pytest.approx(0.0)


def test_stationary_null_arms_from_the_run(smoke):
    m = smoke["stationary_vs_n"].metrics
    # the old rule's defect: the input-ignoring zero predictor's absolute gap exceeds 1
    assert m["zero_mu_gap"].value > 1
    # null arm 1 (this run): a second centred batch in the place of mu = 3
    null = {**m, "rel_mu_gap": m["null_rel_mu_gap"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert stationary_vs_n.verdict(null, scale) != "holds"
    # null arm 2: the zero predictor as the method: its relative gap is exactly 0
    zero = {**m, "rel_mu_gap": 0.0, "rel_mu_monotone": 0.0}
    assert stationary_vs_n.verdict(zero, Scale.SMALL) == "fails"
    # the causal fixed point passed as the (prefix) method
    swapped = {**m, "prefix_max_mse": m["causal_mse_mu0"]}
    assert stationary_vs_n.verdict(swapped, Scale.SMALL) != "holds"
    # a null arm that passes the rule: the test bed cannot tell
    biased = {**m, "null_rel_mu_gap_low": 0.2}
    assert stationary_vs_n.verdict(biased, Scale.SMALL) == "inconclusive"


def test_trained_smoke_is_never_a_verdict(smoke):
    m = smoke["trained_prefix_vs_causal"].metrics
    assert m["n_seeds"] == 1
    for scale in (Scale.SMOKE, Scale.SMALL):
        j = trained_prefix_vs_causal.judge(m, scale)
        assert j.verdict == "inconclusive" and j.reason.startswith("the test bed")
    # the reference errors: least squares is exact (n > d, noiseless), zero predictor ~ d
    assert m["lsq_mse"] < 1e-10
    assert m["lsq_mse"] < m["online_gd_mse"] < m["zero_predictor_mse"]


@pytest.fixture(scope="module")
def tiny_rows(one_torch_thread_module):
    cfg = ICLTrainConfig(d=3, n_context=8, n_query=2, steps=25, batch=32, lr=3e-3)
    kw = {"d_model": 16, "n_layers": 2, "n_heads": 2, "max_len": 10}
    return [{"seed": s, **_train_arms(s, cfg, kw, 128)} for s in range(3)]


@pytest.fixture(scope="module")
def one_torch_thread_module():
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_train_arms_three_seeds_null_in_method_place(tiny_rows):
    for r in tiny_rows:
        assert {"prefix", "causal", "prefix_null", "lsq", "online_gd", "zero"} <= set(r)
        assert r["prefix"] != r["prefix_null"]  # a different initialisation
    m = _trained_metrics(tiny_rows)
    assert m["n_seeds"] == 3 and isinstance(m["log_ratio"], Estimate)
    np.testing.assert_allclose(m["log_ratio"].value, np.mean(
        [np.log(r["causal"] / r["prefix"]) for r in tiny_rows]))
    assert m["null_log_ratio_low"] == m["null_log_ratio"].low
    # the null arm (second prefix init) in the causal model's place: not holds
    null = {**m, "log_ratio": m["null_log_ratio"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert trained_prefix_vs_causal.verdict(null, scale) != "holds"


def _hand(log_ratio, null, prefix_minus_online_gd, n_seeds=3):
    return {"log_ratio": Estimate.mean_of(log_ratio), "null_log_ratio": Estimate.mean_of(null),
            "null_log_ratio_low": Estimate.mean_of(null).low,
            "prefix_minus_online_gd": Estimate.mean_of(prefix_minus_online_gd),
            "n_seeds": n_seeds}


def test_trained_rule_and_control_hand_numbers():
    good = _hand([0.5, 0.6, 0.55], [0.05, -0.1, 0.02], [-0.1, -0.12, -0.09])
    assert trained_prefix_vs_causal.verdict(good, "small") == "holds"
    worse = _hand([-0.5, -0.6, -0.55], [0.05, -0.1, 0.02], [-0.1, -0.12, -0.09])
    assert trained_prefix_vs_causal.verdict(worse, "small") == "fails"
    noisy = _hand([0.2, -0.1, 0.05], [0.05, -0.1, 0.02], [-0.1, -0.12, -0.09])
    assert trained_prefix_vs_causal.verdict(noisy, "small") == "inconclusive"
    # positive control false: the prefix model does not beat online GD (far from its limit)
    far = _hand([0.5, 0.6, 0.55], [0.05, -0.1, 0.02], [0.1, 0.12, 0.09])
    assert trained_prefix_vs_causal.judge(far, "small").reason.startswith("the test bed")
    # the null arm passes the rule: initialisation alone gives the gap
    biased = _hand([0.5, 0.6, 0.55], [0.5, 0.52, 0.55], [-0.1, -0.12, -0.09])
    assert trained_prefix_vs_causal.verdict(biased, "small") == "inconclusive"
    # same mask twice
    same = _hand([0.0, 0.0, 0.0], [0.05, -0.1, 0.02], [-0.1, -0.12, -0.09])
    assert trained_prefix_vs_causal.verdict(same, "small") != "holds"


def test_lsa_claim_is_deterministic():
    a = lsa_convergence(Scale.SMOKE, 4).metrics
    b = lsa_convergence(Scale.SMOKE, 4).metrics
    assert a == b
