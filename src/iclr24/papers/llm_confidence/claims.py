"""Claims of "Can LLMs Express Their Uncertainty?" (Xiong et al., ICLR 2024) at laptop scale.

Every claim measures a null arm in the same run and its ``control`` requires that the null,
read through the rule in the method's place, does not pass it (a false or an unknown rule both
count as not passing; a NaN leaves the control unknown): ``consistency_auroc`` and
``smollm2_elicitation`` use Consistency's confidences permuted across the questions (same
answers, same correctness: the confidence detached from its question; metrics ``shuffled_*``),
``pair_rank_recovery`` Pair-Rank's confidences permuted across the draws (``shuffled_*``).
"Does not pass" rather than "clearly fails": at 40 questions a null's interval always
straddles the bar, and requiring it to fail outright would leave the claim unable to hold.
"""

from __future__ import annotations

import math

import numpy as np

from iclr24.claims import (
    Estimate,
    Measurement,
    Scale,
    assess_rule,
    claim,
    rule_metric_names,
    seed_difference,
    seed_metric,
    sizes,
)


def _null_must_not_pass(rule: str, prefix: str, null: str):
    """A control: ``rule`` read on the null arm's metrics (``prefix`` + each name it reads) is
    not true; unknown (NaN) when one of those metrics is not finite. ``null`` says what the
    null arm is."""
    names = rule_metric_names(rule)

    def control(metrics) -> bool | None:
        arm = {n: metrics[prefix + n] for n in names}
        for v in arm.values():
            bounds = (v.value, v.low, v.high) if isinstance(v, Estimate) else (v,)
            if not all(math.isfinite(b) for b in bounds):
                return None
        return assess_rule(rule, arm)[0] is not True

    control.__doc__ = f"the null arm ({prefix}*: {null}) does not pass `{rule}`"
    return control


def _shuffled(conf: list[float], rng: np.random.Generator) -> list[float]:
    """The null arm's confidences: the same values, permuted across the questions."""
    return [float(x) for x in rng.permutation(np.asarray(conf, dtype=np.float64))]


def _consistency_run(scale: Scale, seed: int) -> dict:
    """One replicate of the tiny-model protocol: train, then vanilla (greedy, M = 1, the
    simulated verbalised channel), self-random M samples -> Consistency and Avg-Conf (a sample
    counts when answer and confidence parse; a question needs the official M − 1 of them), the
    white-box token probability of the greedy answer, and the null arm: Consistency's
    confidences permuted across the questions."""
    from iclr24.kits.language_models import LocalTextModel
    from iclr24.kits.threads import torch_threads

    from .aggregation import avg_conf, consistency
    from .elicitor import answer_token_probability
    from .metrics import confidence_metrics
    from .parsing import parse_answer_confidence
    from .simulated_channel import (
        ANSWER_HEAD,
        SimulatedConfig,
        arithmetic_qa,
        qa_prompt,
        train_simulated_model,
    )

    n_train = sizes(scale, smoke=600, small=6000)
    n_test = sizes(scale, smoke=60, small=600)
    m = sizes(scale, smoke=3, small=5)
    config = sizes(scale, smoke=SimulatedConfig(n_layers=1, d_model=64, steps=100),
                   small=SimulatedConfig())
    rng = np.random.default_rng([seed, 0])
    # one-digit operands: with 1-3 digits the tiny model was right on 0.5% of the questions
    train = arithmetic_qa(n_train, rng, max_digits=1)
    test = arithmetic_qa(n_test, np.random.default_rng([seed, 2]), max_digits=1)
    tb = LocalTextModel(train_simulated_model(train, config, seed))
    prompts = [qa_prompt(it) for it in test]
    truth = [str(it.answer) for it in test]
    with torch_threads(1):
        greedy = [t[0] for t in tb.generate(prompts, 12, temperature=0.0, stop=["\n"])]
        samples = tb.generate(prompts, 12, temperature=0.7, n=m, stop=["\n"], seed=seed)
        rows = {"vanilla": ([], []), "consistency": ([], []), "avg_conf": ([], []),
                "white_box": ([], [])}
        parsed, kept = 0, []
        for p, g, ss, y in zip(prompts, greedy, samples, truth):
            a, c = parse_answer_confidence(ANSWER_HEAD + g)
            parsed += a is not None and c is not None
            # unparsed predictions count as wrong with confidence 0
            rows["vanilla"][0].append(c if a is not None and c is not None else 0.0)
            rows["vanilla"][1].append(a == y)
            wb = answer_token_probability(tb, p, f" {a},") if a is not None else 0.0
            rows["white_box"][0].append(wb)
            rows["white_box"][1].append(a == y)
            parses = [parse_answer_confidence(ANSWER_HEAD + s) for s in ss]
            # a sample counts when its answer and its confidence parse (the official code)
            answers = [x if x is not None and cx is not None else None for x, cx in parses]
            cons = consistency(answers)
            kept.append(cons.answer is not None)
            rows["consistency"][0].append(cons.confidence)
            rows["consistency"][1].append(cons.answer == y)
            ac = avg_conf(answers, [c for _, c in parses])
            rows["avg_conf"][0].append(ac.confidence)
            rows["avg_conf"][1].append(ac.answer == y)
    rows["shuffled"] = (_shuffled(rows["consistency"][0], np.random.default_rng([seed, 3])),
                        rows["consistency"][1])
    out = {"parse_rate": parsed / len(test), "consistency_kept": float(np.mean(kept))}
    for name, (conf, correct) in rows.items():
        for key, value in confidence_metrics(conf, correct).items():
            out[f"{name}_{key}"] = value
    return out


