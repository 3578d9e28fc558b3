"""EMO claims: ``reverse_kl`` (EMO vs MLE fine-tuning at the paper's optimiser-step budget,
precision side, with a shuffled-cost EMO as the null arm) and ``bound_exact``."""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import (
    Estimate,
    Measurement,
    Scale,
    claim,
    evaluate_rule,
    seed_difference,
    sizes,
)

from .comparison import ComparisonConfig, run_finetuning_comparison
from .demd import cosine_cost_matrix, demd, demd_logit_gradient, demd_soft, earth_movers_distance
from .finetuning import FinetuneConfig

# The paper's fine-tuning budget in optimiser steps. run_lm_gpt2.sh fine-tunes GPT-2 for one
# epoch on WikiText-2's training split (about 2.1M words, roughly 9,300 blocks of 256 GPT-2
# tokens) at batch 32: about 290 AdamW steps, the smallest of the paper's domains (WikiText-103
# is ~50x larger). Here one epoch over 9,216 fresh sequences of the domain = 288 steps of 32.
_PAPER_STEPS = 288
_BATCH = 32


def _reverse_kl_config(scale: Scale) -> ComparisonConfig:
    return ComparisonConfig(
        n_clusters=sizes(scale, smoke=8, small=32, full=32),
        n_synonyms=sizes(scale, smoke=4, small=8, full=8),
        pretrain_sequences=sizes(scale, smoke=1_000, small=20_000, full=100_000),
        finetune_sequences=sizes(scale, smoke=256, small=_PAPER_STEPS * _BATCH,
                                 full=_PAPER_STEPS * _BATCH),
        eval_sequences=sizes(scale, smoke=128, small=512, full=2_048),
        n_seeds=sizes(scale, smoke=1, small=3, full=10),
        finetune=FinetuneConfig(epochs=1, batch_size=_BATCH, lr=5e-4),
        # CPU at small (measured 0.04 s per step, 2.7 s per evaluation): MLE, EMO and the null
        # arm at 288 steps x 3 seeds plus pretraining fill ~160 s of the ~200 s; MixCE, TaiLr,
        # the oracle ablation and the 64/128-step sweep points run at smoke and full only
        baselines=sizes(scale, smoke=("mixce", "tailr"), small=(), full=("mixce", "tailr")),
        oracle_ablation=sizes(scale, smoke=True, small=False, full=True),
        # the sweep is reported, not judged: the old budget (32 steps; full: also 64, 128)
        budget_sequences=sizes(scale, smoke=(128,), small=(1_024,),
                               full=(1_024, 2_048, 4_096)),
    )


def _reverse_kl_figure(result, methods):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.4))
    panels = (("reverse_kl", "reverse KL(Q‖P*) / token\n(model samples: precision)"),
              ("forward_kl", "forward KL(P*‖Q) / token\n(true data: recall)"),
              ("wrong_mass", "wrong-cluster mass"))
    for i, (metric, title) in enumerate(panels):
        ax = fig.add_subplot(1, 3, i + 1)
        for j, m in enumerate(methods):
            vals = result.per_seed(m, metric)
            ax.bar(j, vals.mean(), color="C1" if m.startswith("emo") else "C0", alpha=0.6)
            ax.plot(np.full(vals.size, j), vals, "k.", ms=4)
        ax.axhline(result.pretrained[metric], color="grey", ls="--", lw=1, label="pretrained")
        ax.set_xticks(range(len(methods)), methods, rotation=30, fontsize=8)
        ax.set_title(title, fontsize=9)
        if i == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _shuffled_cost_does_not_hold(metrics) -> bool | None:
    """The shuffled-cost null arm, judged by the rule in EMO's place
    (delta_reverse_kl_shuffled_cost = reverse KL of EMO with permuted cost rows − MLE's < 0),
    does not hold."""
    return evaluate_rule("delta_reverse_kl_shuffled_cost < 0", metrics) is not True


