"""MINT claims: success rate against the turn budget k (tool use), the effect of simulated
feedback, both on a tiny trained agent, and MINT episodes with the Python tool on
SmolLM2-135M-Instruct (a plumbing check of the harness, with a known-answer backend as its
positive control and an untrained model as its null arm, measured in the same run)."""

from __future__ import annotations

import functools

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .answer_key import AnswerKeyBackend
from .evaluation import LMAgent, evaluate, improvement_slope, success_rates
from .feedback import RandomFeedback, ScriptedFeedback
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
    control={"smoke": "teacher_sr5_minus_sr1 > 0",
             "small": "teacher_sr5_minus_sr1 >= 0.1 and teacher_slope > 0 "
                      "and teacher_tool_minus_answer_only > 0"},
    paper="Sec. 3.2 / Fig. 2 / Table 2: with tools, every evaluated LLM gains 1-8% absolute "
          "success per additional turn (k = 1 -> 5, slope of SR_k on k); e.g. GPT-4 "
          "SR_1 ~ 0.37 -> SR_5 ~ 0.69 on MINT's 586 instances. Spec expectation at laptop "
          "scale: SR_5 - SR_1 >= 10 points, positive slope, tool >> answer-only.",
    paper_numbers={"slope": 0.045},
    against=("the same agent at k = 1 and with answer-only (no tool, k = 5) on the same tasks; "
             "the scripted teacher on the same tasks as the positive control"),
    resources={"cpus": 1},
)
def turn_budget(scale: Scale, seed: int, progress=None) -> Measurement:
    """SR_k for k = 1..5 (p = 1 at k = 1, else 2; count-down on; no feedback) of the tiny
    trained agent (:mod:`.tiny_agent`) with the real REPL and checkers on held-out numeric
    tasks, against the same agent restricted to answer-only (no tool; k = 5, p = 2). One
    agent is trained per run (seeded); the replicates are 3 evaluation seeds, each with its
    own tasks and samples (T = 0.7), so intervals cover task and sampling variation, not
    training variation. Fails at small if SR_5 - SR_1 < 0.1, the slope is <= 0 or the tool
    does not beat answer-only over the whole interval (the answer-only arm is the null: the
    tool switched off). Control (issue 37, a positive control measured in the same run): the
    scripted teacher, whose transcripts the agent imitates, passes the same rule on the same
    tasks, environment and REPL (``teacher_*``); if even it shows no turn-budget effect here,
    the test bed cannot tell. At smoke a barely trained one-layer agent on a few tasks checks
    the plumbing (k in {1, 3})."""
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
    metrics["teacher_sr5_minus_sr1"] = seed_difference([r[kmax] for r in teacher],
                                                       [r[1] for r in teacher])
    metrics["teacher_slope"] = seed_metric([improvement_slope(r) for r in teacher])
    metrics["teacher_tool_minus_answer_only"] = seed_difference([r[kmax] for r in teacher],
                                                                teacher_ao)
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
              "do gains from every extra turn); it is the claim's positive control.")


