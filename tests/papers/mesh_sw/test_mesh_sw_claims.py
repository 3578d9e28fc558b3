"""mesh_sw claims: smoke runs evaluate, and each rule refuses a null method (negative controls)."""

import numpy as np
import pytest
import torch

from iclr24.claims import Estimate, Scale
from iclr24.papers.mesh_sw import claims, icosphere, sample_surface, sliced_wasserstein


def test_smoke_claims_run(check_smoke_claim, one_torch_thread):
    check_smoke_claim(claims.deformation_quality,
                      ["hd90_ratio", "cd_ratio", "sif_diff", "cd_sw_varifold", "cd_chamfer"])
    check_smoke_claim(claims.loss_scaling, ["sw_slope", "chamfer_slope", "time_ratio_max_n"])
    m = check_smoke_claim(claims.sample_rate, ["sw_slope", "chamfer_slope"])
    assert m.metrics["sw_slope"].value < 0  # the sampling error shrinks with n


@pytest.mark.parametrize("scale", [Scale.SMOKE, Scale.SMALL])
def test_deformation_rule_refuses_the_baseline_as_method(scale):
    # Chamfer passed as the method: every ratio is exactly 1 and the SIF difference 0
    ones = Estimate.mean_of([1.0, 1.0, 1.0])
    metrics = {"hd90_ratio": ones, "cd_ratio": ones, "sif_diff": Estimate.mean_of([0.0, 0.0, 0.0])}
    assert claims.deformation_quality.verdict(metrics, scale) != "holds"
    # an untrained SW arm (key step removed): far worse than the trained baseline
    untrained = {"hd90_ratio": 3.0, "cd_ratio": 5.0, "sif_diff": 0.0}
    assert claims.deformation_quality.verdict(untrained, scale) == "fails"


@pytest.mark.parametrize("scale", [Scale.SMOKE, Scale.SMALL])
def test_scaling_rule_refuses_the_baseline_as_method(scale):
    metrics = {"sw_slope": 2.0, "chamfer_slope": 2.0, "time_ratio_max_n": 1.0}
    assert claims.loss_scaling.verdict(metrics, scale) == "fails"


def test_rate_rule_refuses_a_discrepancy_that_does_not_decay(one_torch_thread):
    # SW between samples of two *different* surfaces converges to SW(mu, nu) > 0: slope ~ 0
    v, f = icosphere(2)
    verts, faces = torch.tensor(v, dtype=torch.float32), torch.tensor(f)
    g = torch.Generator().manual_seed(0)
    ns, means = [100, 400, 1600], []
    for n in ns:
        vals = [float(sliced_wasserstein(sample_surface(verts, faces, n, g)[0],
                                         1.3 * sample_surface(verts, faces, n, g)[0],
                                         generator=g)) for _ in range(3)]
        means.append(np.mean(vals))
    slope = float(np.polyfit(np.log(ns), np.log(means), 1)[0])
    assert claims.sample_rate.verdict({"sw_slope": slope, "chamfer_slope": -1.0},
                                      Scale.SMALL) == "fails"
    # Chamfer's own n^-1 rate passed as the method also fails the n^-1/2 rule
    assert claims.sample_rate.verdict({"sw_slope": Estimate(-1.0, -1.1, -0.9, 10, 0.95, "given"),
                                       "chamfer_slope": -1.0}, Scale.SMALL) == "fails"
