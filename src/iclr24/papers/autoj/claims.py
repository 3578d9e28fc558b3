"""Auto-J claims (Li et al., ICLR 2024) at laptop scale: pairwise agreement of a fine-tuned
generative judge against its untuned base, a reward model and a no-swap ablation; best-of-N
selection by the single-rating protocol; and the real judge prompts on SmolLM2-135M-Instruct."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiments import agreement_replicate, best_of_n_replicate, smollm2_replicate
from .testbed import TESTBED_SCENARIOS
from .tiny_judge import TinyJudgeConfig

_SYSTEMS = ("untuned", "reward_model", "sft_no_swap", "sft")


def _per_scenario_rows(runs: list[dict]) -> list[dict]:
    rows = []
    for system in _SYSTEMS:
        for scenario in runs[0][system]["per_group"]:
            vals = [r[system]["per_group"][scenario] for r in runs]
            rows.append({"system": system, "scenario": scenario,
                         "agreement": float(np.mean([v["agreement"] for v in vals])),
                         "consistency": float(np.mean([v["consistency"] for v in vals])),
                         "n_per_seed": vals[0]["n"]})
    return rows


@claim(
    rule={"smoke": "agreement_gain > 0", "small": "agreement_gain > 0.2 and consistency_gain > 0.2"},
    paper="Table 2 / leaderboard (1,392 pairs, both orders): Auto-J (LLaMA-2-13B-chat fine-tuned "
          "on GPT-4 judgments) agreement 54.96, consistency 83.41, vs its untuned base "
          "LLaMA-2-13B-chat 29.81 / 48.56 (+25 and +35 points); reward models, one order with a "
          "tuned tie threshold, are close on agreement (Moss-RM 54.31, Ziya-RM 53.23, "
          "Beaver-RM 52.37, OASST-RM 51.08).",
    paper_numbers={"agreement_gain": 0.2515, "consistency_gain": 0.3485,
                   "sft_agreement": 0.5496, "sft_consistency": 0.8341},
    against=("the untuned base LM prompted with one demonstration, on the same pairs; a "
             "Bradley-Terry reward model and no-swap judge SFT (same backbone) alongside"),
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

    Fails at small when the interval of either gain lies at or below the paper-sized 0.2
    (Auto-J gained 25 and 35 points over its base); an unparsed verdict counts as wrong and
    as inconsistent."""
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

    metrics = {}
    for system in ("untuned", "sft_no_swap", "sft"):
        for key in ("agreement", "agreement_first", "consistency", "parse_rate"):
            metrics[f"{system}_{key}"] = seed_metric(col(system, key))
    metrics["reward_model_agreement"] = seed_metric(col("reward_model", "agreement"))
    metrics["reward_model_agreement_tau_tuned_on_test"] = seed_metric(
        [r["reward_model_tuned_on_test"]["agreement"] for r in runs])
    metrics["agreement_gain"] = seed_difference(col("sft", "agreement"),
                                                col("untuned", "agreement"))
    metrics["consistency_gain"] = seed_difference(col("sft", "consistency"),
                                                  col("untuned", "consistency"))
    metrics["swap_consistency_gain"] = seed_difference(col("sft", "consistency"),
                                                       col("sft_no_swap", "consistency"))
    metrics["sft_minus_reward_model_first_order"] = seed_difference(
        col("sft", "agreement_first"), col("reward_model", "agreement"))
    metrics["n_test_pairs"] = runs[0]["sft"]["n"]
    per_seed = [{"seed": s, **{f"{sy}_{k}": r[sy][k] for sy in _SYSTEMS
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
               "backbone and budget learnt the task."))


@claim(
    rule={"smoke": "quality_gain > 0", "small": "quality_gain > 0 and gap_closed >= 0.5"},
    paper="Sec. 5.3 / Fig. (best-of-N): among N responses sampled from Vicuna-7B / "
          "LLaMA-2-7B-chat, the one Auto-J rates highest gets higher GPT-4 ratings than the "
          "choices of other judges and reward models, increasingly with N (N up to 32; figure "
          "only, no numbers extracted).",
    against=("N = 1, a random pick among the same i.i.d. candidates; the oracle best-of-M by "
             "true quality as the ceiling (no other judge or reward model is run)"),
    resources={"cpus": 1},
)
def best_of_n(scale: Scale, seed: int, progress=None) -> Measurement:
    """A tiny judge SFT'd on ``single`` critiques (``Rating: [[k]]``, k = round(1 + 9 q)) rates
    M sampled candidates (the testbed's noise model) of held-out queries; best-of-N keeps the
    top-rated among the first N. ``quality_gain`` = mean true quality at N = M minus at N = 1
    (a random pick), paired over 3 seeds; ``gap_closed`` = that gain over the oracle's
    (best of M by true quality). Fails at small if the gain's interval is at or below 0 or
    the share of the oracle gap closed can lie below one half (the spec's expectation)."""
    from iclr24.kits.threads import torch_threads

    cfg = sizes(scale, smoke=TinyJudgeConfig(hidden_size=64, intermediate_size=128,
                                             n_layers=1, pretrain_steps=10, sft_steps=30),
                small=TinyJudgeConfig(hidden_size=64, intermediate_size=128, n_layers=2,
                                      pretrain_steps=60, sft_steps=150, lr=5e-3))
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
    last = [r["curve"][m] for r in runs]
    oracle = [r["oracle"] for r in runs]
    metrics = {f"quality_at_{n}": seed_metric([r["curve"][n] for r in runs]) for n in ns}
    metrics["oracle_quality"] = seed_metric(oracle)
    metrics["quality_gain"] = seed_difference(last, first)
    metrics["gap_closed"] = seed_metric([(b - a) / (o - a) if o > a else 0.0
                                         for a, b, o in zip(first, last, oracle)])
    metrics["rating_parse_rate"] = seed_metric([r["parse_rate"] for r in runs])
    metrics["m_candidates"] = m
    fig = _bon_figure(ns, runs)
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"per_seed": [{"seed": s, **{f"q@{n}": r["curve"][n] for n in ns},
                              "oracle": r["oracle"], "parse_rate": r["parse_rate"],
                              "final_loss": r["final_loss"]} for s, r in zip(seeds, runs)],
                "example_ratings": runs[0]["examples"]},
        notes="N = 1 is a random pick (candidates are i.i.d.); unparsed ratings rank last. "
              "True quality stands in for the paper's GPT-4 rating of the chosen response.")


