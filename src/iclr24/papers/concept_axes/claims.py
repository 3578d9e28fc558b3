"""concept_axes claims: anchoring disentangles recomposition (Table 1 / ablation) and concept
embeddings carry hue nuance beyond words (Sec. 5 qualitative claims), on the procedural world.

lambda is swept over LAMBDA_SWEEP = (0.01, 0.1, 1); every value is reported, and the verdicts
read the value fixed before training by the paper's heuristic (both loss terms of similar size
at initialisation, ``balanced_lambda``).

Issue 38 (rules, controls and null arms written before any run at small): the stand-in
text-to-image model ignored its captions (true fine words gave a hue error of 81 degrees,
chance 90), so nothing could be distilled and the verdicts meant nothing. The stand-in now
follows IF more closely (scale-shift text conditioning, 10% null captions, classifier-free
guidance; :mod:`.standins`), and each claim measures in the same run a *positive control*
(the template filled with the true words, the best a caption can ask for) and a *null arm*.
Either failing makes the verdict inconclusive: the test bed cannot tell. Sizes at small (issue
38, set from per-step CPU cost before any verdict was seen): 8x8 scenes and a T2I trained for
1500 steps (was 16x16 and 250 steps, which cost 3x per step and left it ignoring captions;
600 steps still gave true fine words a hue error of 63 degrees), scene CNNs (features, VQA,
probe) trained for 600 steps (was 200: the probe read shape on 42% of real 8x8 scenes),
10 DDIM steps with guidance 3 at generation. Encoders: 200 steps at small (was 50; raised after
the first small run of this version, rules and controls unchanged: with 50 steps both encoder
arms reconstructed hue worse than the coarse words (44 degrees against 25 for text-only),
i.e. under-trained; 250 steps on one replicate reached 22 against 22).
"""

from __future__ import annotations

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes


def _config(scale: Scale):
    from .experiment import ExperimentConfig
    from .standins import StandinConfig

    return sizes(
        scale,
        smoke=ExperimentConfig(StandinConfig(image_size=8, unet_channels=(16, 32), t2i_steps=10,
                                             t2i_batch=32, cnn_width=16, cnn_steps=20),
                               n_train=64, encoder_steps=8, encoder_batch=16, n_eval=12,
                               sample_steps=4),
        small=ExperimentConfig(StandinConfig(image_size=8, unet_channels=(16, 32),
                                             t2i_steps=1500, t2i_batch=32,
                                             cnn_width=16, cnn_steps=600),
                               n_train=256, encoder_steps=200, encoder_batch=16, encoder_lr=3e-3,
                               n_eval=48,
                               sample_steps=10))


def _replicates(scale: Scale) -> int:
    return sizes(scale, smoke=1, small=3)


def _bar_figure(values: dict[str, list[float]], ylabel: str, title: str):
    """Per-arm mean with the replicates as dots."""
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.2))
    ax = fig.add_subplot()
    names = list(values)
    ax.bar(range(len(names)), [float(np.mean(values[n])) for n in names], color="0.75")
    for i, n in enumerate(names):
        ax.plot([i] * len(values[n]), values[n], "k.", ms=6)
    ax.set_xticks(range(len(names)), names, rotation=20)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


