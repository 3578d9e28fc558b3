"""Smoke runs of the EX-Graph claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.ex_graph.claims import protocols_end_to_end, x_features_null_control

E1_KEYS = ["lp_auc_gain_coupled", "lp_auc_gain_null", "wash_recall_gain_coupled",
           "wash_recall_gain_null", "lp_auc_with_x_coupled", "lp_auc_without_x_coupled"]


def test_x_features_null_control_smoke(check_smoke_claim):
    m = check_smoke_claim(x_features_null_control, E1_KEYS)
    assert isinstance(m.metrics["lp_auc_gain_coupled"], Estimate)
    assert {row["arm"] for row in m.tables["gains"]} == {"coupled", "null"}


def test_protocols_end_to_end_smoke(check_smoke_claim):
    m = check_smoke_claim(protocols_end_to_end, ["runs_finite", "runs_expected",
                                                 "matching_auc_gcn",
                                                 "matching_auc_gcn_uncoupled"])
    assert m.metrics["runs_expected"] == 10  # 3 models x 3 tasks + R-GCN matching
    assert {row["task"] for row in m.tables["runs"]} == {"link_prediction", "wash_trading",
                                                         "matching"}


def _same(values):
    """The baseline passed as the method: with-X and without-X identical, seed for seed."""
    return Estimate.difference(values, values, paired=True)


@pytest.mark.parametrize("scale", [Scale.SMOKE, Scale.SMALL])
def test_null_control_negative_controls(scale):
    zero = _same([0.71, 0.74, 0.69])
    gain = Estimate.difference([0.80, 0.82, 0.79], [0.71, 0.74, 0.69], paired=True)
    base = {"lp_auc_gain_coupled": gain, "lp_auc_gain_null": zero,
            "wash_recall_gain_coupled": gain, "wash_recall_gain_null": zero}
    extra = {f"{t}_{w}_{a}": 0.7 for t in ("lp_auc", "wash_recall")
             for w in ("with_x", "without_x") for a in ("coupled", "null")}
    assert x_features_null_control.verdict({**base, **extra}, scale) == "holds"
    # X features that do nothing (the method is the baseline): no gain where coupled
    no_x = {**base, "lp_auc_gain_coupled": zero, "wash_recall_gain_coupled": zero}
    assert x_features_null_control.verdict({**no_x, **extra}, scale) == "fails"
    # a leak: the same gain shows up when the generator carries no X-side signal
    leak = {**base, "lp_auc_gain_null": gain, "wash_recall_gain_null": gain}
    assert x_features_null_control.verdict({**leak, **extra}, scale) == "fails"
    # a noisy null that straddles ±0.01 cannot hold
    noisy = {**base, "lp_auc_gain_null": Estimate.difference([0.70, 0.74, 0.69],
                                                             [0.71, 0.72, 0.70], paired=True)}
    assert x_features_null_control.verdict({**noisy, **extra}, scale) != "holds"


def test_end_to_end_negative_controls():
    ok = {"runs_finite": 28, "runs_expected": 28,
          "matching_auc_gcn": Estimate.mean_of([0.66, 0.70, 0.68]),
          "matching_auc_gcn_uncoupled": 0.6}
    assert protocols_end_to_end.verdict(ok, Scale.SMALL) == "holds"
    # a chance-level matcher (decoder untrained, scores ~ random) does not hold
    chance = {**ok, "matching_auc_gcn": Estimate.mean_of([0.49, 0.52, 0.50])}
    assert protocols_end_to_end.verdict(chance, Scale.SMALL) != "holds"
    # a baseline that returned NaN fails
    broken = {**ok, "runs_finite": 27}
    assert protocols_end_to_end.verdict(broken, Scale.SMALL) == "fails"
