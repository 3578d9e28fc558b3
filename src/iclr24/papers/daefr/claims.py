"""DAEFR claims: dual associated encoders beat a single HQ encoder (Tab. 4 ablations, Tab. 1-2
direction), and the association stage aligns the HQ and LQ latent spaces (Sec. 3.2).

Issue 38 added to each claim a control measured in the same run: ``dual_vs_single_encoder``
judges its arms only once they beat the input-ignoring code predictor (a learning control);
``association_alignment`` judges the association against a null stage 2 of the same length
without the association term, and asks that the associated HQ encoder still speaks the stage-1
codebook that stage 3 predicts into (see the claims' docstrings)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiment import (
    ARMS,
    DigitsExperiment,
    arm_metrics,
    associated_pair,
    digit_features,
    digits_data,
    eval_pairs,
    majority_code_accuracy,
    retrieval_accuracy,
    stage1_codebooks,
    stage1_codes,
    train_arm,
)

_ARM_LABELS = {"codeformer": "CodeFormer-style (1 encoder)",
               "no_association": "dual, no association", "daefr": "DAEFR (dual, associated)"}


def _experiment(scale: Scale) -> tuple[DigitsExperiment, int]:
    exp = sizes(scale, smoke=DigitsExperiment.smoke(), small=DigitsExperiment(),
                full=DigitsExperiment.full())
    return exp, sizes(scale, smoke=1, small=3, full=5)


def _classifier(x_train, y_train):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=2000).fit(digit_features(x_train), y_train)


@claim(
    rule="code_acc_gain > 0 and psnr_gain > 0",
    control="learned_codeformer > 0 and learned_daefr > 0",
    paper="Real-world test sets (FID, lower is better; released model): LFW-Test 47.53 vs "
          "CodeFormer 52.35, WebPhoto-Test 75.45 vs 83.19, WIDER-Test 36.72 vs 38.80; on "
          "CelebA-Test best or near-best LPIPS/FID among codebook methods. Ablations: adding the "
          "LQ branch and the association stage each improve restoration; cross-attention "
          "fusion beats concatenation/addition.",
    against=("a CodeFormer-style single HQ encoder fine-tuned on LQ (judged) and dual encoders "
             "without association; same data and codebook; learning control: the "
             "input-ignoring predictor (most frequent code per latent position)"),
)
def dual_vs_single_encoder(scale: Scale, seed: int, progress=None) -> Measurement:
    """Three stage-3 arms with the same data, steps and predictor, restoring severely degraded
    16x16 digits (r = 4, sigma 1.2-2, noise, JPEG) through one frozen stage-1 HQ codebook and
    decoder: a CodeFormer-style single HQ encoder fine-tuned on LQ inputs, DAEFR without the
    association stage (stage-1 HQ + LQ encoders, fusion), and full DAEFR (associated encoders,
    fusion). code_acc: top-1 accuracy of the predicted stage-1 HQ code indices on the test
    split; psnr: restored vs HQ (dB, images in [-1, 1]); identity: accuracy of a logistic
    regression fitted on clean HQ digits, applied to the restorations (reported). Gains are
    DAEFR minus CodeFormer-style, paired over replicate seeds (3 at small); the rule needs both
    code accuracy and PSNR to rise over the whole interval. The stage-1 codebooks (the
    'pretrained VQGANs') are shared by the replicates; stage 2 and 3 and the degradation draws
    are per replicate.

    Control (issue 38, fixed before the small run; the audit found every arm at the same code
    accuracy at smoke): the arms must have learnt before their difference is judged. Both the
    CodeFormer-style arm and DAEFR beat the input-ignoring predictor, the most frequent
    stage-1 code of the training split at each latent position (``code_acc_floor``), over the
    whole seed interval (``learned_*``: paired margins over the floor); otherwise the verdict
    is inconclusive, the test bed cannot tell."""
    progress = progress or (lambda *a, **k: None)
    from iclr24.kits.threads import single_threaded

    exp, n_rep = _experiment(scale)
    reps = [seed * 1000 + r for r in range(n_rep)]
    per = {arm: {"code_acc": [], "psnr": [], "identity": []} for arm in ARMS}
    rows, examples = [], None
    with single_threaded():
        data = digits_data(exp, seed)
        clf = _classifier(data.x_train, data.y_train)
        hq1, _ = stage1_codebooks(exp, seed)
        floor = majority_code_accuracy(stage1_codes(hq1, data.x_train),
                                       stage1_codes(hq1, data.x_test))
        progress(0.1, "stage 1 codebooks ready")
        prior_psnr = psnr_lq = None
        for k, rep in enumerate(reps):
            x_lq, x_hq = eval_pairs(exp, seed, rep)
            restored = {}
            for j, arm in enumerate(ARMS):
                model = train_arm(arm, exp, seed, rep)
                m = arm_metrics(model, x_lq, x_hq, data.y_test, clf)
                for key, v in m.items():
                    per[arm][key].append(v)
                rows.append({"replicate": rep, "arm": arm, **m})
                restored[arm] = model.restore(x_lq[:6])
                progress(0.1 + 0.9 * (k * len(ARMS) + j + 1) / (n_rep * len(ARMS)),
                         f"replicate {k + 1}/{n_rep}: {arm}")
            if examples is None:
                examples = (x_lq[:6], restored, x_hq[:6])
                from skimage.metrics import peak_signal_noise_ratio

                rec = hq1(x_hq)[0].clamp(-1, 1).detach().numpy().astype(np.float64)
                ref = x_hq.numpy().astype(np.float64)
                prior_psnr = float(np.mean([peak_signal_noise_ratio(a, b, data_range=2.0)
                                            for a, b in zip(ref, rec)]))
                psnr_lq = float(np.mean([peak_signal_noise_ratio(a, b, data_range=2.0)
                                         for a, b in zip(ref, x_lq.numpy().astype(np.float64))]))
    metrics = {f"{key}_{arm}": seed_metric(per[arm][key]) for arm in ARMS
               for key in ("code_acc", "psnr", "identity")}
    b, a, c = per["daefr"], per["codeformer"], per["no_association"]
    metrics.update(
        code_acc_floor=floor,
        learned_codeformer=seed_difference(a["code_acc"], [floor] * n_rep),
        learned_daefr=seed_difference(b["code_acc"], [floor] * n_rep),
        code_acc_gain=seed_difference(b["code_acc"], a["code_acc"]),
        psnr_gain=seed_difference(b["psnr"], a["psnr"]),
        identity_gain=seed_difference(b["identity"], a["identity"]),
        code_acc_gain_vs_no_association=seed_difference(b["code_acc"], c["code_acc"]),
        psnr_gain_vs_no_association=seed_difference(b["psnr"], c["psnr"]),
        psnr_lq_input=psnr_lq, psnr_prior_reconstruction=prior_psnr, replicates=n_rep,
    )
    return Measurement(metrics=metrics, figure=_restoration_figure(per, examples, floor),
                       tables={"per_replicate": rows},
                       notes="Digits, not faces: 16x16 images, 4x4 latent grid, 64 codes, L1 + "
                             "codebook losses only (no LPIPS/GAN), tiny encoders (8 base "
                             "channels) and a 2-layer predictor (1 at smoke). code_acc_floor is "
                             "the input-ignoring predictor (most frequent training code per "
                             "position), the learning control's level. "
                             "psnr_prior_reconstruction is the stage-1 HQ autoencoder on clean "
                             "HQ inputs (the ceiling of decoding through the prior); "
                             "psnr_lq_input is the degraded input itself. Stage 2 moves the "
                             "associated HQ encoder away from the stage-1 codebook that stage 3 "
                             "predicts into (association_alignment reports it as "
                             "hq_code_agreement_after), so the DAEFR arm starts stage 3 further "
                             "from its targets than the other arms; its advantage, if any, needs "
                             "the stage-3 budget to undo that.")


def _restoration_figure(per, examples, floor):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 5.6))
    grid = fig.add_gridspec(2, 2, height_ratios=[1.0, 1.1])
    for col, key in enumerate(("code_acc", "psnr")):
        ax = fig.add_subplot(grid[0, col])
        vals = [per[arm][key] for arm in ARMS]
        ax.bar(range(len(ARMS)), [np.mean(v) for v in vals],
               yerr=[np.std(v) if len(v) > 1 else 0 for v in vals], color=["C7", "C1", "C0"])
        for i, v in enumerate(vals):
            ax.plot([i] * len(v), v, "k.", ms=4)
        ax.set_xticks(range(len(ARMS)), [_ARM_LABELS[a] for a in ARMS], fontsize=7)
        ax.set_ylabel("code-index accuracy" if key == "code_acc" else "PSNR [dB]")
        lo = min(min(v) for v in vals)
        ax.set_ylim(lo * 0.95 if key == "psnr" else 0, None)
        if key == "code_acc":
            ax.axhline(floor, color="k", ls="--", lw=1, label="most frequent code (floor)")
            ax.legend(fontsize=7)
    ax = fig.add_subplot(grid[1, :])
    x_lq, restored, x_hq = examples
    rows = [x_lq] + [restored[a] for a in ARMS] + [x_hq]
    tiles = np.concatenate([np.concatenate(list(r[:, 0].numpy()), axis=1) for r in rows], axis=0)
    ax.imshow((tiles + 1) / 2, cmap="gray", vmin=0, vmax=1)
    ax.set_yticks([8 + 16 * i for i in range(len(rows))],
                  ["LQ input"] + [_ARM_LABELS[a] for a in ARMS] + ["HQ"], fontsize=7)
    ax.set_xticks([])
    ax.set_title("test restorations (first replicate)", fontsize=9)
    fig.tight_layout()
    return fig


@claim(
    rule={"smoke": "retrieval_gain_vs_null > 0.1 and hq_code_agreement_after >= 0.5",
          "small": "retrieval_gain_vs_null > 0.2 and hq_code_agreement_after >= 0.5",
          "full": "retrieval_gain_vs_null > 0.2 and hq_code_agreement_after >= 0.5"},
    control="hq_code_agreement_null >= 0.5",
    paper="Sec. 3.2 / Fig. 3: the patch-level association (CLIP-style symmetric CE over all "
          "spatial tokens of a batch) bridges the domain gap between the HQ and LQ encoders' "
          "feature spaces (shown qualitatively; no retrieval number is reported); stage 3 then "
          "predicts codes of the stage-1 HQ codebook from the associated encoders.",
    against=("null arm: the same stage 2 (steps, pairs, seed, reconstruction losses) with the "
             "association term's weight 0; the stage-1 encoders (trained apart) and chance "
             "retrieval reported"),
)
def association_alignment(scale: Scale, seed: int, progress=None) -> Measurement:
    """For held-out test pairs, each LQ token (LQ encoder of the degraded image) retrieves its
    nearest HQ token (HQ encoder of the clean image, cosine) among the content tokens of a batch
    (64 pairs at small, about 60% of 1,024 tokens); retrieval accuracy is the fraction that find
    the token at the same position of the same image. Three encoder pairs per replicate: the
    stage-1 encoders (trained apart, ``retrieval_before``), the associated ones
    (``retrieval_after``) and the null arm (``retrieval_after_null``): the same stage 2 with
    the association term's weight 0, i.e. only the extra reconstruction training.
    ``hq_code_agreement_*``: fraction of HQ test tokens whose nearest stage-1 code under the
    stage-2 HQ encoder is the one under the stage-1 encoder (the stage-3 target).

    Rule (issue 38, fixed before the small run; it replaces ``retrieval_gain > 0.2`` over the
    stage-1 pair, which only checked that the contrastive loss had been optimised): the
    association term itself, not more training, raises held-out retrieval by more than 0.2
    over the null arm (0.1 at smoke), paired over the replicate seeds of
    dual_vs_single_encoder (3 at small; the stage-2 stand-ins are shared with it), *and* the
    associated HQ encoder still maps at least half of the HQ test tokens to their stage-1 codes
    (the audit found 0.15 at smoke): the paper aligns the LQ features to the HQ latent space
    that stage 3 predicts into; an alignment bought by moving the HQ encoder off that codebook
    is not the mechanism the paper relies on. Control: the null arm keeps agreement >= 0.5, so
    that the stage-2 fine-tuning itself (optimiser, steps) does not move the HQ encoder off its
    codebook; otherwise the test bed cannot tell drift caused by association from drift caused
    by the fine-tuning."""
    progress = progress or (lambda *a, **k: None)
    from iclr24.kits.threads import single_threaded

    exp, n_rep = _experiment(scale)
    reps = [seed * 1000 + r for r in range(n_rep)]
    cols = {k: [] for k in ("before", "after", "after_null", "chance", "logit_scale",
                            "hq_code_agreement", "hq_code_agreement_null")}
    rows = []
    with single_threaded():
        hq1, lq1 = stage1_codebooks(exp, seed)
        for k, rep in enumerate(reps):
            x_lq, x_hq = eval_pairs(exp, seed, rep)
            hq2, lq2, logit_scale = associated_pair(exp, seed, rep)
            hq0, lq0, _ = associated_pair(exp, seed, rep, association_loss=False)
            b, ch = retrieval_accuracy(hq1, lq1, x_hq, x_lq, exp.retrieval_batch)
            targets = stage1_codes(hq1, x_hq)
            row = {"replicate": rep, "before": b, "chance": ch, "logit_scale": logit_scale,
                   "after": retrieval_accuracy(hq2, lq2, x_hq, x_lq, exp.retrieval_batch)[0],
                   "after_null": retrieval_accuracy(hq0, lq0, x_hq, x_lq,
                                                    exp.retrieval_batch)[0],
                   "hq_code_agreement": float((stage1_codes(hq1, x_hq, hq2) == targets)
                                              .float().mean()),
                   "hq_code_agreement_null": float((stage1_codes(hq1, x_hq, hq0) == targets)
                                                   .float().mean())}
            for key, col in cols.items():
                col.append(row[key])
            rows.append(row)
            progress((k + 1) / n_rep, f"replicate {k + 1}/{n_rep}")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.4, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for i, row in enumerate(rows):
        ax.plot([0, 1], [row["before"], row["after"]], "o-", color="C0",
                label="association" if i == 0 else None)
        ax.plot([0, 1], [row["before"], row["after_null"]], "s--", color="C7",
                label="null: weight 0" if i == 0 else None)
    ax.axhline(float(np.mean(cols["chance"])), color="k", ls=":", label="chance")
    ax.set_xticks([0, 1], ["stage 1 (apart)", "after stage 2"])
    ax.set_ylabel("LQ -> HQ token retrieval accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return Measurement(
        metrics={"retrieval_before": seed_metric(cols["before"]),
                 "retrieval_after": seed_metric(cols["after"]),
                 "retrieval_after_null": seed_metric(cols["after_null"]),
                 "retrieval_gain_vs_null": seed_difference(cols["after"], cols["after_null"]),
                 "retrieval_gain": seed_difference(cols["after"], cols["before"]),
                 "retrieval_gain_null": seed_difference(cols["after_null"], cols["before"]),
                 "retrieval_chance": float(np.mean(cols["chance"])),
                 "logit_scale": float(np.mean(cols["logit_scale"])),
                 "hq_code_agreement_after": seed_metric(cols["hq_code_agreement"]),
                 "hq_code_agreement_null": seed_metric(cols["hq_code_agreement_null"]),
                 "replicates": n_rep},
        figure=fig, tables={"per_replicate": rows},
        notes="Tokens whose HQ patch is near-constant (background) are left out of the "
              "association loss and of retrieval: on digits they are duplicates, and a "
              "duplicate negative makes retrieval ill-posed. Retrieval is measured on test "
              "pairs with their own degradation draws (never trained on). The downstream "
              "effect of the association (stage 3 with vs without it) is "
              "dual_vs_single_encoder's code_acc_gain_vs_no_association.")