@claim(
    rule="gain_vs_no_anchor >= 0.1",
    control="success_true_words >= 0.25 and headroom_true_words >= 0.1 "
            "and not (gain_shuffled_anchor >= 0.1)",
    paper="Sec. 5 / ablation: removing the VQA anchor loss hurts disentanglement; recomposed "
          "images follow the swapped axis while keeping the others better than text-based and "
          "inversion baselines (Table 1, CLIP score and human preference; exact numbers not "
          "retrieved). Spec expectation at laptop scale: ours >= no-anchor + 10 points.",
    paper_numbers={},
    against=("the no-anchor arm (lambda = 0) on the same stand-ins and replicates; null arm: "
             "ours anchored to shuffled VQA answers; positive control: the template filled "
             "with the true words; a text-only arm (coarse VQA words) reported"),
)
def anchoring_disentangles(scale: Scale, seed: int, progress=None) -> Measurement:
    """Recomposition accuracy (axis k from image A, the others from B; success when the truth
    probes find A's value on axis k and B's on the others, hue within 30 degrees) for ours
    (anchored, lambda fixed in advance), no-anchor (lambda = 0), text-only (coarse VQA words),
    over 3 encoder-training replicates at small (1 at smoke).

    Rule (issue 38: the spec's +10 points; it read ``> 0`` before): the paired difference ours
    - no-anchor is >= 0.1 over the whole interval; it fails when the whole interval is below.
    Control (issue 38, fixed before the small run): (1) positive control: the template filled
    with the true words (shape, fine hue word, texture of the recomposed sources) succeeds at
    least a quarter of the time (chance is 1/60) and (2) leaves room for the effect: it beats
    no-anchor by >= 0.1 (``headroom_true_words``; if even the true words cannot, no embedding
    can show a 10-point gain here); (3) null arm: ours trained with every image anchored to
    *another* image's answers (same lambda and pull, no information) does not pass the rule
    (``gain_shuffled_anchor``: shuffled - no-anchor). At smoke (8x8, a T2I trained for 10
    steps) it checks the pipeline only."""
    from iclr24.kits.threads import torch_threads

    from .experiment import (
        LAMBDA_SWEEP,
        balanced_lambda,
        probe_accuracy,
        recomposition_success,
        standins_for,
        train_arm,
    )

    progress = progress or (lambda *a, **k: None)
    cfg, reps = _config(scale), _replicates(scale)
    with torch_threads(1):
        progress(0.0, "stand-ins")
        parts = standins_for(cfg, seed)
        lam_star, init = balanced_lambda(parts, cfg, seed)
        lams = sizes(scale, smoke=(lam_star,), small=LAMBDA_SWEEP)
        arms = [*(f"lam={v:g}" for v in lams), "no_anchor", "shuffled_anchor", "text_only",
                "true_words"]
        results = {arm: [] for arm in arms}
        probe = []
        rows = []
        for r in range(reps):
            trained = [*((lam, False, f"lam={lam:g}") for lam in lams),
                       (0.0, False, "no_anchor"), (lam_star, True, "shuffled_anchor")]
            for lam, shuffle, arm in trained:
                progress((r + 0.5) / reps, f"replicate {r}: {arm}")
                enc = train_arm(parts, cfg, seed, r, lam, shuffle_anchors=shuffle)
                res = recomposition_success(parts, cfg, seed, r, enc)
                results[arm].append(res["success"])
                rows.append({"replicate": r, "arm": arm, **res})
            probe.append(probe_accuracy(parts, cfg, seed, r))
            for arm in ("text_only", "true_words"):
                res = recomposition_success(parts, cfg, seed, r, arm)
                results[arm].append(res["success"])
                rows.append({"replicate": r, "arm": arm, **res})
    ours, no_anchor = results[f"lam={lam_star:g}"], results["no_anchor"]
    metrics = {
        "success_ours": seed_metric(ours),
        "success_no_anchor": seed_metric(no_anchor),
        "success_text_only": seed_metric(results["text_only"]),
        "success_true_words": seed_metric(results["true_words"]),
        "success_shuffled_anchor": seed_metric(results["shuffled_anchor"]),
        "gain_vs_no_anchor": seed_difference(ours, no_anchor),
        "gain_vs_text_only": seed_difference(ours, results["text_only"]),
        "gain_shuffled_anchor": seed_difference(results["shuffled_anchor"], no_anchor),
        "headroom_true_words": seed_difference(results["true_words"], no_anchor),
        "probe_real_shape_acc": seed_metric([p["category"] for p in probe]),
        "probe_real_texture_acc": seed_metric([p["material"] for p in probe]),
        "lambda": lam_star, **init,
    }
    for lam in lams:
        metrics["success_lam_" + f"{lam:g}".replace(".", "p")] = seed_metric(results[f"lam={lam:g}"])
    fig = _bar_figure(results, "recomposition success",
                      f"recomposition (verdict reads lambda={lam_star:g} vs no_anchor)")
    return Measurement(metrics=metrics, tables={"recomposition": rows}, figure=fig,
                       notes=f"lambda fixed by initial balance: {lam_star:g} "
                             f"(init recon {init['init_recon']:.3g}, anchor "
                             f"{init['init_anchor']:.3g}); sweep {list(lams)} reported. "
                             "true_words: positive control; shuffled_anchor: null arm.")


