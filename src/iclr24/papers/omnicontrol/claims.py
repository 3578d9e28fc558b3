"""OmniControl claims: spatial guidance cuts the control error (Table 1 / ablation), and the two
guidances are complementary (ablation, Table 3; its realism measures, positive control and
null arm changed in issue 38)."""

from __future__ import annotations

import dataclasses

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes


def _config(scale: Scale):
    from .experiment import ExperimentConfig

    return sizes(scale,
                 smoke=ExperimentConfig(n_train=150, steps=30, batch=16, diffusion_steps=10,
                                        branch_steps=15),
                 small=ExperimentConfig())


def _bars(title: str, groups: dict[str, dict[str, float]], ylabel: str, ax) -> None:
    names = list(groups)
    arms = list(next(iter(groups.values())))
    width = 0.8 / len(arms)
    for k, arm in enumerate(arms):
        ax.bar([i + k * width for i in range(len(names))], [groups[n][arm] for n in names],
               width, label=arm)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))], names)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


@claim(
    rule="ratio_sparse <= 0.3 and ratio_dense <= 0.3",
    paper="Table 1 (HumanML3D, pelvis control): OmniControl average error 0.0338 m, trajectory "
          "error 0.0387 vs MDM-inpainting ~0.60 m (about 18x lower); the ablation without "
          "spatial guidance raises the control error sharply.",
    paper_numbers={"ratio_dense": 0.0338 / 0.60},
    against=("unguided sampling (spatial guidance switched off) of the same base model, test "
             "motions, hints and noise"),
    resources={"cpus": 1},
)
def spatial_guidance_error(scale: Scale, seed: int, progress=None) -> Measurement:
    """Unguided sampling vs spatial guidance of the posterior mean, the same base model, test
    motions, hints and noise. Settings: 5 keyframes of a random joint (``sparse``) and the
    pelvis on every frame (``dense``). ``ratio_*`` = guided / unguided average keyframe error
    (world units: a skeleton 1.7 high, bones 0.55-0.9); at small the mean over 3 replicates
    (fresh test motions, hints and noise each) with a t interval."""
    from iclr24.kits.threads import torch_threads

    from .experiment import base_model, control_problem, evaluate_arm, prepare

    progress = progress or (lambda *a, **k: None)
    cfg = _config(scale)
    n_samples = sizes(scale, smoke=6, small=48)
    replicates = sizes(scale, smoke=1, small=3)
    rows, ratios = [], {"sparse": [], "dense": []}
    with torch_threads(1):
        setup = prepare(cfg, seed)
        model = base_model(setup, seed, lambda f, m: progress(0.5 * f, m))
        for r in range(replicates):
            for setting in ("sparse", "dense"):
                test, hint, mask = control_problem(n_samples, seed * 1000 + 10 + r, cfg,
                                                   dense_root=setting == "dense")
                res = {}
                for guided in (False, True):
                    res[guided], _ = evaluate_arm(setup, model, test.labels, hint, mask,
                                                  seed=seed * 1000 + 100 + r, guided=guided)
                    rows.append({"replicate": r, "setting": setting,
                                 "arm": "spatial guidance" if guided else "unguided",
                                 **dataclasses.asdict(res[guided])})
                ratios[setting].append(res[True].avg_error / res[False].avg_error)
            progress(0.5 + 0.5 * (r + 1) / replicates, f"replicate {r + 1}/{replicates}")

    def mean(setting: str, arm: str, key: str) -> float:
        vals = [row[key] for row in rows if row["setting"] == setting and row["arm"] == arm]
        return sum(vals) / len(vals)

    metrics = {"ratio_sparse": seed_metric(ratios["sparse"]),
               "ratio_dense": seed_metric(ratios["dense"])}
    for setting in ("sparse", "dense"):
        for arm, tag in (("unguided", "unguided"), ("spatial guidance", "guided")):
            for key in ("avg_error", "traj_error", "loc_error", "bone"):
                metrics[f"{key}_{setting}_{tag}"] = mean(setting, arm, key)

    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.2))
    _bars("average keyframe error", {s: {a: mean(s, a, "avg_error")
                                         for a in ("unguided", "spatial guidance")}
                                     for s in ("sparse", "dense")}, "error", fig.subplots())
    fig.tight_layout()
    return Measurement(metrics=metrics, figure=fig, tables={"arms": rows},
                       notes="Procedural six-joint skeleton, class labels, d = 64, 2 layers, "
                             f"T = {cfg.diffusion_steps}, {cfg.steps} training steps, no CFG; "
                             "spatial guidance with the paper's tau = 20 / max keyframes, K = "
                             "10 / 500, variance floor 0.01.")


