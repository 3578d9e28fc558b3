"""Smoke runs of both claims and the negative controls of their rules."""

from __future__ import annotations

from iclr24.claims import Estimate, Scale
from iclr24.papers.chain_of_table.claims import chain_vs_end_to_end, protocol_end_to_end


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_chain_vs_end_to_end_smoke(check_smoke_claim):
    m = check_smoke_claim(chain_vs_end_to_end, [
        "scripted_minus_e2e_large", "learned_minus_e2e_large", "gap_growth",
        "acc_end_to_end_large", "acc_scripted_small", "learned_minus_random_large"])
    assert m.metrics["acc_scripted_large"] == 1.0  # oracle chains: a known answer
    assert chain_vs_end_to_end.verdict(m.metrics, Scale.SMOKE) == "holds"


def test_chain_vs_end_to_end_negative_controls():
    # end-to-end passed as the method: zero differences everywhere
    null = {"scripted_minus_e2e_large": _e(-0.02, 0.02), "learned_minus_e2e_large":
            _e(-0.02, 0.02), "gap_growth": _e(-0.03, 0.03)}
    assert chain_vs_end_to_end.verdict(null, Scale.SMALL) == "fails"
    assert chain_vs_end_to_end.verdict({k: 0.0 for k in null}, Scale.SMOKE) == "fails"
    # operations help but the gap does not grow with table size: not the paper's claim
    flat = dict(null, scripted_minus_e2e_large=_e(0.3, 0.4),
                learned_minus_e2e_large=_e(0.2, 0.3), gap_growth=_e(-0.05, -0.01))
    assert chain_vs_end_to_end.verdict(flat, Scale.SMALL) == "fails"
    # a learned planner whose interval reaches below +15 points: not holds
    weak = dict(flat, gap_growth=_e(0.05, 0.1), learned_minus_e2e_large=_e(0.1, 0.2))
    assert chain_vs_end_to_end.verdict(weak, Scale.SMALL) == "inconclusive"


def test_protocol_end_to_end_smoke(check_smoke_claim):
    m = check_smoke_claim(protocol_end_to_end, ["finished_rate", "plan_parse_rate",
                                                "answer_parse_rate", "accuracy_chain",
                                                "accuracy_end_to_end"])
    assert m.metrics["finished_rate"] == 1.0 and m.metrics["n_errors"] == 0
    # an untrained byte model writes no legal operation: the rule cannot hold
    assert m.metrics["plan_parse_rate"] < 0.5
    assert protocol_end_to_end.verdict(m.metrics, Scale.SMOKE) == "fails"


def test_protocol_end_to_end_negative_controls():
    ok = {"finished_rate": 1.0, "plan_parse_rate": 0.8}
    assert protocol_end_to_end.verdict(ok, Scale.SMALL) == "holds"
    # a statement that raised (the official code would drop it from the denominator)
    assert protocol_end_to_end.verdict(dict(ok, finished_rate=0.95), Scale.SMALL) == "fails"
    # replies that never name a legal operation (a broken prompt or parser)
    assert protocol_end_to_end.verdict(dict(ok, plan_parse_rate=0.0), Scale.SMALL) == "fails"