@claim(
    rule={"smoke": "delta_f > 0", "small": "delta_f > 0"},
    control="delta_f_over_random > 0",
    paper="Sec. 3.3 / Table 3: natural-language feedback from GPT-4 (textual, without ground "
          "truth) raises SR_5 by 2-17% absolute across LLMs (e.g. GPT-3.5 +13.1%). Here the "
          "simulated user is rule-based, binary, with ground truth (the paper also defines "
          "ground-truth feedback); spec expectation: ΔF ≈ +3-10 points.",
    paper_numbers={"delta_f": 0.05},
    against=("the same agent, tasks and seeds at k = 5 without feedback; null arm: a simulated "
             "user answering GOOD/BAD at random (the control); the no-ground-truth "
             "scripted user reported"),
    resources={"cpus": 1},
)
def feedback_gain(scale: Scale, seed: int, progress=None) -> Measurement:
    """ΔF = SR_5 with feedback - SR_5 without, the same trained tiny agent on the same tasks
    and seeds (k = 5, p = 2, count-down on), feedback from :class:`ScriptedFeedback`
    (binary "This is GOOD." / "This is BAD.", with ground truth). Paired over 3 evaluation
    seeds at small. Fails if ΔF <= 0 over the whole interval; inconclusive if the interval
    straddles 0. Also reported: the no-ground-truth scripted user (it can only flag errors).

    Control (issue 37, the null arm measured in the same run): the same agent with an
    uninformative user (:class:`~.feedback.RandomFeedback`, GOOD/BAD at random) on the same
    tasks and seeds; ``delta_f_over_random`` = SR_5 with the ground-truth user minus SR_5 with
    the random one must be > 0. If any feedback message helped as much, a positive ΔF would
    not show that the agent uses what the feedback says: the test bed could not tell. (The
    literal "the null's ΔF does not pass" would be unknown whenever the null's ΔF sits at 0
    with an interval around it, i.e. always.)"""
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
                                                               with_ground_truth=False)),
                                    ("random", RandomFeedback(s)))}
            row = {"seed": s}
            for name, df in res.items():
                row[f"sr_{name}"] = float(df.success.mean())
                row[f"sr_exact_{name}"] = float(df.exact_success.mean())
                row[f"proposals_{name}"] = float(df.n_propose.mean())
            rows.append(row)
            progress((i + 1) / len(seeds), f"seed {s}: {row}")
    col = {key: [r[key] for r in rows] for key in rows[0]}
    metrics = {f"sr5_{name}": seed_metric(col[f"sr_{name}"])
               for name in ("none", "gt", "no_gt", "random")}
    metrics["delta_f"] = seed_difference(col["sr_gt"], col["sr_none"])
    metrics["delta_f_no_gt"] = seed_difference(col["sr_no_gt"], col["sr_none"])
    metrics["delta_f_random"] = seed_difference(col["sr_random"], col["sr_none"])
    metrics["delta_f_over_random"] = seed_difference(col["sr_gt"], col["sr_random"])
    metrics["delta_f_exact"] = seed_difference(col["sr_exact_gt"], col["sr_exact_none"])
    metrics["train_loss"] = loss
    return Measurement(metrics=metrics, tables={"per_seed": rows},
                       notes=f"k = {k}. GPT-4's textual feedback (the paper's main setting) is "
                             "out of reach offline; LMFeedback runs the official feedback "
                             "prompt on any local model or endpoint.")


