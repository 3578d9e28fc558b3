"""Claims of "Dynamics-informed protein design with structure conditioning" at laptop scale.

Issue 38: at smoke no guided structure had a rigid elastic network, bonds were stretched to
3.5-19 A and 180 of 200 guided steps were skipped, yet L_dyn was scored on those structures
and the rule ignored it. Now L_dyn is averaged over structures with a rigid network only (mode
6 is an internal motion only there), and each claim's ``control`` guards its test bed: the
guidance must have acted on at least half of the structure-steps it was active on (a guidance
that is skipped is the guidance-off null, which trivially "keeps plausibility"), and for the
dynamics claim most structures of both arms must be rigid and the guided chains must not be
broken to get there (bond deviation at most 2 x the unconditional one, the plausibility bar).
"""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_metric, sizes

from .experiment import ExperimentConfig, hinge_target, run_arms, train_standin

_SMOKE = ExperimentConfig(n_res=24, steps=50, n_train=150, train_steps=150, hidden=32, layers=2,
                          n_samples=8)
_SMALL = ExperimentConfig()


def _config(scale: Scale) -> tuple[ExperimentConfig, int]:
    """The run's config and number of replicates (held-out targets, each with its own noise)."""
    return sizes(scale, smoke=(_SMOKE, 1), small=(_SMALL, 3))


def _replicates(scale: Scale, seed: int, progress) -> tuple[ExperimentConfig, list[dict]]:
    """Train (or load) the seed's frozen stand-in, then run both arms on each replicate's
    held-out hinge target."""
    progress = progress or (lambda *a, **k: None)
    cfg, reps = _config(scale)
    progress(0.0, "training the stand-in denoiser")
    model = train_standin(cfg, seed)
    out = []
    for r in range(reps):
        target = hinge_target(cfg.n_res, 1000 * seed + r)
        res = run_arms(model, cfg, target, seed=1000 * seed + r)
        res["motif"] = target.motif.tolist()
        out.append(res)
        progress((r + 1) / reps, f"target {r + 1}/{reps}")
    return cfg, out


def _per_sample_table(results: list[dict], keys: tuple[str, ...]) -> list[dict]:
    rows = []
    for r, res in enumerate(results):
        for arm in ("uncond", "guided"):
            for i in range(len(res[arm]["ldyn"])):
                rows.append({"target": r, "arm": arm, "sample": i,
                             **{k: float(res[arm][k][i]) for k in keys}})
    return rows