@claim(
    rule="delta_reverse_kl < 0",
    control=_shuffled_cost_does_not_hold,
    paper=("Tab. 1/2: GPT-2 and OPT-125M fine-tuned with EMO (1 epoch, run_lm_gpt2.sh) reach "
           "higher MAUVE under unbiased sampling than MLE (and TaiLr, MixCE) on six domains. "
           "Spec expectation at laptop scale: EMO lowers reverse KL (precision) vs MLE by "
           "~10-30% at equal steps with forward KL within ~5%; rule: EMO - MLE reverse KL < 0 "
           "over the whole paired 95% interval across seeds, at the paper's budget in optimiser "
           "steps (one WikiText-2 epoch of run_lm_gpt2.sh, about 290 steps of batch 32; smaller "
           "budgets are reported as a sweep, not judged)."),
    against=("MLE fine-tuning from the same pretrained checkpoint, data and order per seed; "
             "null arm: EMO with the rows of its cost embedding permuted across tokens; MixCE "
             "and TaiLr reported beside where the scale runs them"),
)
def reverse_kl(scale: Scale, seed: int, progress=None) -> Measurement:
    """Fine-tune one pretrained tiny LM on a shifted synthetic domain with MLE and EMO (plus
    MixCE, TaiLr and the oracle-cost ablation where the scale runs them; same checkpoint, data
    and order per seed) and compare the exact reverse KL of the model's own samples to the
    true language (plus forward KL and wrong-cluster mass).

    Budget, changed before running it (issue 37): the judged comparison used to be "the
    paper's 1 epoch" over 1,000 sequences, i.e. 32 optimiser steps, while the paper's epoch
    (run_lm_gpt2.sh: WikiText-2, block 256, batch 32) is about 290 steps. It is now sized by
    the paper's optimiser steps: one epoch over 9,216 fresh sequences = 288 steps of 32 (at
    64 tokens per sequence, a quarter of the paper's tokens per step). 3 seeds at small (CPU
    budget). The old 32-step budget (first 1,024 sequences; full also 64 and 128 steps) is a
    reported sweep, not judged.

    Null arm, in the same run (same checkpoint, data, order, budget): EMO whose frozen cost
    embedding has its rows permuted across tokens (``emo_shuffled_cost``): the same objective
    and the same distribution of costs, but costs that no longer say which tokens are alike.
    Control: that null, judged by the rule in EMO's place (``delta_reverse_kl_shuffled_cost``),
    does not hold; if it did, a win of EMO would come from the loss's re-weighting, not from
    the earth mover's transport cost."""
    from iclr24.kits.language_models import torch_threads

    config = _reverse_kl_config(scale)
    # a d=64 model gains nothing from intra-op threads; one thread is also robust when the
    # machine is shared (OpenMP spin-waits otherwise) and fixes the reduction order
    with torch_threads(1):
        result = run_finetuning_comparison(config, seed, progress=progress)
    methods = list(result.rows[0])
    metrics: dict[str, float] = {}
    for m in methods:
        for key in ("reverse_kl", "forward_kl", "wrong_mass", "nll"):
            metrics[f"{m}_{key}"] = float(result.per_seed(m, key).mean())
    for key in ("reverse_kl", "forward_kl", "wrong_mass"):
        metrics[f"pretrained_{key}"] = result.pretrained[key]
    metrics["true_entropy"] = result.pretrained["true_entropy"]
    emo_rkl, mle_rkl = result.per_seed("emo", "reverse_kl"), result.per_seed("mle", "reverse_kl")
    null_rkl = result.per_seed("emo_shuffled_cost", "reverse_kl")
    diff = emo_rkl - mle_rkl
    # same checkpoint, data and order per seed: a paired t interval over seeds
    delta = seed_difference(emo_rkl, mle_rkl)
    low, high = (delta.low, delta.high) if isinstance(delta, Estimate) else (delta, delta)
    metrics.update(
        n_seeds=config.n_seeds,
        finetune_steps=result.steps(),
        emo_wins=int((diff < 0).sum()),
        delta_reverse_kl=delta,
        delta_reverse_kl_shuffled_cost=seed_difference(null_rkl, mle_rkl),
        delta_reverse_kl_vs_shuffled_cost=seed_difference(emo_rkl, null_rkl),
        relative_reverse_kl_change=float(diff.mean() / metrics["mle_reverse_kl"]),
        forward_kl_ratio=metrics["emo_forward_kl"] / metrics["mle_forward_kl"],
        wrong_mass_ratio=metrics["emo_wrong_mass"] / metrics["mle_wrong_mass"],
        pretrain_final_loss=result.pretrain_final_loss,
        cost_synonym_gap=result.cost_synonym_gap,
    )
    sweep = []
    for n_seq in sorted({config.finetune_sequences, *config.budget_sequences}):
        e_rkl = result.per_seed("emo", "reverse_kl", n_seq)
        m_rkl = result.per_seed("mle", "reverse_kl", n_seq)
        d = seed_difference(e_rkl, m_rkl)
        lo, hi = (d.low, d.high) if isinstance(d, Estimate) else (d, d)
        judged = n_seq == config.finetune_sequences
        if not judged:
            metrics[f"delta_reverse_kl_{result.steps(n_seq)}_steps"] = d
        sweep.append({
            "sequences": n_seq, "steps": result.steps(n_seq), "judged": judged,
            "mle_reverse_kl": float(m_rkl.mean()), "emo_reverse_kl": float(e_rkl.mean()),
            "delta_reverse_kl": float(np.mean(e_rkl - m_rkl)), "delta_low": lo,
            "delta_high": hi, "emo_wins": int((e_rkl < m_rkl).sum()),
            "forward_kl_ratio": float(result.per_seed("emo", "forward_kl", n_seq).mean()
                                      / result.per_seed("mle", "forward_kl", n_seq).mean())})
    rows = [{"seed_index": r, "method": m, **{k: round(v, 5) for k, v in row[m].items()}}
            for r, row in enumerate(result.rows) for m in methods]
    notes = (
        f"Synthetic language K={config.n_clusters} clusters x S={config.n_synonyms} synonyms "
        f"(+EOS); a {config.n_layers}-layer d={config.d_model} transformer pretrained on "
        f"{config.pretrain_sequences} sequences of domain A, fine-tuned one epoch over "
        f"{config.finetune_sequences} fresh sequences of domain B (30% of rows resampled) = "
        f"{result.steps()} AdamW steps (judged; the paper's WikiText-2 epoch is about 290 "
        f"steps of batch 32), lr {config.finetune.lr}, batch {config.finetune.batch_size}, "
        "linear decay, no gradient clipping (as the official loop); "
        f"{config.n_seeds} fine-tuning seeds from one pretrained checkpoint (seed {seed}). "
        "Metrics are exact over the vocabulary: reverse KL on the model's own ancestral "
        "samples, forward KL and wrong-cluster mass on true held-out prefixes. "
        f"delta = EMO - MLE reverse KL, paired 95% t interval over seeds "
        f"[{low:.4f}, {high:.4f}]. emo_shuffled_cost = the null arm (EMO with permuted cost "
        "rows); emo_oracle (where run) = EMO with an oracle cost embedding (cluster one-hot + "
        "noise), an ablation. cost_synonym_gap = mean cosine cost across clusters minus "
        "within clusters of the frozen pretrained head (> 0: the head knows the synonyms). "
        "The paper's MAUVE is not computed: no GPT-2 features offline; the reverse/forward KL "
        "pair plays its precision/recall roles. How to read a split result: the cosine cost "
        "between synonyms of the frozen head is near 0, so DEMD penalises wrong-cluster mass "
        "(wrong_mass_ratio < 1) but cannot tell synonyms apart; if EMO's reverse KL is "
        "nonetheless higher than MLE's, the extra error sits inside clusters (the Zipf law "
        "over synonyms) and in the weaker MLE fit that forward_kl_ratio > 1 shows. Budget "
        "sweep (table budget_sweep): MLE and EMO fine-tuned one epoch over the first "
        f"{sorted(config.budget_sequences)} sequences (each budget has its own linear decay), "
        "same checkpoint and order seed; only the paper-sized budget is judged.")
    return Measurement(metrics=metrics, figure=_reverse_kl_figure(result, methods),
                       tables={"per_seed": rows, "budget_sweep": sweep}, notes=notes)


