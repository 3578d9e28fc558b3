"""Smoke runs of both LRR claims, and negative controls of their rules."""

import pytest

from iclr24.claims import Scale, seed_difference
from iclr24.papers.lrr import ExperimentConfig, run_arm
from iclr24.papers.lrr.claims import motion_stream, surrogate_tasks


@pytest.mark.parametrize(
    "claim_obj, keys",
    [(surrogate_tasks, ["gain", "gain_contained", "lrr_acc", "lrr_acc_tf", "lrr_look_acc",
                        "final_only_acc", "final_only_acc_contained"]),
     (motion_stream, ["motion_gain", "motion_gain_contained", "lrr_acc", "spatial_only_acc"])],
    ids=lambda x: getattr(x, "name", ""))
def test_smoke_claim(claim_obj, keys, check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claim_obj, keys)
    assert m.figure is not None and len(m.tables["per_seed"]) == 2


def _paired(a, b):
    return seed_difference(a, b)


def test_surrogate_rule_negative_control():
    """The baseline passed as the method: zero paired gain, the rule does not hold; a method
    better overall but not on the contained subset does not hold either."""
    base = [0.31, 0.28, 0.33]
    null = {"gain": _paired(base, base), "gain_contained": _paired(base, base)}
    assert surrogate_tasks.verdict(null, Scale.SMALL) == "fails"
    half = {"gain": _paired([0.5, 0.52, 0.49], base),
            "gain_contained": _paired([0.30, 0.35, 0.31], base)}
    assert surrogate_tasks.verdict(half, Scale.SMALL) != "holds"
    good = {"gain": _paired([0.55, 0.52, 0.58], base),
            "gain_contained": _paired([0.6, 0.5, 0.55], base)}
    assert surrogate_tasks.verdict(good, Scale.SMALL) == "holds"


def test_motion_rule_negative_control():
    base = [0.4, 0.42, 0.38]
    null = {"motion_gain": _paired(base, base), "motion_gain_contained": _paired(base, base)}
    assert motion_stream.verdict(null, Scale.SMALL) == "fails"
    noisy = {"motion_gain": _paired([0.41, 0.40, 0.40], base),
             "motion_gain_contained": _paired([0.45, 0.40, 0.36], base)}
    assert motion_stream.verdict(noisy, Scale.SMALL) != "holds"


def test_null_method_arm_measured(one_torch_thread):
    """Measured negative control: scoring the final-answer-only arm against itself (same data,
    same seed) gives exactly zero gain, which the rule refuses."""
    from iclr24.papers.lrr import make_data

    cfg = ExperimentConfig(n_train=40, n_test=30, n_frames=8, steps=5, batch_size=8)
    data = make_data(cfg, 0)
    a = run_arm("final_only", cfg, 0, data)
    b = run_arm("final_only", cfg, 0, data)
    assert a == b
    metrics = {"gain": a["acc"] - b["acc"], "gain_contained": a["acc_contained"] - b["acc_contained"]}
    assert surrogate_tasks.verdict(metrics, Scale.SMOKE) == "fails"
    with pytest.raises(ValueError, match="arm must be one of"):
        run_arm("lrr_plus", cfg, 0, data)
