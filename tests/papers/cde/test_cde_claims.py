"""cde claims: the smoke runs evaluate, and each rule refuses a null or broken method."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.cde import claims

SCALES = [Scale.SMOKE, Scale.SMALL]
ZERO = Estimate.difference([10.0, 0.0, 5.0], [10.0, 0.0, 5.0], paired=True)  # baseline as method


def test_sparse_maze_smoke_runs(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claims.sparse_maze, ["gain_vs_best_baseline", "score_cde",
                                               "score_bc", "finite_losses"])
    assert m.metrics["finite_losses"] == 1 and m.metrics["expert_return"] > 200


def test_data_scarcity_smoke_runs(check_smoke_claim, one_torch_thread):
    check_smoke_claim(claims.data_scarcity, ["gain_1pct_vs_best", "retention_cde",
                                             "score_cde_1pct", "score_bc_100pct"])


@pytest.mark.parametrize("scale", SCALES)
def test_sparse_maze_refuses_the_baseline_as_method(scale):
    assert claims.sparse_maze.verdict({"finite_losses": 1.0, "gain_vs_best_baseline": ZERO},
                                      scale) == "fails"
    # diverged losses never hold, whatever the score
    assert claims.sparse_maze.verdict({"finite_losses": 0.0, "gain_vs_best_baseline": 50.0},
                                      scale) == "fails"


@pytest.mark.parametrize("scale", SCALES)
def test_data_scarcity_refuses_null_methods(scale):
    ones = Estimate.mean_of([1.0, 1.0, 1.0])
    assert claims.data_scarcity.verdict(
        {"finite_losses": 1.0, "gain_1pct_vs_best": ZERO, "retention_cde": ones},
        scale) == "fails"
    # a method that collapses at 1% (retains nothing) fails even if the baselines collapse too
    collapsed = Estimate.mean_of([0.0, 0.02, 0.01])
    assert claims.data_scarcity.verdict(
        {"finite_losses": 1.0, "gain_1pct_vs_best": Estimate.mean_of([1.0, 2.0, 3.0]),
         "retention_cde": collapsed}, scale) == "fails"


def test_tabular_smoke_and_its_rule_refuses_optidice_and_an_unnormalised_v_step(
        check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claims.tabular_check, ["dual_rel_error", "mean_w_error",
                                                 "ood_ratio_max", "optidice_ood_ratio_max"]).metrics
    assert claims.tabular_check.verdict(m, Scale.SMOKE) == "holds"
    # key step removed: no OOD term (OptiDICE's ratios) -> the cap is violated
    broken = dict(m, ood_ratio_max=m["optidice_ood_ratio_max"])
    assert claims.tabular_check.verdict(broken, Scale.SMOKE) == "fails"
    # the λ-normaliser removed leaves E_D[w] away from 1
    assert claims.tabular_check.verdict(dict(m, mean_w_error=0.2), Scale.SMALL) == "fails"