_CONSISTENCY_RULE = "ece_reduction > 0 and whitebox_gap < 0.1"
_SHUFFLED = "Consistency's confidences permuted across the questions"


@claim(
    rule=_CONSISTENCY_RULE,
    control=_null_must_not_pass(_CONSISTENCY_RULE, "shuffled_", _SHUFFLED),
    paper="Abstract and Sec. 4: black-box verbalised confidence reaches AUROC 0.522 on average, "
          "the white-box token probability 0.605 (better, but the gap is narrow); vanilla "
          "verbalised confidences cluster in 80-100% (overconfident, high ECE, AUROC near "
          "0.5); sampling M = 5 with Consistency / Avg-Conf improves failure prediction and "
          "calibration, most clearly on arithmetic (GSM8K, SVAMP).",
    paper_numbers={"vanilla_auroc": 0.522, "white_box_auroc": 0.605},
    against=("vanilla verbalised confidence (simulated, independent of correctness) and "
             "white-box answer probability, same model and questions; null arm: Consistency's "
             "confidences permuted across the questions"),
)
def consistency_auroc(scale: Scale, seed: int, progress=None) -> Measurement:
    """A tiny character transformer trained on graded arithmetic (a+b, a*b, a+b+c; one-digit
    operands, so the test questions were all taught: its failures are its own errors on
    what it learnt, not generalisation) in the paper's vanilla format, with a simulated
    human-like verbalised confidence (uniform over 80..100, independent of correctness, by
    construction). Per question: the greedy reply (vanilla verbalised confidence; white-box =
    its answer tokens' probability) and M self-random samples at T = 0.7 (Consistency,
    Avg-Conf; a sample counts when answer and confidence parse, and a question needs the
    official M − 1 of them, else it is wrong with confidence 0: ``consistency_kept`` is the
    share kept). Paired over seeds (3 at small, one model per seed): ``ece_reduction`` = ECE of
    vanilla − Consistency; ``whitebox_gap`` = AUROC of white-box − Consistency.

    Rule, rewritten before running it (issue 37): the vanilla channel is simulated independent
    of correctness, so its AUROC of 0.5 is built in and ``auroc_gain`` (Consistency − vanilla
    AUROC) only says that Consistency beats chance: it is reported, not ruled on. The rule keeps
    what tests the paper: Consistency is better calibrated than the (overconfident) verbalised
    channel, ``ece_reduction > 0``, and the white-box probability is not ahead by 0.1 or more,
    ``whitebox_gap < 0.1``. Null arm (same run): Consistency's confidences permuted across the
    questions (same answers, correctness and confidence histogram, no link to the question);
    control: the null, read through the same rule (``shuffled_ece_reduction``,
    ``shuffled_whitebox_gap``), must not pass it, else the test bed cannot tell whether the
    confidences know anything about their questions."""
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    runs = []
    for i, s in enumerate(seeds):
        if progress:
            progress(i / len(seeds), f"replicate {i + 1}/{len(seeds)}")
        runs.append(_consistency_run(scale, s))

    def col(key):
        return [r[key] for r in runs]

    metrics = {
        "auroc_gain": seed_difference(col("consistency_auroc"), col("vanilla_auroc")),
        "ece_reduction": seed_difference(col("vanilla_ece"), col("consistency_ece")),
        "whitebox_gap": seed_difference(col("white_box_auroc"), col("consistency_auroc")),
        "avg_conf_auroc_gain": seed_difference(col("avg_conf_auroc"), col("vanilla_auroc")),
        "shuffled_ece_reduction": seed_difference(col("vanilla_ece"), col("shuffled_ece")),
        "shuffled_whitebox_gap": seed_difference(col("white_box_auroc"),
                                                 col("shuffled_auroc")),
    }
    for name in ("vanilla", "consistency", "avg_conf", "white_box", "shuffled"):
        for key in ("auroc", "ece", "accuracy", "mean_confidence"):
            metrics[f"{name}_{key}"] = seed_metric(col(f"{name}_{key}"))
    metrics["parse_rate"] = seed_metric(col("parse_rate"))
    metrics["consistency_kept"] = seed_metric(col("consistency_kept"))
    table = [{"seed": s, **{k: round(v, 4) for k, v in r.items()}} for s, r in zip(seeds, runs)]
    return Measurement(metrics=metrics, tables={"per_seed": table}, notes=(
        "Simulated verbalised channel: the stated confidence was trained to be independent "
        "of correctness, so the vanilla AUROC of ~0.5 is by construction and auroc_gain is "
        "reported, not ruled on; the rule reads the ECE reduction and the white-box gap. "
        "shuffled_* = the null arm (Consistency's confidences permuted across questions). A NaN "
        "AUROC means one class (all right or all wrong): nothing to rank, so the verdict is "
        "inconclusive."))


