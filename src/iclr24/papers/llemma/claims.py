"""Llemma claims: the Minerva checker against string matching (and math-verify; an accept-all
checker as its null arm), maj@k against greedy (a tiny model and SmolLM2-135M-Instruct), and
mixture continued pretraining (judged on accuracy and on keeping general text better than
math-only and than a mixture whose general text is shuffled, the null arm)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .answers import normalize_tex
from .checker_pairs import ANSWER_PAIRS
from .equivalence import SympyEquivalence
from .evaluator import MINERVA_ARITHMETIC_FEWSHOT, MathEvaluator
from .experiments import (
    TinySolverConfig,
    arithmetic_task,
    held_out_bits_per_byte,
    math_sources,
    new_tiny_model,
    solutions_stream,
    train_tiny_solver,
)
from .mixture import LLEMMA_WEIGHTS, MixtureSampler, continue_pretraining


def _precision_recall(pred: list[bool], truth: list[bool]) -> tuple[float, float]:
    tp = sum(p and t for p, t in zip(pred, truth))
    fp = sum(p and not t for p, t in zip(pred, truth))
    fn = sum(t and not p for p, t in zip(pred, truth))
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


def _bootstrap_precision(accepted, labels) -> float:
    """Precision of the accepted pairs (1.0 when none is accepted), for the bootstrap."""
    n = float(np.sum(accepted))
    return float(np.sum(accepted * labels)) / n if n else 1.0


def _raw_match(pred: str, gold: str) -> bool:
    """String equality after stripping whitespace and one pair of outer TeX dollars."""
    return pred.strip().strip("$").strip() == gold.strip()


@claim(
    rule="recall_gain >= 0.3 and false_positives_unexplained == 0",
    control="not (recall_gain_accept_all >= 0.3 and false_positives_unexplained_accept_all == 0)",
    paper="Llemma Sec. 3.1 (Minerva protocol, Lewkowycz et al. 2022 App. D): answers are "
          "normalised and compared with SymPy, so equivalent forms (1/2 vs 0.5, units, "
          "x = 3) count as correct; the normaliser is lossy by design (unit words deleted, "
          "digit lists joined). Neither paper reports the checker's accuracy; the spec "
          "expects recall +0.3 over exact match with no false positives.",
    against=("raw and normalised string equality on the same hand-labelled pairs; null arm: "
             "a checker that accepts every pair; math-verify reported beside"),
)
def minerva_checker(scale: Scale, seed: int) -> Measurement:
    """Four checkers on the hand-labelled pairs of :mod:`.checker_pairs` (142 at small, every
    sixth at smoke): (a) raw string equality (outer ``$`` stripped), (b) equality after
    :func:`normalize_tex`, (c) the paper's checker: normalise + SymPy (:func:`is_equiv`), (d)
    math-verify on the raw answers. Precision and recall of "equivalent" against our labels
    (precision also as a bootstrap interval over pairs); every (c)/(d) disagreement is listed.
    Deterministic (``seed`` unused).

    Rule (issue 37, written before the rerun). The old bar, precision >= 0.98, came from the
    spec, not from either paper, and could never hold on this table: its two deliberate
    lossy-normaliser pairs ("5 feet" vs "5 inches", "123" vs "1,2,3"; ``known_limit``) are
    accepted by the official procedure, so precision was 92/94 = 0.979 at small. Neither
    Llemma nor Minerva reports a checker accuracy; what the paper relies on is that the
    procedure counts equivalent forms that string matching misses and accepts a wrong answer
    only through its documented lossy rules. So: ``recall_gain`` (checker (c) minus raw
    equality) >= 0.3 (the spec's bar) and ``false_positives_unexplained`` (pairs labelled
    not equivalent that (c) accepts, other than the ``known_limit`` pairs) == 0. Fails if
    the checker gains less recall, or accepts any other non-equivalent pair.

    Null arm, in the same run: a checker that accepts every pair (recall 1, every near miss
    a false positive). Control: it must not pass the rule, i.e. the table holds enough
    near misses outside the documented limits for the false-positive bar to bite; otherwise
    the test bed cannot tell."""
    pairs = ANSWER_PAIRS[::sizes(scale, smoke=6, small=1)]
    truth = [p.equivalent for p in pairs]
    rows = []
    with SympyEquivalence(timeout=5.0) as checker:
        for p in pairs:
            npred, ngold = normalize_tex(p.pred), normalize_tex(p.gold)
            minerva = checker.check(npred, ngold)
            mv = checker.math_verify(p.pred, p.gold)
            rows.append({"pred": p.pred, "gold": p.gold, "label": p.equivalent,
                         "category": p.category, "known_limit": p.known_limit,
                         "norm_pred": npred, "norm_gold": ngold,
                         "raw": _raw_match(p.pred, p.gold), "normalised": npred == ngold,
                         "minerva": minerva.equivalent, "minerva_status": minerva.status,
                         "math_verify": mv.equivalent, "accept_all": True})
    metrics: dict[str, float] = {"n_pairs": len(pairs), "n_equivalent": sum(truth),
                                 "n_known_limit": sum(bool(p.known_limit) for p in pairs)}
    for name in ("raw", "normalised", "minerva", "math_verify", "accept_all"):
        prec, rec = _precision_recall([r[name] for r in rows], truth)
        metrics[f"precision_{name}"], metrics[f"recall_{name}"] = prec, rec
    metrics["recall_gain"] = metrics["recall_minerva"] - metrics["recall_raw"]
    metrics["recall_gain_accept_all"] = metrics["recall_accept_all"] - metrics["recall_raw"]
    for name, suffix in (("minerva", ""), ("accept_all", "_accept_all")):
        fps = [r for r in rows if r[name] and not r["label"]]
        metrics[f"false_positives{suffix}"] = len(fps)
        metrics[f"false_positives_unexplained{suffix}"] = sum(not r["known_limit"] for r in fps)
    accepted = np.array([r["minerva"] for r in rows], dtype=float)
    metrics["precision_minerva_interval"] = Estimate.bootstrap(  # over pairs (reported)
        (accepted, np.array(truth, dtype=float)), _bootstrap_precision, paired=True, seed=0)
    disagree = [r for r in rows if r["minerva"] != r["math_verify"]]
    metrics["n_minerva_vs_math_verify_disagreements"] = len(disagree)
    errors = [r for r in rows if r["minerva"] != r["label"]]
    per_cat = []
    for cat in sorted({r["category"] for r in rows}):
        rs = [r for r in rows if r["category"] == cat]
        per_cat.append({"category": cat, "n": len(rs), **{
            f"correct_{name}": sum(r[name] == r["label"] for r in rs)
            for name in ("raw", "normalised", "minerva", "math_verify")}})
    return Measurement(
        metrics=metrics,
        tables={"disagreements_minerva_vs_math_verify": disagree, "minerva_errors": errors,
                "per_category": per_cat, "pairs": rows},
        notes="Labels are ours, fixed before any checker ran. Minerva's errors are its known "
              "limits: lists/sets/intervals in another order or form (SymPy cannot parse "
              "comma lists), mixed numbers and repeating decimals, a zero reference (the "
              "official code treats a falsy parse as unparsable), and the lossy normaliser "
              "(unit words deleted even when they differ; the thousands rule joins '1,2,3'): "
              "the last two are the table's known_limit pairs, the only false positives the "
              "rule allows.",
    )


def _voting_run(model, problems, ks, temperature, top_p, max_new_tokens, seed):
    from iclr24.kits.language_models import LocalTextModel, TransformerLM

    lm = LocalTextModel(TransformerLM(model))
    greedy = MathEvaluator(lm, k=1, temperature=0.0, max_new_tokens=max_new_tokens,
                           batch_size=len(problems)).evaluate(problems)
    sampled = MathEvaluator(lm, k=max(ks), temperature=temperature, top_p=top_p,
                            max_new_tokens=max_new_tokens, seed=seed,
                            batch_size=len(problems)).evaluate(problems, ks=ks)
    return greedy, sampled


def _curve_figure(ks, maj, greedy, pass1, title):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(ks, maj, "o-", label="maj@k (sampled)")
    ax.axhline(greedy, color="k", ls="--", label="greedy (maj@1)")
    ax.axhline(pass1, color="gray", ls=":", label="pass@1 (one sample)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (samples voted)")
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    return fig


def _voting_metrics(per_seed, ks, k_vote):
    """per_seed: list of dicts with greedy, pass1 and maj@k accuracies."""
    def metric(xs):
        return Estimate.mean_of(xs) if len(xs) > 1 else float(xs[0])

    def diff(a, b):
        if len(a) > 1:
            return Estimate.difference(a, b, paired=True)
        return float(a[0] - b[0])

    greedy = [r["greedy"] for r in per_seed]
    pass1 = [r["pass1"] for r in per_seed]
    maj = {k: [r[f"maj@{k}"] for r in per_seed] for k in ks}
    metrics = {"greedy_acc": metric(greedy), "pass1": metric(pass1),
               "maj_minus_greedy": diff(maj[k_vote], greedy),
               "maj_minus_pass1": diff(maj[k_vote], pass1),
               "pass1_minus_greedy": diff(pass1, greedy),
               "k_vote": k_vote, "n_seeds": len(per_seed)}
    for k in ks:
        metrics[f"maj_at_{k}"] = metric(maj[k])
    return metrics


@claim(
    rule={"smoke": "maj_minus_greedy > 0", "small": "maj_minus_greedy >= 0.05"},
    control={"smoke": "not (pass1_minus_greedy > 0)",
             "small": "not (pass1_minus_greedy >= 0.05)"},
    paper="Table 1 / Sec. 3.1: majority voting over sampled solutions beats greedy decoding: "
          "MATH maj@256 33.5% vs greedy 18.0% (Llemma-7B), 43.1% vs 25.0% (34B); GSM8k "
          "maj@100 54.0% vs 36.4% (7B). Sampling at temperature 0.6, top-p 0.95 (fork config).",
    paper_numbers={"maj_minus_greedy": 0.155},
    against=("greedy decoding (maj@1) of the same trained tiny model on the same held-out "
             "problems; null arm: one sample at the same temperature without a vote (pass@1, "
             "the mean share of correct samples), which must not pass the rule"),
    resources={"cpus": 1},
)
def majority_voting(scale: Scale, seed: int, progress=None) -> Measurement:
    """A tiny byte-level transformer trained on Minerva-format worked solutions of the kit's
    arithmetic problems, evaluated through :class:`MathEvaluator` on held-out problems:
    greedy (maj@1) vs maj@k over k samples at temperature 0.6, top-p 0.95 (the fork's
    defaults); maj@j for smaller j from the first j samples. ``maj_minus_greedy`` is at
    k = 16 (small; 4 at smoke), paired over seeds (each seed trains its own model on its own
    problems).

    Null arm (issue 37), from the same samples: one sample without a vote (pass@1, the mean
    share of correct samples). Control: it must not pass the rule (``pass1_minus_greedy``
    below the bar); if sampling alone beat greedy by as much, the gain would not be the
    vote's and the test bed cannot tell."""
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    cfg = sizes(scale, smoke=TinySolverConfig(d_model=32, n_layers=1, steps=30, batch_size=16,
                                              n_train=400),
                small=TinySolverConfig(d_model=64, n_layers=2, steps=300, batch_size=16))
    ks = sizes(scale, smoke=[1, 2, 4], small=[1, 2, 4, 8, 16])
    n_test = sizes(scale, smoke=6, small=40)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    per_seed, table = [], []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            model, loss = train_tiny_solver(cfg, s)
            problems = arithmetic_task(n_test, seed=50_000 + s)
            greedy, sampled = _voting_run(model, problems, ks, 0.6, 0.95, 80, s)
            row = {"seed": s, "train_loss": loss, "greedy": float(greedy.acc.mean()),
                   "pass1": float(sampled[f"pass@{max(ks)}"].mean()),
                   "invalid_rate": float(sampled.n_invalid.sum() / (len(sampled) * max(ks)))}
            row.update({f"maj@{k}": float(sampled[f"acc@{k}"].mean()) for k in ks})
            per_seed.append(row)
            table.append(row)
            progress((i + 1) / len(seeds), f"seed {s}: greedy {row['greedy']:.2f}")
    k_vote = max(ks)
    metrics = _voting_metrics(per_seed, ks, k_vote)
    fig = _curve_figure(ks, [np.mean([r[f"maj@{k}"] for r in per_seed]) for k in ks],
                        np.mean([r["greedy"] for r in per_seed]),
                        np.mean([r["pass1"] for r in per_seed]),
                        f"tiny solver ({cfg.n_layers} layers, d={cfg.d_model})")
    return Measurement(metrics=metrics, figure=fig, tables={"per_seed": table},
                       notes="Greedy is maj@1 as in the paper; pass1 is the mean share of "
                             "correct samples (the pass rate at the largest k).")


