"""Chain-of-Table claims: operations planned for the statement turn large tables into easy ones
for a weak reader (``chain_vs_end_to_end``: the learned planner judged against a random legal
chain, the null arm, and against end-to-end reading, accuracy per table-size bucket; oracle
chains as the positive control), and the full LLM protocol (the official prompts, parsers,
voting and skips) run end to end on SmolLM2-135M-Instruct (``protocol_end_to_end``: a protocol
check, with an untrained byte-level model as its null arm)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .chain import ChainOfTable, ChainState
from .league import (
    KINDS,
    LearnedPlanner,
    RandomPlanner,
    RuleArguments,
    ScriptedPlanner,
    ShortContextReader,
    make_table_tasks,
)

BUCKETS = {"small": (8, 15), "medium": (16, 30), "large": (31, 60)}
METHODS = ("end_to_end", "scripted", "learned", "random")


def _accuracy(answers, tasks) -> float:
    return float(np.mean([a == t.answer for a, t in zip(answers, tasks)]))


def _bucket_run(seed: int, n_per_bucket: int, n_train: int) -> tuple[dict, list[dict]]:
    """Accuracy of every method on every bucket for one seed (+ per-kind rows)."""
    train = make_table_tasks(n_train, (8, 60), seed=10_000 + seed, templates="train")
    learned = LearnedPlanner(seed=seed).fit([t.statement for t in train],
                                            [t.oracle_chain for t in train])
    reader, args = ShortContextReader(window=5), RuleArguments()
    acc, per_kind = {}, []
    for b, (lo, hi) in BUCKETS.items():
        tasks = make_table_tasks(n_per_bucket, (lo, hi), seed=seed)
        tables, statements = [t.table for t in tasks], [t.statement for t in tasks]
        answers = {"end_to_end": [reader.answer(ChainState(t.table, t.statement, t.caption))
                                  for t in tasks]}
        planners = {"scripted": ScriptedPlanner({t.statement: t.oracle_chain for t in tasks}),
                    "learned": learned, "random": RandomPlanner(seed)}
        for name, planner in planners.items():
            out = ChainOfTable(planner, args, reader).run_batch(
                tables, statements, [t.caption for t in tasks])
            answers[name] = [o.answer for o in out]
        for m in METHODS:
            acc[(m, b)] = _accuracy(answers[m], tasks)
        for k in KINDS:
            idx = [i for i, t in enumerate(tasks) if t.kind == k]
            per_kind.append({"seed": seed, "bucket": b, "kind": k, "n": len(idx), **{
                m: _accuracy([answers[m][i] for i in idx], [tasks[i] for i in idx])
                for m in METHODS}})
    return acc, per_kind


@claim(
    rule={"smoke": "learned_minus_random_large > 0 and learned_minus_e2e_large > 0",
          "small": "learned_minus_random_large > 0 and learned_minus_e2e_large >= 0.15 "
                   "and gap_growth > 0"},
    control={"smoke": "scripted_minus_random_large > 0",
             "small": "acc_scripted_large >= 0.9 and scripted_minus_random_large > 0"},
    paper="Table 1: Chain-of-Table beats end-to-end QA on TabFact / WikiTQ (PaLM 2: 86.61 / "
          "67.31 vs about 77.9 / 60.6; GPT-3.5: 80.20 / 59.94 vs about 70.5 / 51.8); Sec. 3: "
          "the LLM plans the chain (DynamicPlan) from the table and the question; Sec. 4.4 "
          "(table size): the gains are largest on the largest tables. Spec expectation for "
          "the synthetic analogue: end-to-end ~55-65% on large tables, scripted chains >= 90%, "
          "learned planner >= end-to-end + 15 points on the largest bucket, gap growing with "
          "size.",
    paper_numbers={"scripted_minus_e2e_large": 0.087},
    against=("null arm: a uniformly random legal chain with the same rule-based arguments and "
             "reader (the planner judged against it); end-to-end reading by the same 5-row "
             "reader on the full table (the spec's +15-point bar); oracle chains as the "
             "positive control"),
)
def chain_vs_end_to_end(scale: Scale, seed: int, progress=None) -> Measurement:
    """Synthetic league tables (:func:`~.league.make_table_tasks`, five statement kinds, half
    true) in three size buckets (8-15, 16-30, 31-60 rows), read by the short-context reader
    R1 (sees the first 5 rows + the group block). In one run: end-to-end (R1 on the full
    table), Chain-of-Table with the oracle chains (ScriptedPlanner), with a LearnedPlanner
    (logistic regression trained on oracle chains of *disjoint* templates and team names;
    the stand-in for the paper's LLM planner) and with a uniformly random legal chain (the
    null arm); all chains use the rule-based argument generator and the real operations.
    Accuracy per bucket; 3 seeds at small (each draws its own tables, statements and
    training set), differences paired by seed.

    Rule (issue 37, written before the rerun). The old rule (scripted and learned each
    >= end-to-end + 0.15 on the large bucket, scripted gap growing) was passed by the null
    arm: a random legal chain beat end-to-end by 0.21 [0.198, 0.222] at small, since any
    select/sort/group that the rule-based arguments can fill moves rows into the reader's
    window. The paper's method is the *planned* chain, so the planner is now judged against
    the random chain: on the 31-60-row bucket ``learned_minus_random_large > 0`` (whole
    interval) and, as the spec asks, ``learned_minus_e2e_large >= 0.15``; ``gap_growth`` is
    now the learned chain's gain over end-to-end on 31-60 rows minus that on 8-15 rows (> 0;
    the scripted chain's growth is reported as ``gap_growth_scripted``). Fails if the learned
    planner does not beat the random chain, or the spec's bar, or its gain does not grow.
    Put in the learned planner's place, the random chain gives learned_minus_random = 0 and
    cannot pass.

    Control (positive): the oracle chains reach the spec's >= 90% on the large bucket and
    beat the random chain (``scripted_minus_random_large > 0``): otherwise the test bed
    cannot tell a planned chain from a random one, and the verdict is inconclusive.

    What the test bed builds in: the reader R1 sees 5 rows, so end-to-end on 31-60 rows is
    near a coin flip (the spec's second reader R2, a tiny character transformer, is not
    implemented); the claim tests planning on top of that, not the reader."""
    progress = progress or (lambda *a, **k: None)
    n_per_bucket = sizes(scale, smoke=20, small=200)
    n_train = sizes(scale, smoke=100, small=300)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    runs, per_kind = [], []
    for i, s in enumerate(seeds):
        acc, rows = _bucket_run(s, n_per_bucket, n_train)
        runs.append(acc)
        per_kind += rows
        progress((i + 1) / len(seeds), f"seed {s}: large bucket e2e "
                 f"{acc[('end_to_end', 'large')]:.2f}, learned {acc[('learned', 'large')]:.2f}")

    def col(m, b):
        return [r[(m, b)] for r in runs]

    metrics: dict = {"n_statements_per_seed": 3 * n_per_bucket, "n_seeds": len(seeds)}
    for m in METHODS:
        for b in BUCKETS:
            metrics[f"acc_{m}_{b}"] = seed_metric(col(m, b))
    for m in ("scripted", "learned", "random"):
        for b in BUCKETS:
            metrics[f"{m}_minus_e2e_{b}"] = seed_difference(col(m, b), col("end_to_end", b))
    for m in ("learned", "scripted"):
        for b in BUCKETS:
            metrics[f"{m}_minus_random_{b}"] = seed_difference(col(m, b), col("random", b))

    def growth(m):  # (m - e2e) on 31-60 rows minus (m - e2e) on 8-15 rows, per seed
        return seed_metric([(r[(m, "large")] - r[("end_to_end", "large")])
                            - (r[(m, "small")] - r[("end_to_end", "small")]) for r in runs])

    metrics["gap_growth"] = growth("learned")
    metrics["gap_growth_scripted"] = growth("scripted")
    metrics["gap_growth_random"] = growth("random")
    table = [{"bucket": b, "rows": f"{lo}-{hi}", **{m: float(np.mean(col(m, b))) for m in METHODS}}
             for b, (lo, hi) in BUCKETS.items()]
    return Measurement(
        metrics=metrics, figure=_bucket_figure(table), tables={"accuracy_by_bucket": table,
                                                             "accuracy_by_kind": per_kind},
        notes="The reader is scripted (R1 of the spec): it sees 5 rows, so the scripted chain "
              "is near 100% by construction and end-to-end on large tables near a coin flip. "
              "A random legal chain with the same rule-based arguments also beats end-to-end "
              "(any select/sort/group that applies moves rows into view; operations whose "
              "arguments do not apply are skipped), so the rule judges the learned planner "
              "against the random chain (learned_minus_random_large: the value of planning); "
              "random_minus_e2e_* shows what reordering alone buys. The spec's second reader "
              "(a tiny character transformer) is not implemented.")


def _bucket_figure(table):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(table))
    for k, m in enumerate(METHODS):
        ax.bar(x + (k - 1.5) * 0.2, [r[m] for r in table], width=0.2, label=m)
    ax.set_xticks(x, [r["rows"] + " rows" for r in table])
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.05)
    ax.axhline(0.5, color="gray", ls=":")
    ax.legend(fontsize=8)
    ax.set_title("Chain-of-Table vs end-to-end (reader sees 5 rows)")
    fig.tight_layout()
    return fig


def _untrained_byte_llama(seed: int):
    """An untrained one-layer Llama over a byte-level tokenizer behind the prefix cache: a
    model that follows no format (the protocol's null arm, and its main arm at smoke)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from iclr24.kits.language_models import HFCausalLM, PrefixCachedTextModel

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)} | {"<eos>": len(alphabet)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<eos>", eos_token="<eos>")
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32,
                      num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                      max_position_embeddings=16384, bos_token_id=len(alphabet),
                      eos_token_id=len(alphabet))
    torch.manual_seed(seed)
    lm = HFCausalLM(LlamaForCausalLM(cfg), tok, name="untrained byte Llama")
    return PrefixCachedTextModel(lm, max_batch=8)