def _plackett_luce(p: np.ndarray, k: int, rng: np.random.Generator) -> list[int]:
    """One top-k list drawn without replacement from categorical p."""
    # Gumbel-top-k is exactly Plackett-Luce sampling
    keys = np.log(p) + rng.gumbel(size=p.size)
    return [int(i) for i in np.argsort(-keys)[:k]]


def _pair_rank_draws(n_draws: int, m: int, rng: np.random.Generator, n_options: int = 6,
                     k: int = 3, alpha: float = 0.7) -> dict[str, np.ndarray]:
    """Per draw: |conf − P(true top)| and top-1 hit for Pair-Rank (paper, official) and the
    top-1 frequency (Consistency over first guesses); and for the null arm, Pair-Rank's
    (paper) confidences permuted across the draws, |conf of another draw − P(true top)|."""
    from .aggregation import consistency, pair_rank_batch, rank_matrix

    ps = rng.dirichlet(np.full(n_options, alpha), size=n_draws)
    ps = np.maximum(ps, 1e-12)
    ps /= ps.sum(axis=1, keepdims=True)
    lists = [[_plackett_luce(p, k, rng) for _ in range(m)] for p in ps]
    r = np.zeros((n_draws, n_options, n_options))
    mask = np.zeros((n_draws, n_options), bool)
    support = []
    for b, ls in enumerate(lists):
        rb, opts = rank_matrix(ls)
        r[b, :len(opts), :len(opts)] = rb
        mask[b, :len(opts)] = True
        support.append(opts)
    init = rng.standard_normal((n_draws, n_options))
    out: dict[str, list] = {}
    top = ps.argmax(axis=1)
    p_top = ps.max(axis=1)
    for obj in ("paper", "official"):
        fit = pair_rank_batch(r, mask, objective=obj, init=init)
        best = fit.argmax(axis=1)
        ans = np.array([support[b][best[b]] for b in range(n_draws)])
        out[f"{obj}_err"] = np.abs(fit.max(axis=1) - p_top)
        out[f"{obj}_hit"] = (ans == top).astype(float)
        if obj == "paper":
            paper_conf = fit.max(axis=1)
    freq = [consistency([ls_i[0] for ls_i in ls]) for ls in lists]
    out["freq_err"] = np.abs(np.array([f.confidence for f in freq]) - p_top)
    out["freq_hit"] = np.array([f.answer == t for f, t in zip(freq, top)], float)
    # null arm: the same confidences, each scored against another draw's truth
    out["shuffled_err"] = np.abs(rng.permutation(paper_conf) - p_top)
    return out


_PAIR_RANK_RULE = "gain_m3 > 0 and gain_m5 > 0"


