"""Smoke runs of the three GAPN claims, each with its null arm (measured in the same run) put in
the method's place, and the rules fed hand-made numbers (holds / fails / control false)."""

from iclr24.claims import Estimate, Scale
from iclr24.papers.gapn.claims import assembly_quality, reward_alignment, search_cost


def _est(values):
    return Estimate.mean_of(values)


def _diff(values):
    return Estimate.mean_of(values)  # a paired difference is a mean over replicates


def test_reward_alignment_smoke_and_shuffled_reward_null(check_smoke_claim):
    m = check_smoke_claim(reward_alignment, ["spearman_mean", "spearman_shuffled_mean",
                                             "spearman_minus_shuffled"])
    assert m.figure is not None and m.tables["per_complex"]
    # the null arm (rewards shuffled across the trees, this run) as the method: the
    # reproduction rule with its control must not hold
    null = {**m.metrics, "spearman_mean": m.metrics["spearman_shuffled_mean"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert reward_alignment.verdict(null, scale) != "holds"


def test_assembly_quality_smoke_and_untrained_network_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(assembly_quality, [
        "gain_vs_greedy", "gain_vs_random", "gap_vs_mcts", "adv_gain_large", "tm_gapn",
        "tm_mcts", "tm_greedy", "tm_random", "tm_untrained", "tm_large_gapn",
        "tm_large_gapn_noadv", "rmsd_gapn", "untrained_gain_vs_greedy",
        "untrained_gain_vs_random", "untrained_gap_vs_mcts", "gain_vs_untrained"])
    assert m.figure is not None and m.tables["per_complex"]
    assert {r["method"] for r in m.tables["per_complex"]} >= {"gapn", "untrained", "random"}
    # the untrained GAPN network (this run) in the method's place: not holds at either scale
    # (the ablation gain is left as measured, which only favours the null)
    null = {**m.metrics, "gain_vs_greedy": m.metrics["untrained_gain_vs_greedy"],
            "gain_vs_random": m.metrics["untrained_gain_vs_random"],
            "gap_vs_mcts": m.metrics["untrained_gap_vs_mcts"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert assembly_quality.verdict(null, scale) != "holds"
    # random trees in the method's place: every gain over random is exactly zero
    rand = {**m.metrics, "gain_vs_random": 0.0,
            "gain_vs_greedy": m.metrics["tm_random"] - m.metrics["tm_greedy"],
            "gap_vs_mcts": m.metrics["tm_random"] - m.metrics["tm_mcts"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert assembly_quality.verdict(rand, scale) != "holds"


def test_search_cost_smoke_and_random_policy_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(search_cost, [
        "scorer_call_ratio", "tm_gap_vs_mcts", "random_scorer_call_ratio",
        "random_tm_gap_vs_mcts", "time_ratio", "gapn_scorer_calls_per_complex",
        "mcts_scorer_calls_per_complex", "gapn_cpu_s_per_complex", "mcts_cpu_s_per_complex"])
    rows = m.tables["per_complex"]
    # GAPN's one rollout scores each chain pair at most once; MCTS scores more
    for r in rows:
        if r["method"] in ("gapn", "random"):
            assert 1 <= r["scorer_calls"] <= r["chains"] * (r["chains"] - 1) // 2
    assert m.metrics["mcts_scorer_calls_per_complex"] > m.metrics["gapn_scorer_calls_per_complex"]
    # one random assembly (this run) in the method's place: not holds
    null = {**m.metrics, "scorer_call_ratio": m.metrics["random_scorer_call_ratio"],
            "tm_gap_vs_mcts": m.metrics["random_tm_gap_vs_mcts"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert search_cost.verdict(null, scale) != "holds"


def test_reward_alignment_rule_and_control():
    null = {"spearman_shuffled_mean": _est([0.05, -0.1, 0.02, 0.0])}
    assert reward_alignment.verdict({**null, "spearman_mean": _est([0.8, 0.7, 0.75, 0.9])},
                                    Scale.SMALL) == "holds"
    assert reward_alignment.verdict({**null, "spearman_mean": _est([0.1, -0.2, 0.05, 0.0])},
                                    Scale.SMALL) == "fails"
    # a shuffled reward that reaches the level: the test bed cannot tell
    broken = {"spearman_shuffled_mean": _est([0.8, 0.7, 0.75, 0.9]),
              "spearman_mean": _est([0.8, 0.7, 0.75, 0.9])}
    assert reward_alignment.verdict(broken, Scale.SMALL) == "inconclusive"
    assert reward_alignment.verdict({**null, "spearman_mean": float("nan")},
                                    Scale.SMALL) == "inconclusive"


def test_assembly_quality_rule_and_control():
    null = {"untrained_gain_vs_greedy": _diff([-0.4, -0.42, -0.38]),
            "untrained_gain_vs_random": _diff([-0.05, -0.08, -0.06]),
            "untrained_gap_vs_mcts": _diff([-0.4, -0.45, -0.42])}
    good = {**null, "gain_vs_greedy": _diff([0.05, 0.06, 0.04]),
            "gain_vs_random": _diff([0.4, 0.45, 0.42]), "gap_vs_mcts": _diff([0.01, 0.0, 0.02]),
            "adv_gain_large": _diff([0.02, 0.03, 0.025])}
    assert assembly_quality.verdict(good, Scale.SMALL) == "holds"
    # greedy passed as the method: the gain over greedy is exactly zero
    zero = Estimate(0.0, 0.0, 0.0, 3, 0.95, "paired-t")
    assert assembly_quality.verdict({**good, "gain_vs_greedy": zero}, Scale.SMALL) == "fails"
    # the ablation passed as GAPN: the adversarial gain is exactly zero
    assert assembly_quality.verdict({**good, "adv_gain_large": zero}, Scale.SMALL) == "fails"
    assert assembly_quality.verdict({**good, "gap_vs_mcts": _diff([-0.2, -0.25, -0.22])},
                                    Scale.SMALL) == "fails"
    # an untrained network that already passes: what the rule sees is not training
    passing_null = {"untrained_gain_vs_greedy": _diff([0.05, 0.06, 0.04]),
                    "untrained_gain_vs_random": _diff([0.4, 0.45, 0.42]),
                    "untrained_gap_vs_mcts": _diff([0.0, 0.01, 0.02])}
    assert assembly_quality.verdict({**good, **passing_null}, Scale.SMALL) == "inconclusive"
    smoke_null = {"untrained_gain_vs_random": -0.1}
    assert assembly_quality.verdict({**smoke_null, "gain_vs_random": 0.3}, Scale.SMOKE) == "holds"
    assert assembly_quality.verdict({**smoke_null, "gain_vs_random": 0.0}, Scale.SMOKE) == "fails"
    assert assembly_quality.verdict({"untrained_gain_vs_random": 0.2, "gain_vs_random": 0.3},
                                    Scale.SMOKE) == "inconclusive"


def test_search_cost_rule_and_control():
    null = {"random_scorer_call_ratio": _est([80, 85, 90]),
            "random_tm_gap_vs_mcts": _diff([-0.3, -0.25, -0.28])}
    good = {**null, "scorer_call_ratio": _est([80, 85, 90]),
            "tm_gap_vs_mcts": _diff([0.01, 0.02, 0.0])}
    assert search_cost.verdict(good, Scale.SMALL) == "holds"
    # MCTS passed as the method: call ratio 1, TM gap 0
    mcts = {**null, "scorer_call_ratio": _est([1.0, 1.1, 0.95]),
            "tm_gap_vs_mcts": Estimate(0, 0, 0, 3)}
    assert search_cost.verdict(mcts, Scale.SMALL) == "fails"
    # cheap but much worse (what the random null is): fails
    cheap = {**null, "scorer_call_ratio": _est([80, 85, 90]),
             "tm_gap_vs_mcts": _diff([-0.3, -0.25, -0.28])}
    assert search_cost.verdict(cheap, Scale.SMALL) == "fails"
    # a random tree as good as MCTS: cheapness proves nothing, the test bed cannot tell
    easy = {**good, "random_tm_gap_vs_mcts": _diff([0.0, -0.01, 0.01])}
    assert search_cost.verdict(easy, Scale.SMALL) == "inconclusive"
