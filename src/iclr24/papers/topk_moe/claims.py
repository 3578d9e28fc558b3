"""topk_moe claims: parametric rates under exact specification, and the slow-down of parameter
rates under over-specification (ratio of the raw |db| slopes), both on medians over seeded
replications with bootstrap intervals (kits.rates, kits.replications). The spec's exploratory
sparse over-specification (k = 4, K = 3) is reported inside ``over_spec_slowdown`` and never
decides."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes
from iclr24.kits.rates import fit_rate, plot_rate
from iclr24.kits.replications import replicate

from .simulation import exact_replication, over_replication, sparse_over_replication


def _slope_estimate(ns, table, key, seed, n_boot=2000):
    fit = fit_rate(ns, [[r[key] for r in row] for row in table], seed=seed, n_boot=n_boot)
    return fit, Estimate(fit.slope, fit.low, fit.high, fit.n_reps, fit.confidence, "bootstrap")


def _run(fn, scale, seed, progress, ns, reps, max_iter, n_mc=None, done=(0.0, 1.0)):
    n_mc = sizes(scale, smoke=300, small=2000) if n_mc is None else n_mc
    table = []
    for i, n in enumerate(ns):
        table.append(replicate(fn, reps, seed * 1000 + i, n, n_mc=n_mc, max_iter=max_iter,
                               n_jobs=sizes(scale, smoke=1, small=2)))
        progress(done[0] + (done[1] - done[0]) * (i + 1) / len(ns), f"n = {n}")
    return table


def _slope_ratio(ns, table, num, den, seed) -> Estimate:
    """slope(log median num) / slope(log median den) over log n, with a paired bootstrap over
    replications (both columns come from the same data sets)."""
    vals = np.array([[[r[num], r[den]] for r in row] for row in table])   # (m, reps, 2)
    logn = np.log(ns)

    def ratio(idx):
        med = np.median(vals[:, np.asarray(idx, dtype=int), :], axis=1)
        return float(np.polyfit(logn, np.log(med[:, 0]), 1)[0]
                     / np.polyfit(logn, np.log(med[:, 1]), 1)[0])

    return Estimate.bootstrap(np.arange(vals.shape[1], dtype=float), ratio, seed=seed)


@claim(
    rule="slope_d1 >= -0.65 and slope_d1 <= -0.4 and slope_hellinger >= -0.65 "
         "and slope_hellinger <= -0.4",
    control="null_slope_d1 > -0.4 and null_slope_hellinger > -0.4 and slope_d1_width < 0.5",
    paper="Theorems (exact specification, k = k*): the expected Hellinger distance and the "
          "Voronoi loss D_1 of the MLE both converge at the parametric rate O(sqrt(log n / n)); "
          "appendix simulations show log-log slopes close to -1/2.",
    paper_numbers={"slope_d1": -0.5, "slope_hellinger": -0.5},
    against="null arm: the near-truth EM start itself, without EM (same data sets, same run); "
            "the closed-form parametric rate (log-log slope -1/2) as reference",
)
def exact_spec_rate(scale: Scale, seed: int, progress=None) -> Measurement:
    """k* = 3, K* = 2 (simulation.exact_truth); EM fit with k = 3, K = 2 for each n from two
    independent near-truth starts, the higher likelihood kept; D_1 and the expected Hellinger
    distance (Monte Carlo over X, trapezoid in y). Slopes are log-log fits on medians over
    replications with bootstrap intervals (the interval decides); accepted band -0.65..-0.4 as
    in the spec (sqrt(log n / n) is a little shallower than -1/2). Rule unchanged.

    Changed after the audit of the first small run (issue 34), before running the new version:
    (1) restarts: single EM runs stopped below the truth's likelihood in 2 of ~21 fits, so
    they were not the MLE; each fit now keeps the better of two starts and the share of
    replications whose fit reaches the truth's likelihood is reported (``beats_truth_rate``).
    (2) n window: D_1 did not decay over n = 1e3..1e4 (medians 0.19, 0.20, 0.32, 0.14; the
    gate slopes, estimated from the few samples near the region boundaries, dominate D_1 and
    are heavy-tailed) and fell only near n = 16 000; the window is now n = 2e3..1.6e4 on a
    doubling grid. (3) control: the null arm, the near-truth start without EM (its error
    shrinks like its perturbation scale n^{-0.083}), measured on the same data sets, must not
    reach the band (both null slopes > -0.4 over their intervals), and the D_1 slope's interval
    must be narrower than 0.5 (else it cannot tell -1/2 from no decay); otherwise the verdict
    is "the test bed cannot tell"."""
    progress = progress or (lambda *a, **k: None)
    ns = sizes(scale, smoke=[300, 600], small=[2000, 4000, 8000, 16000])
    reps = sizes(scale, smoke=2, small=10)
    table = _run(exact_replication, scale, seed, progress, ns, reps, 2000)
    d1_fit, d1 = _slope_estimate(ns, table, "d1", seed)
    h_fit, h = _slope_estimate(ns, table, "hellinger", seed)
    null_d1_fit, null_d1 = _slope_estimate(ns, table, "null_d1", seed)
    _, null_h = _slope_estimate(ns, table, "null_hellinger", seed)
    beats = [r["beats_truth"] for row in table for r in row]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4))
    ax = fig.add_subplot()
    plot_rate(ax, d1_fit, label="D_1", reference=-0.5)
    plot_rate(ax, h_fit, label="Hellinger")
    plot_rate(ax, null_d1_fit, label="D_1 of the start (null, no EM)")
    ax.set_xlabel("n")
    ax.set_ylabel("loss (median over replications)")
    ax.legend(fontsize=7)
    rows = [{"n": n, "rep": j, **r} for n, row in zip(ns, table) for j, r in enumerate(row)]
    return Measurement(metrics={"slope_d1": d1, "slope_hellinger": h,
                                "null_slope_d1": null_d1, "null_slope_hellinger": null_h,
                                "slope_d1_width": d1.high - d1.low,
                                "beats_truth_rate": float(np.mean(beats)),
                                "median_restart_gain": float(np.median(
                                    [r["restart_gain"] for row in table for r in row])),
                                "median_d1_at_max_n": d1_fit.medians[-1]},
                       figure=fig, tables={"replications": rows},
                       notes=f"n in {ns}, {reps} replications each, best of 2 near-truth EM "
                             f"starts; fit window: all n. beats_truth_rate: share of fits "
                             f"whose likelihood reaches the truth's; restart gain in total "
                             f"log-likelihood over the first start.")


@claim(
    rule="slope_ratio < 0.6 and slope_db_exact < 0",
    control="slope_hellinger_over < -0.3 and null_slope_hellinger_over > -0.3",
    paper="Theorem (over-specification, k > k*, K-bar large enough): density estimation stays "
          "parametric but parameters of atoms in cells with |A_j| > 1 converge slowly; for "
          "|A_j| = 2 (rbar = 4) beta_1 and b at n^{-1/8}, a and sigma at n^{-1/4}, against "
          "n^{-1/2} for exact specification.",
    paper_numbers={"slope_ratio": 0.25},
    against=("the exactly specified fit (k = 2, K = 2) on the same data sets; theory's slope "
             "ratio 1/4 as reference"),
)
def over_spec_slowdown(scale: Scale, seed: int, progress=None) -> Measurement:
    """Truth k* = 2, K* = 2 (simulation.over_truth); on each data set, the exact fit (k = 2,
    K = 2) and the over-specified fit (k = 3, K = 3, two atoms started near expert 1), each by
    50 EM iterations finished by a trust-region Newton maximisation of the same likelihood
    (EM alone crawls along the flat over-specified direction; see simulation).
    ``slope_ratio`` = slope of the over-specified fit's raw max_{i in A_1} |db_i| divided by the
    exact fit's, both on medians over replications (paired bootstrap over replications, which
    share the data sets; theory 1/4, the rule asks < 0.6 over the whole interval; a ratio of
    1, no slow-down, fails). The rule also asks the exact fit's |db| slope to be negative over
    its interval: with a non-decaying exact fit the ratio's sign flips and "< 0.6" would hold
    vacuously (this guard was added after the first small run, which it does not change).
    Reported: each raw slope, |dsigma| slopes, Hellinger slopes of both fits, D_2 slope.

    Null arm and control (added for issue 34, before running): a sceptic's null is an
    over-specified fit that does not learn. Measured in the same run: the near-truth start of
    the over-specified fit without EM; its |db| shrinks only like the start's perturbation
    (n^{-0.083}), so its ratio to the exact fit's slope (``null_slope_ratio``, about 0.17)
    would pass the rule. The control therefore asks what the theorem itself promises and the
    null lacks: the over-specified fit's density converges (Hellinger slope < -0.3 over its
    interval, theory -1/2) while the null start's Hellinger slope stays above -0.3; otherwise
    the test bed cannot tell a slow parameter rate from a fit that does not learn.

    Exploratory, never decides (spec item 3): the sparse k = 4, K = 3 fit of the k* = 3,
    K* = 2 truth with expert 2 split, on 3 replications (2 at smoke) at smaller n: its Hellinger slope
    (``sparse_slope_hellinger``), the halves' gate weights and the log-likelihood gap to the
    truth at the largest n (table ``sparse_over_k4``)."""
    progress = progress or (lambda *a, **k: None)
    ns = sizes(scale, smoke=[300, 600, 1200], small=[1000, 2000, 5000, 10000, 20000])
    reps = sizes(scale, smoke=3, small=12)
    n_mc = sizes(scale, smoke=150, small=500)
    table = _run(over_replication, scale, seed, progress, ns, reps, 50, n_mc=n_mc,
                 done=(0.0, 0.75))
    n_boot = sizes(scale, smoke=200, small=2000)
    fits = {k: _slope_estimate(ns, table, k, seed, n_boot) for k in
            ("db_exact", "db_over", "dsigma_exact", "dsigma_over", "hellinger_exact",
             "hellinger_over", "d2_over")}
    fits.update({f"null_{k}": _slope_estimate(ns, table, f"null_{k}", seed, n_boot) for k in
                 ("db_over", "hellinger_over")})
    slope_ratio = _slope_ratio(ns, table, "db_over", "db_exact", seed)
    null_slope_ratio = _slope_ratio(ns, table, "null_db_over", "db_exact", seed)

    sparse_ns = sizes(scale, smoke=[300, 600], small=[1000, 2000, 5000])
    sparse_reps, sparse_iter = sizes(scale, smoke=2, small=3), sizes(scale, smoke=20, small=2000)
    sparse = _run(sparse_over_replication, scale, seed + 7919, progress, sparse_ns, sparse_reps,
                  sparse_iter, n_mc=n_mc, done=(0.75, 1.0))
    sparse_fit, sparse_h = _slope_estimate(sparse_ns, sparse, "hellinger", seed, n_boot)
    last = sparse[-1]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4))
    ax, ax2 = fig.subplots(1, 2)
    plot_rate(ax, fits["db_exact"][0], label="|db| exact", reference=-0.5)
    plot_rate(ax, fits["db_over"][0], label="|db| over", reference=-0.125)
    ax.set_xlabel("n")
    ax.set_ylabel("max |db| over A_1 (median)")
    ax.legend(fontsize=7)
    plot_rate(ax2, fits["hellinger_exact"][0], label="Hellinger exact", reference=-0.5)
    plot_rate(ax2, fits["hellinger_over"][0], label="Hellinger over")
    plot_rate(ax2, sparse_fit, label="Hellinger sparse k=4, K=3")
    ax2.set_xlabel("n")
    ax2.set_ylabel("expected Hellinger (median)")
    ax2.legend(fontsize=7)
    rows = [{"n": n, "rep": j, **r} for n, row in zip(ns, table) for j, r in enumerate(row)]
    sparse_rows = [{"n": n, "rep": j, **r} for n, row in zip(sparse_ns, sparse)
                   for j, r in enumerate(row)]
    return Measurement(
        metrics={"slope_ratio": slope_ratio, "null_slope_ratio": null_slope_ratio,
                 "null_slope_db_over": fits["null_db_over"][1],
                 "null_slope_hellinger_over": fits["null_hellinger_over"][1],
                 "slope_db_over": fits["db_over"][1],
                 "slope_db_exact": fits["db_exact"][1],
                 "slope_dsigma_over": fits["dsigma_over"][1],
                 "slope_dsigma_exact": fits["dsigma_exact"][1],
                 "slope_hellinger_over": fits["hellinger_over"][1],
                 "slope_hellinger_exact": fits["hellinger_exact"][1],
                 "slope_d2_over": fits["d2_over"][1],
                 "sparse_slope_hellinger": sparse_h,
                 "sparse_weight_half_small": float(np.median([r["weight_half_small"]
                                                              for r in last])),
                 "sparse_weight_half_large": float(np.median([r["weight_half_large"]
                                                              for r in last])),
                 "sparse_loglik_gap": float(np.median([r["loglik_gap"] for r in last]))},
        figure=fig, tables={"replications": rows, "sparse_over_k4": sparse_rows},
        notes=f"n in {ns}, {reps} replications each, 50 EM iterations then Newton to a "
              f"gradient below 1e-9; fit window: all n. Sparse k = 4, K = 3 (exploratory, "
              f"reported only): n in {sparse_ns}, {sparse_reps} replications, plain EM "
              f"(max_iter {sparse_iter}); weights and log-likelihood gap are "
              f"medians at n = {sparse_ns[-1]}.")