def _protocol_backend(scale: Scale, seed: int):
    """SmolLM2-135M-Instruct behind the prefix cache (small); at smoke the untrained byte
    Llama (loading SmolLM2 and prefilling its 2-3.5k-token demos does not fit the smoke
    budget: a check of the plumbing, not of the claim)."""
    if scale is Scale.SMOKE:
        return _untrained_byte_llama(seed), "untrained 1-layer byte Llama (smoke)"
    from iclr24.kits.language_models import PrefixCachedTextModel, load_smollm2

    return PrefixCachedTextModel(load_smollm2(), max_batch=8), "SmolLM2-135M-Instruct"


def _run_protocol(lm, tasks, seed: int, caps: tuple[int, int, int]) -> dict:
    """The official protocol (LM planner, arguments, reader) on ``tasks`` with token caps
    (planner, operations, per-row values), and the same LM reading the full tables: results
    (None for a statement that raised), errors, the three agents' parse statistics and the
    end-to-end answers."""
    from .agents import LMArguments, LMPlanner, LMReader

    planner = LMPlanner(lm, max_new_tokens=caps[0], seed=seed)
    arguments = LMArguments(lm, max_new_tokens=caps[1], row_value_tokens=caps[2], seed=seed)
    reader = LMReader(lm, seed=seed)
    cot = ChainOfTable(planner, arguments, reader)
    results, errors = [None] * len(tasks), []
    try:
        results = cot.run_batch([t.table for t in tasks], [t.statement for t in tasks],
                                [t.caption for t in tasks])
    except Exception as exc:  # noqa: BLE001 - a failing batch: rerun alone, count errors
        errors.append(f"batch: {type(exc).__name__}: {exc}")
        for i, t in enumerate(tasks):
            try:
                results[i] = cot.run(t.table, t.statement, t.caption)
            except Exception as exc2:  # noqa: BLE001 - counted, never dropped
                errors.append(f"{i}: {type(exc2).__name__}: {exc2}")
    e2e = LMReader(lm, seed=seed).answers([ChainState(t.table, t.statement, t.caption)
                                           for t in tasks])
    return {"results": results, "errors": errors, "planner": planner, "arguments": arguments,
            "reader": reader, "e2e": e2e}