@claim(
    rule=_PAIR_RANK_RULE,
    control=_null_must_not_pass(_PAIR_RANK_RULE, "shuffled_",
                                "Pair-Rank's confidences permuted across the draws"),
    paper="Sec. 3.3 / Table 4: Pair-Rank aggregation of M Top-K lists (K = 4, M = 5 in the "
          "official scripts) uses the whole ranking, not just the first guess, and gives the "
          "best failure prediction among the Top-K aggregators on several datasets (no "
          "single number to compare; this checks the estimator itself).",
    against=("top-1 frequency over the M first guesses on the same Plackett-Luce lists; the true "
             "max P as exact reference; null arm: Pair-Rank's confidences permuted across the "
             "draws (blind to each draw's lists)"),
)
def pair_rank_recovery(scale: Scale, seed: int, progress=None) -> Measurement:
    """Pure statistics, no LM: a true categorical P over 6 options (Dirichlet(0.7)); M top-3
    lists by Plackett-Luce sampling from P; the error |conf − max P| of Pair-Rank (paper
    objective, log-likelihood) against the top-1 frequency over the M first guesses, for
    M in {3, 5, 10}. ``gain_mM`` = error(top-1 frequency) − error(Pair-Rank, paper), paired
    over seeds (3 at small, 2000 draws each). The official objective (no log) is reported
    beside it (``official_minus_paper_mM``). Fails if Pair-Rank is not more accurate at M = 3
    and M = 5.

    Null arm (added for issue 37, written before running it): Pair-Rank's own confidences
    permuted across the draws, so each is scored against another draw's truth: the same
    values, blind to the lists they came from; ``shuffled_gain_mM`` = error(top-1 frequency)
    − error(null). Control: the null must not pass the rule. If confidences that never saw a
    draw's lists already beat the top-1 frequency at M = 3 and 5, that baseline is a straw
    man and beating it says nothing about how Pair-Rank reads the lists: the test bed cannot
    tell. ``gain_vs_shuffled_mM`` = error(null) − error(Pair-Rank) is reported beside it."""
    n_draws = sizes(scale, smoke=200, small=2000)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    metrics: dict = {}
    rows = []
    for mi, m in enumerate((3, 5, 10)):
        runs = []
        for s in seeds:
            d = _pair_rank_draws(n_draws, m, np.random.default_rng([s, m]))
            runs.append({k: float(v.mean()) for k, v in d.items()})
        if progress:
            progress((mi + 1) / 3, f"M = {m}")

        def col(key, runs=runs):
            return [r[key] for r in runs]

        metrics[f"gain_m{m}"] = seed_difference(col("freq_err"), col("paper_err"))
        metrics[f"shuffled_gain_m{m}"] = seed_difference(col("freq_err"), col("shuffled_err"))
        metrics[f"gain_vs_shuffled_m{m}"] = seed_difference(col("shuffled_err"),
                                                            col("paper_err"))
        metrics[f"official_minus_paper_m{m}"] = seed_difference(col("official_err"),
                                                                col("paper_err"))
        for key in ("paper_err", "official_err", "freq_err", "shuffled_err", "paper_hit",
                    "official_hit", "freq_hit"):
            metrics[f"{key}_m{m}"] = seed_metric(col(key))
        rows += [{"M": m, "seed": s, **{k: round(v, 4) for k, v in r.items()}}
                 for s, r in zip(seeds, runs)]
    return Measurement(metrics=metrics, tables={"per_seed": rows}, notes=(
        "err = mean |confidence − P(true top option)|, hit = top-1 accuracy of the answer; "
        "shuffled = the null arm (Pair-Rank's confidences permuted across draws). "
        "Both Pair-Rank objectives run plain gradient descent on softmax logits (lr 0.01, "
        "1000 steps, the same standard-normal start), as the official code."))


_SHOTS = (("What is 3 + 4?", "7", 90), ("How many wheels does a car have?", "4", 85),
          ("What is 12 + 9?", "21", 70))


def _smollm2_backend(scale: Scale, seed: int):
    """SmolLM2-135M-Instruct with its chat template and three demonstration turns (small);
    at smoke an untrained one-layer byte model runs the same pipeline (no SmolLM2 load)."""
    from .elicitor import chat_formatter
    from .prompts import build_prompt

    if scale is Scale.SMOKE:
        from iclr24.kits.language_models import LocalTextModel, untrained_byte_lm

        return (LocalTextModel(untrained_byte_lm(1024, seed=seed)), None,
                "untrained 1-layer byte model")
    from iclr24.kits.language_models import PrefixCachedTextModel, load_smollm2

    lm = load_smollm2()
    shots = [(build_prompt(q), f"Answer and Confidence (0-100): {a}, {c}%") for q, a, c in _SHOTS]
    return (PrefixCachedTextModel(lm, max_batch=40), chat_formatter(lm.tokenizer.hf, shots),
            "SmolLM2-135M-Instruct")


