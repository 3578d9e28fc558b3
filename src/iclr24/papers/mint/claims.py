"""MINT claims: success rate against the turn budget k (tool use), the effect of simulated
feedback, both on a tiny trained agent, and MINT episodes with the Python tool on
SmolLM2-135M-Instruct."""

from __future__ import annotations

import functools

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .evaluation import LMAgent, evaluate, improvement_slope, success_rates
from .feedback import ScriptedFeedback
from .tasks import NUMERIC_KINDS, make_mint_tasks
from .tiny_agent import (
    VIEW_TURNS,
    PaddedTextModel,
    TeacherAgent,
    TinyAgentConfig,
    train_tiny_agent,
)

_KS = (1, 2, 3, 4, 5)


def _config(scale: Scale) -> TinyAgentConfig:
    return sizes(scale, smoke=TinyAgentConfig(d_model=32, n_layers=1, n_episodes=100,
                                              steps=8, batch_size=8),
                 small=TinyAgentConfig(steps=400))


@functools.cache
def _trained(config: TinyAgentConfig, seed: int):
    """The tiny agent for (config, seed), trained once per process (both claims use it)."""
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        return train_tiny_agent(config, seed)


def _agent(lm, scale: Scale) -> LMAgent:
    from iclr24.kits.language_models import LocalTextModel

    return LMAgent(PaddedTextModel(LocalTextModel(lm, max_batch=128)), prompt_format="task_view",
                   view_turns=VIEW_TURNS, max_new_tokens=sizes(scale, smoke=32, small=96),
                   temperature=0.7)


def _sr_figure(ks, tool, answer_only, title, teacher=None):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ks, tool, "o-", label="tool (Python REPL)")
    if teacher is not None:
        ax.plot(ks, teacher, "s:", color="tab:green", label="scripted teacher (reference)")
    ax.axhline(answer_only, color="gray", ls="--", label="answer-only, k = 5")
    ax.set_xlabel("turn budget k")
    ax.set_ylabel("success rate SR_k")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


@claim(
    rule={"smoke": "sr5_minus_sr1 > 0",
          "small": "sr5_minus_sr1 >= 0.1 and slope > 0 and tool_minus_answer_only > 0"},
    paper="Sec. 3.2 / Fig. 2 / Table 2: with tools, every evaluated LLM gains 1-8% absolute "
          "success per additional turn (k = 1 -> 5, slope of SR_k on k); e.g. GPT-4 "
          "SR_1 ~ 0.37 -> SR_5 ~ 0.69 on MINT's 586 instances. Spec expectation at laptop "
          "scale: SR_5 - SR_1 >= 10 points, positive slope, tool >> answer-only.",
    paper_numbers={"slope": 0.045},
    against=("the same agent at k = 1 and with answer-only (no tool, k = 5) on the same tasks; "
             "the scripted teacher as a reported reference"),
    resources={"cpus": 1},
)
def turn_budget(scale: Scale, seed: int, progress=None) -> Measurement:
    """SR_k for k = 1..5 (p = 1 at k = 1, else 2; count-down on; no feedback) of the tiny
    trained agent (:mod:`.tiny_agent`) with the real REPL and checkers on held-out numeric
    tasks, against the same agent restricted to answer-only (no tool; k = 5, p = 2). One
    agent is trained per run (seeded); the replicates are 3 evaluation seeds, each with its
    own tasks and samples (T = 0.7), so intervals cover task and sampling variation, not
    training variation. The scripted teacher runs the same tasks as a reference (it does not
    decide). Fails at small if SR_5 - SR_1 < 0.1, the slope is <= 0 or the tool
    does not beat answer-only over the whole interval. At smoke a barely trained one-layer
    agent on a few tasks checks the plumbing (k in {1, 3})."""
    progress = progress or (lambda *a, **k: None)
    ks = sizes(scale, smoke=[1, 3], small=list(_KS))
    n_tasks = sizes(scale, smoke=4, small=48)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    lm, loss = _trained(_config(scale), seed)
    agent = _agent(lm, scale)
    from iclr24.kits.threads import torch_threads

    sr, sr_exact, ao, per_kind, actions, teacher, teacher_ao = [], [], [], [], [], [], []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            tasks = make_mint_tasks(n_tasks, NUMERIC_KINDS, seed=20_000 + s)
            df = evaluate(agent, tasks, ks, seed=s, batch_size=128)
            base = evaluate(agent, tasks, [max(ks)], use_tools=False, seed=s, batch_size=128)
            # known-answer reference: the teacher itself in the same environment and REPL
            teacher.append(success_rates(evaluate(TeacherAgent(s), tasks, ks, seed=s,
                                                  batch_size=128)))
            teacher_ao.append(float(success_rates(evaluate(
                TeacherAgent(s, use_tools=False), tasks, [max(ks)], use_tools=False, seed=s,
                batch_size=128)).iloc[0]))
            sr.append(success_rates(df))
            sr_exact.append(success_rates(df, "exact_success"))
            ao.append(float(success_rates(base).iloc[0]))
            table = success_rates(df, by_kind=True)
            per_kind += [{"seed": s, "kind": kind, **{f"SR_{k}": float(table.loc[kind, k])
                                                       for k in ks}} for kind in table.index]
            stats = df.groupby("k")[["n_tool", "n_propose", "n_invalid"]].mean()
            actions += [{"seed": s, "k": int(k), **{c: float(v) for c, v in row.items()}}
                        for k, row in stats.iterrows()]
            progress((i + 1) / len(seeds), f"seed {s}: SR_k {sr[-1].round(2).tolist()}")
    kmax = max(ks)
    metrics = {f"sr_{k}": seed_metric([r[k] for r in sr]) for k in ks}
    metrics.update({f"sr_exact_{k}": seed_metric([r[k] for r in sr_exact]) for k in ks})
    metrics["sr5_minus_sr1"] = seed_difference([r[kmax] for r in sr], [r[1] for r in sr])
    metrics["slope"] = seed_metric([improvement_slope(r) for r in sr])
    metrics["answer_only_sr"] = seed_metric(ao)
    metrics["tool_minus_answer_only"] = seed_difference([r[kmax] for r in sr], ao)
    metrics.update({f"teacher_sr_{k}": seed_metric([r[k] for r in teacher]) for k in ks})
    metrics["teacher_answer_only_sr"] = seed_metric(teacher_ao)
    metrics["train_loss"] = loss
    metrics["n_tasks_per_seed"] = n_tasks
    fig = _sr_figure(ks, [np.mean([r[k] for r in sr]) for k in ks], float(np.mean(ao)),
                     "tiny agent, no feedback",
                     teacher=[np.mean([r[k] for r in teacher]) for k in ks])
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"sr_by_kind": per_kind, "actions_per_episode": actions,
                "example_transcripts": [{"k": kmax, "transcript": t}
                                        for t in df[df.k == kmax].transcript.head(3)]},
        notes=f"sr5_minus_sr1 is SR_{kmax} - SR_1. SR uses the official check (5% relative "
              "tolerance); sr_exact_k is the exact-match variant. The agent: a tiny "
              "transformer trained on scripted-teacher transcripts (numeric tasks only; code "
              "tasks are in the library, not in this claim). teacher_sr_k: the scripted "
              "teacher itself as the agent, on the same tasks, environment and REPL (the "
              "known-answer check: an agent that uses its turns as the training transcripts "
              "do gains from every extra turn); it is reported, it does not decide.")


