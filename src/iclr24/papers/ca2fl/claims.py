"""CA²FL claims: bias removal on convex least squares, accuracy on label-skewed digits."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from iclr24.claims import (
    Estimate,
    Measurement,
    Scale,
    claim,
    seed_difference,
    seed_metric,
    sizes,
)
from iclr24.kits.statistics import t_half_width as _mean_ci
from iclr24.kits.threads import torch_threads

_METHODS = ("ca2fl", "fedbuff", "fedasync")


def _fmt(mean: float, half: float | None, digits: int = 4) -> str:
    return f"{mean:.{digits}f}" if half is None else f"{mean:.{digits}f} ± {half:.{digits}f}"


def _ratio_of_means(a: list[float], b: list[float], seed: int) -> float | Estimate:
    """mean(a) / mean(b): a plain number for one seed, else a paired bootstrap Estimate."""
    if len(a) == 1:
        return float(a[0]) / float(b[0])
    return Estimate.bootstrap((np.asarray(a), np.asarray(b)),
                              lambda x, y: float(np.mean(x) / np.mean(y)), paired=True,
                              seed=seed)


def _tag(x: float) -> str:
    return str(x).replace(".", "p").replace("p0", "") if float(x).is_integer() else \
        str(x).replace(".", "p")


@claim(
    rule={"smoke": "ratio_ca2fl_fedbuff_z3 < 1 and ratio_ca2fl_fedbuff_z0 < 1.25",
          "small": "ratio_ca2fl_fedbuff_z3 < 0.8 and ratio_ca2fl_fedbuff_z0 < 1.25"},
    control="ratio_fedbuff_z3_over_z0 > 2 and ratio_shuffled_fedbuff_z3 >= 0.8",
    paper="Sec. 4-5: FedBuff's error carries a delay term amplified by heterogeneity; CA²FL's "
          "cached calibration removes that coupling. Spec expectation on the convex analogue: "
          "similar at zeta=0, CA²FL/FedBuff error ratio clearly < 1 (order 0.3-0.7) at zeta=3.",
    against=("FedBuff and FedAsync at equal client arrivals on the same least-squares problems, "
             "delays and seeds; distance to the exact optimum x*; null arm: CA²FL filing each "
             "arrival under a random client's cache"),
)
def bias_removal(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Distance ||x_T - x*|| after T server updates on two-cluster federated least squares
    (fast cluster mean job time 1, slow cluster 5; M_c = 8, M = 4, K = 5), CA²FL vs FedBuff vs
    FedAsync at equal client arrivals, mean over seeds, for heterogeneity zeta.

    Rule (issue 38, written before the run): the paper's two statements are judged together.
    At zeta=3 the CA²FL/FedBuff ratio of mean errors must be < 0.8 over its whole paired
    bootstrap interval; at zeta=0 ("similar") CA²FL must not be more than 25% worse than FedBuff
    (ratio < 1.25; one-sided: being better without heterogeneity contradicts nothing). Before,
    only zeta=3 was read although the audit measured CA²FL 2.5x FedBuff's error at zeta=0.
    Control, measured in the same run: (1) the test bed has a bias to remove: FedBuff's mean
    error at zeta=3 is more than twice its error at zeta=0 (paired over seeds); (2) the null arm,
    CA²FL with each arrival filed under a uniformly random slot (per-client calibration broken,
    same averaging machinery), does not pass the zeta=3 rule (ratio to FedBuff >= 0.8)."""
    from .async_runs import run_least_squares

    zetas = sizes(scale, smoke=(0.0, 3.0), small=(0.0, 1.0, 3.0))
    n_seeds = sizes(scale, smoke=1, small=5)
    T = sizes(scale, smoke=60, small=300)
    errs: dict[tuple[str, float], list[float]] = {}
    curves = {}
    arms = {z: _METHODS + (("ca2fl_shuffled",) if z == 3.0 else ()) for z in zetas}
    total = sum(len(a) for a in arms.values()) * n_seeds
    done = 0
    with torch_threads(1):
        for z in zetas:
            for s in range(n_seeds):
                for m in arms[z]:
                    h = run_least_squares(m, z, seed=seed + s, server_updates=T)
                    errs.setdefault((m, z), []).append(float(h.column("error")[-1]))
                    if s == 0 and z == zetas[-1]:
                        curves[m] = (h.column("arrivals"), h.column("error"))
                    done += 1
                    progress(done / total, f"zeta={z} seed={seed + s} {m}")
    metrics: dict[str, object] = {}
    rows = []
    for z in zetas:
        t = _tag(z)
        for m in _METHODS:
            metrics[f"err_{m}_z{t}"] = seed_metric(errs[(m, z)])
        ratios = np.asarray(errs[("ca2fl", z)]) / np.asarray(errs[("fedbuff", z)])
        # ratio of the mean errors; over seeds a paired bootstrap interval (same problems,
        # delays and seeds for both methods), which the rule reads whole
        metrics[f"ratio_ca2fl_fedbuff_z{t}"] = _ratio_of_means(errs[("ca2fl", z)],
                                                               errs[("fedbuff", z)], seed)
        metrics[f"ratio_fedasync_fedbuff_z{t}"] = _ratio_of_means(errs[("fedasync", z)],
                                                                  errs[("fedbuff", z)], seed)
        if ("ca2fl_shuffled", z) in errs:  # the null arm, same problems, delays and seeds
            metrics[f"err_ca2fl_shuffled_z{t}"] = seed_metric(errs[("ca2fl_shuffled", z)])
            metrics[f"ratio_shuffled_fedbuff_z{t}"] = _ratio_of_means(
                errs[("ca2fl_shuffled", z)], errs[("fedbuff", z)], seed)
        diff = np.asarray(errs[("ca2fl", z)]) - np.asarray(errs[("fedbuff", z)])
        rows.append({
            "zeta": z, "seeds": n_seeds, "server_updates": T,
            **{f"err_{m}": _fmt(*_mean_ci(errs[(m, z)])) for m in _METHODS},
            "err_ca2fl_minus_fedbuff": _fmt(*_mean_ci(diff)),
            "ratio_ca2fl_fedbuff (per-seed mean)": _fmt(*_mean_ci(ratios), digits=3),
        })
    # positive control: FedBuff's error grows with heterogeneity (paired over seeds)
    metrics["ratio_fedbuff_z3_over_z0"] = _ratio_of_means(errs[("fedbuff", 3.0)],
                                                          errs[("fedbuff", 0.0)], seed)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot(1, 1, 1)
    for m, (x, y) in curves.items():
        ax.semilogy(x, y, label=m)
    ax.set_xlabel("client arrivals")
    ax.set_ylabel("||x - x*||")
    ax.set_title(f"least squares, zeta={zetas[-1]}, seed {seed}")
    ax.legend()
    return Measurement(
        metrics=metrics, figure=fig, tables={"error_by_heterogeneity": rows},
        notes=("Errors are means over seeds; the rule's ratio of mean errors carries a 95% paired "
               "bootstrap interval over seeds; table entries are mean ± 95% t-interval "
               "half-width over seeds. FedAsync runs the same number of client arrivals (T·M) "
               "as the buffered methods. ca2fl_shuffled (zeta=3 only) is the null arm: CA²FL "
               "filing each arrival under a random client's cache. Clients do K full-batch "
               "gradient steps (deterministic), so the error is bias + staleness only. The delay "
               "law is the spec's (exponential, cluster means 1 and 5), not the paper's (not "
               "retrieved)."))