_ARMS = ("unguided", "spatial", "realism", "both", "both_null")


def _complementary_metrics(per: dict[str, dict[str, list[float]]],
                           jerk_real: list[float]) -> dict:
    """The metrics of ``guidances_complementary`` from per-replicate arm results ``per[arm][key]``
    (arms: ``_ARMS``; keys: avg_error, bone, jerk, fd) and the real motions' controlled-joint
    jerk per replicate. Realism defects: bone-length violation (0 for real motions) and
    |jerk - jerk_real|. Gains and costs are paired differences over replicates (a plain number
    for one)."""
    def dev(arm: str) -> list[float]:           # distance of the arm's jerk from real motion
        return [abs(j - r) for j, r in zip(per[arm]["jerk"], jerk_real)]

    metrics = {
        "err_ratio_both_spatial": seed_metric(
            [b / s for b, s in zip(per["both"]["avg_error"], per["spatial"]["avg_error"])]),
        "err_gap_realism_both": seed_difference(per["realism"]["avg_error"],
                                                per["both"]["avg_error"]),
        # realism guidance on top of spatial guidance: defect(spatial) - defect(both)
        "bone_gain": seed_difference(per["spatial"]["bone"], per["both"]["bone"]),
        "jerk_gain": seed_difference(dev("spatial"), dev("both")),
        "fd_gain": seed_difference(per["spatial"]["fd"], per["both"]["fd"]),
        # positive control: what spatial guidance costs in realism over unguided sampling
        "bone_cost_spatial": seed_difference(per["spatial"]["bone"], per["unguided"]["bone"]),
        "jerk_cost_spatial": seed_difference(dev("spatial"), dev("unguided")),
        # null arm: a branch trained as long on hints of other motions, with spatial guidance
        "bone_gain_null": seed_difference(per["spatial"]["bone"], per["both_null"]["bone"]),
        "jerk_gain_null": seed_difference(dev("spatial"), dev("both_null")),
        "jerk_real": float(np.mean(jerk_real)),
    }
    for arm in _ARMS:
        for key, vals in per[arm].items():
            metrics[f"{key}_{arm}"] = float(np.mean(vals))
    return metrics