@claim(
    rule={"smoke": "hue_error_ratio < 1", "small": "hue_error_ratio < 0.7"},
    control={"smoke": "hue_ratio_true_words < 1 and not (hue_ratio_null < 1)",
             "small": "hue_ratio_true_words < 0.7 and not (hue_ratio_null < 0.7)"},
    paper="Sec. 5: concept embeddings carry nuance beyond words (e.g. the exact hue), which "
          "text prompts from VQA answers lose (qualitative figures). Spec expectation: "
          "reconstruction hue error of ours < text-only by >= 30%.",
    paper_numbers={},
    against=("text-only reconstruction from 6 coarse colour words (60-degree hue bins) on the "
             "same test images; null arm: ours fed other images' features; positive control: "
             "the true fine hue words (15-degree bins); no-anchor arm reported"),
)
def nuance_beyond_words(scale: Scale, seed: int, progress=None) -> Measurement:
    """Reconstruct test images from their own embeddings and measure the circular hue error
    (degrees, truth probe) for ours (lambda fixed in advance) vs text-only (6 coarse colour
    words, 60-degree bins); ``hue_error_ratio`` is the per-replicate ratio ours / text-only,
    averaged over 3 replicates at small (1 at smoke). The no-anchor arm is reported.

    Control (issue 38, fixed before the small run): (1) positive control: the template filled
    with the true *fine* hue words (and true shape and texture) passes the rule itself
    (``hue_ratio_true_words``: true words / text-only): the stand-in can render a hue finer
    than the coarse words when language asks for it, else no embedding can show it; (2) null
    arm: ours fed the features of another test image (``hue_ratio_null``, an input-ignoring
    encoder) does not pass the rule."""
    from iclr24.kits.threads import torch_threads

    from .experiment import (
        balanced_lambda,
        probe_hue_error,
        reconstruction_hue_error,
        standins_for,
        train_arm,
    )

    progress = progress or (lambda *a, **k: None)
    cfg, reps = _config(scale), _replicates(scale)
    errs = {"ours": [], "no_anchor": [], "text_only": [], "true_words": [], "null": []}
    probe = []
    with torch_threads(1):
        progress(0.0, "stand-ins")
        parts = standins_for(cfg, seed)
        lam_star, _ = balanced_lambda(parts, cfg, seed)
        for r in range(reps):
            progress((r + 0.5) / reps, f"replicate {r}")
            ours = train_arm(parts, cfg, seed, r, lam_star)
            errs["ours"].append(reconstruction_hue_error(parts, cfg, seed, r, ours))
            errs["null"].append(reconstruction_hue_error(parts, cfg, seed, r, ours,
                                                         permute_inputs=True))
            errs["no_anchor"].append(reconstruction_hue_error(
                parts, cfg, seed, r, train_arm(parts, cfg, seed, r, 0.0)))
            for arm in ("text_only", "true_words"):
                errs[arm].append(reconstruction_hue_error(parts, cfg, seed, r, arm))
            probe.append(probe_hue_error(parts, cfg, seed, r))

    def ratio(arm: str) -> list[float]:
        return [o / max(t, 1e-9) for o, t in zip(errs[arm], errs["text_only"])]

    metrics = {"hue_error_ratio": seed_metric(ratio("ours")),
               "hue_ratio_true_words": seed_metric(ratio("true_words")),
               "hue_ratio_null": seed_metric(ratio("null")),
               "hue_err_probe_real_deg": seed_metric(probe),
               "lambda": lam_star}
    for arm, v in errs.items():
        metrics[f"hue_err_{arm}_deg"] = seed_metric(v)
    rows = [{"replicate": r, **{k: v[r] for k, v in errs.items()}, "probe_on_real": probe[r]}
            for r in range(reps)]
    fig = _bar_figure(errs, "hue error of reconstructions (deg)",
                      f"reconstruction hue error (ours: lambda={lam_star:g})")
    return Measurement(metrics=metrics, tables={"hue_error_deg": rows}, figure=fig,
                       notes="true_words: positive control (fine hue words); null: ours fed "
                             "another image's features.")