@claim(
    rule={"smoke": "maj_minus_greedy > 0", "small": "maj_minus_greedy > 0"},
    control="not (pass1_minus_greedy > 0)",
    paper="Table 1: maj@k beats greedy for every Llemma and Code Llama model (e.g. MATH "
          "Llemma-7B 33.5% maj@256 vs 18.0% greedy; GSM8k 54.0% maj@100 vs 36.4%).",
    paper_numbers={"maj_minus_greedy": 0.155},
    against=("greedy decoding (maj@1) of the same model and few-shot prompt on the same problems "
             "(an untrained byte model at smoke); null arm: one sample without a vote (pass@1), "
             "which must not pass the rule"),
    resources={"cpus": 1},
)
def majority_voting_smollm2(scale: Scale, seed: int, progress=None) -> Measurement:
    """The paper's protocol on a real instruction-tuned model: SmolLM2-135M-Instruct (offline,
    float32) prompted with four Minerva-format worked arithmetic examples
    (:data:`MINERVA_ARITHMETIC_FEWSHOT`, plain completion as for a base model), greedy vs maj@k
    (temperature 0.6, top-p 0.95) on the kit's two-term problems, answers extracted,
    normalised and checked as for MATH. Each of 3 seeds draws its own problems and samples.
    At smoke the same protocol runs on an untrained one-layer byte model (loading SmolLM2
    does not fit the smoke budget): a check of the plumbing, not of the claim.

    Null arm (issue 37), from the same samples: one sample without a vote (pass@1). Control:
    it must not beat greedy (``pass1_minus_greedy > 0`` false); otherwise the gain would be
    the sampling's, not the vote's, and the test bed cannot tell."""
    from iclr24.kits.language_models import LocalTextModel, TransformerLM, arithmetic_problems
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    ks = sizes(scale, smoke=[1, 2], small=[1, 2, 4])
    n_problems = sizes(scale, smoke=2, small=8)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    max_new = sizes(scale, smoke=8, small=36)
    if scale is Scale.SMOKE:
        lm = LocalTextModel(TransformerLM(new_tiny_model(TinySolverConfig(d_model=16,
                                                                          n_layers=1), seed,
                                                         context_length=1024)))
        model_name = "untrained 1-layer byte model (smoke)"
    else:
        from iclr24.kits.language_models import load_smollm2

        lm = LocalTextModel(load_smollm2())
        model_name = "SmolLM2-135M-Instruct"
    per_seed, examples = [], []
    with torch_threads(1 if scale is Scale.SMOKE else 2):
        for i, s in enumerate(seeds):
            problems = arithmetic_problems(n_problems, seed=60_000 + s, ops=("+", "-", "*"),
                                           digits=(1, 2), n_terms=(2, 2))
            common = {"max_new_tokens": max_new, "batch_size": n_problems}
            greedy = MathEvaluator(lm, MINERVA_ARITHMETIC_FEWSHOT, k=1, temperature=0.0,
                                   **common).evaluate(problems)
            sampled = MathEvaluator(lm, MINERVA_ARITHMETIC_FEWSHOT, k=max(ks),
                                    temperature=0.6, top_p=0.95, seed=s,
                                    **common).evaluate(problems, ks=ks)
            row = {"seed": s, "greedy": float(greedy.acc.mean()),
                   "pass1": float(sampled[f"pass@{max(ks)}"].mean()),
                   "greedy_parse_rate": float(1 - greedy.n_invalid.mean()),
                   "sample_parse_rate": float(1 - sampled.n_invalid.sum()
                                              / (len(sampled) * max(ks)))}
            row.update({f"maj@{k}": float(sampled[f"acc@{k}"].mean()) for k in ks})
            per_seed.append(row)
            for j in range(min(3, n_problems)):
                examples.append({"seed": s, "problem": problems[j].question,
                                 "gold": problems[j].answer,
                                 "greedy_completion": greedy.completions.iloc[j][0],
                                 "greedy_answer": greedy.answers.iloc[j][0],
                                 "sampled_answers": ", ".join(sampled.answers.iloc[j])})
            progress((i + 1) / len(seeds), f"seed {s}: greedy {row['greedy']:.2f}")
    metrics = _voting_metrics(per_seed, ks, max(ks))
    metrics["greedy_parse_rate"] = float(np.mean([r["greedy_parse_rate"] for r in per_seed]))
    metrics["sample_parse_rate"] = float(np.mean([r["sample_parse_rate"] for r in per_seed]))
    fig = _curve_figure(ks, [np.mean([r[f"maj@{k}"] for r in per_seed]) for k in ks],
                        np.mean([r["greedy"] for r in per_seed]),
                        np.mean([r["pass1"] for r in per_seed]), model_name)
    return Measurement(metrics=metrics, figure=fig,
                       tables={"per_seed": per_seed, "examples": examples},
                       notes=f"Model: {model_name}. Parse rate: share of completions with a "
                             "'Final Answer: The final answer is ...' line.")