@claim(
    rule="max_abs_diff_onehot < 1e-6 and max_grad_error < 1e-6 "
         "and max_soft_bound_violation <= 1e-9",
    paper=("Sec. 3.2: DEMD = qᵀCp upper-bounds EMD and is tight for one-hot targets; its "
           "gradient re-weights each non-target token by its transport cost, "
           "∂DEMD/∂z_i = q_i (C(i,y) − E_q[C(·,y)])."),
    against=("POT's exact EMD (ot.emd2) on the same logits and cosine costs; autograd gradient "
             "vs the closed form"),
)
def bound_exact(scale: Scale, seed: int) -> Measurement:
    """DEMD vs POT's exact EMD (``ot.emd2``) on random logits and cosine costs: equal for
    one-hot targets, an upper bound for label-smoothed ones; autograd gradient vs the closed
    form; and how much cheaper the one-matmul form is than the exact LP."""
    import ot  # noqa: F401  (import outside the timed region: POT's first import is slow)
    import torch

    vocab_sizes = sizes(scale, smoke=[3, 10, 40], small=[2, 3, 10, 40, 100, 257],
                        full=[2, 3, 10, 40, 100, 257, 1000])
    n_rows = sizes(scale, smoke=16, small=48, full=128)
    gen = torch.Generator().manual_seed(seed)
    max_diff = max_grad = max_violation = 0.0
    gaps, table = [], []
    t_demd = t_emd = 0.0
    _ = demd(torch.zeros(1, 2, dtype=torch.float64), torch.zeros(1, dtype=torch.long),
             torch.eye(2, dtype=torch.float64))  # warm-up outside the timed region
    for v in vocab_sizes:
        d = int(torch.randint(2, 17, (1,), generator=gen))
        emb = torch.randn(v, d, generator=gen, dtype=torch.float64)
        logits = 2.0 * torch.randn(n_rows, v, generator=gen, dtype=torch.float64)
        target = torch.randint(0, v, (n_rows,), generator=gen)
        cost = cosine_cost_matrix(emb)
        q = torch.softmax(logits, dim=-1)
        onehot = torch.nn.functional.one_hot(target, v).double()
        t = time.perf_counter()
        bound = demd(logits, target, emb)
        t_demd = time.perf_counter() - t  # the last (largest) vocabulary's timings are kept
        t = time.perf_counter()
        exact = earth_movers_distance(q, onehot, cost)
        t_emd = time.perf_counter() - t
        diff = float(np.abs(bound.numpy() - exact).max())
        # label smoothing 0.1: EMD(q, p) <= qᵀ C p
        smooth = 0.9 * onehot + 0.1 / v
        soft_bound = demd_soft(logits, smooth, cost).numpy()
        soft_exact = earth_movers_distance(q, smooth, cost)
        violation = float((soft_exact - soft_bound).max())
        x = logits.clone().requires_grad_(True)
        (auto,) = torch.autograd.grad(demd(x, target, emb).sum(), x)
        grad_err = float((auto - demd_logit_gradient(logits, target, emb)).abs().max())
        gap = float(np.mean(soft_exact / soft_bound))
        max_diff, max_grad = max(max_diff, diff), max(max_grad, grad_err)
        max_violation = max(max_violation, violation)
        gaps.append(gap)
        table.append({"vocab": v, "dim": d, "max_abs_diff_onehot": diff,
                      "max_grad_error": grad_err, "max_soft_violation": violation,
                      "mean_emd_over_demd_smoothed": round(gap, 4)})
    return Measurement(
        metrics={"max_abs_diff_onehot": max_diff, "max_grad_error": max_grad,
                 "max_soft_bound_violation": max_violation,
                 "mean_emd_over_demd_smoothed": float(np.mean(gaps)),
                 "largest_vocab": vocab_sizes[-1],
                 "exact_emd_ms_per_row": 1e3 * t_emd / n_rows,
                 "demd_ms_per_row": 1e3 * t_demd / n_rows},
        tables={"per_vocab": table},
        notes=("float64, random Gaussian embeddings (cosine cost) and N(0, 2²) logits. "
               "One-hot targets: DEMD must equal POT's network-simplex EMD. Label-smoothed "
               "targets (0.9/0.1): DEMD = qᵀCp must be >= EMD; mean_emd_over_demd_smoothed "
               "says how loose the bound is there (1 = tight). Timings (per row, at the largest "
               "vocabulary, one batched DEMD call vs one POT LP per row) are wall-clock and "
               "noisy. The official `emoloss` "
               "package is not installed here, so no cross-check against it is made."),
    )
