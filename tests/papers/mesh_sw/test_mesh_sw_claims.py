"""mesh_sw claims: smoke runs evaluate; each claim's null arm, measured in the same run and put
in the method's place, does not give holds at the reproduction scale; the rules and controls on
hand-made numbers (holds / fails / the test bed cannot tell)."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.mesh_sw import claims


def _est(value, half=0.01, n=3):
    return Estimate(value, value - half, value + half, n, 0.95, "given")


def test_smoke_claims_run_and_their_null_arms_do_not_hold(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claims.deformation_quality,
                          ["hd90_ratio", "cd_ratio", "undertrained_hd90_ratio",
                           "undertrained_cd_ratio", "converged_hd90_change",
                           "chamfer_hd90_over_init", "sif_diff", "sif_pct_folded_check",
                           "cd_sw_varifold", "cd_chamfer", "hd90_ratio_sw_samples",
                           "hd90_ratio_sw_centroid"])
    assert m.metrics["sif_pct_folded_check"] > 0  # the SIF detector sees a deliberate fold
    # the null arm (the SW-varifold fit at a tenth of the budget, this run) as the method: not
    # holds at small, even with the convergence and baseline controls forced true
    null = {**m.metrics, "hd90_ratio": m.metrics["undertrained_hd90_ratio"],
            "cd_ratio": m.metrics["undertrained_cd_ratio"]}
    assert claims.deformation_quality.verdict(null, Scale.SMALL) != "holds"
    forced = {**null, "converged_hd90_change": 0.0, "chamfer_hd90_over_init": 0.1}
    assert claims.deformation_quality.verdict(forced, Scale.SMALL) != "holds"

    m = check_smoke_claim(claims.loss_scaling, ["sw_slope", "chamfer_slope", "null_slope",
                                                "time_ratio_max_n"])
    # the null arm (constant work timed in every slot) as both losses: not holds
    null = {**m.metrics, "sw_slope": m.metrics["null_slope"],
            "chamfer_slope": m.metrics["null_slope"], "time_ratio_max_n": 1.0}
    assert claims.loss_scaling.verdict(null, Scale.SMALL) != "holds"

    m = check_smoke_claim(claims.sample_rate, ["sw_slope", "chamfer_slope", "null_slope",
                                               "sphere_sw2_over_closed_form", "sphere_sw_slope"])
    assert m.metrics["sw_slope"].value < 0  # the sampling error shrinks with n
    # the null arm (samples of two different surfaces) as the method: not holds
    null = {**m.metrics, "sw_slope": m.metrics["null_slope"]}
    assert claims.sample_rate.verdict(null, Scale.SMALL) != "holds"


_DEFORM_OK = {"hd90_ratio": _est(0.9), "cd_ratio": _est(1.0), "converged_hd90_change": 0.02,
              "chamfer_hd90_over_init": 0.2, "undertrained_hd90_ratio": _est(2.0)}


def test_deformation_rule_holds_fails_and_control():
    assert claims.deformation_quality.verdict(_DEFORM_OK, Scale.SMALL) == "holds"
    # Chamfer passed as the method: every ratio exactly 1
    assert claims.deformation_quality.verdict(
        {**_DEFORM_OK, "hd90_ratio": _est(1.0, 0.0), "cd_ratio": _est(1.0, 0.0)},
        Scale.SMALL) == "fails"
    assert claims.deformation_quality.verdict({**_DEFORM_OK, "hd90_ratio": _est(1.1)},
                                              Scale.SMALL) == "fails"
    assert claims.deformation_quality.verdict({**_DEFORM_OK, "cd_ratio": _est(1.5)},
                                              Scale.SMALL) == "fails"
    # the test bed cannot tell: not converged, a straw baseline, or the undertrained null wins
    for broken in ({"converged_hd90_change": 0.2}, {"chamfer_hd90_over_init": 0.8},
                   {"undertrained_hd90_ratio": _est(0.95)}):
        assert claims.deformation_quality.verdict({**_DEFORM_OK, **broken},
                                                  Scale.SMALL) == "inconclusive"
    # NaN never decides
    assert claims.deformation_quality.verdict({**_DEFORM_OK, "hd90_ratio": float("nan")},
                                              Scale.SMALL) == "inconclusive"


_SCALING_OK = {"sw_slope": _est(1.05), "chamfer_slope": _est(1.95), "time_ratio_max_n": _est(5.0),
               "null_slope": _est(0.02, 0.05)}


def test_scaling_rule_holds_fails_and_control():
    assert claims.loss_scaling.verdict(_SCALING_OK, Scale.SMALL) == "holds"
    # the baseline as the method (quadratic both ways, ratio 1): fails
    assert claims.loss_scaling.verdict({**_SCALING_OK, "sw_slope": _est(1.95),
                                        "time_ratio_max_n": _est(1.0, 0.0)},
                                       Scale.SMALL) == "fails"
    # constant work tilted by drift / noise: the slopes cannot be told from noise
    assert claims.loss_scaling.verdict({**_SCALING_OK, "null_slope": _est(0.5)},
                                       Scale.SMALL) == "inconclusive"


_RATE_OK = {"sw_slope": _est(-0.5, 0.03), "sphere_sw2_over_closed_form": _est(1.0, 0.03),
            "null_slope": _est(-0.05)}


def test_rate_rule_holds_fails_and_control():
    assert claims.sample_rate.verdict(_RATE_OK, Scale.SMALL) == "holds"
    # Chamfer's own n^-1 rate, or no decay at all, as the method: fails
    for slope in (-1.0, -0.05):
        assert claims.sample_rate.verdict({**_RATE_OK, "sw_slope": _est(slope)},
                                          Scale.SMALL) == "fails"
    # the estimator misses the sphere's closed form, or the null also decays like n^-1/2
    for broken in ({"sphere_sw2_over_closed_form": _est(1.3)},
                   {"sphere_sw2_over_closed_form": _est(0.7)}, {"null_slope": _est(-0.5)}):
        assert claims.sample_rate.verdict({**_RATE_OK, **broken}, Scale.SMALL) == "inconclusive"


@pytest.mark.parametrize("n", [3, 10, 40])
def test_sphere_closed_form_for_sw2(n, one_torch_thread):
    # E SW_2^2 between two n-samples of the unit sphere = 4 / (3 (n + 1)) (Archimedes: every
    # projection is Uniform[-1, 1]); checked here by Monte Carlo with many replicates
    import numpy as np
    import torch

    from iclr24.papers.mesh_sw import sliced_wasserstein

    g = torch.Generator().manual_seed(n)
    vals = [float(sliced_wasserstein(claims._sphere_samples(n, g), claims._sphere_samples(n, g),
                                     n_projections=50, generator=g)) ** 2 for _ in range(400)]
    assert np.mean(vals) == pytest.approx(4 / (3 * (n + 1)), rel=0.08)