def _question_estimate(statistic, columns, scale: Scale, seed: int) -> Estimate:
    """A statistic of per-question columns with its paired bootstrap interval over questions."""
    from .metrics import question_bootstrap

    b = question_bootstrap(statistic, columns, seed=seed,
                           n_resamples=sizes(scale, smoke=200, small=1000))
    return Estimate(b.value, b.low, b.high, b.n, b.confidence, "question bootstrap")


def _elicitation_metrics(verbal: tuple, runs: list[tuple], scale: Scale, seed: int) -> dict:
    """The smollm2 claim's numbers from per-question arrays: ``verbal`` = (conf, correct) of the
    greedy verbalised arm, ``runs`` = one (conf, correct, shuffled conf) per sampling seed.
    Gains average the sampling seeds and carry a paired bootstrap interval over questions."""
    from .metrics import expected_calibration_error, failure_auroc

    k = len(runs)
    columns = [verbal[0], verbal[1]] + [c for r in runs for c in r]

    def arm(cols, j, shuffled=False):  # (conf, correct) of sampling seed j
        conf, correct, shuf = cols[2 + 3 * j: 5 + 3 * j]
        return (shuf if shuffled else conf), correct

    def auroc_gain(*cols, shuffled=False):
        # AUROC(Consistency) − AUROC(verbalised), averaged over the sampling seeds
        return float(np.mean([failure_auroc(*arm(cols, j, shuffled)) for j in range(k)])) \
            - failure_auroc(cols[0], cols[1])

    def ece_reduction(*cols, shuffled=False):
        # ECE(verbalised) − ECE(Consistency), averaged over the sampling seeds
        return expected_calibration_error(cols[0], cols[1]) - float(np.mean(
            [expected_calibration_error(*arm(cols, j, shuffled)) for j in range(k)]))

    return {
        "auroc_gain": _question_estimate(auroc_gain, columns, scale, seed),
        "ece_reduction": _question_estimate(ece_reduction, columns, scale, seed + 1),
        "shuffled_auroc_gain": _question_estimate(
            lambda *c: auroc_gain(*c, shuffled=True), columns, scale, seed + 2),
        "shuffled_ece_reduction": _question_estimate(
            lambda *c: ece_reduction(*c, shuffled=True), columns, scale, seed + 3),
    }


_SMOLLM2_RULE = "auroc_gain > 0"