@claim(
    rule="valid_action_rate > 0",
    control="known_answer_sr >= 1 and null_valid_action_rate <= 0",
    paper="Sec. 3.2 / Table 2: every evaluated LLM (7B-70B, GPT-3.5/4, Claude) gains from "
          "extra turns with the Python tool (1-8% absolute per turn); weak open models "
          "(e.g. 7B chat models) stay near SR_1 and many turns are invalid actions. A 135M "
          "model is far below those: this claim checks the harness on a real instruction-tuned "
          "model (a plumbing check), it does not test the paper's turn-budget effect.",
    against=("known-answer replies (positive control) and an untrained byte model (null arm) "
             "through the same agent, prompts, parser, REPL and checks, on the same tasks"),
    resources={"cpus": {"smoke": 1, "small": 2}},  # SmolLM2 decodes on two threads
)
def smollm2_episodes(scale: Scale, seed: int, progress=None) -> Measurement:
    """The real protocol on a real instruction-tuned model, as a plumbing check of the harness:
    SmolLM2-135M-Instruct (offline, int8 dynamic-quantised linear layers, the kit's
    ``quantize_int8``: a slightly different model, ~2.5x faster on a CPU) gets the official
    first message (instructions, tool sentence, our in-context example, ``Task:``) and every
    later turn through its chat template (the official chat mode), greedy decoding (the
    official temperature 0) with the official stop words; its code runs in the real REPL, its
    solutions go through the official checks. 3 seeds x 2 numeric tasks, k in {1, 3}, replies
    cut at 80 tokens (CPU decoding of a 135M model over ~600-token prompts is the cost).

    Rule (changed for issue 37, written before any run of it): ``valid_action_rate > 0``, some
    of SmolLM2's turns are valid actions (a code block or a solution tag) once rendered in its
    template and cut at the stop words; a broken template or stop-word handling gives none
    (as the LLaMA-2 wrapper did for Auto-J's judge: SmolLM2 ends its turn at once). The old
    rule, SR_3 - SR_1 > 0 on 6 episodes per k, was built to fail (SR ~ 0 is what a 135M model
    gets); SR_k, ``sr_gain`` and the action split are reported, not judged.
    Control, measured in the same run through the same agent and prompts: the known-answer
    backend (:class:`~.answer_key.AnswerKeyBackend`) must reach SR 1 on every episode (a
    correct reply counts), and an untrained one-layer byte model (random text) must produce no
    valid action (noise is not counted); else the harness cannot tell. At smoke the untrained
    byte model also stands in for SmolLM2 on 2 tasks with k in {1, 2} (loading and running
    SmolLM2 does not fit the smoke budget), so the smoke verdict is *fails*: plumbing only."""
    from iclr24.kits.language_models import LocalTextModel, untrained_byte_lm
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    ks = sizes(scale, smoke=[1, 2], small=[1, 3])
    n_tasks = sizes(scale, smoke=2, small=2)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]

    def byte_agent(model_seed: int, fmt) -> LMAgent:
        lm = untrained_byte_lm(4096, d_model=16, seed=model_seed)
        return LMAgent(PaddedTextModel(LocalTextModel(lm)), prompt_format=fmt, max_new_tokens=8)

    if scale is Scale.SMOKE:
        fmt = "completion"
        agent = byte_agent(seed, fmt)
        name = "untrained 1-layer byte model (smoke)"
    else:
        from iclr24.kits.language_models import load_smollm2

        from .evaluation import chat_formatter

        lm = load_smollm2(quantize="int8")  # ~2.5x faster decoding on a CPU
        fmt = chat_formatter(lm.tokenizer.hf)
        agent = LMAgent(LocalTextModel(lm, max_batch=32), prompt_format=fmt, max_new_tokens=80)
        name = "SmolLM2-135M-Instruct (int8 dynamic quantisation)"
    tasks_by_seed = {s: make_mint_tasks(n_tasks, NUMERIC_KINDS, seed=30_000 + s) for s in seeds}
    all_tasks = [t for s in seeds for t in tasks_by_seed[s]]
    arms = {"model": agent, "known_answer": LMAgent(AnswerKeyBackend(all_tasks),
                                                    prompt_format=fmt),
            "null": byte_agent(seed + 1, fmt)}
    runs = {}
    with torch_threads(2 if scale is not Scale.SMOKE else 1):
        for arm, arm_agent in arms.items():
            runs[arm] = evaluate(arm_agent, all_tasks, ks, seed=seed, batch_size=len(all_tasks))
            progress(len(runs) / len(arms),
                     f"{arm}: SR {success_rates(runs[arm]).round(2).tolist()}")
    df = runs["model"]
    df["seed"] = [s for _ in ks for s in seeds for _ in range(n_tasks)]
    per_seed = [success_rates(df[df.seed == s]) for s in seeds]
    lo, hi = min(ks), max(ks)

    def valid_rate(frame) -> float:  # share of turns that are a code block or a solution tag
        return float(1 - frame.n_invalid.sum() / frame.turns.sum())

    turns = df.turns.sum()
    metrics = {f"sr_{k}": seed_metric([r[k] for r in per_seed]) for k in ks}
    metrics["sr_gain"] = seed_difference([r[hi] for r in per_seed], [r[lo] for r in per_seed])
    metrics["sr_exact_max_k"] = float(df[df.k == hi].exact_success.mean())
    metrics["valid_action_rate"] = valid_rate(df)
    metrics["code_turn_share"] = float(df.n_tool.sum() / turns)
    metrics["proposal_turn_share"] = float(df.n_propose.sum() / turns)
    metrics["known_answer_sr"] = float(runs["known_answer"].success.mean())
    metrics["known_answer_valid_action_rate"] = valid_rate(runs["known_answer"])
    metrics["null_valid_action_rate"] = valid_rate(runs["null"])
    metrics["null_sr"] = float(runs["null"].success.mean())
    metrics["n_episodes"] = len(df)
    return Measurement(
        metrics=metrics,
        tables={"episodes": df.drop(columns=["transcript"]).to_dict("records"),
                "transcripts": [{"k": int(r.k), "transcript": r.transcript[:3000]}
                                for r in df.head(4).itertuples()]},
        notes=f"Model: {name}. Budgets p = 1 at k = 1, else 2; count-down on; no feedback. "
              "Invalid actions (neither a code block nor a solution tag) use up turns. "
              "known_answer_*: the answer key's replies (SR must be 1); null_*: an untrained "
              "byte model's random text in the same prompts.")