def _bon_figure(ns, runs):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ns, [np.mean([r["curve"][n] for r in runs]) for n in ns], "o-",
            label="best-of-N by judge rating")
    ax.axhline(np.mean([r["oracle"] for r in runs]), color="k", ls="--", label="oracle")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (candidates considered)")
    ax.set_ylabel("mean true quality")
    ax.legend()
    fig.tight_layout()
    return fig


@claim(
    rule={"smoke": "agreement_gain > 0", "small": "agreement_gain > 0"},
    paper="Table 2: untuned chat models are weak judges but above chance under the two-order "
          "protocol: LLaMA-2-13B-chat agreement 29.81 / consistency 48.56, Vicuna-13B 39.22 / "
          "62.07 (a random judge agrees in both orders on about 1/9 of the pairs).",
    paper_numbers={"agreement": 0.2981, "consistency": 0.4856},
    against="a seeded uniform-random judge (both orders) on the same pairs (null arm)",
    resources={"cpus": 2},
)
def smollm2_judge(scale: Scale, seed: int, progress=None) -> Measurement:
    """Auto-J's real ``pairwise_tie`` prompt, parser and two-order protocol on
    SmolLM2-135M-Instruct (in its own chat template), greedy, over testbed pairs (one pair per
    scenario and seed, 6 scenarios x 3 seeds at small).
    Two readings of the same prompts: free generation (the protocol as is, 16 new tokens:
    parse rate, agreement) and the reply primed with "So, the final decision is" (the verdict
    then needs 3 tokens). ``agreement_gain`` = primed agreement
    minus a seeded uniform-random judge's on the same pairs, paired over seeds. Fails at small
    unless SmolLM2 beats the random judge over the whole interval. At smoke an untrained tiny
    stand-in runs the same pipeline on 2 pairs (loading SmolLM2 does not fit the smoke budget):
    a plumbing check, not the claim."""
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
    for reading in ("free", "primed", "random"):
        for key in ("agreement", "agreement_first", "consistency", "parse_rate"):
            metrics[f"{reading}_{key}"] = seed_metric([r[reading][key] for r in runs])
    metrics["agreement_gain"] = seed_difference([r["primed"]["agreement"] for r in runs],
                                                [r["random"]["agreement"] for r in runs])
    metrics["verdict_share_response_1"] = seed_metric([r["share_response_1"] for r in runs])
    return Measurement(
        metrics=metrics, tables={"replies": [row for r in runs for row in r["replies"]]},
        notes=f"Model: {runs[0]['model']}. Chat template: the model's own (ChatML with its "
              "default system prompt), not LLaMA-2's. Unparsed verdicts count as wrong and "
              "inconsistent. 'verdict_share_response_1' (primed) shows positional bias.")
