"""SelfHDR claims: the structure component removes the ghosts of the color component (Sec. 4.3
ablation), and self-supervised training comes close to supervised training (Table 1)."""

from __future__ import annotations

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .comparison import ExperimentSetup, arm_runner
from .training import SelfHDRConfig


def _setup(scale: Scale) -> tuple[ExperimentSetup, int]:
    config = SelfHDRConfig(steps=sizes(scale, smoke=40, small=600),
                           patch_size=16, batch_size=8)
    setup = ExperimentSetup(size=sizes(scale, smoke=32, small=48),
                            n_train=sizes(scale, smoke=32, small=128),
                            n_test=sizes(scale, smoke=8, small=32), config=config)
    return setup, sizes(scale, smoke=1, small=3)


def _arm_rows(runners, arms) -> list[dict]:
    rows = []
    for arm in arms:
        per_seed = [r.scores(arm).means() for r in runners]
        rows.append({"arm": arm, **{k: sum(m[k] for m in per_seed) / len(per_seed)
                                    for k in ("psnr_mu", "psnr_mu_motion", "psnr_l")}})
    return rows


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


@claim(
    rule="gain_psnr_mu >= 0.5 and gain_psnr_mu_motion >= 0.5",
    paper="Sec. 4.3 / Table 3 ablation (Kalantari test set): supervising with the color "
          "component alone keeps ghosts where alignment fails; adding the structure component "
          "(stage-1 network, masks M_1/M_2, structure loss) removes them and raises PSNR-mu; "
          "the spec's laptop test: PSNR-mu(SelfHDR) - PSNR-mu(color only) >= 0.5 dB, the gap "
          "largest inside the motion mask (exact dB of the ablation not retrieved).",
    resources={"cpus": 1},
)
def structure_removes_ghosts(scale: Scale, seed: int, progress=None) -> Measurement:
    """Arms on the same synthetic dynamic scenes per seed: (a) Y_color (aligned merge, no
    network), (b) AHDRNet trained on Y_color alone (L_color, M = 1), (c) SelfHDR (stage 1 ->
    Y_stru -> stage 2). ``gain_psnr_mu``: PSNR-mu(c) - PSNR-mu(b) on held-out scenes, paired over
    seeds; ``gain_psnr_mu_motion``: the same inside the moving sprite's footprint, where the
    color component ghosts. Both must reach 0.5 dB. PSNR-l and the reference frame alone are
    reported beside them."""
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    setup, n_seeds = _setup(scale)
    seeds = [seed + k for k in range(n_seeds)]
    runners = []
    with torch_threads(1):
        for k, s in enumerate(seeds):
            r = arm_runner(setup, s)
            for arm in ("color_only", "selfhdr"):
                r.scores(arm)
            runners.append(r)
            progress((k + 1) / n_seeds, f"seed {s} trained")
    arms = ("color_merge", "color_only", "selfhdr", "structure_net", "reference_only")
    rows = _arm_rows(runners, arms)
    metrics = {}
    for key in ("psnr_mu", "psnr_mu_motion", "psnr_l"):
        for arm in ("color_merge", "color_only", "selfhdr"):
            metrics[f"{key}_{arm}"] = seed_metric([r.scores(arm).means()[key] for r in runners])
    metrics["gain_psnr_mu"] = seed_difference(
        [r.scores("selfhdr").means()["psnr_mu"] for r in runners],
        [r.scores("color_only").means()["psnr_mu"] for r in runners])
    metrics["gain_psnr_mu_motion"] = seed_difference(
        [r.scores("selfhdr").means()["psnr_mu_motion"] for r in runners],
        [r.scores("color_only").means()["psnr_mu_motion"] for r in runners])
    return Measurement(
        metrics=metrics,
        figure=_figure(rows, "PSNR-mu per arm (mean over seeds)"),
        tables={"arms": rows},
        notes=f"{n_seeds} seed(s), {setup.n_train} training / {setup.n_test} test scenes of "
              f"{setup.size}px, {setup.config.steps} Adam steps per stage on "
              f"{setup.config.patch_size}px crops; synthetic scenes (real captures out of "
              "reach), global phase-correlation alignment, gradient+SSIM stand-in for VGG.",
    )


@claim(
    rule="gap_psnr_mu <= 3",
    paper="Table 1 (Kalantari test set): SelfHDR trained without HDR labels comes close to the "
          "supervised version of each of AHDRNet, FSHDR, HDR-Transformer and SCTNet (roughly "
          "within 1 dB PSNR-mu; exact values not retrieved); the spec's laptop test allows a "
          "3 dB gap for the stand-in perceptual loss and tiny model.",
    resources={"cpus": 1},
)
def close_to_supervised(scale: Scale, seed: int, progress=None) -> Measurement:
    """SelfHDR (c) against the same AHDRNet trained with ground truth (d) on the same scenes
    and init per seed. ``gap_psnr_mu``: PSNR-mu(d) - PSNR-mu(c) on held-out scenes, paired over
    seeds; holds when the whole interval is within 3 dB."""
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    setup, n_seeds = _setup(scale)
    seeds = [seed + k for k in range(n_seeds)]
    runners = []
    with torch_threads(1):
        for k, s in enumerate(seeds):
            r = arm_runner(setup, s)
            for arm in ("selfhdr", "supervised"):
                r.scores(arm)
            runners.append(r)
            progress((k + 1) / n_seeds, f"seed {s} trained")
    rows = _arm_rows(runners, ("selfhdr", "supervised", "color_merge", "reference_only"))
    metrics = {}
    for key in ("psnr_mu", "psnr_mu_motion", "psnr_l"):
        for arm in ("selfhdr", "supervised"):
            metrics[f"{key}_{arm}"] = seed_metric([r.scores(arm).means()[key] for r in runners])
    metrics["gap_psnr_mu"] = seed_difference(
        [r.scores("supervised").means()["psnr_mu"] for r in runners],
        [r.scores("selfhdr").means()["psnr_mu"] for r in runners])
    metrics["gap_psnr_l"] = seed_difference(
        [r.scores("supervised").means()["psnr_l"] for r in runners],
        [r.scores("selfhdr").means()["psnr_l"] for r in runners])
    return Measurement(
        metrics=metrics,
        figure=_figure(rows, "SelfHDR vs supervised (mean over seeds)"),
        tables={"arms": rows},
        notes=f"{n_seeds} seed(s); same setup as structure_removes_ghosts (shared training "
              "when both run in one process).",
    )
