"""Both ULTRA claims at smoke scale, each with its null arm (measured in the same run) put in
the method's place: the verdict must not be *holds*."""

from __future__ import annotations

import math

import pytest

from iclr24.claims import Claim, Estimate, Measurement, Scale
from iclr24.papers.ultra import claims as ultra_claims
from iclr24.papers.ultra.claims import zero_shot_real, zero_shot_synthetic

_FOLDS = ("nations", "kinships", "umls")
_ARMS = ("mrr_zero_shot", "mrr_random_init", "mrr_second_init", "mrr_distmult", "mrr_scratch",
         "mrr_finetuned")


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """One smoke run of each claim (seed 0), shared by the tests of this module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYSTOW_HOME", str(tmp_path_factory.mktemp("pystow")))
        return {name: getattr(ultra_claims, name)(Scale.SMOKE, 0)
                for name in ("zero_shot_synthetic", "zero_shot_real")}


def _value(v):
    return v.value if isinstance(v, Estimate) else v


@pytest.mark.parametrize("name", ["zero_shot_synthetic", "zero_shot_real"])
def test_claim_smoke(smoke, name):
    c = getattr(ultra_claims, name)
    assert isinstance(c, Claim) and c.control is not None
    m = smoke[name]
    assert isinstance(m, Measurement)
    assert all(math.isfinite(_value(v)) for v in m.metrics.values())
    for key in _ARMS:
        assert key in m.metrics
        assert 0 < _value(m.metrics[key]) <= 1, key
    assert c.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables
    if name == "zero_shot_real":
        assert [row["target"] for row in m.tables["leave_one_out"]] == list(_FOLDS)
        assert m.metrics["null_folds_passing"] in (0, 1, 2, 3)


def test_synthetic_null_arms_do_not_hold(smoke):
    m = smoke["zero_shot_synthetic"].metrics
    assert m["random_over_distmult"] == pytest.approx(
        m["mrr_random_init"] / m["mrr_distmult"])
    # the random-init network (this run) as the 'pre-trained' model
    null = {**m, "zero_shot_minus_random": 0.0,
            "zero_shot_over_distmult": m["random_over_distmult"]}
    # a second untrained initialisation (this run) as the 'pre-trained' model
    assert m["second_init_over_distmult"] == pytest.approx(
        m["mrr_second_init"] / m["mrr_distmult"])
    second = {**m, "zero_shot_minus_random": m["mrr_second_init"] - m["mrr_random_init"],
              "zero_shot_over_distmult": m["second_init_over_distmult"]}
    for metrics in (null, second):
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert zero_shot_synthetic.verdict(metrics, scale) != "holds"


def test_real_null_arm_does_not_hold(smoke):
    m = smoke["zero_shot_real"].metrics
    for g in _FOLDS:
        assert m[f"{g}_null_minus_random"] == pytest.approx(
            m[f"{g}_mrr_second_init"] - m[f"{g}_mrr_random_init"])
    # a second untrained network (this run) in zero-shot's place in every fold
    null = {**m, **{f"{g}_zero_shot_minus_random": m[f"{g}_null_minus_random"]
                    for g in _FOLDS}}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert zero_shot_real.verdict(null, scale) != "holds"
    # the random-init network itself as the zero-shot model: every difference is exactly 0
    zero = {**m, **{f"{g}_zero_shot_minus_random": 0.0 for g in _FOLDS}}
    assert zero_shot_real.verdict(zero, Scale.SMOKE) != "holds"
