"""FuseLLM claims: fusion against CLM-only continual training on the same data, and MinED
against exact-match token alignment with SmolLM2's real tokenizer as the source's."""

from __future__ import annotations

import re

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    claim,
    evaluate_rule,
    seed_difference,
    seed_metric,
    sizes,
)

from .corpus_fusion import align_records, fuse_corpus, permute_rows
from .experiments import (
    Model,
    WorldConfig,
    continue_target,
    evaluate,
    fusion_inputs,
    new_model,
    test_sets,
    train_sources,
    train_target_base,
)
from .records import record_topk
from .training import FuseConfig, FuseLLMTrainer, bits_per_char
from .vocabulary import TokenVocab, build_vocab_mapping

_ARMS = ("clm", "min_ce", "avg_ce", "self_distill")


def _noop(*_a, **_k) -> None:
    return None


@claim(
    rule={"smoke": "rel_bpc_gain_min_ce > 0", "small": "rel_bpc_gain_min_ce >= 0.03"},
    control={"smoke": "not (rel_bpc_gain_self_distill > 0)",
             "small": "not (rel_bpc_gain_self_distill >= 0.03)"},
    paper="Tables 1-3 (README): FuseLLM-7B beats the same continual training without fusion "
          "(Llama-2 CLM) on BBH 41.75 vs 40.44 (+3.2% relative), ARC-e/ARC-c/BoolQ/HellaSwag/"
          "OBQA 75.04/47.44/78.13/76.78/45.40 vs 74.54/46.50/76.88/76.57/44.80, MultiPL-E "
          "15.56 vs 14.83, TriviaQA 54.49 vs 53.14 (IWSLT2017 is the "
          "exception: 6.75 vs 6.91); MinCE is the better fusion function. Spec expectation at "
          "our scale: >= 3% lower mean held-out bits per character than CLM-only.",
    paper_numbers={"rel_bpc_gain_min_ce": 0.03},
    against=("CLM-only continual training (lambda = 1) of the same target base on the same "
             "batches, steps and schedule; null arm: the same FuseLLM training with the target "
             "base's own top-10 as the only fused distribution (self-distillation, no source "
             "knowledge); FuseLLM-AvgCE alongside"),
    resources={"cpus": 1},
)
def fusion_vs_clm(scale: Scale, seed: int, progress=None) -> Measurement:
    """Expert sources with their own tokenizers (arithmetic: bytes; grammar: BPE-300; code:
    Unigram-512; smoke: the first two) and a target with a BPE-384 tokenizer, briefly
    pretrained on the even mixture. From that base, three arms train for the same steps on the
    same batches of a fresh even-mixture fusion corpus: CLM only (λ = 1), FuseLLM-MinCE and
    FuseLLM-AvgCE (λ = 0.9, k = 10, soft MinED alignment, the target base as one source).
    Decides on held-out bits per character averaged over the domains (tokenizer-independent):
    ``rel_bpc_gain_min_ce`` = (BPC_CLM - BPC_MinCE) / BPC_CLM per seed, paired over 3 seeds
    at small, each seed training its own sources, target and arms.

    Fails (written before running) when the whole interval of the relative gain lies below
    the spec's 3% (e.g. fusion no better than CLM); inconclusive when it straddles 3%.
    Greedy arithmetic accuracy, per-domain BPC, MinCE - AvgCE, the sources' own BPC and the
    alignment coverage are reported beside it.

    Null arm (issue 37, added before running it): a fourth arm trains exactly as FuseLLM does
    (λ = 0.9, same steps and batches) but fuses only the target base's own top-10
    distributions (self-distillation: soft targets without any source's knowledge). Control:
    that null must be clearly below the rule's level, ``not (rel_bpc_gain_self_distill >=
    0.03)`` over the whole interval (smoke: ``> 0``); a soft target alone is expected to gain
    something here (at 900 steps any soft target regularised), so its interval must show it
    short of the bar, otherwise the test bed cannot tell fusion from regularisation."""
    from iclr24.kits.threads import torch_threads

    progress = progress or _noop
    cfg = sizes(scale,
                smoke=WorldConfig(domains=("arith", "grammar"), d_model=32, n_layers=1,
                                  n_heads=2, n_source_train=300, source_steps=40,
                                  n_base_train=200, base_steps=15, n_fusion=96, fuse_steps=40,
                                  batch_size=16, n_test=24),
                # 450 continual steps (36 passes over the 400 fusion texts): measured over 3
                # seeds, CLM's held-out BPC is 1.45 at 150 steps, 1.37 at 450 and 1.62 at 900
                # (overfitting, where any soft target regularises: MinCE's relative gain reads
                # 0.3%, 2.0% and 6.4%), so 450 is the budget at which the baseline is at its best
                small=WorldConfig(d_model=64, n_layers=2, n_heads=4, n_source_train=1500,
                                  source_steps=200, n_base_train=600, base_steps=40,
                                  n_fusion=400, fuse_steps=450, batch_size=32, n_test=80))
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    rows, source_rows = [], []
    with torch_threads(1):
        for n, s in enumerate(seeds):
            sources = train_sources(cfg, s)
            base = train_target_base(cfg, s)
            tests = test_sets(cfg, s)
            inputs = fusion_inputs(cfg, base, sources, s, alignments=("soft",))
            for src, cov in zip(sources, inputs.fused["min_ce_soft"].coverage):
                source_rows.append({"seed": s, "model": src.name, "coverage_soft": cov,
                                    **evaluate(src, tests)})
            source_rows.append({"seed": s, "model": base.name, **evaluate(base, tests)})
            chosen = np.bincount(inputs.fused["min_ce_soft"].chosen,
                                 minlength=len(sources) + 1)
            for arm in _ARMS:
                if arm == "self_distill":  # null arm: the target base's own top-k, no source
                    fused = fuse_corpus(inputs.target_records, [], []).fused
                else:
                    fused = None if arm == "clm" else inputs.fused[f"{arm}_soft"].fused
                model = continue_target(cfg, base, inputs.texts, fused,
                                        1.0 if arm == "clm" else 0.9, s)
                rows.append({"seed": s, "arm": arm, **evaluate(model, tests),
                             "min_ce_share_target_base": float(chosen[0] / chosen.sum())})
            progress((n + 1) / len(seeds), f"seed {s} done")

    def col(arm, key):
        return [r[key] for r in rows if r["arm"] == arm]

    metrics = {}
    for arm in _ARMS:
        metrics[f"bpc_mean_{arm}"] = seed_metric(col(arm, "bpc_mean"))
        metrics[f"arith_acc_{arm}"] = seed_metric(col(arm, "arith_acc"))
        for d in cfg.domains:
            metrics[f"bpc_{d}_{arm}"] = seed_metric(col(arm, f"bpc_{d}"))
    clm = np.asarray(col("clm", "bpc_mean"))
    for arm in ("min_ce", "avg_ce", "self_distill"):
        metrics[f"bpc_gain_{arm}"] = seed_difference(col("clm", "bpc_mean"),
                                                     col(arm, "bpc_mean"))
        rel = (clm - np.asarray(col(arm, "bpc_mean"))) / clm  # (BPC_CLM - BPC_arm) / BPC_CLM
        metrics[f"rel_bpc_gain_{arm}"] = seed_metric(rel)
        for d in cfg.domains:
            metrics[f"bpc_gain_{d}_{arm}"] = seed_difference(col("clm", f"bpc_{d}"),
                                                             col(arm, f"bpc_{d}"))
    metrics["bpc_min_ce_minus_avg_ce"] = seed_difference(col("min_ce", "bpc_mean"),
                                                         col("avg_ce", "bpc_mean"))
    metrics["arith_acc_gain_min_ce"] = seed_difference(col("min_ce", "arith_acc"),
                                                       col("clm", "arith_acc"))
    metrics["n_seeds"] = len(seeds)
    return Measurement(
        metrics=metrics, tables={"per_seed_arm": rows, "sources_and_base": source_rows},
        notes="Same base, steps, batches (seeded order) and learning-rate schedule in every arm; "
              "the arms differ only in λ and the fused targets. Models are kit "
              f"CausalTransformers ({cfg.n_layers} layers, d={cfg.d_model}); the spec's 3 "
              "layers / d=128 did not fit the shared-CPU budget with 3 seeds that each train "
              "their own sources. The grammar source's BPE asks for 300 ids (the kit needs "
              ">= 257, the spec said 256); the Unigram trainer may learn fewer than 512. "
              "MinCE compares per-token CE across tokenizers as the official code does.")


