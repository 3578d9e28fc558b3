"""Auto-J claims (Li et al., ICLR 2024) at laptop scale: pairwise agreement of a fine-tuned
generative judge against its untuned base, a reward model and a no-swap ablation; best-of-N
selection by the single-rating protocol; and the real judge prompts on SmolLM2-135M-Instruct.

Every claim measures its null arms in the same run, on the same pairs or candidates:
input-shallow judges (longer-response-wins, always-Tie) that the trained judge must beat in
the rule, and uniform-random judges whose numbers, put in the method's place, must not pass
the rule (the ``control``). ``smollm2_judge``'s control is a positive one (SmolLM2's verdicts
are readable)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiments import agreement_replicate, best_of_n_replicate, smollm2_replicate
from .testbed import TESTBED_SCENARIOS
from .tiny_judge import TinyJudgeConfig

_SYSTEMS = ("untuned", "reward_model", "sft_no_swap", "sft")
_NULLS = ("length", "constant_tie", "random")  # input-shallow judges on the same pairs


def _per_scenario_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for system in _SYSTEMS + _NULLS:
        for scenario in runs[0][system]["per_group"]:
            vals = [r[system]["per_group"][scenario] for r in runs]
            rows.append({"system": system, "scenario": scenario,
                         "agreement": float(np.mean([v["agreement"] for v in vals])),
                         "consistency": float(np.mean([v["consistency"] for v in vals])),
                         "n_per_seed": vals[0]["n"]})
    return rows


@claim(
    rule="agreement_gain > 0.2 and consistency_gain > 0.2 and agreement_over_heuristic > 0",
    control="not (random_agreement_gain > 0.2 and random_consistency_gain > 0.2 "
            "and random_over_heuristic > 0)",
    paper="Table 2 / leaderboard (1,392 pairs, both orders): Auto-J (LLaMA-2-13B-chat fine-tuned "
          "on GPT-4 judgments) agreement 54.96, consistency 83.41, vs its untuned base "
          "LLaMA-2-13B-chat 29.81 / 48.56 (+25 and +35 points); reward models, one order with a "
          "tuned tie threshold, are close on agreement (Moss-RM 54.31, Ziya-RM 53.23, "
          "Beaver-RM 52.37, OASST-RM 51.08).",
    paper_numbers={"agreement_gain": 0.2515, "consistency_gain": 0.3485,
                   "sft_agreement": 0.5496, "sft_consistency": 0.8341},
    against=("the untuned base LM prompted with one demonstration, on the same pairs; null "
             "arms on the same pairs: the longer-response-wins and always-Tie judges (in the "
             "rule) and a seeded uniform-random judge (the control); a Bradley-Terry reward "
             "model and no-swap judge SFT (same backbone) alongside"),
    resources={"cpus": 1},
)
def judge_agreement(scale: Scale, seed: int, progress=None) -> Measurement:
    """Synthetic testbed (:func:`make_judge_testbed`; 6 scenarios at small, 2 at smoke) with
    computable truth. A tiny LLaMA-architecture LM is pretrained on the training queries and
    answers, then, side by side on the same data: (a) untuned, prompted with one
    demonstration judgment; (b) a Bradley-Terry reward model on the same backbone (one order,
    tie threshold chosen on a dev split; the test-tuned leaderboard number is reported too);
    (c) judge SFT on the original order only (our ablation, not in the paper); (d) judge SFT
    with swap augmentation. Every generative judge runs the ``pairwise_tie`` prompt in both
    orders, greedy. ``agreement_gain`` / ``consistency_gain`` = (d) - (a), paired over 3 seeds
    (each seed: its own data, tokenizer and initialisation).

    Rule (changed for issue 37, written before any run of it): the paper-sized gains over the
    base (> 0.2: Auto-J gained 25 and 35 points) AND ``agreement_over_heuristic > 0``: (d)
    agrees more than the better of two input-shallow judges on the same pairs, "the longer
    response wins" and "always Tie" (paired over seeds). Why: the untuned tiny base is mostly
    unparsable, so a gain over it alone is cheap: an always-Tie judge is perfectly consistent
    and agrees on every tie (~20% of pairs), and longer-wins reads the testbed's empty and
    truncated responses; a judge that does not beat them has not learnt to judge.
    Control: the seeded uniform-random judge (same pairs, both orders) put in (d)'s place does
    not pass the rule (``random_*`` metrics: its gains over the same base and its margin over
    the heuristics); if it did, the test bed could not tell. An unparsed verdict counts as
    wrong and as inconsistent. Same rule at every scale (smoke is a plumbing check)."""
    from iclr24.kits.threads import torch_threads

    cfg = sizes(scale, smoke=TinyJudgeConfig(hidden_size=64, intermediate_size=128,
                                             n_layers=1, pretrain_steps=10, sft_steps=30),
                # 400 SFT steps: the largest budget that keeps three seeds inside 5 minutes
                # (SFT agreement in both orders: 0.04 over 3 seeds at 150 steps; seed 0 alone
                # 0.14 at 400 steps and 0.22 at 600, which takes ~110 s per seed)
                small=TinyJudgeConfig(hidden_size=64, intermediate_size=128, n_layers=2,
                                      pretrain_steps=60, sft_steps=400, lr=5e-3))
    scenarios = sizes(scale, smoke=TESTBED_SCENARIOS[:2], small=TESTBED_SCENARIOS)
    n_train = sizes(scale, smoke=100, small=400)
    n_test = sizes(scale, smoke=30, small=20)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    runs = []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            runs.append(agreement_replicate(n_train, n_test, cfg, s, scenarios))
            if progress:
                progress((i + 1) / len(seeds), f"seed {s}: sft agreement "
                                               f"{runs[-1]['sft']['agreement']:.2f}")

    def col(system, key):
        return [r[system][key] for r in runs]

    # the better input-shallow judge of each seed (its agreement; both are consistent by
    # construction)
    heuristic = [max(r["length"]["agreement"], r["constant_tie"]["agreement"]) for r in runs]
    metrics = {}
    for system in ("untuned", "sft_no_swap", "sft", *_NULLS):
        for key in ("agreement", "agreement_first", "consistency", "parse_rate"):
            metrics[f"{system}_{key}"] = seed_metric(col(system, key))
    metrics["reward_model_agreement"] = seed_metric(col("reward_model", "agreement"))
    metrics["reward_model_agreement_tau_tuned_on_test"] = seed_metric(
        [r["reward_model_tuned_on_test"]["agreement"] for r in runs])
    metrics["heuristic_agreement"] = seed_metric(heuristic)
    for system, prefix in (("sft", ""), *((n, f"{n}_") for n in _NULLS)):
        metrics[f"{prefix}agreement_gain"] = seed_difference(col(system, "agreement"),
                                                             col("untuned", "agreement"))
        metrics[f"{prefix}consistency_gain"] = seed_difference(col(system, "consistency"),
                                                               col("untuned", "consistency"))
        metrics[f"{prefix or 'agreement_'}over_heuristic"] = seed_difference(
            col(system, "agreement"), heuristic)
    metrics["swap_consistency_gain"] = seed_difference(col("sft", "consistency"),
                                                       col("sft_no_swap", "consistency"))
    metrics["sft_minus_reward_model_first_order"] = seed_difference(
        col("sft", "agreement_first"), col("reward_model", "agreement"))
    metrics["n_test_pairs"] = runs[0]["sft"]["n"]
    per_seed = [{"seed": s, **{f"{sy}_{k}": r[sy][k] for sy in _SYSTEMS + _NULLS
                               for k in ("agreement", "agreement_first", "consistency")},
                 "rm_dev_tau": r["reward_model_dev_tau"],
                 "rm_test_tau": r["reward_model_tuned_on_test"]["tau"],
                 "sft_final_loss": r["sft_final_loss"],
                 "sft_no_swap_final_loss": r["sft_no_swap_final_loss"],
                 "rm_final_loss": r["reward_model_final_loss"],
                 "label_shares": ", ".join(f"{x:.2f}" for x in r["label_shares"])}
                for s, r in zip(seeds, runs)]
    return Measurement(
        metrics=metrics,
        tables={"per_seed": per_seed, "per_scenario": _per_scenario_rows(runs),
                "example_judgments": runs[0]["examples"]},
        notes=(f"Tiny judge: {cfg.n_layers}-layer LLaMA-architecture model, width "
               f"{cfg.hidden_size}, {cfg.sft_steps} SFT steps of {cfg.batch_size}; prompts in "
               "the LLaMA-2 [INST] wrapper. Agreement = both orders equal the label "
               "(leaderboard); the reward model is scored on one order (its consistency is "
               "n/a), with tau chosen on a dev split (tau grid 0..2 in units of the reward "
               "spread). 'agreement_first' is single-order accuracy. GPT-4 judgments, human "
               "labels and the 13B backbone are out of reach: rule-written judgments and a "
               "computable truth stand in. Checks behind a negative verdict: the parsers, "
               "metrics and the two-order harness have known-answer tests (scripted backends, "
               "the official check_res semantics); during development larger budgets (300-400 "
               "SFT steps, lr 3e-3 to 1e-2, width 64-128, 480-3,000 training pairs) left the "
               "generative judge's single-order accuracy near chance on training pairs too "
               "(under-fitting, not a harness bug), while the reward model on the same "
               "backbone and budget learnt the task. Null arms (same pairs, both orders): "
               "longer-wins (length_*), always-Tie (constant_tie_*), seeded uniform random "
               "(random_*); heuristic_agreement is the better of the first two per seed."))


@claim(
    rule="quality_gain > 0 and gap_closed >= 0.5 and quality_over_length > 0",
    control="not (random_quality_gain > 0 and random_gap_closed >= 0.5 "
            "and random_over_length > 0)",
    paper="Sec. 5.3 / Fig. (best-of-N): among N responses sampled from Vicuna-7B / "
          "LLaMA-2-7B-chat, the one Auto-J rates highest gets higher GPT-4 ratings than the "
          "choices of other judges and reward models, increasingly with N (N up to 32; figure "
          "only, no numbers extracted).",
    against=("N = 1, a random pick among the same i.i.d. candidates; null arms on the same "
             "candidates: the longest candidate (in the rule) and uniform-random ratings (the "
             "control); the oracle best-of-M by true quality as the ceiling"),
    resources={"cpus": 1},
)
def best_of_n(scale: Scale, seed: int, progress=None) -> Measurement:
    """A tiny judge SFT'd on ``single`` critiques (``Rating: [[k]]``, k = round(1 + 9 q)) rates
    M sampled candidates (the testbed's noise model) of held-out queries; best-of-N keeps the
    top-rated among the first N. ``quality_gain`` = mean true quality at N = M minus at N = 1
    (a random pick), paired over 3 seeds; ``gap_closed`` = that gain over the oracle's
    (best of M by true quality).

    Rule (changed for issue 37, written before any run of it): the spec's gain > 0 and at
    least half of the oracle gap closed, AND ``quality_over_length > 0``: the judge's pick at
    N = M beats keeping the longest candidate (paired over seeds). Why: the testbed's bad
    candidates are often short (empty, truncated), so a length count alone closes part of the
    gap; the paper's judge beats other judges, and a judge that loses to a length count has
    not learnt to rate. Control: uniform-random ratings (the same candidates) put in the
    judge's place do not pass the rule (``random_*``). Same rule at every scale.
    Budget (issue 37): 400 SFT steps, as in ``judge_agreement`` where 400 gave the judge's
    best agreement (this claim had 150)."""
    from iclr24.kits.threads import torch_threads

    cfg = sizes(scale, smoke=TinyJudgeConfig(hidden_size=64, intermediate_size=128,
                                             n_layers=1, pretrain_steps=10, sft_steps=30),
                small=TinyJudgeConfig(hidden_size=64, intermediate_size=128, n_layers=2,
                                      pretrain_steps=60, sft_steps=400, lr=5e-3))
    scenarios = sizes(scale, smoke=TESTBED_SCENARIOS[:2], small=TESTBED_SCENARIOS)
    n_train = sizes(scale, smoke=60, small=100)
    n_queries = sizes(scale, smoke=30, small=100)
    m = sizes(scale, smoke=8, small=16)
    ns = [n for n in (1, 2, 4, 8, 16) if n <= m]
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    runs = []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            runs.append(best_of_n_replicate(n_train, n_queries, m, ns, cfg, s, scenarios))
            if progress:
                progress((i + 1) / len(seeds), f"seed {s}")
    first = [r["curve"][1] for r in runs]
    oracle = [r["oracle"] for r in runs]
    length = [r["length_curve"][m] for r in runs]
    metrics = {f"quality_at_{n}": seed_metric([r["curve"][n] for r in runs]) for n in ns}
    metrics["oracle_quality"] = seed_metric(oracle)

    def gap_closed(last):  # share of the oracle's gain over a random pick
        return seed_metric([(b - a) / (o - a) if o > a else 0.0
                            for a, b, o in zip(first, last, oracle)])

    last = [r["curve"][m] for r in runs]
    metrics["quality_gain"] = seed_difference(last, first)
    metrics["gap_closed"] = gap_closed(last)
    metrics["quality_over_length"] = seed_difference(last, length)
    for arm in ("length", "random"):  # the null arms' picks at N = M, read the same way
        arm_last = [r[f"{arm}_curve"][m] for r in runs]
        metrics[f"{arm}_quality_at_{m}"] = seed_metric(arm_last)
        metrics[f"{arm}_quality_gain"] = seed_difference(arm_last, first)
        metrics[f"{arm}_gap_closed"] = gap_closed(arm_last)
        metrics[f"{arm}_over_length"] = seed_difference(arm_last, length)
    metrics["rating_parse_rate"] = seed_metric([r["parse_rate"] for r in runs])
    metrics["m_candidates"] = m
    fig = _bon_figure(ns, runs)
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"per_seed": [{"seed": s, **{f"q@{n}": r["curve"][n] for n in ns},
                              "oracle": r["oracle"], f"length_q@{m}": r["length_curve"][m],
                              f"random_q@{m}": r["random_curve"][m],
                              "parse_rate": r["parse_rate"],
                              "final_loss": r["final_loss"]} for s, r in zip(seeds, runs)],
                "example_ratings": runs[0]["examples"]},
        notes="N = 1 is a random pick (candidates are i.i.d.); unparsed ratings rank last. "
              "True quality stands in for the paper's GPT-4 rating of the chosen response. "
              "Null arms on the same candidates: the longest one (length_*) and uniform-random "
              "ratings (random_*).")


def _bon_figure(ns, runs):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ns, [np.mean([r["curve"][n] for r in runs]) for n in ns], "o-",
            label="best-of-N by judge rating")
    for curve, style, label in (("length_curve", "s:", "longest candidate (null)"),
                                ("random_curve", "x:", "random ratings (null)")):
        ax.plot(ns, [np.mean([r[curve][n] for r in runs]) for n in ns], style, label=label)
    ax.axhline(np.mean([r["oracle"] for r in runs]), color="k", ls="--", label="oracle")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (candidates considered)")
    ax.set_ylabel("mean true quality")
    ax.legend()
    fig.tight_layout()
    return fig


@claim(
    rule="agreement_over_chance > 0",
    control="primed_parse_rate > 0.5",
    paper="Table 2: untuned chat models are weak judges but above chance under the two-order "
          "protocol: LLaMA-2-13B-chat agreement 29.81 / consistency 48.56, Vicuna-13B 39.22 / "
          "62.07 (a random judge agrees in both orders on about 1/9 of the pairs).",
    paper_numbers={"agreement": 0.2981, "consistency": 0.4856},
    against=("chance: the better, per seed, of a seeded uniform-random judge and an always-Tie "
             "judge (both orders, the same pairs); a longer-response-wins judge reported"),
    resources={"cpus": 2},
)
def smollm2_judge(scale: Scale, seed: int, progress=None) -> Measurement:
    """Auto-J's real ``pairwise_tie`` prompt, parser and two-order protocol on
    SmolLM2-135M-Instruct in the judge's default chat format (the model's own template,
    ChatML with its default system prompt), greedy, over testbed pairs (one pair per scenario
    and seed, 6 scenarios x 3 seeds at small). Two readings of the same prompts: free
    generation (the protocol as is, 16 new tokens: parse rate, agreement) and the reply primed
    with "So, the final decision is" (the verdict then needs 3 tokens).

    Rule (changed for issue 37, written before any run of it): ``agreement_over_chance`` =
    primed agreement minus chance, paired over seeds, must be > 0 over the whole interval.
    Chance is the better input-ignoring judge on the same pairs: under two-order agreement
    an always-Tie judge scores the share of ties (~20%), above a uniform-random judge's ~1/9,
    so beating the random judge alone (the old rule) did not show "above chance".
    Control (a positive control): ``primed_parse_rate > 0.5``, SmolLM2's primed verdict is
    readable for most judgments; if not, the harness (template, parser) rather than the model
    decides and the test bed cannot tell. At smoke an untrained tiny stand-in (no chat
    template, so the LLaMA-2 wrapper) runs the same pipeline on 2 pairs (loading SmolLM2 does
    not fit the smoke budget): a plumbing check, not the claim."""
    from iclr24.kits.threads import torch_threads

    n_seeds = sizes(scale, smoke=1, small=3)
    runs = []
    with torch_threads(sizes(scale, smoke=1, small=2)):
        for i in range(n_seeds):
            # small: one pair per scenario and seed (18 pairs in both orders); smoke: the
            # stand-in on two pairs
            scen = sizes(scale, smoke=TESTBED_SCENARIOS[:2], small=TESTBED_SCENARIOS)
            runs.append(smollm2_replicate(scale is Scale.SMOKE, seed + i, scen,
                                          max_new_tokens=sizes(scale, smoke=8, small=16)))
            if progress:
                progress((i + 1) / n_seeds, f"seed {seed + i}")
    metrics = {}
    for reading in ("free", "primed", *_NULLS):
        for key in ("agreement", "agreement_first", "consistency", "parse_rate"):
            metrics[f"{reading}_{key}"] = seed_metric([r[reading][key] for r in runs])
    primed = [r["primed"]["agreement"] for r in runs]
    chance = [max(r["random"]["agreement"], r["constant_tie"]["agreement"]) for r in runs]
    metrics["chance_agreement"] = seed_metric(chance)
    metrics["agreement_over_chance"] = seed_difference(primed, chance)
    metrics["random_over_chance"] = seed_difference([r["random"]["agreement"] for r in runs],
                                                    chance)
    metrics["agreement_gain"] = seed_difference(primed, [r["random"]["agreement"] for r in runs])
    metrics["verdict_share_response_1"] = seed_metric([r["share_response_1"] for r in runs])
    return Measurement(
        metrics=metrics, tables={"replies": [row for r in runs for row in r["replies"]]},
        notes=f"Model: {runs[0]['model']}. Chat format: {runs[0]['chat_format']} (the "
              "judge's default: the model's own template where it has one). Unparsed verdicts "
              "count as wrong and inconsistent. 'agreement_gain' is primed agreement minus "
              "the random judge's (the old rule, reported). 'verdict_share_response_1' "
              "(primed) shows positional bias.")
