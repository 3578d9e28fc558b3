"""SelfHDR claims: the structure component removes the ghosts of the color component (Sec. 4.3
ablation), and self-supervised training comes close to supervised training (Table 1).

Both measure, in the same run, the null arm a sceptic tries first: the linearised reference
frame H_2 alone (no merge, no network). Their controls (issue 38) require the label-free
baselines to beat it, so that a win over them means something, and require it not to pass the
rule in SelfHDR's place."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .comparison import ExperimentSetup, arm_runner, arm_table, per_seed
from .training import SelfHDRConfig


def _setup(scale: Scale) -> tuple[ExperimentSetup, int]:
    config = SelfHDRConfig(steps=sizes(scale, smoke=25, small=800),
                           patch_size=16, batch_size=8)
    setup = ExperimentSetup(size=32, n_train=sizes(scale, smoke=16, small=128),
                            n_test=sizes(scale, smoke=8, small=32), config=config)
    return setup, sizes(scale, smoke=1, small=3)


def _runners(scale: Scale, seed: int, arms, progress) -> tuple[ExperimentSetup, list]:
    """Train (or reuse) ``arms`` for each seed of the scale, single-threaded."""
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    setup, n_seeds = _setup(scale)
    runners = []
    with torch_threads(1):
        for k in range(n_seeds):
            r = arm_runner(setup, seed + k)
            for arm in arms:
                r.scores(arm)
            runners.append(r)
            progress((k + 1) / n_seeds, f"seed {seed + k} trained")
    return setup, runners


def _pair(runners, a: str, b: str, key: str = "psnr_mu"):
    """``key`` of arm ``a`` minus arm ``b``, paired over seeds."""
    return seed_difference(per_seed(runners, a, key), per_seed(runners, b, key))


def _arm_metrics(runners, arms) -> dict:
    metrics = {f"{key}_{arm}": seed_metric(per_seed(runners, arm, key))
               for key in ("psnr_mu", "psnr_mu_motion", "psnr_l") for arm in arms}
    metrics["alignment_accuracy"] = seed_metric([r.alignment_accuracy for r in runners])
    return metrics


def _ghost_metrics(runners, method: str = "selfhdr") -> dict:
    """structure_removes_ghosts' metrics with ``method`` in the SelfHDR slot (negative controls
    put the baseline, the reference frame or the untrained network there).

    Rule: ``gain_psnr_mu`` / ``gain_psnr_mu_motion`` (method - color_only). Control:
    ``merge_gain_vs_reference`` (color_merge - reference_only) and
    ``color_only_gain_vs_reference`` (color_only - reference_only), and the reference-frame null
    in the method's slot, ``null_gain_psnr_mu`` / ``null_gain_psnr_mu_motion``
    (reference_only - color_only)."""
    metrics = _arm_metrics(runners, ("color_merge", "color_only", method, "reference_only"))
    for key in ("psnr_mu", "psnr_mu_motion"):
        metrics[f"gain_{key}"] = _pair(runners, method, "color_only", key)
        metrics[f"null_gain_{key}"] = _pair(runners, "reference_only", "color_only", key)
    metrics["merge_gain_vs_reference"] = _pair(runners, "color_merge", "reference_only")
    metrics["color_only_gain_vs_reference"] = _pair(runners, "color_only", "reference_only")
    return metrics


def _gap_metrics(runners, method: str = "selfhdr") -> dict:
    """close_to_supervised's metrics with ``method`` in the SelfHDR slot.

    Rule: ``gap_psnr_mu`` (supervised - method) and ``gain_psnr_mu_vs_merge`` (method -
    color_merge). Control: ``merge_gain_vs_reference`` (color_merge - reference_only),
    ``supervised_gain_vs_merge`` (supervised - color_merge) and the reference-frame null in the
    method's slot, ``null_gap_psnr_mu`` (supervised - reference_only) and
    ``null_gain_psnr_mu_vs_merge`` (reference_only - color_merge)."""
    metrics = _arm_metrics(runners, (method, "supervised", "color_merge", "reference_only"))
    for key in ("psnr_mu", "psnr_l"):
        metrics[f"gap_{key}"] = _pair(runners, "supervised", method, key)
    metrics["gain_psnr_mu_vs_merge"] = _pair(runners, method, "color_merge")
    metrics["merge_gain_vs_reference"] = _pair(runners, "color_merge", "reference_only")
    metrics["supervised_gain_vs_merge"] = _pair(runners, "supervised", "color_merge")
    metrics["null_gap_psnr_mu"] = _pair(runners, "supervised", "reference_only")
    metrics["null_gain_psnr_mu_vs_merge"] = _pair(runners, "reference_only", "color_merge")
    return metrics


def _figure(rows, title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 3.2))
    ax = fig.subplots()
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["psnr_mu"] for r in rows], 0.4, label="PSNR-mu (all)")
    ax.bar([x + 0.2 for x in xs], [r["psnr_mu_motion"] for r in rows], 0.4,
           label="PSNR-mu (motion mask)")
    ax.set_xticks(list(xs), [r["arm"] for r in rows], rotation=20, fontsize=8)
    ax.set_ylabel("dB")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _notes(setup: ExperimentSetup, runners) -> str:
    c = setup.config
    acc = np.mean([r.alignment_accuracy for r in runners])
    return (f"{len(runners)} seed(s), {setup.n_train} training / {setup.n_test} held-out "
            f"synthetic scenes of {setup.size}px (t = {c.times}, ground truth in [0, 1] on the "
            f"short frame's scale), scored on the interior ({setup.border} px border left out), "
            f"{c.steps} Adam steps per network on {c.patch_size}px crops, AHDRNet {c.channels} "
            "features; real captures out of reach, dense block-matching flow after a global "
            "translation search instead of optical flow (camera shifts recovered exactly on "
            f"{acc:.0%} of test scenes), gradient+SSIM "
            "stand-in for VGG-19. reference_only (H_2 = I_2^2.2 / t_2 alone, no network) is the "
            "null arm.")


@claim(
    rule="gain_psnr_mu >= 0.5 and gain_psnr_mu_motion >= 0.5",
    control="merge_gain_vs_reference > 0 and color_only_gain_vs_reference > 0 "
            "and not (null_gain_psnr_mu >= 0.5 and null_gain_psnr_mu_motion >= 0.5)",
    paper="Sec. 4.3 ablation (Kalantari test set): supervising with the color component alone "
          "keeps ghosts where alignment fails; adding the structure component (stage-1 network, "
          "masks M_1/M_2, structure loss) removes them and raises PSNR-mu. Spec's laptop test: "
          "PSNR-mu(SelfHDR) - PSNR-mu(color only) >= 0.5 dB, the gap largest inside the motion "
          "mask (the ablation's exact dB were not retrieved).",
    against=("the same AHDRNet trained on the color component Y_color alone (no structure "
             "component) on the same scenes and seeds; null arm: the linearised reference frame "
             "H_2 alone (no merge, no network), which both label-free baselines must beat; the "
             "aligned merge Y_color shown"),
    resources={"cpus": 1},
)
def structure_removes_ghosts(scale: Scale, seed: int, progress=None) -> Measurement:
    """Arms on the same synthetic dynamic scenes per seed: (a) Y_color (aligned merge, no
    network), (b) AHDRNet trained on Y_color alone (L_color, M = 1), (c) SelfHDR (stage 1 ->
    Y_stru -> stage 2), and the null arm H_2 (the reference frame linearised). PSNR-mu on the
    interior of held-out scenes, and inside the moving sprite's footprint, where the color
    component ghosts.

    Rule (unchanged): ``gain_psnr_mu`` = PSNR-mu(c) - PSNR-mu(b), paired over seeds (3 at small),
    and the same inside the motion mask (``gain_psnr_mu_motion``), both >= 0.5 dB over the whole
    interval. It fails if the structure component adds nothing over the color component.

    Control (issue 38, written before the new test bed was run at small). On the first test bed
    the reference frame alone scored 31.5 dB PSNR-mu and the color component 23.0 dB (phase
    correlation mis-aligned 18 of 32 test scenes), so (b) was a baseline worse than doing
    nothing. A second test bed (bounded global translation search, ground truth in [0, 1] as in
    Kalantari's data, interior scored) aligned the camera on 96% of scenes, yet the reference
    frame still beat the merge by 10 dB (33.3 vs 23.1, published small run of c1d6855): a
    global translation leaves the whole moving sprite ghosted, where the paper's optical flow
    follows most of a moving object. The color component now aligns with a dense
    block-matching flow (:func:`align_dense`, chosen on the training scenes with no network
    trained), which follows the sprite and fails, as flow does, on the background it uncovers
    and where a frame saturates: the merge then beats H_2 by 3-5 dB overall and still ghosts
    inside the motion mask. The verdict counts only if (1) the label-free merge is a real baseline, ``merge_gain_vs_reference`` > 0 (Y_color beats
    H_2), (2) the baseline network is not a straw man, ``color_only_gain_vs_reference`` > 0, and
    (3) the null arm H_2 in SelfHDR's place does not pass the rule (``null_gain_*``)."""
    setup, runners = _runners(scale, seed, ("color_merge", "color_only", "selfhdr",
                                            "reference_only"), progress)
    rows = arm_table(runners, ("color_merge", "color_only", "selfhdr", "structure_net",
                               "reference_only"))
    return Measurement(metrics=_ghost_metrics(runners),
                       figure=_figure(rows, "PSNR-mu per arm (mean over seeds)"),
                       tables={"arms": rows}, notes=_notes(setup, runners))


@claim(
    rule="gap_psnr_mu <= 3 and gain_psnr_mu_vs_merge > 0",
    control="merge_gain_vs_reference > 0 and supervised_gain_vs_merge > 0 "
            "and not (null_gap_psnr_mu <= 3 and null_gain_psnr_mu_vs_merge > 0)",
    paper="Table 1 (Kalantari test set): SelfHDR trained without HDR labels beats the label-free "
          "methods (classical merges, self-supervised FSHDR) and comes close to the supervised "
          "version of each of AHDRNet, FSHDR, HDR-Transformer and SCTNet (roughly within 1 dB "
          "PSNR-mu; exact values not retrieved); the spec's laptop test allows a 3 dB gap for "
          "the stand-in perceptual loss and tiny model.",
    against=("the same AHDRNet trained with ground-truth HDR on the same scenes and init; the "
             "label-free aligned merge Y_color (no network) as the floor; null arm: the "
             "linearised reference frame H_2 alone, which the merge must beat"),
    resources={"cpus": 1},
)
def close_to_supervised(scale: Scale, seed: int, progress=None) -> Measurement:
    """SelfHDR (c) against the same AHDRNet trained with ground truth (d) on the same scenes
    and init per seed, with the aligned merge Y_color (a) and the reference frame H_2 (null).

    Rule (unchanged): ``gap_psnr_mu`` = PSNR-mu(d) - PSNR-mu(c) on held-out scenes, paired over
    seeds, within 3 dB over the whole interval, and SelfHDR beats the label-free merge
    (``gain_psnr_mu_vs_merge`` > 0): without that second part an undertrained network next to
    an undertrained supervised one would pass. It fails if SelfHDR is more than 3 dB behind, or
    no better than the merge it learns from.

    Control (issue 38, written before the new test bed was run at small). On the first two test
    beds the linearised reference frame, no network at all, passed the "beats the merge" part
    (the merge of globally aligned frames ghosted over the whole moving sprite; see
    :func:`structure_removes_ghosts` for the dense flow that replaced it). The verdict now
    counts only if (1) the merge beats the reference frame
    (``merge_gain_vs_reference`` > 0), (2) ground-truth labels teach more than the merge
    (``supervised_gain_vs_merge`` > 0: otherwise "close to supervised" compares two networks that
    learned nothing the merge lacks), and (3) the null arm H_2 in SelfHDR's place does not pass
    the rule (``null_gap_psnr_mu``, ``null_gain_psnr_mu_vs_merge``)."""
    setup, runners = _runners(scale, seed, ("color_merge", "selfhdr", "supervised",
                                            "reference_only"), progress)
    rows = arm_table(runners, ("selfhdr", "supervised", "color_merge", "reference_only"))
    return Measurement(metrics=_gap_metrics(runners),
                       figure=_figure(rows, "SelfHDR vs supervised (mean over seeds)"),
                       tables={"arms": rows}, notes=_notes(setup, runners))