@claim(
    rule={"smoke": "diff_ca2fl_fedbuff_a0p1 >= -0.02", "small": "diff_ca2fl_fedbuff_a0p1 > 0"},
    control={"smoke": "not (diff_shuffled_fedbuff_a0p1 >= -0.02)",
             "small": "not (diff_shuffled_fedbuff_a0p1 > 0)"},
    paper="Sec. 6: CA²FL beats FedBuff and FedAsync in test accuracy on CIFAR-10/100 with "
          "Dirichlet label splits, with larger gains under stronger heterogeneity (table values "
          "not retrieved). Spec expectation here: CA²FL >= FedBuff by ~1-5 points at alpha=0.1, "
          "~0 at alpha=1.",
    against=("FedBuff and FedAsync at equal client arrivals on the same digits split, client "
             "speeds and seeds; null arm: CA²FL filing each arrival under a random client's "
             "cache (alpha = 0.1)"),
)
def digits_accuracy(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Test accuracy (mean of the last 20 evaluations, one per M arrivals) on sklearn digits over
    30 Dirichlet-split clients, MLP 64-64-10, M_c = 6, M = 3, speeds correlated with label skew;
    CA²FL - FedBuff and FedBuff - FedAsync at equal client arrivals.

    Control (added after this claim's first small run, issue 38; the rule is unchanged): the
    null arm ``ca2fl_shuffled`` (as in :func:`bias_removal`: the same averaging over N cached
    updates, each arrival filed under a random client's slot) run at alpha = 0.1 on the same
    splits, speeds and seeds must not pass the rule in CA²FL's place
    (``diff_shuffled_fedbuff_a0p1``); otherwise a gain over FedBuff would come from the extra
    averaging, not from per-client calibration."""
    from iclr24.kits.federated import digits_split

    from .async_runs import run_digits

    alphas = sizes(scale, smoke=(0.1,), small=(0.1, 1.0))
    n_seeds = sizes(scale, smoke=1, small=3)
    T = sizes(scale, smoke=30, small=300)
    last = sizes(scale, smoke=5, small=20)
    acc: dict[tuple[str, float], list[float]] = {}
    acc_time: dict[tuple[str, float], list[float]] = {}
    curves = {}
    arms = {a: _METHODS + (("ca2fl_shuffled",) if a == alphas[0] else ()) for a in alphas}
    total = sum(len(v) for v in arms.values()) * n_seeds
    done = 0
    with torch_threads(1):
        for a in alphas:
            for s in range(n_seeds):
                data = digits_split(seed=seed + s)
                hists = {}
                for m in arms[a]:
                    hists[m] = run_digits(m, data, a, seed=seed + s, server_updates=T)
                    acc.setdefault((m, a), []).append(hists[m].last_mean("accuracy", last))
                    done += 1
                    progress(done / total, f"alpha={a} seed={seed + s} {m}")
                # equal virtual time: the earliest finishing method's clock
                t_end = min(float(hists[m].column("time")[-1]) for m in _METHODS)
                for m in _METHODS:
                    h = hists[m]
                    keep = h.column("time") <= t_end
                    acc_time.setdefault((m, a), []).append(float(h.column("accuracy")[keep][-1]))
                if s == 0 and a == alphas[0]:
                    curves = {m: (h.column("arrivals"), h.column("accuracy"))
                              for m, h in hists.items()}
    metrics: dict[str, object] = {}
    rows = []
    for a in alphas:
        t = _tag(a)
        for m in _METHODS:
            metrics[f"acc_{m}_a{t}"] = seed_metric(acc[(m, a)])
        d1 = np.asarray(acc[("ca2fl", a)]) - np.asarray(acc[("fedbuff", a)])
        d2 = np.asarray(acc[("fedbuff", a)]) - np.asarray(acc[("fedasync", a)])
        # the methods share each seed's data, split and speeds: paired t intervals
        metrics[f"diff_ca2fl_fedbuff_a{t}"] = seed_difference(acc[("ca2fl", a)],
                                                              acc[("fedbuff", a)])
        metrics[f"diff_fedbuff_fedasync_a{t}"] = seed_difference(acc[("fedbuff", a)],
                                                                 acc[("fedasync", a)])
        if ("ca2fl_shuffled", a) in acc:  # the null arm, same splits, speeds and seeds
            metrics[f"acc_ca2fl_shuffled_a{t}"] = seed_metric(acc[("ca2fl_shuffled", a)])
            metrics[f"diff_shuffled_fedbuff_a{t}"] = seed_difference(acc[("ca2fl_shuffled", a)],
                                                                     acc[("fedbuff", a)])
        dt = np.asarray(acc_time[("ca2fl", a)]) - np.asarray(acc_time[("fedbuff", a)])
        rows.append({
            "alpha": a, "seeds": n_seeds, "server_updates": T,
            **{f"acc_{m}": _fmt(*_mean_ci(acc[(m, a)])) for m in _METHODS},
            "ca2fl_minus_fedbuff": _fmt(*_mean_ci(d1)),
            "fedbuff_minus_fedasync": _fmt(*_mean_ci(d2)),
            "ca2fl_minus_fedbuff_equal_time": _fmt(*_mean_ci(dt)),
        })
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot(1, 1, 1)
    for m, (x, y) in curves.items():
        ax.plot(x, y, label=m)
    ax.set_xlabel("client arrivals")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"digits, alpha={alphas[0]}, seed {seed}")
    ax.legend()
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_by_alpha": rows},
        notes=("Accuracies are means over seeds of the mean over the last evaluations, with "
               "95% t intervals over seeds (paired for differences); the rule reads the whole "
               "interval, so one straddling 0 is inconclusive. 'equal_time' compares "
               "at the virtual time when the first method finished. Speeds: LogNormal(0,1) mean "
               "job times, 4x faster for the half of the clients with the smallest majority "
               "class. ca2fl_shuffled (alpha = 0.1 only) is the null arm: CA²FL filing each "
               "arrival under a random client's cache. MLP on sklearn digits replaces "
               "ResNet-18 on CIFAR."))
