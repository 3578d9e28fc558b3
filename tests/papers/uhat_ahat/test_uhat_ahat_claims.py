"""Smoke runs of the two claims and their negative controls."""

import math

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.uhat_ahat import compile_uhat, random_formula, random_words
from iclr24.papers.uhat_ahat.claims import (
    ALPHABET,
    PREDICATES,
    _agreement,
    ahat_counting,
    uhat_compiler_exact,
)


def _finite(m):
    return all(math.isfinite(v.value if isinstance(v, Estimate) else v) for v in m.metrics.values())


def test_uhat_smoke_claim():
    m = uhat_compiler_exact(Scale.SMOKE, 0)
    assert isinstance(m, Measurement) and _finite(m)
    assert {"agreement_float64", "agreement_fraction", "agreement_fo", "softmax_tau0_01",
            "max_depth", "max_width"} <= set(m.metrics)
    assert uhat_compiler_exact.verdict(m.metrics, "smoke") == "holds"  # exact: a bug otherwise


def test_ahat_smoke_claim():
    m = ahat_counting(Scale.SMOKE, 0)
    assert _finite(m) and {"ahat_majority", "uhat_tie_majority", "depth_majority"} <= set(m.metrics)
    assert ahat_counting.verdict(m.metrics, "smoke") == "holds"


def test_uhat_negative_control_softmax_as_the_method():
    rng = np.random.default_rng(0)
    fs = [random_formula(4, ALPHABET, PREDICATES, rng) for _ in range(12)]
    encs = [compile_uhat(f, ALPHABET) for f in fs]
    words = [random_words(ALPHABET, 30, 10, rng) for _ in fs]
    soft = _agreement(encs, fs, words, arithmetic="float64", softmax_temperature=0.1)
    metrics = {"agreement_float64": float(soft.mean()), "agreement_fraction": 1.0,
               "agreement_fo": 1.0, **{k: Estimate.bootstrap(soft, np.mean) for k in
                                        ("softmax_tau1", "softmax_tau0_1", "softmax_tau0_01")}}
    assert uhat_compiler_exact.verdict(metrics, "small") != "holds"


def test_ahat_negative_control_leftmost_tie_as_the_method():
    m = dict(ahat_counting(Scale.SMOKE, 1).metrics)
    m["ahat_min_agreement"] = m["uhat_tie_majority"].value  # the tie-breaking run as the method
    assert ahat_counting.verdict(m, "small") != "holds"
    m = dict(ahat_counting(Scale.SMOKE, 1).metrics)
    m["uhat_tie_majority"] = Estimate.bootstrap(np.ones(20), np.mean)  # no separation observed
    assert ahat_counting.verdict(m, "small") != "holds"