def _pydoc_sentences() -> tuple[list[str], list[str]]:
    """English sentences (30-150 characters, plain ASCII) of CPython's documentation prose:
    (train topics, held-out topics)."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    corpus = pydoc_topics_corpus()
    out = []
    for raw in (corpus.train, corpus.heldout):
        text = raw.decode("utf-8", errors="replace")
        sents = []
        for para in re.split(r"\n\s*\n", text):
            flat = " ".join(para.split())
            for sent in re.split(r"(?<=[.!?])\s+", flat):
                if 30 <= len(sent) <= 150 and sent[0].isupper() and sent.isascii() \
                        and re.fullmatch(r"[A-Za-z0-9 ,.;:'\"()\-?!/_]+", sent) and "--" not in sent:
                    sents.append(sent)
        out.append(sents)
    return out[0], out[1]


def _shuffled_null_does_not_hold(metrics) -> bool | None:
    """The shuffled-distribution null arm, judged by the rule in soft alignment's place
    (bpc_gain_shuffled = BPC_hard - BPC_shuffled > 0), does not hold."""
    return evaluate_rule("bpc_gain_shuffled > 0", metrics) is not True


@claim(
    rule="bpc_gain_soft > 0",
    control=_shuffled_null_does_not_hold,
    paper="Sec. 4.4 / Table 6 (ablation): the minimum-edit-distance (MinED) token alignment "
          "beats exact matching (EM) on BBH and CommonSense, because it keeps more of the "
          "source's distributions (tokens that differ slightly, e.g. 'get_' vs 'get', still "
          "align). The paper reports no coverage number.",
    against=("exact-match (hard) alignment of the same SmolLM2 records into the same target base "
             "and steps; null arm: soft alignment with the distributions of the positions only "
             "it covers permuted among those positions; a CLM-only arm alongside"),
    resources={"cpus": 1},
)
def alignment_quality(scale: Scale, seed: int, progress=None) -> Measurement:
    """The cross-tokenizer case with a real model: SmolLM2-135M-Instruct (49,152-token
    byte-level BPE) records its top-10 distributions on English sentences of CPython's
    documentation; a tiny target with a BPE-1024 tokenizer trained here receives them through
    (a) exact-match (hard) and (b) MinED (soft) alignment. Measured: the share of target
    positions that receive a source distribution (coverage), the probability the carried
    distributions give the target's actual token, and - on the paper's terms - held-out bits
    per character of the target after FuseLLM continual training (λ = 0.9, SmolLM2 the only
    fused source, so the alignment alone differs) with hard vs soft alignment, plus a CLM-only
    arm; paired over 3 seeds (each seed: its own target base and data order; the SmolLM2
    records are shared). At smoke an untrained tiny stand-in with a BPE-1024 tokenizer of its
    own replaces SmolLM2 (no SmolLM2 load): a check of the plumbing, not of the claim.

    Rule, rewritten before running it (issue 37): the old rule also required soft alignment
    to cover more positions than hard, which cannot fail (MinED keeps every exact match), so
    coverage is now reported only. Decides on the paper's terms: ``bpc_gain_soft`` =
    BPC_hard - BPC_soft > 0 over the whole interval (fails when the whole interval is <= 0).

    Null arm, in the same run: the soft targets with the distributions of the positions that
    only MinED covers permuted among those positions across the corpus
    (:func:`permute_rows`): the same positions get a soft source distribution, but one about
    another slot. If that also beats hard alignment, the gain is the extra soft labels
    (regularisation), not the aligned knowledge. Control: the null, judged by the rule in
    soft's place (``bpc_gain_shuffled`` = BPC_hard - BPC_shuffled > 0), does not hold."""
    from iclr24.kits.language_models import train_subword_tokenizer
    from iclr24.kits.threads import torch_threads

    progress = progress or _noop
    train_pool, held_pool = _pydoc_sentences()
    rng = np.random.default_rng(seed)
    n_fusion = sizes(scale, smoke=24, small=160)
    n_test = sizes(scale, smoke=16, small=60)
    order = rng.permutation(len(train_pool))
    fusion_texts = [train_pool[i] for i in order[:n_fusion]]
    pretrain_texts = [train_pool[i] for i in order[n_fusion:]]  # disjoint from the fusion set
    test_texts = [held_pool[i] for i in rng.choice(len(held_pool), n_test, replace=False)]
    cfg = sizes(scale,
                smoke=WorldConfig(d_model=32, n_layers=1, n_heads=2, context_length=96,
                                  base_steps=10, fuse_steps=20, batch_size=8),
                small=WorldConfig(d_model=64, n_layers=2, n_heads=4, context_length=160,
                                  base_steps=100, fuse_steps=100, batch_size=16))
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    with torch_threads(1):
        if scale is Scale.SMOKE:
            stand_tok = train_subword_tokenizer(train_pool[1::2], vocab_size=1024, kind="bpe")
            src_vocab = TokenVocab.of(stand_tok)
            src_lm = new_model(cfg, src_vocab.size, seed + 5)
            source_name = "untrained 1-layer stand-in, BPE-1024 (smoke)"
        else:
            from iclr24.kits.language_models import load_smollm2

            src_lm = load_smollm2()
            src_vocab = TokenVocab.of(src_lm.tokenizer)
            source_name = "SmolLM2-135M-Instruct"
        src_records = record_topk(src_lm, src_vocab, fusion_texts, k=10, batch_size=16)
        src_bpc = bits_per_char(src_lm, src_vocab, test_texts, batch_size=16)
        progress(0.2, f"{source_name}: records done")
        tgt_tok = train_subword_tokenizer(train_pool, vocab_size=1024, kind="bpe")
        tgt_vocab = TokenVocab.of(tgt_tok)
        used = {t for r in src_records for t in src_vocab.tokens(np.unique(
            np.concatenate([r.token_ids, r.topk_ids.ravel()])))}
        mapping = build_vocab_mapping(sorted(used), tgt_vocab, src_vocab.marker,
                                      tgt_vocab.marker)
        rows, align_rows, soft_only_share = [], [], []
        for n, s in enumerate(seeds):
            base_net = new_model(cfg, tgt_vocab.size, s)
            FuseLLMTrainer(base_net, tgt_vocab, FuseConfig(
                lam=1.0, steps=cfg.base_steps, batch_size=cfg.batch_size, lr=3e-3,
                warmup_ratio=0.05, min_lr_ratio=0.1, seed=s)).fit(pretrain_texts)
            base = Model("target base (bpe 1024)", base_net, tgt_tok, tgt_vocab)
            tgt_records = record_topk(base.net, tgt_vocab, fusion_texts, k=10)
            fused = {}
            for how, mp in (("hard", None), ("soft", mapping)):
                aligned = align_records(src_records, src_vocab, tgt_vocab, tgt_records, mp)
                fc = fuse_corpus(tgt_records, [aligned], [src_records], include_target=False)
                fused[how] = fc.fused
                if n == 0:
                    hit = [float(d.probs[t][d.ids[t] == r.token_ids[t]].sum())
                           for d, r in zip(fc.fused, tgt_records) for t in range(len(r))
                           if d.transferred[t]]
                    align_rows.append({"alignment": how, "coverage": fc.coverage[0],
                                       "p_true_token_on_covered": float(np.mean(hit))
                                       if hit else 0.0, "n_covered": len(hit)})
            only_soft = [s_.transferred & ~h.transferred  # positions MinED alone covers
                         for s_, h in zip(fused["soft"], fused["hard"])]
            fused["shuffled"] = permute_rows(fused["soft"], only_soft, seed=s)
            soft_only_share.append(float(np.concatenate(only_soft).mean()))
            for arm in ("clm", "hard", "soft", "shuffled"):
                model = continue_target(cfg, base, fusion_texts,
                                        None if arm == "clm" else fused[arm],
                                        1.0 if arm == "clm" else 0.9, s)
                rows.append({"seed": s, "arm": arm,
                             "bpc": bits_per_char(model.net, tgt_vocab, test_texts)})
            progress(0.2 + 0.8 * (n + 1) / len(seeds), f"seed {s} done")

    def col(arm):
        return [r["bpc"] for r in rows if r["arm"] == arm]

    cov = {r["alignment"]: r for r in align_rows}
    metrics = {
        "coverage_soft": cov["soft"]["coverage"], "coverage_hard": cov["hard"]["coverage"],
        "coverage_gain": cov["soft"]["coverage"] - cov["hard"]["coverage"],
        "p_true_soft": cov["soft"]["p_true_token_on_covered"],
        "p_true_hard": cov["hard"]["p_true_token_on_covered"],
        "bpc_soft": seed_metric(col("soft")), "bpc_hard": seed_metric(col("hard")),
        "bpc_clm": seed_metric(col("clm")), "bpc_shuffled": seed_metric(col("shuffled")),
        "bpc_gain_soft": seed_difference(col("hard"), col("soft")),
        "bpc_gain_shuffled": seed_difference(col("hard"), col("shuffled")),
        "bpc_gain_soft_vs_shuffled": seed_difference(col("shuffled"), col("soft")),
        "bpc_gain_soft_vs_clm": seed_difference(col("clm"), col("soft")),
        "soft_only_share": float(np.mean(soft_only_share)),
        "source_bpc": src_bpc, "n_seeds": len(seeds),
        "n_mapped_source_tokens": len(mapping),
    }
    return Measurement(
        metrics=metrics, tables={"alignment": align_rows, "per_seed_arm": rows},
        notes=f"Source: {source_name} (held-out BPC {src_bpc:.3f}). The vocabulary mapping is "
              "built for the source tokens that occur in the records (the official code maps "
              "the whole vocabulary; the other entries are never read). SmolLM2 is the only "
              "fused source (no MinCE choice with the target base), so hard and soft differ "
              "only in the alignment.")
