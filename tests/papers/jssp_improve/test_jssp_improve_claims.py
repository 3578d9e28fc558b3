"""Smoke runs of both claims with their null arms (measured in the same run) put in the method's
place, and the rules and controls fed hand-made numbers (holds / fails / the test bed cannot
tell)."""

from iclr24.claims import Estimate, Scale
from iclr24.papers.jssp_improve import claims

EVAL_KEYS = ["makespan_mismatches", "est_max_err", "lst_max_err", "cpsat_max_err", "speedup",
             "speedup_vs_unbatched", "null_truncated_mismatches", "null_truncated_est_max_err",
             "null_truncated_cpsat_max_err", "null_job_arcs_mismatches",
             "null_job_arcs_est_max_err", "null_job_arcs_lst_max_err",
             "null_job_arcs_cpsat_max_err"]
MOVE_KEYS = ["gain_vs_random", "random_vs_random_gain", "gap_l2s", "gap_random_n5",
             "gap_greedy_n5", "gap_rule", "l2s_entropy_ratio", "untrained_entropy_ratio"]


def _est(values):
    return Estimate.mean_of(values)


def test_evaluator_exact_smoke_and_wrong_evaluator_nulls(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claims.evaluator_exact, EVAL_KEYS)
    met = m.metrics
    assert met["makespan_mismatches"] == 0 and met["cpsat_max_err"] == 0
    assert claims.evaluator_exact.verdict(met, Scale.SMOKE) == "holds"
    rows = m.tables["cp_sat"]
    assert all(r["reevaluated_makespan"] == r["cpsat_objective"] for r in rows)
    # the job-arcs-only evaluator gives the longest job, a lower bound of the makespan
    assert all(r["null_job_arcs_makespan"] <= r["cpsat_objective"] for r in rows)
    # each wrong evaluator (this run) in the method's place: fails, at both scales
    truncated = {**met, "makespan_mismatches": met["null_truncated_mismatches"],
                 "est_max_err": met["null_truncated_est_max_err"],
                 "cpsat_max_err": met["null_truncated_cpsat_max_err"]}
    jobs = {**met, "makespan_mismatches": met["null_job_arcs_mismatches"],
            "est_max_err": met["null_job_arcs_est_max_err"],
            "lst_max_err": met["null_job_arcs_lst_max_err"],
            "cpsat_max_err": met["null_job_arcs_cpsat_max_err"]}
    for null in (truncated, jobs):
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert claims.evaluator_exact.verdict(null, scale) == "fails"


def test_evaluator_exact_rule_and_control():
    nulls = {"null_truncated_mismatches": 200, "null_job_arcs_mismatches": 256,
             "null_job_arcs_cpsat_max_err": 150.0}
    exact = {"makespan_mismatches": 0, "est_max_err": 0.0, "lst_max_err": 0.0,
             "cpsat_max_err": 0.0, "speedup": 5.0}
    assert claims.evaluator_exact.verdict({**exact, **nulls}, Scale.SMALL) == "holds"
    slow = {**exact, **nulls, "speedup": 0.5}
    assert claims.evaluator_exact.verdict(slow, Scale.SMALL) == "fails"
    assert claims.evaluator_exact.verdict(slow, Scale.SMOKE) == "holds"  # timed at small only
    off_by_one = {**exact, **nulls, "lst_max_err": 1.0}
    assert claims.evaluator_exact.verdict(off_by_one, Scale.SMALL) == "fails"
    # references that do not catch a wrong evaluator: the test bed cannot tell
    blind = {**exact, **nulls, "null_truncated_mismatches": 0}
    assert claims.evaluator_exact.verdict(blind, Scale.SMALL) == "inconclusive"
    blind = {**exact, **nulls, "null_job_arcs_cpsat_max_err": 0.0}
    assert claims.evaluator_exact.verdict(blind, Scale.SMOKE) == "inconclusive"


def test_learned_vs_random_smoke_and_random_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(claims.learned_vs_random_moves, MOVE_KEYS)
    met = m.metrics
    rows = m.tables["gaps_per_seed"]
    assert len(rows) == 2 and all(0.0 <= r["l2s_entropy_ratio"] <= 1.0 + 1e-9 for r in rows)
    # one update at lr 5e-5 leaves the policy uniform: the control says so
    assert claims.learned_vs_random_moves.verdict(met, Scale.SMOKE) == "inconclusive"
    # the random-N5 null (this run, other seeds) in the method's place, with its entropy ratio
    # (uniform by definition): never holds
    null = {**met, "gain_vs_random": met["random_vs_random_gain"], "l2s_entropy_ratio": 1.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claims.learned_vs_random_moves.verdict(null, scale) != "holds"
    # random N5 passed as the learned method: the gain is exactly zero
    same = {**met, "gain_vs_random": Estimate(0.0, 0.0, 0.0, 2), "l2s_entropy_ratio": 1.0}
    assert claims.learned_vs_random_moves.verdict(same, Scale.SMALL) != "holds"


def test_learned_vs_random_rule_and_control():
    verdict = claims.learned_vs_random_moves.verdict
    null = {"random_vs_random_gain": _est([0.004, -0.006, 0.001])}
    moved = {**null, "l2s_entropy_ratio": _est([0.62, 0.70, 0.66])}
    assert verdict({**moved, "gain_vs_random": _est([0.03, 0.02, 0.025])}, Scale.SMALL) == "holds"
    assert verdict({**moved, "gain_vs_random": _est([-0.03, -0.02, -0.025])},
                   Scale.SMALL) == "fails"
    assert verdict({**moved, "gain_vs_random": _est([0.03, -0.02, 0.0])},
                   Scale.SMALL) == "inconclusive"
    # a near-uniform policy is the random-N5 null: the test bed cannot tell, whatever the gain
    flat = {**null, "l2s_entropy_ratio": _est([0.9996, 0.9998, 0.9997])}
    judged = claims.learned_vs_random_moves.judge(
        {**flat, "gain_vs_random": _est([0.03, 0.02, 0.025])}, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "test bed cannot tell" in judged.reason
    straddling = {**null, "l2s_entropy_ratio": _est([0.93, 0.97, 0.95])}
    assert verdict({**straddling, "gain_vs_random": _est([0.03, 0.02, 0.025])},
                   Scale.SMALL) == "inconclusive"
    # random vs random passing the rule: seed noise alone would give a win
    lucky = {**moved, "random_vs_random_gain": _est([0.02, 0.021, 0.019])}
    assert verdict({**lucky, "gain_vs_random": _est([0.03, 0.02, 0.025])},
                   Scale.SMALL) == "inconclusive"
    assert verdict({**moved, "l2s_entropy_ratio": float("nan"),
                    "gain_vs_random": _est([0.03, 0.02, 0.025])}, Scale.SMALL) == "inconclusive"
    # a collapsed (deterministic) policy that loses: moved, and the rule says fails
    collapsed = {**null, "l2s_entropy_ratio": _est([0.01, 0.02, 0.0])}
    assert verdict({**collapsed, "gain_vs_random": _est([-0.05, -0.04, -0.045])},
                   Scale.SMALL) == "fails"