def _figure(results: list[dict], key: str, label: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    for r, res in enumerate(results):
        for j, arm in enumerate(("uncond", "guided")):
            y = res[arm][key]
            ax.scatter(np.full(len(y), 3 * r + j) + np.linspace(-0.2, 0.2, len(y)), y, s=12,
                       color="tab:grey" if arm == "uncond" else "tab:red",
                       label=arm if r == 0 else None)
    ax.set_xticks([3 * r + 0.5 for r in range(len(results))])
    ax.set_xticklabels([f"target {r}" for r in range(len(results))])
    ax.set_ylabel(label)
    ax.legend()
    fig.tight_layout()
    return fig


def _rigid_mean(values, rigid) -> float:
    """Mean of per-sample ``values`` over the samples with a rigid network (NaN if none)."""
    keep = np.asarray(rigid, dtype=bool)
    return float(np.mean(np.asarray(values)[keep])) if keep.any() else float("nan")


def _pooled(results: list[dict], arm: str, key: str) -> float:
    return float(np.mean(np.concatenate([np.asarray(r[arm][key], dtype=float)
                                         for r in results])))


def _guidance_applied(results: list[dict]) -> float:
    """Share of the guided structure-steps that got an update (NaN if none was attempted:
    the guidance was off)."""
    attempted = sum(r["attempted"] for r in results)
    skipped = sum(r["skipped"] for r in results)
    return 1.0 - skipped / attempted if attempted else float("nan")


def dynamics_metrics(results: list[dict]) -> dict:
    """Claim 1's metrics from the replicates (exposed for the negative-control test).

    ldyn_*: per target, mean L_dyn over the samples whose final network is rigid; ldyn_ratio:
    guided / unconditional per target; rigid_*: pooled share of rigid final structures;
    guidance_applied: share of the guided structure-steps that got an update;
    bond_dev_ratio_pooled: pooled guided / unconditional mean bond deviation; overlap_*: mode
    overlap (all samples).
    """
    u = [_rigid_mean(r["uncond"]["ldyn"], r["uncond"]["rigid"]) for r in results]
    g = [_rigid_mean(r["guided"]["ldyn"], r["guided"]["rigid"]) for r in results]
    return {
        "ldyn_ratio": seed_metric([b / a for a, b in zip(u, g)]),
        "ldyn_uncond": seed_metric(u),
        "ldyn_guided": seed_metric(g),
        "overlap_uncond": seed_metric([float(np.mean(r["uncond"]["overlap"])) for r in results]),
        "overlap_guided": seed_metric([float(np.mean(r["guided"]["overlap"])) for r in results]),
        "rigid_uncond": _pooled(results, "uncond", "rigid"),
        "rigid_guided": _pooled(results, "guided", "rigid"),
        "guidance_applied": _guidance_applied(results),
        "bond_dev_ratio_pooled": _pooled(results, "guided", "bond_dev")
        / _pooled(results, "uncond", "bond_dev"),
        "skipped_steps": float(sum(r["skipped"] for r in results)),
        "attempted_steps": float(sum(r["attempted"] for r in results)),
    }


@claim(
    rule="ldyn_ratio <= 0.7",
    control="rigid_uncond >= 0.75 and rigid_guided >= 0.75 and guidance_applied >= 0.5 "
            "and bond_dev_ratio_pooled <= 2",
    paper="Sec. 4: conditioning Genie (no retraining) on the lowest non-trivial ANM mode of a "
          "target's motif makes samples show the requested mode pattern; joint structure + "
          "dynamics conditioning reproduces the 3adk hinge motion (dynamics loss and mode "
          "agreement reported per sample; exact table numbers not retrieved). Our bar, fixed "
          "before running: guided mean L_dyn at most 0.7 x the unconditional one.",
    paper_numbers={},
    against=("unconditional samples of the same frozen stand-in DDPM from the same x_T and noise "
             "(guidance off); validity guard: rigid elastic networks, guidance applied, chains "
             "not broken"),
)
def dynamics_guidance(scale: Scale, seed: int, progress=None) -> Measurement:
    """Unconditional vs dynamics-guided samples of the frozen stand-in DDPM from the same x_T
    and noise; L_dyn (mode 6 of the final structure's Hinsen ANM on the motif vs the target's)
    averaged over the rigid samples of each held-out hinge target. ``ldyn_ratio`` = guided /
    unconditional mean L_dyn per target, an Estimate over 3 targets at small (each its own
    noise; one stand-in per seed). Mode overlap (|cos| of the flattened motif displacements
    after superposing the motif on the target's) is reported, not judged.

    Rule: ``ldyn_ratio <= 0.7`` (the spec's bar, unchanged); it fails when guidance does not
    bring the lowest mode closer to the target's.

    Issue 38 (written before the small run): L_dyn is averaged over the samples whose final
    elastic network is rigid (exactly six zero modes; elsewhere mode 6 is a rigid motion and
    L_dyn means nothing), and the control is the validity guard: at least 75% of the final
    structures of each arm are rigid (``rigid_*``, pooled over targets), the guidance got an
    update on at least half of the structure-steps it was active on (``guidance_applied``; the
    rest were skipped: non-rigid or degenerate x0 estimates), and the guided chains are not
    broken to lower L_dyn (pooled mean bond deviation at most 2 x the unconditional one,
    ``bond_dev_ratio_pooled``, the plausibility claim's bar). Otherwise the test bed cannot
    tell."""
    cfg, results = _replicates(scale, seed, progress)
    metrics = dynamics_metrics(results)
    return Measurement(
        metrics={**metrics, "n_samples_per_arm": cfg.n_samples, "n_targets": len(results),
                 "gs": cfg.gs},
        figure=_figure(results, "ldyn", "final L_dyn (lower is closer to the target mode)"),
        tables={"samples": _per_sample_table(results, ("ldyn", "overlap", "rmsd", "rigid"))},
        notes=f"Stand-in DDPM ({cfg.n_res} residues, T = {cfg.steps}, {cfg.train_steps} "
              f"training steps) instead of Genie; gs = {cfg.gs} in 10 A units, cond_frac "
              f"{cfg.cond_frac}, eta {cfg.eta}; motif = linker + 4 residues either side "
              f"({', '.join(str(r['motif'][0]) + '-' + str(r['motif'][-1]) for r in results)}). "
              "L_dyn is averaged over rigid final structures. 'skipped_steps' of "
              "'attempted_steps' counts guided structure-steps where the x0 estimate had a "
              "non-rigid network or degenerate modes 6/7 (no update there).",
    )


def plausibility_metrics(results: list[dict]) -> dict:
    """Claim 2's metrics from the replicates (exposed for the negative-control test)."""
    bu = [float(np.mean(r["uncond"]["bond_dev"])) for r in results]
    bg = [float(np.mean(r["guided"]["bond_dev"])) for r in results]
    cu = [float(np.mean(r["uncond"]["clash"])) for r in results]
    cg = [float(np.mean(r["guided"]["clash"])) for r in results]
    return {
        "bond_dev_ratio": seed_metric([b / a for a, b in zip(bu, bg)]),
        "clash_excess": seed_metric([b - 2 * a for a, b in zip(cu, cg)]),
        "bond_dev_uncond": seed_metric(bu),
        "bond_dev_guided": seed_metric(bg),
        "clash_uncond": seed_metric(cu),
        "clash_guided": seed_metric(cg),
        "guidance_applied": _guidance_applied(results),
    }


@claim(
    rule="bond_dev_ratio <= 2 and clash_excess <= 0",
    control="guidance_applied >= 0.5",
    paper="Sec. 4: dynamics-conditioned samples stay plausible/designable (ProteinMPNN + "
          "ESMFold self-consistency; numbers not retrieved). Our proxy bar, fixed before "
          "running: guided mean |d(i, i+1) - 3.8 A| and clash fraction (pairs |i - j| > 2 "
          "closer than 3 A) at most 2 x the unconditional values.",
    paper_numbers={},
    against=("unconditional samples of the same frozen stand-in DDPM from the same x_T and noise "
             "(guidance off)"),
)
def plausibility_kept(scale: Scale, seed: int, progress=None) -> Measurement:
    """The same paired arms as ``dynamics_guidance`` (same stand-in, targets and noise):
    ``bond_dev_ratio`` = guided / unconditional mean bond-length deviation per target and
    ``clash_excess`` = guided clash fraction - 2 x unconditional per target, Estimates over 3
    targets at small. Designability (ProteinMPNN/ESMFold) is out of reach; these geometric
    checks are what the laptop run can measure.

    Control (issue 38, written before the small run): the guidance got an update on at least
    half of the guided structure-steps it was active on (``guidance_applied``). A guidance that
    is skipped leaves the guided arm equal to the unconditional one, the guidance-off null,
    which passes this rule trivially; with nothing attempted (gs = 0) the share is NaN and the
    verdict inconclusive."""
    cfg, results = _replicates(scale, seed, progress)
    return Measurement(
        metrics={**plausibility_metrics(results), "n_samples_per_arm": cfg.n_samples,
                 "n_targets": len(results)},
        figure=_figure(results, "bond_dev", "mean |d(i, i+1) - 3.8 A| [A]"),
        tables={"samples": _per_sample_table(results, ("bond_dev", "clash", "ldyn"))},
        notes="Bond deviation and clash fraction of the final Calpha traces of both arms; the "
              "stand-in's own geometry sets the unconditional level. guidance_applied: share "
              "of the guided structure-steps that got an update.",
    )
