"""Smoke runs of the two claims with their null arms (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers."""

import math

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.uhat_ahat import compile_uhat, ltl, random_formula, random_words
from iclr24.papers.uhat_ahat.claims import (
    ALPHABET,
    PREDICATES,
    _agreement,
    _constant_agreement,
    ahat_counting,
    uhat_compiler_exact,
)


def _finite(m):
    return all(math.isfinite(v.value if isinstance(v, Estimate) else v) for v in m.metrics.values())


def test_uhat_smoke_claim_and_its_null_arms():
    m = uhat_compiler_exact(Scale.SMOKE, 0)
    assert isinstance(m, Measurement) and _finite(m)
    assert {"agreement_float64", "agreement_fraction", "agreement_fo", "constant_agreement",
            "softmax_tau1", "softmax_tau4em8", "softmax_tau4em32", "max_depth",
            "max_width"} <= set(m.metrics)
    assert m.metrics["max_word_length"] <= m.metrics["float64_max_length"]
    assert uhat_compiler_exact.verdict(m.metrics, "smoke") == "holds"  # exact: a bug otherwise
    # each null arm of this run in the method's place: not holds
    for null in ("constant_agreement", "softmax_tau1"):
        swapped = {**m.metrics, "agreement_float64": m.metrics[null]}
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert uhat_compiler_exact.verdict(swapped, scale) != "holds"
    # gap-scale softmax is harder than tau = 1 but still not the hard encoder
    assert m.metrics["softmax_tau1"] < m.metrics["softmax_tau4em32"] < 1


def test_uhat_rule_and_control_on_hand_made_numbers():
    good = {"agreement_float64": 1.0, "agreement_fraction": 1.0, "agreement_fo": 1.0,
            "constant_agreement": Estimate.mean_of([0.9, 0.92, 0.91]),
            "softmax_tau1": Estimate.mean_of([0.8, 0.79, 0.81])}
    assert uhat_compiler_exact.verdict(good, Scale.SMALL) == "holds"
    assert uhat_compiler_exact.verdict({**good, "agreement_float64": 0.999}, Scale.SMALL) == "fails"
    # a test bed where the constant answer is always right cannot tell: inconclusive
    trivial = {**good, "constant_agreement": Estimate.mean_of([1.0, 1.0, 1.0])}
    assert uhat_compiler_exact.verdict(trivial, Scale.SMALL) == "inconclusive"
    uniform_ok = {**good, "softmax_tau1": 1.0}
    assert uhat_compiler_exact.verdict(uniform_ok, Scale.SMOKE) == "inconclusive"


def test_agreement_helpers_on_known_answers():
    enc = compile_uhat("F b", "ab")
    words = [["ab", "aa", "b"]]
    wrong_on_aa = [[True, True, False]]
    assert _agreement([enc], wrong_on_aa, words, arithmetic="fraction").tolist() == [2 / 3]
    assert _agreement([enc], [[ltl.holds(enc.formula, w) for w in words[0]]], words,
                      arithmetic="float64").tolist() == [1.0]
    assert _constant_agreement([[True, False, False, False], [True, True]]).tolist() == [0.75, 1.0]


def test_uhat_softmax_at_tau1_is_uniform_attention():
    """The score gaps (~4^-j / n) are far below tau in {1, 0.1, 0.01}: softmax is close to the
    uniform average at all three (the attention mechanism switched off) and misses words the
    hard encoder gets right; only a gap-scale temperature recovers them (on short words)."""
    rng = np.random.default_rng(0)
    fs = [random_formula(4, ALPHABET, PREDICATES, rng) for _ in range(12)]
    encs = [compile_uhat(f, ALPHABET) for f in fs]
    words = [random_words(ALPHABET, 30, 10, rng) for _ in fs]
    truth = [[ltl.holds(f, w) for w in ws] for f, ws in zip(fs, words)]
    soft = [_agreement(encs, truth, words, arithmetic="float64", softmax_temperature=t).mean()
            for t in (1.0, 0.1, 0.01, 4.0**-32)]
    assert max(soft[:3]) < 0.95 and max(soft[:3]) - min(soft[:3]) < 0.02
    assert soft[3] > max(soft[:3])
    assert _agreement(encs, truth, words, arithmetic="float64").mean() == 1


def test_ahat_smoke_claim_and_leftmost_tie_null():
    m = ahat_counting(Scale.SMOKE, 1)
    assert _finite(m) and {"ahat_majority", "uhat_tie_majority", "depth_majority",
                           "uhat_tie_min_agreement", "constant_max_agreement"} <= set(m.metrics)
    assert ahat_counting.verdict(m.metrics, "smoke") == "holds"
    # the leftmost-tie run and the constant answer (this run) in the method's place
    for null in ("uhat_tie_min_agreement", "constant_max_agreement"):
        swapped = {**m.metrics, "ahat_min_agreement": m.metrics[null]}
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert ahat_counting.verdict(swapped, scale) != "holds"


def test_ahat_rule_and_control_on_hand_made_numbers():
    good = {"ahat_min_agreement": 1.0, "ahat_fraction_agreement": 1.0,
            "uhat_tie_min_agreement": 0.6, "constant_max_agreement": 0.8}
    assert ahat_counting.verdict(good, Scale.SMALL) == "holds"
    assert ahat_counting.verdict({**good, "ahat_min_agreement": 0.99}, Scale.SMALL) == "fails"
    # no separation observed (ties agree everywhere) or a constant formula: cannot tell
    for null in ("uhat_tie_min_agreement", "constant_max_agreement"):
        assert ahat_counting.verdict({**good, null: 1.0}, Scale.SMALL) == "inconclusive"
