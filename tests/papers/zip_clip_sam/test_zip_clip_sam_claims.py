"""Negative controls of the Zip claims' rules, and one run of each smoke claim."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.zip_clip_sam import claims

SEEDS_A = [0.42, 0.40, 0.45]


def _touching_metrics(zip_ap50, cam_ap50, sp_ap50, zip_err, cam_err, rgb_ap50=None):
    rgb_ap50 = cam_ap50 if rgb_ap50 is None else rgb_ap50
    return {"ap50_gain_vs_cam": Estimate.difference(zip_ap50, cam_ap50, paired=True),
            "ap50_gain_rgb_vs_cam": Estimate.difference(rgb_ap50, cam_ap50, paired=True),
            "ap50_gain_vs_superpixel": Estimate.difference(zip_ap50, sp_ap50, paired=True),
            "count_error_reduction_vs_cam": Estimate.difference(cam_err, zip_err, paired=True)}


def test_touching_rule_holds_only_for_a_clear_win():
    win = _touching_metrics([0.6, 0.62, 0.65], SEEDS_A, [0.5, 0.5, 0.52], [1.0, 1.1, 0.9],
                            [2.0, 2.1, 2.2])
    assert claims.touching_instances.verdict(win, Scale.SMALL) == "holds"


def test_touching_negative_control_baseline_as_method():
    # Zip with its discovery step removed is the CAM baseline: zero gains
    null = _touching_metrics(SEEDS_A, SEEDS_A, [0.3, 0.3, 0.35], [2.0, 2.1, 2.2],
                             [2.0, 2.1, 2.2])
    assert claims.touching_instances.verdict(null, Scale.SMALL) != "holds"
    plain = {"ap50_gain_vs_cam": 0.0, "ap50_gain_vs_superpixel": 0.1,
             "count_error_reduction_vs_cam": 0.0, "ap50_gain_rgb_vs_cam": 0.0}
    assert claims.touching_instances.verdict(plain, Scale.SMOKE) == "fails"
    # a small gain (below the expected 10 AP50 points) does not hold either
    small_gain = _touching_metrics([0.45, 0.43, 0.48], SEEDS_A, [0.3, 0.3, 0.3],
                                   [1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
    assert claims.touching_instances.verdict(small_gain, Scale.SMALL) == "fails"


def test_touching_null_rgb_clusters_passing_makes_it_inconclusive():
    # clustering raw colour also clears +10 AP50 over CAM: the scenes cannot show that the
    # learned layer matters, whatever Zip's own numbers are
    rgb_wins = _touching_metrics([0.6, 0.62, 0.65], SEEDS_A, [0.5, 0.5, 0.52], [1.0, 1.1, 0.9],
                                 [2.0, 2.1, 2.2], rgb_ap50=[0.58, 0.6, 0.63])
    assert claims.touching_instances.verdict(rgb_wins, Scale.SMALL) == "inconclusive"


def test_layer_negative_control_rgb_or_last_best():
    flat = {"ap50_gain_best_vs_rgb": Estimate.difference(SEEDS_A, SEEDS_A, paired=True),
            "ap50_gain_best_vs_last": Estimate.difference([0.5, 0.5, 0.6], SEEDS_A,
                                                          paired=True),
            "ap50_gain_best_vs_rgb_untrained": -0.1, "ap50_gain_best_vs_last_untrained": -0.1}
    assert claims.layer_matters.verdict(flat, Scale.SMALL) != "holds"
    last_best = {"ap50_gain_best_vs_rgb": 0.1, "ap50_gain_best_vs_last": -0.05,
                 "ap50_gain_best_vs_rgb_untrained": -0.1, "ap50_gain_best_vs_last_untrained": -0.1}
    assert claims.layer_matters.verdict(last_best, Scale.SMOKE) == "fails"
    good = {"ap50_gain_best_vs_rgb": Estimate.difference([0.5, 0.52, 0.55], SEEDS_A,
                                                         paired=True),
            "ap50_gain_best_vs_last": Estimate.difference([0.5, 0.52, 0.55], [0.3, 0.3, 0.31],
                                                          paired=True),
            "ap50_gain_best_vs_rgb_untrained": Estimate.difference(SEEDS_A, [0.3, 0.3, 0.31],
                                                                   paired=True),
            "ap50_gain_best_vs_last_untrained": Estimate.difference([0.2, 0.2, 0.21], SEEDS_A,
                                                                    paired=True)}
    assert claims.layer_matters.verdict(good, Scale.SMALL) == "holds"
    # the untrained network's middle stage passes too: the layer wins by its receptive field,
    # not by what was learned, so the same numbers read inconclusive
    random_passes = {**good, "ap50_gain_best_vs_last_untrained": Estimate.difference(
        [0.5, 0.52, 0.55], [0.3, 0.3, 0.31], paired=True)}
    assert claims.layer_matters.verdict(random_passes, Scale.SMALL) == "inconclusive"


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """CI's fresh clone: the stand-in is trained inside the smoke run."""
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))


def test_smoke_claims_run(check_smoke_claim, empty_cache):
    m = check_smoke_claim(claims.touching_instances,
                          ["ap50_gain_vs_cam", "ap50_gain_vs_superpixel",
                           "count_error_reduction_vs_cam", "ap50_touching_zip",
                           "ap50_touching_cam", "ap50_touching_superpixel", "count_error_zip",
                           "ap50_gain_rgb_vs_cam", "ap50_touching_zip_rgb"])
    assert {row["arm"] for row in m.tables["runs"]} == {"zip", "cam", "superpixel", "zip_rgb"}
    m = check_smoke_claim(claims.layer_matters,
                          ["ap50_rgb", "ap50_stage1", "ap50_stage2", "ap50_stage3",
                           "ap50_stage4", "ap50_gain_best_vs_rgb", "ap50_gain_best_vs_last",
                           "ap50_stage2_untrained", "ap50_gain_best_vs_rgb_untrained",
                           "ap50_gain_best_vs_last_untrained"])
    assert {row["features"] for row in m.tables["runs"]} == {"trained", "untrained"}
    assert m.metrics["best_stage"] in (1.0, 2.0, 3.0)