@claim(
    rule="finished_rate == 1 and plan_parse_rate >= 0.5",
    control="not (null_finished_rate == 1 and null_plan_parse_rate >= 0.5)",
    paper="Sec. 3 / App. D-E (official code): the exact prompts, parsers, 8-sample voting, "
          "sanity checks and skips, run with PaLM 2 / GPT-3.5 / LLaMA 2 (TabFact accuracy "
          "86.61 / 80.20 / 67.24). A protocol check, not a reproduction of those numbers: "
          "the protocol must run end to end on a real local model, every statement ending in "
          "an answer (or a counted unparsable reply), with the model's replies naming legal "
          "operations in the official format.",
    against=("null arm: the same protocol, prompts and statements run on an untrained "
             "one-layer byte-level Llama (a model that follows no format), which must not "
             "pass the rule; the same LM reading the full table end-to-end and the rule-based "
             "arguments are reported"),
    resources={"cpus": 2},
)
def protocol_end_to_end(scale: Scale, seed: int, progress=None) -> Measurement:
    """The official Chain-of-Table protocol (:class:`~.agents.LMPlanner`,
    :class:`~.agents.LMArguments`, :class:`~.agents.LMReader`, every prompt verbatim) on
    SmolLM2-135M-Instruct, batched through :class:`~iclr24.kits.language_models.PrefixCachedTextModel`:
    5 synthetic statements (one per kind; the spec's 20 do not fit the CPU budget: every
    decoded row attends to a 1-3.5k-token demo prefix, and 10 statements took 482 s of wall
    time on 2 cores) on 8-row league tables (one seed: a protocol check, not a comparison).
    Decoding as official (T=0 planner, 8 samples at T=0.5 for select_row/select_column voted
    by Σ exp(log-prob), T=0 elsewhere) with smaller token caps (planner 32 new tokens,
    operations 64, per-row values 8; official 200 / 150 / 150). In the same run the reader
    answers from the full table (end-to-end). Reported: parse rate per step, argument
    agreement with the rule-based arguments, accuracy of both.

    What the verdict says (issue 37): this is a check that the paper's protocol runs and that
    a real small model's replies are in its format, not a reproduction of Chain-of-Table's
    accuracy (5 statements on a 135M model cannot measure that; accuracies are reported
    only). So that the check can tell a format-following model from any model, the null arm
    runs in the same measurement: the same protocol on the same statements with an untrained
    one-layer byte-level Llama (token caps 8 / 8 / 4), and the control requires that it does
    not pass the rule (``null_plan_parse_rate`` below 0.5 or a statement that raised);
    otherwise the parse-rate bar cannot tell, and the verdict is inconclusive.

    At smoke the method arm is itself an untrained byte Llama (one statement; a plumbing
    check: it writes no legal operation, so the rule fails).

    Fails if a statement raises instead of ending in an answer (the official accuracy drops
    such samples; we count them) or if fewer than half the planner replies name a legal
    next operation."""
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    n = sizes(scale, smoke=1, small=5)
    lm, name = _protocol_backend(scale, seed)
    tasks = make_table_tasks(n, (8, 8), seed=20_000 + seed)
    caps = sizes(scale, smoke=(8, 8, 4), small=(32, 64, 8))
    with torch_threads(1 if scale is Scale.SMOKE else 2):
        run = _run_protocol(lm, tasks, seed, caps)
        progress(0.8, "chains and end-to-end reading done; null arm (untrained byte Llama)")
        null = _run_protocol(_untrained_byte_llama(seed + 1), tasks, seed, (8, 8, 4))
    results, errors = run["results"], run["errors"]
    planner, arguments, reader = run["planner"], run["arguments"], run["reader"]
    finished = [r is not None for r in results]
    answers = [r.answer if r is not None else "" for r in results]
    rule_args = RuleArguments()
    agree: dict[str, list[bool]] = {}
    rows = []
    for t, r in zip(tasks, results):
        if r is None:
            continue
        state = ChainState(t.table, t.statement, t.caption)
        for op in r.state.applied:
            ref = rule_args.generate(op.name, state)
            agree.setdefault(op.name, []).append(ref is not None and ref.args == op.args)
        rows.append({"kind": t.kind, "statement": t.statement, "truth": t.answer,
                     "answer": r.answer, "chain": " -> ".join(r.chain) or "(none)",
                     "oracle": " -> ".join(t.oracle_chain)})
    stats = [planner.stats, arguments.stats, reader.stats]
    null_results = null["results"]
    metrics: dict = {
        "n_statements": n, "finished_rate": float(np.mean(finished)),
        "n_errors": len(errors),
        "accuracy_chain": _accuracy(answers, tasks),
        "accuracy_end_to_end": _accuracy(run["e2e"], tasks),
        "answer_parse_rate": reader.stats.parse_rate("answer"),
        "plan_parse_rate": planner.stats.parse_rate("plan"),
        "mean_chain_length": float(np.mean([len(r.state.applied) for r in results
                                            if r is not None] or [0])),
        "n_skips": sum(len(r.state.skipped) for r in results if r is not None),
        "null_finished_rate": float(np.mean([r is not None for r in null_results])),
        "null_plan_parse_rate": null["planner"].stats.parse_rate("plan"),
        "null_answer_parse_rate": null["reader"].stats.parse_rate("answer"),
        "null_accuracy_chain": _accuracy([r.answer if r is not None else ""
                                          for r in null_results], tasks),
    }
    per_op = []
    for op in ("add_column", "select_row", "select_column", "group_column", "sort_column"):
        calls = arguments.stats.calls.get(op, 0)
        rate = arguments.stats.parse_rate(op)
        if calls:
            metrics[f"{op}_parse_rate"] = rate
        agree_op = agree.get(op, [])
        per_op.append({"operation": op, "calls": calls, "parse_rate": rate,
                       "applied": len(agree_op),
                       "agrees_with_rule_args": float(np.mean(agree_op)) if agree_op
                       else float("nan")})
    examples = [e for s in stats for e in s.examples[:4]]
    return Measurement(
        metrics=metrics,
        tables={"per_operation": per_op, "statements": rows, "replies": examples,
                "errors": [{"error": e} for e in errors + [f"null arm {e}"
                                                           for e in null["errors"]]]},
        notes=f"Model: {name}; null arm: untrained 1-layer byte Llama. Parse rate = replies "
              "with the expected call / LM calls per step; 'agrees_with_rule_args' compares "
              "applied arguments with the rule-based generator's (an accuracy per operation "
              "on the synthetic tables). Unparsed answers count as wrong. Expect low accuracy "
              "from a 135M model: the verdict checks that the protocol runs and that the "
              "model's replies are in the format (which the null arm's are not), not the "
              "paper's accuracy.")