def _shuffled_characters(text: str, rng: np.random.Generator) -> str:
    """``text`` with its characters in a random order (same characters, same length)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    return rng.permutation(codes).tobytes().decode("utf-32-le")


@claim(
    rule=("acc_gain_mixture > 0 and general_bpb_mixture_minus_math_only < 0 "
          "and general_bpb_mixture_minus_shuffled < 0"),
    control="general_bpb_math_only_minus_general > 0",
    paper="Sec. 2-3: continuing Code Llama on the Proof-Pile-2 mixture (arXiv : web : code = "
          "2 : 4 : 1) raises MATH 4-shot accuracy from 4.5% to 18.0% (7B) and from 12.2% to "
          "25.0% (34B); about 5% general data (a Pile sample and RedPajama code, official "
          "data_mixture.yml) is mixed in as regularisation. The paper reports no general-text "
          "perplexity; the spec expects the mixture to lose less of it than math-only.",
    paper_numbers={"acc_gain_mixture": 0.135},
    against=("a math-only (2:4:1) continuation, which the mixture must beat on held-out "
             "general text; null arm: the mixture with its general documents' characters "
             "shuffled (same dose, no language); the general-only continuation (accuracy "
             "baseline, and the positive control's reference)"),
    resources={"cpus": 1},
)
def mixture_pretraining(scale: Scale, seed: int, progress=None) -> Measurement:
    """The recipe in miniature. A tiny byte model is first pretrained on general English (the
    kit's pydoc corpus) with a few Minerva-format arithmetic solutions mixed in (5%), then
    continued for the same number of steps on (a) general text only, (b) the Llemma mixture
    (the official weights: arXiv-like LaTeX derivations 2, web-like worked solutions 4, Python
    solutions 1, general text 0.368), (c) the math sources only (2 : 4 : 1), (d) the null
    arm: the mixture of (b) with each general document's characters shuffled. Greedy
    accuracy on held-out problems through :class:`MathEvaluator`; bits per byte on held-out
    general text. 3 seeds at small, differences paired by seed.

    Rule (issue 37, written before the rerun). The old rule judged only mixture vs
    general-only accuracy, which is close to built in (only the mixture arm sees the
    problems' format in bulk); the paper's point, that the mixture specialises while its
    general share keeps what math-only training loses, was reported, not judged. Now:
    ``acc_gain_mixture > 0`` (mixture minus general-only accuracy), and
    ``general_bpb_mixture_minus_math_only < 0`` (the mixture keeps general text better than
    math-only), and ``general_bpb_mixture_minus_shuffled < 0`` (better than the
    null arm, which takes the same share of the budget away from math but carries no
    language: the retention is the general data's, not just a smaller math dose). Fails if
    the mixture does not raise accuracy, or keeps general text no better than math-only or
    than the shuffled-text mixture.

    Control (positive): math-only continuation must lose general ability against
    general-only continuation (``general_bpb_math_only_minus_general > 0``); if it loses
    nothing, there is nothing for the mixture to keep and the test bed cannot tell."""
    from iclr24.kits.language_models import pydoc_topics_corpus
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    cfg = sizes(scale, smoke=TinySolverConfig(d_model=32, n_layers=1, steps=20, batch_size=8),
                small=TinySolverConfig(d_model=64, n_layers=2, steps=200, batch_size=16))
    base_steps = sizes(scale, smoke=10, small=100)
    n_test = sizes(scale, smoke=6, small=40)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    corpus = pydoc_topics_corpus()
    general = corpus.train.decode("utf-8", errors="replace")
    paragraphs = [p for p in general.split("\n\n") if p.strip()]
    arms = {"general": {"general_text": 1.0},
            "mixture": {"arxiv": LLEMMA_WEIGHTS["arxiv"], "web": LLEMMA_WEIGHTS["web"],
                        "code": LLEMMA_WEIGHTS["code"],
                        "general_text": LLEMMA_WEIGHTS["general_text"]
                        + LLEMMA_WEIGHTS["general_code"]},
            "math_only": {"arxiv": 2.0, "web": 4.0, "code": 1.0}}
    arms["shuffled"] = {("general_shuffled" if k == "general_text" else k): v
                        for k, v in arms["mixture"].items()}
    rows = []
    with torch_threads(1):
        for i, s in enumerate(seeds):
            shuffle = np.random.default_rng(90_000 + s)
            sources = dict(math_sources(sizes(scale, smoke=200, small=2000), s),
                           general_text=paragraphs,
                           general_shuffled=[_shuffled_characters(p, shuffle)
                                             for p in paragraphs])  # null: no language
            base = new_tiny_model(cfg, s)
            base_sampler = MixtureSampler({"general_text": paragraphs,
                                           "web": sources["web"][:200]},
                                          {"general_text": 0.95, "web": 0.05}, seed=s)
            continue_pretraining(base, base_sampler, base_steps, cfg.lr, batch_size=cfg.batch_size,
                                 seq_len=cfg.seq_len, seed=s)
            state = {k: v.clone() for k, v in base.state_dict().items()}
            problems = arithmetic_task(n_test, seed=70_000 + s)
            for arm, weights in arms.items():
                model = new_tiny_model(cfg, s)
                model.load_state_dict(state)
                rep = continue_pretraining(model, MixtureSampler(sources, weights, seed=s + 1),
                                           cfg.steps, cfg.lr, batch_size=cfg.batch_size,
                                           seq_len=cfg.seq_len, seed=s + 1)
                from iclr24.kits.language_models import LocalTextModel, TransformerLM

                df = MathEvaluator(LocalTextModel(TransformerLM(model)), k=1, temperature=0.0,
                                   max_new_tokens=80, batch_size=n_test).evaluate(problems)
                rows.append({"seed": s, "arm": arm, "acc": float(df.acc.mean()),
                             "invalid_rate": float(df.n_invalid.mean()),
                             "general_bpb": held_out_bits_per_byte(model, corpus.heldout,
                                                                   cfg.seq_len),
                             "math_bpb": held_out_bits_per_byte(
                                 model, solutions_stream(problems), cfg.seq_len),
                             "final_loss": rep.losses[-1],
                             "share_general": rep.token_shares.get("general_text", 0.0)
                             + rep.token_shares.get("general_shuffled", 0.0)})
            progress((i + 1) / len(seeds), f"seed {s}")

    def col(arm, key):
        return [r[key] for r in rows if r["arm"] == arm]

    def est(xs):
        return Estimate.mean_of(xs) if len(xs) > 1 else float(xs[0])

    def diff(a, b):
        return Estimate.difference(a, b, paired=True) if len(a) > 1 else float(a[0] - b[0])

    metrics = {f"acc_{arm}": est(col(arm, "acc")) for arm in arms}
    metrics.update({f"general_bpb_{arm}": est(col(arm, "general_bpb")) for arm in arms})
    metrics["acc_gain_mixture"] = diff(col("mixture", "acc"), col("general", "acc"))
    metrics["acc_gain_math_only"] = diff(col("math_only", "acc"), col("general", "acc"))
    metrics["acc_gain_shuffled"] = diff(col("shuffled", "acc"), col("general", "acc"))
    metrics["general_bpb_mixture_minus_math_only"] = diff(col("mixture", "general_bpb"),
                                                          col("math_only", "general_bpb"))
    metrics["general_bpb_mixture_minus_shuffled"] = diff(col("mixture", "general_bpb"),
                                                         col("shuffled", "general_bpb"))
    metrics["general_bpb_shuffled_minus_math_only"] = diff(col("shuffled", "general_bpb"),
                                                           col("math_only", "general_bpb"))
    metrics["general_bpb_math_only_minus_general"] = diff(col("math_only", "general_bpb"),
                                                          col("general", "general_bpb"))
    return Measurement(metrics=metrics, tables={"per_seed_arm": rows},
                       notes="Equal steps, batch and learning-rate schedule in every arm; the "
                             "arms differ only in the sampler's weights (and, for the null "
                             "arm 'shuffled', in the general documents' character order). "
                             "Weights are per document; 'share_general' is the realised "
                             "share of bytes.")
