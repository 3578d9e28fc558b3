"""SelfHDR claims: the structure component removes the ghosts of the color component (Sec. 4.3
ablation), and self-supervised training comes close to supervised training (Table 1)."""

from __future__ import annotations

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


def _ghost_metrics(runners, method: str = "selfhdr", baseline: str = "color_only") -> dict:
    """structure_removes_ghosts' metrics with ``method`` in the SelfHDR slot (negative controls
    pass the baseline or the untrained network there)."""
    metrics = {f"{key}_{arm}": seed_metric(per_seed(runners, arm, key))
               for key in ("psnr_mu", "psnr_mu_motion", "psnr_l")
               for arm in ("color_merge", baseline, method)}
    for key in ("psnr_mu", "psnr_mu_motion"):
        metrics[f"gain_{key}"] = seed_difference(per_seed(runners, method, key),
                                                 per_seed(runners, baseline, key))
    return metrics


def _gap_metrics(runners, method: str = "selfhdr", reference: str = "supervised") -> dict:
    """close_to_supervised's metrics with ``method`` in the SelfHDR slot."""
    metrics = {f"{key}_{arm}": seed_metric(per_seed(runners, arm, key))
               for key in ("psnr_mu", "psnr_mu_motion", "psnr_l")
               for arm in (method, reference, "reference_only")}
    for key in ("psnr_mu", "psnr_l"):
        metrics[f"gap_{key}"] = seed_difference(per_seed(runners, reference, key),
                                                per_seed(runners, method, key))
    metrics["psnr_mu_color_merge"] = seed_metric(per_seed(runners, "color_merge", "psnr_mu"))
    metrics["gain_psnr_mu_vs_merge"] = seed_difference(per_seed(runners, method, "psnr_mu"),
                                                       per_seed(runners, "color_merge", "psnr_mu"))
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
    return (f"{len(runners)} seed(s), {setup.n_train} training / {setup.n_test} held-out "
            f"synthetic scenes of {setup.size}px, {c.steps} Adam steps per network on "
            f"{c.patch_size}px crops, AHDRNet {c.channels} features; real captures out of reach, "
            "global phase-correlation alignment instead of flow, gradient+SSIM stand-in for "
            "VGG-19. reference_only (H_2 alone) is shown for scale.")


@claim(
    rule="gain_psnr_mu >= 0.5 and gain_psnr_mu_motion >= 0.5",
    paper="Sec. 4.3 ablation (Kalantari test set): supervising with the color component alone "
          "keeps ghosts where alignment fails; adding the structure component (stage-1 network, "
          "masks M_1/M_2, structure loss) removes them and raises PSNR-mu. Spec's laptop test: "
          "PSNR-mu(SelfHDR) - PSNR-mu(color only) >= 0.5 dB, the gap largest inside the motion "
          "mask (the ablation's exact dB were not retrieved).",
    against=("the same AHDRNet trained on the color component Y_color alone (no structure "
             "component) on the same scenes and seeds; the aligned merge Y_color shown"),
    resources={"cpus": 1},
)
def structure_removes_ghosts(scale: Scale, seed: int, progress=None) -> Measurement:
    """Arms on the same synthetic dynamic scenes per seed: (a) Y_color (aligned merge, no
    network), (b) AHDRNet trained on Y_color alone (L_color, M = 1), (c) SelfHDR (stage 1 ->
    Y_stru -> stage 2). ``gain_psnr_mu``: PSNR-mu(c) - PSNR-mu(b) on held-out scenes, paired over
    seeds; ``gain_psnr_mu_motion``: the same inside the moving sprite's footprint, where the
    color component ghosts. Both must reach 0.5 dB over the whole interval."""
    setup, runners = _runners(scale, seed, ("color_merge", "color_only", "selfhdr"), progress)
    rows = arm_table(runners, ("color_merge", "color_only", "selfhdr", "structure_net",
                               "reference_only"))
    return Measurement(metrics=_ghost_metrics(runners),
                       figure=_figure(rows, "PSNR-mu per arm (mean over seeds)"),
                       tables={"arms": rows}, notes=_notes(setup, runners))


@claim(
    rule="gap_psnr_mu <= 3 and gain_psnr_mu_vs_merge > 0",
    paper="Table 1 (Kalantari test set): SelfHDR trained without HDR labels beats the label-free "
          "methods (classical merges, self-supervised FSHDR) and comes close to the supervised "
          "version of each of AHDRNet, FSHDR, HDR-Transformer and SCTNet (roughly within 1 dB "
          "PSNR-mu; exact values not retrieved); the spec's laptop test allows a 3 dB gap for "
          "the stand-in perceptual loss and tiny model.",
    against=("the same AHDRNet trained with ground-truth HDR on the same scenes and init; the "
             "label-free aligned merge Y_color (no network) as the floor"),
    resources={"cpus": 1},
)
def close_to_supervised(scale: Scale, seed: int, progress=None) -> Measurement:
    """SelfHDR (c) against the same AHDRNet trained with ground truth (d) on the same scenes
    and init per seed. ``gap_psnr_mu``: PSNR-mu(d) - PSNR-mu(c) on held-out scenes, paired over
    seeds, must be within 3 dB over the whole interval, and SelfHDR must beat the label-free
    aligned merge Y_color (``gain_psnr_mu_vs_merge`` > 0): without that second part an
    undertrained network next to an undertrained supervised one would pass."""
    setup, runners = _runners(scale, seed, ("color_merge", "selfhdr", "supervised"), progress)
    rows = arm_table(runners, ("selfhdr", "supervised", "color_merge", "reference_only"))
    return Measurement(metrics=_gap_metrics(runners),
                       figure=_figure(rows, "SelfHDR vs supervised (mean over seeds)"),
                       tables={"arms": rows}, notes=_notes(setup, runners))
