"""mesh_sw claims: deformation quality (SW on varifolds vs Chamfer), loss cost scaling, SW's
sample rate. Synthetic genus-0 targets stand in for cortical surfaces (see shapes.py)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes

if TYPE_CHECKING:
    import torch

_ARMS = ("sw_varifold", "sw_centroid", "sw_samples", "chamfer")


def _figure():
    from matplotlib.figure import Figure

    return Figure


def _loglog_slope(ns, ys) -> float:
    """Least-squares slope of log y against log n."""
    return float(np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(ys, float)), 1)[0])


def _folded(verts: np.ndarray) -> np.ndarray:
    """The mesh with its first vertex pushed through the opposite side (a deliberate fold)."""
    v = np.array(verts, dtype=np.float64, copy=True)
    v[0] = -1.5 * v[0]
    return v


@claim(
    rule="hd90_ratio < 1 and cd_ratio < 1.2",
    control="converged_hd90_change < 0.05 and chamfer_hd90_over_init < 0.5 "
            "and undertrained_hd90_ratio >= 1",
    paper="Tables 1-3 (ADNI, OASIS, test-retest; white/pial, both hemispheres): the SW loss on "
          "mesh measures with the CortexODE-style neural ODE beats Chamfer-trained CortexODE and "
          "other baselines on CD, ASSD, HD90 and SIF (exact values not retrieved).",
    paper_numbers={},
    against=("Chamfer-loss fitting of the same neural-ODE deformer (same init, optimiser, step "
             "budget; baseline); SW on centroids and on surface samples reported; null arm: the "
             "SW-varifold fit stopped at a tenth of the budget (undertrained)"),
)
def deformation_quality(scale: Scale, seed: int, progress=None) -> Measurement:
    """Fit the same neural-ODE deformer (same init seed, Adam, step budget, Euler step 0.1) from
    a template icosphere to one synthetic bumpy-sphere target (drawn from ``seed``) with each
    loss: SW_2 on varifold measures (centroid + normal, area weights, lambda = 1; the method),
    SW_2 on the area-weighted centroids alone (the other flavour, reported), SW_2 on surface
    samples, and Chamfer on surface samples (the CortexODE baseline). Replicate r (3 at small)
    is the *same target* fitted from init/projection/sampling seed ``seed + r``, so the Student-t
    interval is over seeds for one shape ("per shape over seeds"); ``hd90_ratio`` and
    ``cd_ratio`` are per-seed SW-varifold / Chamfer ratios of the final meshes' HD90 and CD on
    fresh surface samples.

    Audit repair (rule and control written before the repaired claim was run):
    - the earlier version ran 300 steps and mixed three different shapes as "replicates"; at
      300 steps Chamfer had not converged (HD90 0.053 vs 0.032), so the verdict measured
      convergence speed. Small now runs 1 200 steps at the spec's Adam lr 1e-3 (a one-seed
      pre-run of the two arms showed both HD90 curves flat from ~900 steps; lr 3e-3 was
      tried to save time and converged *worse*, so it was not used). Every arm is also scored
      at 3/4 of the budget and the control requires convergence: ``converged_hd90_change`` =
      max over seeds and over the method and baseline arms of |HD90(3S/4) - HD90(S)| / HD90(S)
      must be < 0.05. If not, the test bed cannot tell final quality from speed: inconclusive.
    - SIF is removed from the rule: with a Lipschitz velocity field, 10 Euler steps and this
      template every arm gave SIF = 0 %, so "SIF(SW) <= SIF(Chamfer)" could never decide. SIF is
      still measured and reported per arm, beside ``sif_pct_folded_check`` (SIF of the final
      SW-varifold mesh with one vertex pushed through the surface), which shows the detector
      does see folds on these meshes - so the zeros are measured, not a blind detector.
    - null arm (measured in the same fits): the SW-varifold deformer at a tenth of the budget
      (``undertrained_hd90_ratio`` = its HD90 / Chamfer's final HD90) must not satisfy the HD90
      part of the rule; and the baseline must actually fit (HD90 of Chamfer <= 0.5 x the
      template's), so a win is not over a straw baseline.

    Scaled down (budget): template icosphere subdivisions=2 (162 vertices) and target at
    subdivisions=3 instead of 3 and 5; at small only the method and the baseline are fitted
    (3 seeds x 2 arms x 1 200 steps ~ 4 CPU min); the centroid-only and surface-sample SW arms
    are run at smoke (plumbing) and full (2 400 steps, template subdivisions=3, target 5)."""
    from iclr24.kits.threads import torch_threads

    from .deformer import fit_deformation
    from .evaluation import self_intersecting_faces, surface_metrics
    from .shapes import icosphere, target_meshes

    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=1, small=3, full=5)
    steps = sizes(scale, smoke=40, small=1200, full=2400)
    lr = 1e-3
    arms = sizes(scale, smoke=_ARMS, small=("sw_varifold", "chamfer"), full=_ARMS)
    n_samples = sizes(scale, smoke=500, small=2000, full=2000)
    n_eval = sizes(scale, smoke=3000, small=20000, full=20000)
    template = icosphere(sizes(scale, smoke=1, small=2, full=3))
    name, tv, tf = target_meshes(1, seed, subdivisions=sizes(scale, smoke=2, small=3, full=5))[0]
    early, late = max(1, steps // 10), (3 * steps) // 4
    rows, per_arm = [], {arm: [] for arm in arms}
    with torch_threads(1):
        for r in range(n_seeds):
            s = seed + r
            init = surface_metrics(*template, tv, tf, n_points=n_eval, seed=s)
            for k, arm in enumerate(arms):
                snap: dict[int, dict[str, float]] = {}

                def score(step, v, snap=snap, s=s):
                    snap[step] = surface_metrics(v.numpy(), template[1], tv, tf,
                                                 n_points=n_eval, seed=s)

                t0 = time.process_time()
                (v, f), hist = fit_deformation(template, (tv, tf), arm, steps=steps, lr=lr,
                                               seed=s, n_samples=n_samples,
                                               checkpoints=(early, late), on_checkpoint=score)
                cpu = time.process_time() - t0
                v, f = v.numpy(), f.numpy()
                m = surface_metrics(v, f, tv, tf, n_points=n_eval, seed=s)
                m["sif_pct"] = 100.0 * float(self_intersecting_faces(v, f).mean())
                if arm == "sw_varifold":
                    m["sif_pct_folded_check"] = 100.0 * float(
                        self_intersecting_faces(_folded(v), f).mean())
                m.update(target=name, arm=arm, seed=s, fit_cpu_s=cpu,
                         hd90_early=snap[early]["hd90"], cd_early=snap[early]["cd"],
                         hd90_late=snap[late]["hd90"], cd_late=snap[late]["cd"],
                         loss_first=hist.loss[0], loss_last=hist.loss[-1],
                         init_cd=init["cd"], init_hd90=init["hd90"])
                rows.append(m)
                per_arm[arm].append(m)
                progress((r * len(arms) + k + 1) / (n_seeds * len(arms)), f"seed {s}: {arm}")

    def col(arm, key):
        return [m[key] for m in per_arm[arm]]

    def ratio(arm, key, base_key=None):
        return seed_metric([a / c for a, c in zip(col(arm, key), col("chamfer", base_key or key))])

    change = [abs(m["hd90_late"] - m["hd90"]) / m["hd90"]
              for arm in ("sw_varifold", "chamfer") for m in per_arm[arm]]
    metrics = {
        "hd90_ratio": ratio("sw_varifold", "hd90"),
        "cd_ratio": ratio("sw_varifold", "cd"),
        "assd_ratio": ratio("sw_varifold", "assd"),
        "undertrained_hd90_ratio": ratio("sw_varifold", "hd90_early", "hd90"),
        "undertrained_cd_ratio": ratio("sw_varifold", "cd_early", "cd"),
        "converged_hd90_change": float(max(change)),
        "chamfer_hd90_over_init": float(max(m["hd90"] / m["init_hd90"]
                                            for m in per_arm["chamfer"])),
        "hd90_ratio_at_late": ratio("sw_varifold", "hd90_late"),
        "sif_diff": seed_difference(col("sw_varifold", "sif_pct"), col("chamfer", "sif_pct")),
        "sif_pct_folded_check": float(np.mean(col("sw_varifold", "sif_pct_folded_check"))),
        "n_seeds": n_seeds, "steps": steps, "lr": lr,
    }
    for arm in arms:
        if arm not in ("sw_varifold", "chamfer"):
            metrics[f"hd90_ratio_{arm}"] = ratio(arm, "hd90")
            metrics[f"cd_ratio_{arm}"] = ratio(arm, "cd")
        for key in ("cd", "hd90", "normal_consistency", "sif_pct", "fit_cpu_s"):
            metrics[f"{key}_{arm}"] = float(np.mean(col(arm, key)))
    metrics["hd90_init"] = float(np.mean([m["init_hd90"] for m in per_arm["chamfer"]]))

    Figure = _figure()
    fig = Figure(figsize=(7.5, 3.6))
    for i, key in enumerate(("cd", "hd90")):
        ax = fig.add_subplot(1, 2, i + 1)
        for j, arm in enumerate(arms):
            ax.plot([early, late, steps], [np.mean(col(arm, f"{key}_early")),
                                           np.mean(col(arm, f"{key}_late")),
                                           np.mean(col(arm, key))], "o-", label=arm)
        ax.set_xlabel("step")
        ax.set_ylabel(key.upper())
        ax.set_yscale("log")
        ax.set_title(f"{key.upper()} on {name} (mean over seeds)")
    fig.axes[0].legend(fontsize=8)
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"fits": rows},
        notes=f"One velocity field is fitted per seed to the target {name} (no MRI, no image "
              "features; cortical data is out of reach). Template icosphere subdivisions=2 (162 "
              "vertices), target at icosphere subdivisions=3. Losses: SW_2 (L = 100 fresh "
              "projections per step), Chamfer = squared, mean over points; the same convention "
              f"scores all arms. Adam lr {lr}, {steps} steps; every arm scored at steps "
              f"{early} (undertrained null), {late} (convergence check) and {steps}. Ratios < 1 "
              "favour SW-varifold. SIF is reported, not judged (0 in every arm so far).",
    )


@claim(
    rule="sw_slope < 1.4 and chamfer_slope > 1.6 and time_ratio_max_n > 1",
    control="abs(null_slope) < 0.3",
    paper="Sec. 3.2: SW costs O(L n log n) (linear up to the log) while exact Chamfer is "
          "O(n^2) in the number of points; the paper uses this to argue SW scales to dense meshes.",
    paper_numbers={"sw_slope": 1.0, "chamfer_slope": 2.0},
    against=("exact brute-force Chamfer (block-wise torch.cdist) on the same point sets, "
             "forward + backward CPU time; null arm: constant work (SW at the smallest n) timed "
             "in every slot of the same interleaving"),
)
def loss_scaling(scale: Scale, seed: int, progress=None) -> Measurement:
    """CPU time (one thread) of forward + backward of SW_2 (L = 100 fresh projections) and of
    exact brute-force Chamfer (block-wise ``torch.cdist``) between two n-point samples of a
    bumpy target, for growing n; ``reps`` interleaved repeats per n. Slopes are least-squares
    log-log fits of the per-n medians, with a bootstrap interval over the repeats (each n's
    repeats resampled independently), so timing noise is inside the interval the rule reads;
    ``time_ratio_max_n`` = median time(Chamfer) / median time(SW) at the largest n (same
    bootstrap).

    Rule unchanged from the spec (SW below 1.4, "linear up to the log"; Chamfer above 1.6,
    "quadratic"; Chamfer slower at the largest n). Control (added in the audit repair, written
    before running): the null arm, constant work - SW_2 at the *smallest* n - timed in every
    slot of the same interleaving, must give a flat slope (|slope| < 0.3, whole interval). If
    load drift or timer noise alone can tilt a constant cost by 0.3 in log-log, the measured
    slopes cannot be told from noise and the verdict is inconclusive."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .distances import chamfer_distance, sliced_wasserstein
    from .measures import sample_surface
    from .shapes import target_meshes

    progress = progress or (lambda *a, **k: None)
    ns = sizes(scale, smoke=[500, 1000, 2000, 4000], small=[1000, 2000, 4000, 8000, 16000],
               full=[1000, 2000, 4000, 8000, 16000, 32000])
    reps = sizes(scale, smoke=3, small=5, full=7)
    _, tv, tf = target_meshes(1, seed, subdivisions=3)[0]
    gen = torch.Generator().manual_seed(seed)
    arms = ("sw", "chamfer", "null")
    times = {a: np.zeros((reps, len(ns))) for a in arms}
    with torch_threads(1):
        verts = torch.tensor(tv, dtype=torch.float32)
        faces = torch.tensor(tf)
        x_null, _ = sample_surface(verts, faces, ns[0], gen)
        y_null, _ = sample_surface(verts, faces, ns[0], gen)
        for j, n in enumerate(ns):
            x0, _ = sample_surface(verts, faces, n, gen)
            y, _ = sample_surface(verts, faces, n, gen)
            for r in range(reps):
                for arm in arms:
                    src, tgt = (x_null, y_null) if arm == "null" else (x0, y)
                    x = src.clone().requires_grad_(True)
                    t0 = time.process_time()
                    loss = (chamfer_distance(x, tgt) if arm == "chamfer"
                            else sliced_wasserstein(x, tgt, n_projections=100, generator=gen))
                    loss.backward()
                    times[arm][r, j] = time.process_time() - t0
            progress((j + 1) / len(ns), f"n = {n}")

    def slope_of_medians(*cols):
        return _loglog_slope(ns, [np.median(c) for c in cols])

    slopes = {a: Estimate.bootstrap(tuple(times[a].T), slope_of_medians, seed=seed,
                                    n_resamples=500) for a in arms}
    ratio = Estimate.bootstrap((times["chamfer"][:, -1], times["sw"][:, -1]),
                               lambda c, s: float(np.median(c) / np.median(s)), seed=seed,
                               n_resamples=500)
    med = {a: np.median(times[a], axis=0) for a in arms}
    rows = [{"n": n, "sw_s": float(med["sw"][j]), "chamfer_s": float(med["chamfer"][j]),
             "null_s": float(med["null"][j])} for j, n in enumerate(ns)]
    crossover = next((r["n"] for r in rows if r["chamfer_s"] > r["sw_s"]), None)
    Figure = _figure()
    fig = Figure(figsize=(5.5, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.loglog(ns, med["sw"], "o-", label="SW_2, L = 100")
    ax.loglog(ns, med["chamfer"], "s-", label="Chamfer (exact, cdist)")
    ax.loglog(ns, med["null"], "k:", label=f"null: SW_2 at n = {ns[0]} in every slot")
    ax.set_xlabel("points per set n")
    ax.set_ylabel("CPU s, forward + backward")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics={"sw_slope": slopes["sw"], "chamfer_slope": slopes["chamfer"],
                 "null_slope": slopes["null"], "time_ratio_max_n": ratio,
                 "sw_s_max_n": float(med["sw"][-1]), "chamfer_s_max_n": float(med["chamfer"][-1]),
                 "max_n": ns[-1], "repeats": reps,
                 "crossover_n": float(crossover) if crossover is not None else float("nan")},
        figure=fig, tables={"timing": rows},
        notes="CPU time of one thread (time.process_time), medians of interleaved repeats; slope "
              "intervals bootstrap the repeats. The crossover is the smallest n measured where "
              "Chamfer is slower than SW. Null arm: the same SW_2 call at the smallest n, timed "
              "in every slot (constant work; its slope shows what noise and drift alone give).",
    )


def _sphere_samples(n: int, generator: torch.Generator) -> torch.Tensor:
    """n i.i.d. points of the uniform measure on the exact unit sphere (normalised Gaussians)."""
    import torch

    z = torch.randn(n, 3, generator=generator)
    return z / torch.linalg.vector_norm(z, dim=1, keepdim=True)


@claim(
    rule="sw_slope > -0.6 and sw_slope < -0.4",
    control="sphere_sw2_over_closed_form > 0.9 and sphere_sw2_over_closed_form < 1.1 "
            "and null_slope > -0.4",
    paper="Sec. 3.2 (sample complexity): E|SW(mu_n, mu)| = O(n^{-1/2}) whatever the dimension, "
          "so the number of sampled points can be chosen independently of the mesh.",
    paper_numbers={"sw_slope": -0.5},
    against=("the closed-form n^-1/2 rate (slope -0.5) as reference; positive control: the "
             "exact E SW_2^2 = 4 / (3 (n + 1)) between two n-samples of the unit sphere; null "
             "arm: SW_2 between samples of two different surfaces (target vs 1.3 x target), "
             "which must not decay; squared Chamfer on the same samples reported beside"),
)
def sample_rate(scale: Scale, seed: int, progress=None) -> Measurement:
    """E[SW_2] between two independent n-point surface samples of the same bumpy target,
    estimated from R replicate pairs per n; ``sw_slope`` is the log-log slope of the mean with
    a paired bootstrap interval over replicate rows. Squared Chamfer between the same samples is
    reported (``chamfer_slope``, ~ -1 on a 2-D surface because nearest-neighbour spacing
    ~ n^{-1/2}).

    Rule unchanged from the spec. Control (added in the audit repair, written before running),
    both measured in the same run with the same estimator and projections count:
    (i) positive control against a closed form: for the unit sphere every projection
    theta # mu is Uniform[-1, 1] (Archimedes), and for two independent n-samples of
    Uniform[-1, 1], E W_2^2 = 4 sum_i 2 Var(U_(i)) / n = 4 / (3 (n + 1)); so
    E SW_2^2 = 4 / (3 (n + 1)) exactly. ``sphere_sw2_over_closed_form`` (mean over n of the
    measured mean SW_2^2 divided by it, paired bootstrap over replicates) must lie in
    (0.9, 1.1): the estimator's error shrinks as theory says, not just with some slope.
    (ii) null arm: SW_2 between n-samples of the target and of the target scaled by 1.3 (a
    different surface; its population SW is > 0, so it must *not* show the -1/2 rate):
    ``null_slope > -0.4``, else the slope test cannot tell sampling error from anything else.

    Replicates: small 100 (full 200). Disclosed: a first small run with 30 replicates left the
    control inconclusive only because the sphere ratio's interval, 1.050 [0.971, 1.119], was
    too wide; the replicate count was raised (sample size only; rule, control and levels are
    unchanged)."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .distances import chamfer_distance, sliced_wasserstein
    from .measures import sample_surface
    from .shapes import target_meshes

    progress = progress or (lambda *a, **k: None)
    ns = sizes(scale, smoke=[100, 200, 400, 800], small=[125, 250, 500, 1000, 2000, 4000],
               full=[125, 250, 500, 1000, 2000, 4000, 8000, 16000])
    reps = sizes(scale, smoke=8, small=100, full=200)
    _, tv, tf = target_meshes(1, seed, subdivisions=4)[0]
    gen = torch.Generator().manual_seed(seed)
    sw, cd, sph, null = (np.zeros((reps, len(ns))) for _ in range(4))
    with torch_threads(1), torch.no_grad():
        verts = torch.tensor(tv, dtype=torch.float32)
        faces = torch.tensor(tf)
        for j, n in enumerate(ns):
            for r in range(reps):
                x, _ = sample_surface(verts, faces, n, gen)
                y, _ = sample_surface(verts, faces, n, gen)
                sw[r, j] = float(sliced_wasserstein(x, y, n_projections=100, generator=gen))
                cd[r, j] = float(chamfer_distance(x, y))
                z, _ = sample_surface(verts, faces, n, gen)
                null[r, j] = float(sliced_wasserstein(x, 1.3 * z, n_projections=100,
                                                      generator=gen))
                s1, s2 = _sphere_samples(n, gen), _sphere_samples(n, gen)
                sph[r, j] = float(sliced_wasserstein(s1, s2, n_projections=100,
                                                     generator=gen)) ** 2  # SW_2^2
            progress((j + 1) / len(ns), f"n = {n}")

    def slope_of_means(*cols):
        return _loglog_slope(ns, [np.mean(c) for c in cols])

    closed = 4.0 / (3.0 * (np.asarray(ns, float) + 1.0))  # E SW_2^2 on the unit sphere

    def ratio_to_closed_form(*cols):
        return float(np.mean([np.mean(c) / e for c, e in zip(cols, closed)]))

    def boot(data, stat):
        return Estimate.bootstrap(tuple(data.T), stat, seed=seed, paired=True, n_resamples=500)

    sw_slope, cd_slope = boot(sw, slope_of_means), boot(cd, slope_of_means)
    null_slope = boot(null, slope_of_means)
    sphere_ratio = boot(sph, ratio_to_closed_form)
    sphere_slope = boot(np.sqrt(sph), slope_of_means)
    rows = [{"n": n, "mean_sw": float(sw[:, j].mean()), "std_sw": float(sw[:, j].std()),
             "mean_chamfer": float(cd[:, j].mean()), "mean_null_sw": float(null[:, j].mean()),
             "mean_sphere_sw2": float(sph[:, j].mean()), "closed_form_sphere_sw2": float(closed[j])}
            for j, n in enumerate(ns)]
    Figure = _figure()
    fig = Figure(figsize=(5.5, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    ax.loglog(ns, sw.mean(0), "o-", label=f"E SW_2 (slope {sw_slope.value:.2f})")
    ax.loglog(ns, cd.mean(0), "s-", label=f"E Chamfer (slope {cd_slope.value:.2f})")
    ax.loglog(ns, null.mean(0), "^-", label=f"null: target vs 1.3 x target "
                                           f"(slope {null_slope.value:.2f})")
    ax.loglog(ns, sph.mean(0), "d-", label="sphere E SW_2^2")
    ax.loglog(ns, closed, "k--", label="4 / (3 (n + 1))")
    ax.loglog(ns, sw.mean(0)[0] * (np.asarray(ns) / ns[0]) ** -0.5, "k:", label="n^-1/2")
    ax.set_xlabel("samples per set n")
    ax.set_ylabel("discrepancy between two samples")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return Measurement(
        metrics={"sw_slope": sw_slope, "chamfer_slope": cd_slope, "null_slope": null_slope,
                 "sphere_sw2_over_closed_form": sphere_ratio, "sphere_sw_slope": sphere_slope,
                 "replicates": reps, "sw_at_max_n": float(sw[:, -1].mean())},
        figure=fig, tables={"rate": rows},
        notes="Both samples are drawn from the same surface, so each discrepancy is pure "
              "sampling error (its population value is 0). Slope intervals are paired "
              "bootstraps over replicate rows. Positive control: the exact unit sphere, whose "
              "E SW_2^2 between two n-samples is 4 / (3 (n + 1)). Null arm: target vs the "
              "target scaled by 1.3 (population SW > 0, so no decay to 0).",
    )