@claim(
    rule={"smoke": "delta_f > 0", "small": "delta_f > 0"},
    paper="Sec. 3.3 / Table 3: natural-language feedback from GPT-4 (textual, without ground "
          "truth) raises SR_5 by 2-17% absolute across LLMs (e.g. GPT-3.5 +13.1%). Here the "
          "simulated user is rule-based, binary, with ground truth (the paper also defines "
          "ground-truth feedback); spec expectation: ΔF ≈ +3-10 points.",
    paper_numbers={"delta_f": 0.05},
    against=("the same agent, tasks and seeds at k = 5 without feedback; the no-ground-truth "
             "scripted user reported"),
    resources={"cpus": 1},
)
def feedback_gain(scale: Scale, seed: int, progress=None) -> Measurement:
    """ΔF = SR_5 with feedback - SR_5 without, the same trained tiny agent on the same tasks
    and seeds (k = 5, p = 2, count-down on), feedback from :class:`ScriptedFeedback`
    (binary "This is GOOD." / "This is BAD.", with ground truth). Paired over 3 evaluation
    seeds at small. Fails if ΔF <= 0 over the whole interval; inconclusive if the interval
    straddles 0. Also reported: the no-ground-truth scripted user (it can only flag errors)."""
    progress = progress or (lambda *a, **k: None)
    k = sizes(scale, smoke=3, small=5)
    n_tasks = sizes(scale, smoke=4, small=48)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    lm, loss = _trained(_config(scale), seed)
    agent = _agent(lm, scale)
    from iclr24.kits.threads import torch_threads

    rows = []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            tasks = make_mint_tasks(n_tasks, NUMERIC_KINDS, seed=20_000 + s)
            res = {name: evaluate(agent, tasks, [k], feedback=fb, seed=s, batch_size=128)
                   for name, fb in (("none", None),
                                    ("gt", ScriptedFeedback("binary", with_ground_truth=True)),
                                    ("no_gt", ScriptedFeedback("binary",
                                                               with_ground_truth=False)))}
            row = {"seed": s}
            for name, df in res.items():
                row[f"sr_{name}"] = float(df.success.mean())
                row[f"sr_exact_{name}"] = float(df.exact_success.mean())
                row[f"proposals_{name}"] = float(df.n_propose.mean())
            rows.append(row)
            progress((i + 1) / len(seeds), f"seed {s}: {row}")
    col = {key: [r[key] for r in rows] for key in rows[0]}
    metrics = {f"sr5_{name}": seed_metric(col[f"sr_{name}"]) for name in ("none", "gt", "no_gt")}
    metrics["delta_f"] = seed_difference(col["sr_gt"], col["sr_none"])
    metrics["delta_f_no_gt"] = seed_difference(col["sr_no_gt"], col["sr_none"])
    metrics["delta_f_exact"] = seed_difference(col["sr_exact_gt"], col["sr_exact_none"])
    metrics["train_loss"] = loss
    return Measurement(metrics=metrics, tables={"per_seed": rows},
                       notes=f"k = {k}. GPT-4's textual feedback (the paper's main setting) is "
                             "out of reach offline; LMFeedback runs the official feedback "
                             "prompt on any local model or endpoint.")


