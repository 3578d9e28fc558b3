"""Smoke runs of both claims with their null arms (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers."""

from __future__ import annotations

from iclr24.claims import Estimate, Scale
from iclr24.papers.chain_of_table.claims import chain_vs_end_to_end, protocol_end_to_end


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_chain_vs_end_to_end_smoke_and_random_chain_null(check_smoke_claim):
    m = check_smoke_claim(chain_vs_end_to_end, [
        "learned_minus_random_large", "learned_minus_e2e_large", "gap_growth",
        "scripted_minus_random_large", "random_minus_e2e_large", "gap_growth_random",
        "acc_end_to_end_large", "acc_scripted_small", "acc_random_large"])
    assert m.metrics["acc_scripted_large"] == 1.0  # oracle chains: a known answer
    # the differences are what they say they are
    assert m.metrics["learned_minus_random_large"] == (m.metrics["acc_learned_large"]
                                                       - m.metrics["acc_random_large"])
    # the null arm (the random chain, this run) put in the learned planner's place: its
    # difference to itself is 0 and the verdict cannot be holds, at either scale
    null = {**m.metrics, "learned_minus_random_large": 0.0,
            "learned_minus_e2e_large": m.metrics["random_minus_e2e_large"],
            "gap_growth": m.metrics["gap_growth_random"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert chain_vs_end_to_end.verdict(null, scale) != "holds"


def test_chain_vs_end_to_end_rule_and_control():
    control_ok = {"acc_scripted_large": _e(0.98, 1.0), "scripted_minus_random_large":
                  _e(0.25, 0.35)}
    good = {**control_ok, "learned_minus_random_large": _e(0.1, 0.2),
            "learned_minus_e2e_large": _e(0.3, 0.4), "gap_growth": _e(0.05, 0.1)}
    assert chain_vs_end_to_end.verdict(good, Scale.SMALL) == "holds"
    # the audit's case: the planner beats end-to-end by as much as a random chain does, and
    # no more than the random chain: the old rule held, the new one fails
    random_like = dict(good, learned_minus_random_large=_e(-0.02, 0.0),
                       learned_minus_e2e_large=_e(0.198, 0.222))
    assert chain_vs_end_to_end.verdict(random_like, Scale.SMALL) == "fails"
    # beats random but not the spec's +15 points over end-to-end
    assert chain_vs_end_to_end.verdict(dict(good, learned_minus_e2e_large=_e(0.05, 0.1)),
                                       Scale.SMALL) == "fails"
    # the gain does not grow with table size
    assert chain_vs_end_to_end.verdict(dict(good, gap_growth=_e(-0.05, -0.01)),
                                       Scale.SMALL) == "fails"
    # an interval straddling the bar: not holds
    assert chain_vs_end_to_end.verdict(dict(good, learned_minus_e2e_large=_e(0.1, 0.2)),
                                       Scale.SMALL) == "inconclusive"
    # positive control false: oracle chains no better than random ones, or below 90%
    for bad in ({"scripted_minus_random_large": _e(-0.01, 0.01)},
                {"acc_scripted_large": _e(0.7, 0.8)}):
        j = chain_vs_end_to_end.judge(dict(good, **bad), Scale.SMALL)
        assert j.verdict == "inconclusive" and "test bed cannot tell" in j.reason
    smoke = {"learned_minus_random_large": 0.2, "learned_minus_e2e_large": 0.3,
             "scripted_minus_random_large": 0.3}
    assert chain_vs_end_to_end.verdict(smoke, Scale.SMOKE) == "holds"
    assert chain_vs_end_to_end.verdict(dict(smoke, learned_minus_random_large=0.0),
                                       Scale.SMOKE) == "fails"


def test_protocol_end_to_end_smoke_and_untrained_null(check_smoke_claim):
    m = check_smoke_claim(protocol_end_to_end, ["finished_rate", "plan_parse_rate",
                                                "answer_parse_rate", "accuracy_chain",
                                                "accuracy_end_to_end", "null_finished_rate",
                                                "null_plan_parse_rate"])
    assert m.metrics["finished_rate"] == 1.0 and m.metrics["n_errors"] == 0
    # an untrained byte model writes no legal operation: the rule cannot hold
    assert m.metrics["plan_parse_rate"] < 0.5
    assert protocol_end_to_end.verdict(m.metrics, Scale.SMOKE) == "fails"
    # the null arm (measured in this run) in the method's place: not holds
    null = {**m.metrics, "finished_rate": m.metrics["null_finished_rate"],
            "plan_parse_rate": m.metrics["null_plan_parse_rate"]}
    assert protocol_end_to_end.verdict(null, Scale.SMALL) != "holds"


def test_protocol_end_to_end_rule_and_control():
    ok = {"finished_rate": 1.0, "plan_parse_rate": 0.8, "null_finished_rate": 1.0,
          "null_plan_parse_rate": 0.0}
    assert protocol_end_to_end.verdict(ok, Scale.SMALL) == "holds"
    # a statement that raised (the official code would drop it from the denominator)
    assert protocol_end_to_end.verdict(dict(ok, finished_rate=0.8), Scale.SMALL) == "fails"
    # replies that never name a legal operation (a broken prompt or parser)
    assert protocol_end_to_end.verdict(dict(ok, plan_parse_rate=0.0), Scale.SMALL) == "fails"
    # a parser that accepts anything: the untrained model passes too, the check cannot tell
    j = protocol_end_to_end.judge(dict(ok, null_plan_parse_rate=0.9), Scale.SMALL)
    assert j.verdict == "inconclusive" and "test bed cannot tell" in j.reason