@claim(
    rule="err_ratio_both_spatial < 1.5 and bone_gain > 0 and jerk_gain > 0 "
         "and err_gap_realism_both > 0",
    control="bone_cost_spatial > 0 and jerk_cost_spatial > 0 "
            "and not (bone_gain_null > 0 and jerk_gain_null > 0)",
    paper="Table 3 ablation (HumanML3D, pelvis): without realism guidance FID 0.692 vs 0.218 "
          "and foot skating worse, at a similar control error; without spatial guidance the "
          "average error rises sharply; the two are complementary.",
    paper_numbers={},
    against=("spatial guidance only (base model) and realism guidance only (ControlledMDM) on "
             "the same hints and noise; positive control: unguided sampling of the base; null "
             "arm: a branch trained as long on other motions' hints, with spatial guidance"),
    resources={"cpus": 1},
)
def guidances_complementary(scale: Scale, seed: int, progress=None) -> Measurement:
    """Arms on the same hints (5 keyframes of a random joint) and noise: spatial guidance only
    (base model), realism guidance only (ControlledMDM, branch trained briefly with the
    official training-time guidance), both; plus unguided sampling of the base and the null
    arm below. At small, paired over 3 replicates (fresh test motions, hints, noise; one
    trained base and branch).

    Rule: ``err_ratio_both_spatial`` = error(both) / error(spatial) < 1.5 (realism guidance
    keeps the control); ``err_gap_realism_both`` = error(realism only) - error(both) > 0
    (spatial guidance is needed for the control); and realism is better with both than with
    spatial guidance alone on both realism measures: ``bone_gain`` = bone-length violation
    (spatial - both) > 0 and ``jerk_gain`` = |jerk - jerk_real| (spatial - both) > 0, the jerk
    of the controlled joint against that of the real motions the hints came from.

    What changed in issue 38 (written before the run at small). The realism part read a
    Frechet distance of speed/acceleration statistics, ~1e5 for all three arms at small (gain
    -3398 +- 15,000): dominated by the base model's mismatch to real motion, it could not
    resolve the effect. The rule now reads the controlled-joint jerk instead (``fd_gain`` is
    reported): spatial guidance edits the controlled joint at its keyframes, and the unnatural
    jumps it leaves there are what realism guidance is meant to remove. Foot skating, the
    paper's other measure, is not used: the procedural feet slide in the real motions too.
    Control: (1) positive control, the realism measures must resolve the harm realism guidance
    is to repair: spatial guidance makes both defects worse than unguided sampling of the same
    base on the same noise (``bone_cost_spatial`` > 0, ``jerk_cost_spatial`` > 0); (2) null
    arm, a branch trained as long, from the same initialisation and batches, on hints read
    from other training motions (a fixed permutation; it can learn nothing about the control)
    and sampled with spatial guidance, must not pass the realism part of the rule
    (``bone_gain_null``, ``jerk_gain_null``): otherwise the gain comes from fine-tuning a copy
    of the encoder, not from realism guidance. Either false: the test bed cannot tell."""
    from iclr24.kits.threads import torch_threads

    from .experiment import base_model, control_problem, evaluate_arm, prepare, realism_branch
    from .procedural_motions import generate_motions
    from .realism_metrics import controlled_joint_jerk, motion_statistics

    progress = progress or (lambda *a, **k: None)
    cfg = _config(scale)
    n_samples = sizes(scale, smoke=6, small=48)
    replicates = sizes(scale, smoke=1, small=3)
    per = {a: {"avg_error": [], "bone": [], "jerk": [], "fd": []} for a in _ARMS}
    jerk_real = []
    rows = []
    with torch_threads(1):
        setup = prepare(cfg, seed)
        base = base_model(setup, seed, lambda f, m: progress(0.25 * f, m))
        controlled = realism_branch(setup, base, seed, progress=lambda f, m:
                                    progress(0.25 + 0.2 * f, m))
        null = realism_branch(setup, base, seed, shuffled_hints=True, progress=lambda f, m:
                              progress(0.45 + 0.2 * f, f"null arm: {m}"))
        models = {"unguided": base, "spatial": base, "realism": controlled, "both": controlled,
                  "both_null": null}
        for r in range(replicates):
            reference = motion_statistics(generate_motions(
                max(64, 2 * n_samples), seed * 1000 + 500 + r, n_frames=cfg.n_frames).positions)
            test, hint, mask = control_problem(n_samples, seed * 1000 + 10 + r, cfg,
                                               dense_root=False)
            jerk_real.append(float(controlled_joint_jerk(test.positions, mask).mean()))
            for arm in _ARMS:
                res, _ = evaluate_arm(setup, models[arm], test.labels, hint, mask,
                                      seed=seed * 1000 + 100 + r,
                                      guided=arm not in ("unguided", "realism"),
                                      reference=reference)
                for key in per[arm]:
                    per[arm][key].append(getattr(res, key))
                rows.append({"replicate": r, "arm": arm, **dataclasses.asdict(res),
                             "jerk_real": jerk_real[-1]})
            progress(0.65 + 0.35 * (r + 1) / replicates, f"replicate {r + 1}/{replicates}")
    metrics = _complementary_metrics(per, jerk_real)

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3))
    axes = fig.subplots(1, 3)
    for ax, key, label in zip(axes, ("avg_error", "bone", "jerk"),
                              ("keyframe error", "bone-length violation",
                               "controlled-joint jerk (m/s^3)")):
        ax.bar(list(_ARMS), [metrics[f"{key}_{a}"] for a in _ARMS],
               color=["C7", "C0", "C1", "C2", "C3"])
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(label, fontsize=9)
    axes[2].axhline(metrics["jerk_real"], color="black", ls="--", label="real motions")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    notes = ("Realism branch: a trainable copy of the base encoder, zero-initialised hint and "
             f"layer outputs, {cfg.branch_steps} steps with the official training-time "
             "guidance of x_t; the null arm's branch is trained the same way on other motions' "
             "hints. Realism measures replace FID and foot skating (no T2M evaluator or SMPL "
             "here): bone-length violation and controlled-joint jerk decide; the Frechet "
             "distance of speed/acceleration statistics is reported (fd_*).")
    if isinstance(metrics["bone_gain"], Estimate):
        notes += (f" bone_gain {metrics['bone_gain']}, jerk_gain {metrics['jerk_gain']}, "
                  f"fd_gain {metrics['fd_gain']}.")
    return Measurement(metrics=metrics, figure=fig, tables={"arms": rows}, notes=notes)