@claim(
    rule={"smoke": "sr_gain > 0", "small": "sr_gain > 0"},
    paper="Sec. 3.2 / Table 2: every evaluated LLM (7B-70B, GPT-3.5/4, Claude) gains from "
          "extra turns with the Python tool (1-8% absolute per turn); weak open models "
          "(e.g. 7B chat models) stay near SR_1 and many turns are invalid actions.",
    paper_numbers={"sr_gain": 0.02},
    against="the same model on the same tasks at turn budget k = 1 (SR_1); no other model",
    resources={"cpus": 1},
)
def smollm2_episodes(scale: Scale, seed: int, progress=None) -> Measurement:
    """The real protocol on a real instruction-tuned model: SmolLM2-135M-Instruct (offline,
    int8 dynamic-quantised linear layers, the kit's ``quantize_int8``: a slightly different
    model, ~2.5x faster on a CPU) gets the official first message (instructions, tool sentence, our in-context
    example, ``Task:``) and every later turn through its chat template (the official chat
    mode), greedy decoding (the official temperature 0) with the official stop words; its
    code runs in the real REPL, its solutions go through the official checks. ``sr_gain`` =
    SR_3 - SR_1 (the turn-budget claim at k = 1 vs 3), paired over 3 seeds, each with its own
    2 numeric tasks (6 episodes per k: CPU decoding of a 135M model over ~600-token prompts
    is the cost; replies are cut at 80 tokens). Also measured: the share of turns that are valid actions, and how turns
    split into code runs, proposals and invalid actions. Fails if SR_3 does not exceed SR_1
    over the whole interval (the expected outcome for a 135M model: SR near 0). At smoke an
    untrained one-layer byte model runs the same pipeline on 2 tasks with k in {1, 2} (loading
    and running SmolLM2 does not fit the smoke budget): a plumbing check."""
    from iclr24.kits.language_models import LocalTextModel
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    ks = sizes(scale, smoke=[1, 2], small=[1, 3])
    n_tasks = sizes(scale, smoke=2, small=2)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    if scale is Scale.SMOKE:
        from iclr24.kits.language_models import untrained_byte_lm

        backend = LocalTextModel(untrained_byte_lm(4096, d_model=16, seed=seed))
        agent = LMAgent(PaddedTextModel(backend), prompt_format="completion", max_new_tokens=8)
        name = "untrained 1-layer byte model (smoke)"
    else:
        from iclr24.kits.language_models import load_smollm2

        from .evaluation import chat_formatter

        lm = load_smollm2(quantize="int8")  # ~2.5x faster decoding on a CPU
        agent = LMAgent(LocalTextModel(lm, max_batch=32),
                        prompt_format=chat_formatter(lm.tokenizer.hf), max_new_tokens=80)
        name = "SmolLM2-135M-Instruct (int8 dynamic quantisation)"
    tasks_by_seed = {s: make_mint_tasks(n_tasks, NUMERIC_KINDS, seed=30_000 + s) for s in seeds}
    all_tasks = [t for s in seeds for t in tasks_by_seed[s]]
    with torch_threads(2 if scale is not Scale.SMOKE else 1):
        df = evaluate(agent, all_tasks, ks, seed=seed, batch_size=len(all_tasks))
    df["seed"] = [s for _ in ks for s in seeds for _ in range(n_tasks)]
    progress(1.0, f"{name}: SR {success_rates(df).round(2).tolist()}")
    per_seed = [success_rates(df[df.seed == s]) for s in seeds]
    lo, hi = min(ks), max(ks)
    turns = df.turns.sum()
    metrics = {f"sr_{k}": seed_metric([r[k] for r in per_seed]) for k in ks}
    metrics["sr_gain"] = seed_difference([r[hi] for r in per_seed], [r[lo] for r in per_seed])
    metrics["sr_exact_max_k"] = float(df[df.k == hi].exact_success.mean())
    metrics["valid_action_rate"] = float(1 - df.n_invalid.sum() / turns)
    metrics["code_turn_share"] = float(df.n_tool.sum() / turns)
    metrics["proposal_turn_share"] = float(df.n_propose.sum() / turns)
    metrics["n_episodes"] = len(df)
    return Measurement(
        metrics=metrics,
        tables={"episodes": df.drop(columns=["transcript"]).to_dict("records"),
                "transcripts": [{"k": int(r.k), "transcript": r.transcript[:3000]}
                                for r in df.head(4).itertuples()]},
        notes=f"Model: {name}. Budgets p = 1 at k = 1, else 2; count-down on; no feedback. "
              "Invalid actions (neither a code block nor a solution tag) use up turns.")
