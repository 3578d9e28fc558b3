"""One replicate of each laptop-scale experiment (kept out of ``claims.py``, which holds only
the claims): the pairwise meta-evaluation of four judges on the synthetic testbed, and
best-of-N selection with the single-rating protocol (Li et al., ICLR 2024, Sec. 4-5)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .judge import GenerativeJudge
from .judgments import make_judge_sft_examples
from .metrics import best_of_n, pairwise_agreement, rating_agreement, rating_predictions
from .null_judges import length_ratings, length_verdicts
from .parsing import TIE, parse_pairwise_verdict, swap_verdict
from .prompts import wrap_chat
from .testbed import TESTBED_SCENARIOS, JudgePair, make_bon_testbed, make_judge_testbed
from .tiny_judge import (
    TinyJudgeConfig,
    clone_lm,
    judge_tokenizer,
    new_tiny_lm,
    pretrain_lm,
    sft_judge,
    train_reward_model,
)

__all__ = ["agreement_replicate", "best_of_n_replicate", "null_judge_metrics", "pretraining_texts",
           "smollm2_replicate"]


def pretraining_texts(pairs: Sequence[JudgePair]) -> list[str]:
    """The "pretraining" corpus: each training query with its correct answer (no judgments)."""
    seen = dict.fromkeys(f"Query: {p.query}\nAnswer: {p.reference}" for p in pairs)
    return list(seen)


def _base_lm(train_texts: list[str], pretrain: list[str], config: TinyJudgeConfig, seed: int):
    tok = judge_tokenizer(train_texts + pretrain, config.vocab_size)
    lm = new_tiny_lm(tok, config, seed)
    pretrain_lm(lm, pretrain, config, seed)
    return lm


def null_judge_metrics(test: Sequence[JudgePair], seed: int) -> dict:
    """The input-shallow null arms on the test pairs, both orders as the generative judges:
    ``length`` (the longer response wins, :func:`length_verdicts`), ``constant_tie`` (always
    "Tie") and ``random`` (uniform verdicts, seeded). Returns ``{arm: pairwise_agreement
    dict}``."""
    labels = [p.label for p in test]
    groups = [p.scenario for p in test]
    r1, r2 = [p.response_1 for p in test], [p.response_2 for p in test]
    rng = np.random.default_rng([seed, 77])
    n = len(test)
    arms = {"length": (length_verdicts(r1, r2),
                       [swap_verdict(int(v)) for v in length_verdicts(r2, r1)]),
            "constant_tie": (np.full(n, TIE), np.full(n, TIE)),
            "random": (rng.integers(0, 3, n), rng.integers(0, 3, n))}
    return {name: pairwise_agreement(labels, first, second, groups)
            for name, (first, second) in arms.items()}


def _judge_metrics(judge: GenerativeJudge, test: list[JudgePair], swap: bool = True) -> dict:
    js = judge.compare_many([p.query for p in test], [p.response_1 for p in test],
                            [p.response_2 for p in test], swap=swap)
    return pairwise_agreement([p.label for p in test], [j.verdict for j in js],
                              [j.verdict_swapped for j in js] if swap else None,
                              [p.scenario for p in test])


def agreement_replicate(n_train: int, n_test: int, config: TinyJudgeConfig, seed: int,
                        scenarios: Sequence[str] = TESTBED_SCENARIOS,
                        max_new_tokens: int = 48) -> dict:
    """Train and meta-evaluate, on one seed: (a) the pretrained LM prompted with one
    demonstration (untuned), (b) a Bradley-Terry reward model (tie threshold tuned on the test
    set as in the leaderboard, and chosen on a dev split), (c) the judge SFT'd without swap
    augmentation, (d) the SFT judge with swap augmentation (Auto-J's recipe here), and the
    null arms of :func:`null_judge_metrics` on the same test pairs. n_train and
    n_test are pairs per scenario. Returns ``{system: pairwise_agreement dict, ...}`` plus
    reward-model details and a few example judgments."""
    train = make_judge_testbed(n_train, scenarios, seed=10_000 + seed)
    dev = make_judge_testbed(max(2, n_test // 2), scenarios, seed=20_000 + seed)
    test = make_judge_testbed(n_test, scenarios, seed=30_000 + seed)
    swap_ex = make_judge_sft_examples(train, swap=True)
    plain_ex = make_judge_sft_examples(train, swap=False)
    corpus = pretraining_texts(train)
    base = _base_lm([p + t for p, t in swap_ex], corpus, config, seed)
    out: dict = {}

    demo = "".join(swap_ex[0]) + "\n\n"  # one demonstration judgment before the test prompt
    untuned = GenerativeJudge(_text_backend(base), max_new_tokens,
                              chat_format=lambda m: demo + wrap_chat(m, "llama2"))
    out["untuned"] = _judge_metrics(untuned, test)

    rm, rm_losses = train_reward_model(
        base, [(p.query, *((p.response_1, p.response_2) if p.label == 0 else
                           (p.response_2, p.response_1))) for p in train if p.label != 2],
        config, seed)

    def rm_scores(pairs):
        s1 = rm.score([p.query for p in pairs], [p.response_1 for p in pairs])
        s2 = rm.score([p.query for p in pairs], [p.response_2 for p in pairs])
        return s1, s2

    s1, s2 = rm_scores(test)
    labels = np.array([p.label for p in test])
    spread = float(np.std(np.concatenate([s1, s2]))) or 1.0
    taus = np.arange(0, 2.001, 0.01) * spread  # the 0..2 grid in units of the score spread
    tau_test, acc_test = rating_agreement(s1, s2, labels, taus)
    d1, d2 = rm_scores(dev)
    tau_dev, _ = rating_agreement(d1, d2, [p.label for p in dev], taus)
    out["reward_model"] = pairwise_agreement(labels, rating_predictions(s1, s2, tau_dev), None,
                                             [p.scenario for p in test])
    out["reward_model_tuned_on_test"] = {"agreement": acc_test, "tau": tau_test / spread}
    out["reward_model_dev_tau"] = tau_dev / spread
    out["reward_model_final_loss"] = float(np.mean(rm_losses[-10:]))

    for name, examples in (("sft_no_swap", plain_ex), ("sft", swap_ex)):
        lm = clone_lm(base, name)
        hist = sft_judge(lm, examples, config, seed)
        judge = GenerativeJudge(_text_backend(lm), max_new_tokens)
        out[name] = _judge_metrics(judge, test)
        out[f"{name}_final_loss"] = float(np.mean(hist.losses[-10:]))
        if name == "sft":
            js = judge.compare_many([p.query for p in test[:3]], [p.response_1 for p in test[:3]],
                                    [p.response_2 for p in test[:3]])
            out["examples"] = [{"query": p.query, "response_1": p.response_1,
                                "response_2": p.response_2, "label": p.label,
                                "judgment": j.text, "judgment_swapped": j.text_swapped}
                               for p, j in zip(test[:3], js)]
    out.update(null_judge_metrics(test, seed))
    out["label_shares"] = np.bincount(labels, minlength=3) / labels.size
    return out


def _text_backend(lm):
    from iclr24.kits.language_models import LocalTextModel

    return LocalTextModel(lm, max_batch=64)


def best_of_n_replicate(n_train: int, n_queries: int, m: int, ns: Sequence[int],
                        config: TinyJudgeConfig, seed: int,
                        scenarios: Sequence[str] = TESTBED_SCENARIOS,
                        max_new_tokens: int = 32) -> dict:
    """Train a tiny judge on ``single`` critiques (one per response of ``n_train`` pairs per
    scenario), rate ``m`` sampled candidates of ``n_queries`` held-out queries, and pick the
    top-rated among the first N. Returns the mean true quality per N (``curve``; the null
    arms' ``length_curve``: the longest candidate, ``random_curve``: uniform-random ratings),
    the oracle (best of M) and the rating parse rate."""
    train = make_judge_testbed(n_train, scenarios, seed=40_000 + seed)
    examples = make_judge_sft_examples(train, "single")
    base = _base_lm([p + t for p, t in examples], pretraining_texts(train), config, seed)
    hist = sft_judge(base, examples, config, seed)
    bon = make_bon_testbed(n_queries, m, scenarios, seed=50_000 + seed)
    judge = GenerativeJudge(_text_backend(base), max_new_tokens)
    rows = judge.rate_many([t.query for t, *_ in bon for _ in range(m)],
                           [c for _, texts, _, _ in bon for c in texts])
    ratings = np.array([r.rating for r in rows]).reshape(n_queries, m)
    quality = np.stack([q for *_, q in bon])
    curve = best_of_n(ratings, quality, ns)
    # null arms on the same candidates: the longest candidate, and uniform-random ratings
    lengths = length_ratings([c for _, texts, _, _ in bon for c in texts]).reshape(n_queries, m)
    noise = np.random.default_rng([seed, 88]).random((n_queries, m))
    return {"curve": curve, "oracle": float(quality.max(axis=1).mean()),
            "length_curve": best_of_n(lengths, quality, ns),
            "random_curve": best_of_n(noise, quality, ns),
            "mean_quality": float(quality.mean()),
            "parse_rate": judge.stats.rating_parse_rate,
            "final_loss": float(np.mean(hist.losses[-10:])),
            "examples": [{"query": bon[0][0].query, "response": bon[0][1][j],
                          "quality": float(quality[0, j]), "judgment": rows[j].text}
                         for j in range(min(3, m))]}


def _smollm2_backend(stand_in: bool, pairs: list[JudgePair], seed: int):
    """(text backend, model name): SmolLM2-135M-Instruct, or an untrained tiny stand-in for
    smoke runs (its tokenizer has no chat template, so the judge falls back to LLaMA-2's)."""
    from iclr24.kits.language_models import LocalTextModel

    if stand_in:
        texts = [m for p in pairs for m in (p.query, p.response_1, p.response_2)]
        texts += [a + b for a, b in make_judge_sft_examples(pairs)]
        cfg = TinyJudgeConfig(hidden_size=32, intermediate_size=64, n_layers=1,
                              context_length=1024, vocab_size=400)
        lm = new_tiny_lm(judge_tokenizer(texts, cfg.vocab_size), cfg, seed, "untrained stand-in")
        return LocalTextModel(lm, max_batch=16), "untrained 1-layer tiny stand-in"
    from iclr24.kits.language_models import load_smollm2

    return LocalTextModel(load_smollm2(), max_batch=16), "SmolLM2-135M-Instruct"


def smollm2_replicate(stand_in: bool, seed: int, scenarios: Sequence[str] = TESTBED_SCENARIOS,
                      max_new_tokens: int = 64) -> dict:
    """One pair per scenario judged in both orders by SmolLM2 (or the stand-in), in the
    judge's default chat format (the model's own template where it has one): free
    generation, the reply primed with the decision anchor, and the null arms of
    :func:`null_judge_metrics` (seeded random, constant "Tie", longer-wins) on the same
    pairs."""
    pairs = make_judge_testbed(1, scenarios, seed=60_000 + seed)
    backend, name = _smollm2_backend(stand_in, pairs, seed)
    labels = [p.label for p in pairs]
    groups = [p.scenario for p in pairs]
    args = ([p.query for p in pairs], [p.response_1 for p in pairs],
            [p.response_2 for p in pairs])
    free = GenerativeJudge(backend, max_new_tokens)
    out: dict = {"model": name, "chat_format": ("the model's own chat template"
                                                if callable(free.chat_format)
                                                else free.chat_format)}
    fj = free.compare_many(*args)
    out["free"] = pairwise_agreement(labels, [j.verdict for j in fj],
                                     [j.verdict_swapped for j in fj], groups)
    primed = GenerativeJudge(backend, 3, answer_prefix="So, the final decision is")
    pj = primed.compare_many(*args)
    out["primed"] = pairwise_agreement(labels, [j.verdict for j in pj],
                                       [j.verdict_swapped for j in pj], groups)
    raw = [j.verdict for j in pj] + [parse_pairwise_verdict(j.text_swapped) for j in pj]
    out["share_response_1"] = float(np.mean([v == 0 for v in raw]))
    out.update(null_judge_metrics(pairs, seed))
    out["replies"] = [{"seed": seed, "scenario": p.scenario, "label": p.label,
                       "free_reply": f.text[:300], "free_verdict": f.verdict,
                       "primed_verdict": q.verdict, "primed_verdict_swapped": q.verdict_swapped}
                      for p, f, q in zip(pairs, fj, pj)]
    return out