@claim(
    rule=_SMOLLM2_RULE,
    control=_null_must_not_pass(_SMOLLM2_RULE, "shuffled_", _SHUFFLED),
    paper="Sec. 4 / Tables 2-3: with M = 5 self-random samples, Consistency gives a higher "
          "failure-prediction AUROC than vanilla verbalised confidence (e.g. GSM8K with "
          "GPT-3.5: verbalised AUROC ~0.55, consistency-based up to ~0.9); verbalised "
          "confidences are overconfident (80-100%, high ECE).",
    against=("greedy vanilla verbalised confidence (M = 1) of the same model on the same "
             "questions and prompts; null arm: Consistency's confidences permuted across the "
             "questions"),
)
def smollm2_elicitation(scale: Scale, seed: int, progress=None) -> Measurement:
    """The real prompts, parsers, sampler and metrics on SmolLM2-135M-Instruct over the
    package's first 30 factual questions and 10 seeded 1-digit additions (three
    demonstration turns, reply primed with the answer line's head): vanilla verbalised
    confidence (greedy, M = 1) vs Consistency over M = 5 self-random samples at T = 0.7 (same
    prompt; a sample counts when answer and confidence parse, a question needs the official
    M − 1 = 4 of them), 3 sampling seeds. Unparsed or dropped questions count as wrong with
    confidence 0 (the headline); the official view, which drops them, is reported beside it
    (``consistency_auroc_answered``).

    ``auroc_gain`` = AUROC(Consistency), averaged over the sampling seeds, − AUROC(verbalised),
    with a paired bootstrap interval over the 40 questions (issue 37: the former interval
    covered the 3 sampling seeds over one fixed question set and ignored question-level
    variance, which dominates at 40 questions). Rule unchanged: ``auroc_gain > 0`` over the
    whole interval. Null arm (same run): each seed's Consistency confidences permuted across
    the questions (``shuffled_auroc_gain``, same bootstrap); control: the null must not pass
    the rule, else a confidence that knows nothing of its question would beat the verbalised
    one too (e.g. a verbalised AUROC below chance) and the test bed cannot tell. At smoke an
    untrained byte model runs the same pipeline on 2 questions (no SmolLM2 load: a plumbing
    check; it parses nothing, so its AUROC is NaN and the verdict is inconclusive)."""
    from iclr24.kits.threads import torch_threads

    from .elicitor import ConfidenceElicitor
    from .metrics import confidence_metrics, failure_auroc
    from .questions import arithmetic_questions, factual_questions

    backend, fmt, name = _smollm2_backend(scale, seed)
    # 30 + 10 questions: the 40 + 20 first planned took 362 s on 2 cores (every sampled row
    # carries its own copy of the ~350-token demonstration prefix's keys and values)
    n_factual = sizes(scale, smoke=1, small=30)
    n_arith = sizes(scale, smoke=1, small=10)
    m = sizes(scale, smoke=2, small=5)
    n_seeds = sizes(scale, smoke=1, small=3)
    max_new = sizes(scale, smoke=4, small=8)
    qs = factual_questions()[:n_factual] + arithmetic_questions(n_arith, seed=seed)
    texts, truth = [q.text for q in qs], [q.answer for q in qs]
    # response priming: the reply starts with the answer line's head (parsed as part of it)
    common = {"format_prompt": fmt, "answer_prefix": "Answer and Confidence (0-100):",
              "max_new_tokens": max_new, "stop": ["\n"]}

    def correct(answers):
        return [float(a == y) for a, y in zip(answers, truth)]

    with torch_threads(2):
        verbal = ConfidenceElicitor(backend, aggregator="verbalized", temperature=0.0, **common)
        v_answers, v_conf = verbal.predict(texts)
        v_parse = verbal.stats.parse_rate
        runs, per_seed = [], []
        for i in range(n_seeds):
            if progress:
                progress(i / n_seeds, f"{name}: sampling seed {i + 1}/{n_seeds}")
            cons = ConfidenceElicitor(backend, aggregator="consistency", m=m, temperature=0.7,
                                      **common)
            answers, conf = cons.predict(texts, seed=seed + i)
            shuffled = _shuffled(conf, np.random.default_rng([seed, 7, i]))
            runs.append((conf, correct(answers), shuffled))
            kept = [a is not None for a in answers]
            per_seed.append({
                **confidence_metrics(conf, correct(answers)),
                "shuffled_auroc": failure_auroc(shuffled, correct(answers)),
                "parse_rate": cons.stats.parse_rate,
                "dropped_questions": float(cons.stats.unanswered_questions),
                "too_few_parsed": float(cons.stats.too_few_parsed),
                # the official view: questions without an answer dropped, not counted wrong
                "auroc_answered": failure_auroc(
                    [c for c, k in zip(conf, kept) if k],
                    [y for y, k in zip(correct(answers), kept) if k]) if any(kept) else math.nan})
    v = confidence_metrics(v_conf, correct(v_answers))
    metrics = {"verbalized_parse_rate": v_parse, "parse_rate": v_parse,
               "sample_parse_rate": seed_metric([r["parse_rate"] for r in per_seed]),
               "n_questions": len(qs)}
    for key in ("auroc", "ece", "accuracy", "mean_confidence"):
        metrics[f"verbalized_{key}"] = v[key]
        metrics[f"consistency_{key}"] = seed_metric([r[key] for r in per_seed])
    for key in ("shuffled_auroc", "dropped_questions", "too_few_parsed"):
        metrics[key] = seed_metric([r[key] for r in per_seed])
    metrics["consistency_auroc_answered"] = seed_metric([r["auroc_answered"] for r in per_seed])
    metrics.update(_elicitation_metrics((v_conf, correct(v_answers)), runs, scale, seed))
    examples = [{"question": q, "truth": y, "reply": rs[0].text}
                for q, y, rs in zip(texts[:8], truth, verbal.responses)]
    return Measurement(metrics=metrics, tables={"greedy_replies": examples}, notes=(
        f"Model: {name}. Prompts: the official vanilla instructions inside SmolLM2's chat "
        "template after three demonstration turns, with the reply primed by the answer line's "
        "head 'Answer and Confidence (0-100):' (a 135M model rarely produces the line on its "
        "own). Intervals of the gains: paired bootstrap over the questions, the sampling seeds "
        "averaged inside. shuffled_* = the null arm. NaN AUROC = one class (all wrong)."))
