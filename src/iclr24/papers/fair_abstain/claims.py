"""FAN claims on the spec's synthetic fairness data: the IP's guarantees on its sample, the
test-time disparity against per-group confidence abstention, and the feasibility frontier."""

from __future__ import annotations

import math

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_metric, sizes


def _data(n: int, seed: int):
    """Splits 50/20/30 of the synthetic data with the group as a feature column, X = [x, z],
    and the base classifier (logistic) fitted on the training split. The base, the confidence
    baseline and FAN's surrogates thus all see the protected attribute (before issue 34 the
    base saw x only while the surrogates saw [x, z, s], a confounded comparison)."""
    from sklearn.linear_model import LogisticRegression

    from .synthetic import make_fairness_data

    X, y, z = make_fairness_data(n, seed)
    X = np.column_stack([X, z])
    n_tr, n_va = int(0.5 * n), int(0.2 * n)
    parts = {"train": slice(0, n_tr), "val": slice(n_tr, n_tr + n_va),
             "test": slice(n_tr + n_va, n)}
    base = LogisticRegression().fit(X[parts["train"]], y[parts["train"]])
    return {k: (X[s], y[s], z[s]) for k, s in parts.items()}, base


def _group_error(y, pred, group, g):
    m = (group == g) & (pred != -1)
    return float(np.mean(pred[m] != y[m])) if m.any() else 0.0


@claim(
    rule="dp_violation <= 1e-9 and harm_violation <= 1e-9 and abstention_violation <= 1e-9 "
         "and solver_gap == 0",
    control="null_dp_violation > 0",
    paper="The IP's solution satisfies its constraints: disparity <= eps on the accepted "
          "predictions (abstained = not positive), each group's error on accepted <= its base "
          "error (no harm, eta = 0), abstention <= delta per group (official src/IP.py).",
    against=("the IP's own constraints checked on its w, h; the per-sample IP formulation on the "
             "first 400 samples as a reference optimum; null arm: the base classifier as the "
             "solution (w = 1, h = yhat), which must violate DP"),
    resources={"cpus": 1},
)
def ip_correctness(scale: Scale, seed: int) -> Measurement:
    """On the IP sample (the training split; n = 1,000 smoke / 3,000 small; 1 seed smoke, 3
    small, the worst seed reported), with DP, eps = 0.02,
    delta = 0.2, eta = 0: the counts solver's w, h must meet every constraint (violations are
    measured from w, h, not read from the solver), and on the first 400 samples the counts and
    per-sample solvers must reach the same optimum (or both report infeasible), with and without
    flips (``solver_gap``: the largest |difference|, infinite if only one is feasible).
    Control (null arm, same run): the base classifier's own predictions as the solution must
    violate DP (``null_dp_violation > 0``), so that eps binds and the check is not vacuous."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _ip_correctness(scale, seed)


def _ip_correctness(scale: Scale, seed: int) -> Measurement:
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    n = sizes(scale, smoke=2000, small=6000)
    per_seed, rows = [], []
    for s in seeds:
        m, r = _ip_check(n, s)
        per_seed.append(m)
        rows += r
    worst = {k: max(m[k] for m in per_seed) for k in per_seed[0]}
    return Measurement(
        metrics={**worst,  # the worst seed for every violation and gap
                 "null_dp_violation": min(m["null_dp_violation"] for m in per_seed)},
        tables={"solvers_n400": rows},
        notes="Violations and gaps are the worst over seeds; null_dp_violation the smallest "
              "(eps must bind on every seed). With flips allowed the IP may relabel training "
              "samples (h != yhat), so its error count can drop to 0 on its own sample; that "
              "is the official program.")


def _ip_check(n: int, seed: int) -> tuple[dict[str, float], list[dict]]:
    """One seed of ``ip_correctness``: the metrics and the solver-comparison rows."""
    from .abstainer import disparity_full_group
    from .ip import solve_abstention_ip

    parts, base = _data(n, seed)
    X, y, z = parts["train"]
    s = base.predict_proba(X)[:, 1]
    yhat = (s >= 0.5).astype(np.int64)
    eps, delta = 0.02, 0.2
    res = solve_abstention_ip(y, yhat, z, s, fairness="dp", epsilon=eps, delta=delta)
    pred = np.where(res.w == 1, res.h, -1)
    dp = disparity_full_group(y, pred, z, "dp")
    harm = max(_group_error(y, pred, z, g) - _group_error(y, yhat, z, g) for g in (0, 1))
    abst = max(float(np.mean(res.w[z == g] == 0)) - delta for g in (0, 1))
    gaps, rows = [], []
    for flip in (True, False):
        a = solve_abstention_ip(y[:400], yhat[:400], z[:400], s[:400], epsilon=eps,
                                delta=delta, allow_flip=flip)
        b = solve_abstention_ip(y[:400], yhat[:400], z[:400], s[:400], epsilon=eps,
                                delta=delta, allow_flip=flip, solver="per_sample")
        same = a.status == b.status
        gaps.append(abs(a.objective - b.objective) if a.feasible and same
                    else 0.0 if same else float("inf"))
        rows.append({"seed": seed, "allow_flip": flip, "counts": f"{a.status} {a.objective}",
                     "per_sample": f"{b.status} {b.objective}"})
    d_null = disparity_full_group(y, yhat, z, "dp")  # null arm: w = 1, h = yhat
    return {"dp_violation": max(0.0, dp - eps), "harm_violation": max(0.0, harm),
            "null_dp_violation": max(0.0, d_null - eps),
            "abstention_violation": max(0.0, abst), "solver_gap": max(gaps),
            "dp_ip": dp, "dp_base": d_null, "objective": res.objective,
            "errors_base": float(np.sum(yhat != y))}, rows


@claim(
    rule="disparity_ratio <= 0.6 and min_acc_gain >= -0.01",
    control="null_disparity_ratio > 0.6 or null_min_acc_gain < -0.01",
    paper="At similar abstention rates FAN attains lower DP/EOp/EOd disparity than the baselines "
          "(LTD, FSCS) while each group's accuracy stays at least at the base level (Adult, "
          "COMPAS, Law; exact numbers not retrieved).",
    against=("per-group confidence abstention at FAN's realised per-group rates, and the base "
             "classifier's per-group accuracy, all on the same inputs [x, z] (LTD and FSCS are "
             "not run); null arm: random abstention at FAN's per-group rates, base labels"),
    resources={"cpus": 1},
)
def abstention_vs_confidence_baseline(scale: Scale, seed: int, progress=None) -> Measurement:
    """Test data: FAN (IP on the training split, surrogates on [x, z, s], delta = 0.2,
    eta = 0) vs per-group confidence abstention at FAN's realised per-group abstention rates.
    ``disparity_ratio`` = FAN's full-group disparity / the baseline's, averaged over the grid
    (smoke: DP, eps = 0.03; small: eps in {0.01, 0.03, 0.05} x {DP, EOp, EOd}) per seed, an
    Estimate over 3 seeds at small; must be <= 0.6. ``min_acc_gain`` = the smallest per-group
    accuracy-on-accepted minus the base classifier's accuracy (no abstention) over the grid,
    per seed, an Estimate over seeds; must be >= -1 point.

    Changes for issue 34, made before running: the base classifier (hence the confidence
    baseline's scores) is fitted on [x, z], the inputs FAN's surrogates see (it saw x only, a
    confounded comparison); the surrogates stop on validation BCE with the official schedule
    (:func:`fit_surrogate`). Null arm (same run, same rates): an abstainer that ignores its
    input, abstaining at random at FAN's realised per-group rates and keeping the base labels;
    the control requires that it does not pass the rule (else per-group abstention rates alone
    explain the result and the verdict is inconclusive). ``abstain_auc_train`` is the abstain
    net's AUC against the program's decisions on its own sample (0.5 = not learnt)."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():  # BLAS threads spin on a busy 2-core machine
        return _abstention_vs_confidence(scale, seed, progress)


def _min_acc_gain(y, pred, group, acc_base) -> float:
    """min over groups of (accuracy on accepted - the base classifier's accuracy)."""
    return min(1 - _group_error(y, pred, group, g) - acc_base[g] for g in (0, 1))


def _random_abstention(pred: np.ndarray, group: np.ndarray, rates, rng) -> np.ndarray:
    """Null arm: abstain on round(rates[g] * N_g) uniformly random samples of group g."""
    out = pred.copy()
    for g in (0, 1):
        rows = np.flatnonzero(group == g)
        out[rng.choice(rows, size=round(rates[g] * rows.size), replace=False)] = -1
    return out


def _abstention_vs_confidence(scale: Scale, seed: int, progress=None) -> Measurement:
    from sklearn.metrics import roc_auc_score

    from .abstainer import (
        FairAbstainer,
        disparity_accepted_only,
        disparity_full_group,
        per_group_confidence_abstention,
    )

    progress = progress or (lambda *a, **k: None)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    grid = sizes(scale, smoke=[("dp", 0.03)],
                 small=[(f, e) for f in ("dp", "eop", "eod") for e in (0.01, 0.03, 0.05)])
    n = sizes(scale, smoke=2000, small=6000)
    ratios, gains, null_ratios, null_gains, rows = [], [], [], [], []
    for i, s in enumerate(seeds):
        parts, base = _data(n, s)
        (Xtr, ytr, ztr), (Xte, yte, zte) = parts["train"], parts["test"]
        s_te = base.predict_proba(Xte)[:, 1]
        base_pred = (s_te >= 0.5).astype(np.int64)
        rng = np.random.default_rng([seed, s])
        acc_base = [1 - _group_error(yte, base_pred, zte, g) for g in (0, 1)]
        per = {"ratio": [], "gain": [], "null_ratio": [], "null_gain": []}
        for j, (fair, eps) in enumerate(grid):
            progress((i * len(grid) + j) / (len(seeds) * len(grid)), f"seed {s} {fair} {eps}")
            fan = FairAbstainer(base, fairness=fair, epsilon=eps, delta=0.2,
                                random_state=s).fit(Xtr, ytr, ztr)
            pred = fan.predict(Xte, zte)
            r = fan.ip_result_
            auc = (roc_auc_score(r.w, fan.keep_probability(Xtr, ztr))
                   if 0 < r.w.sum() < r.w.size else float("nan"))
            d_ip = disparity_full_group(ytr, np.where(r.w == 1, r.h, -1), ztr, fair)
            d_sur_train = disparity_full_group(ytr, fan.predict(Xtr, ztr), ztr, fair)
            rates = [float(np.mean(pred[zte == g] == -1)) for g in (0, 1)]
            conf = per_group_confidence_abstention(s_te, zte, rates)
            rand = _random_abstention(base_pred, zte, rates, rng)
            d_fan = disparity_full_group(yte, pred, zte, fair)
            d_conf = disparity_full_group(yte, conf, zte, fair)
            d_rand = disparity_full_group(yte, rand, zte, fair)
            per["ratio"].append(d_fan / max(d_conf, 1e-9))
            per["null_ratio"].append(d_rand / max(d_conf, 1e-9))
            per["gain"].append(_min_acc_gain(yte, pred, zte, acc_base))
            per["null_gain"].append(_min_acc_gain(yte, rand, zte, acc_base))
            rows.append({"seed": s, "fairness": fair, "epsilon": eps,
                         "disparity_fan": d_fan, "disparity_confidence": d_conf,
                         "disparity_random_null": d_rand,
                         "disparity_base": disparity_full_group(yte, base_pred, zte, fair),
                         "disparity_ip_train": d_ip, "disparity_surrogate_train": d_sur_train,
                         "disparity_fan_accepted_only": disparity_accepted_only(yte, pred, zte,
                                                                                fair),
                         "abstain_auc_train": auc,
                         "abstention_g0": rates[0], "abstention_g1": rates[1],
                         "acc_fan_g0": 1 - _group_error(yte, pred, zte, 0),
                         "acc_fan_g1": 1 - _group_error(yte, pred, zte, 1),
                         "acc_base_g0": acc_base[0], "acc_base_g1": acc_base[1]})
        ratios.append(float(np.mean(per["ratio"])))
        null_ratios.append(float(np.mean(per["null_ratio"])))
        gains.append(float(np.min(per["gain"])))
        null_gains.append(float(np.min(per["null_gain"])))

    def mean(key):
        return float(np.nanmean([r[key] for r in rows]))

    return Measurement(
        metrics={"disparity_ratio": seed_metric(ratios), "min_acc_gain": seed_metric(gains),
                 "null_disparity_ratio": seed_metric(null_ratios),
                 "null_min_acc_gain": seed_metric(null_gains),
                 "mean_abstention": float(np.mean([(r["abstention_g0"] + r["abstention_g1"]) / 2
                                                   for r in rows])),
                 "mean_disparity_fan": mean("disparity_fan"),
                 "mean_disparity_confidence": mean("disparity_confidence"),
                 "mean_disparity_random_null": mean("disparity_random_null"),
                 "mean_disparity_base": mean("disparity_base"),
                 "mean_disparity_ip_train": mean("disparity_ip_train"),
                 "mean_disparity_surrogate_train": mean("disparity_surrogate_train"),
                 "mean_abstain_auc_train": mean("abstain_auc_train"),
                 "mean_acc_base": float(np.mean([(r["acc_base_g0"] + r["acc_base_g1"]) / 2
                                                 for r in rows]))},
        tables={"settings": rows},
        notes="Disparities use the full-group convention (abstained = not positive), as the "
              "IP; the accepted-only disparity is in the table. The base classifier, the "
              "confidence baseline and FAN's surrogates all see [x, z]. disparity_ip_train is "
              "the IP's own solution on its sample (<= eps by construction); "
              "disparity_surrogate_train shows how much of it the surrogates reproduce there.")


BASE_THRESHOLDS = (0.5, 0.7)  # the spec's base, and a high-precision operating point of it


@claim(
    rule="mismatches == 0",
    control="null_mismatches > 0 and points_checked >= 20",
    paper="Feasibility theory (Sec. 4): the abstention rate the IP needs is characterised by the "
          "tolerances: it grows as eps and eta shrink and is zero once the base classifier "
          "already satisfies the fairness tolerance.",
    against=("the exact program (minimal delta, counts IP) against the closed-form "
             "characterisation; null arm: the same characterisation with its no-harm term "
             "switched off (eta = 1), which must disagree with the program somewhere"),
    resources={"cpus": 1},
)
def feasibility_frontier(scale: Scale, seed: int) -> Measurement:
    """Minimal feasible delta for DP with abstention only (h = yhat) on the training split,
    1 seed smoke / 3 small (counts summed over seeds), for two bases (the logistic base at
    threshold 0.5, and the same scores at 0.7), eps on a
    grid (from 0.005, above the count resolution) x eta in {0, 0.05, 0.1, 0.2}: the
    exact program (:func:`min_feasible_abstention`, delta a variable of the counts IP) against
    the closed form :func:`min_abstention_dp_closed_form`. ``mismatches`` counts grid points
    where they differ by more than 1e-9 (must be 0).

    Why this rule replaced the old one (monotonicity in eps and eta, zero at the base
    disparity): for an exact solver those cannot fail (the feasible sets nest, and w = 1,
    h = yhat is feasible at the base disparity), so they are reported only. The paper's own
    theorem could not be retrieved offline; the closed form is derived from the same program
    (see its docstring). Control: the null characterisation without the no-harm term must
    disagree with the program at some grid point (``null_mismatches > 0``), otherwise the test
    bed never exercises no harm and a match says little; and >= 20 points must lie in the closed
    form's range. The 0.7 operating point was added for that control (before running the
    rule on it): at 0.5 the synthetic base has so many false positives in the high-rate group
    that abstaining on them always restores no harm, so the no-harm term never binds there
    (smoke: 0 null mismatches); a high-precision base, whose errors are mostly false negatives,
    is where the paper's no-harm constraint raises the needed abstention."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _feasibility_frontier(scale, seed)


def _closed_or_nan(y, yhat, z, eps: float, eta: float) -> float:
    """The closed form, NaN outside its range (then not counted either way)."""
    from .ip import min_abstention_dp_closed_form

    try:
        return min_abstention_dp_closed_form(y, yhat, z, epsilon=eps, eta=(eta, eta))
    except ValueError:
        return float("nan")


def _feasibility_frontier(scale: Scale, seed: int) -> Measurement:
    from .abstainer import disparity_full_group
    from .ip import min_feasible_abstention

    n = sizes(scale, smoke=2000, small=6000)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    etas = [0.0, 0.05, 0.1, 0.2]
    tol = 1e-9
    counts = {"mismatches": 0, "null_mismatches": 0, "points_checked": 0,
              "outside_closed_form": 0, "violations_eps": 0, "violations_eta": 0}
    rows, frontiers, at_base, d_bases = [], {}, [], []
    for s in seeds:
        parts, base = _data(n, s)
        X, y, z = parts["train"]
        score = base.predict_proba(X)[:, 1]
        for threshold in BASE_THRESHOLDS:
            yhat = (score >= threshold).astype(np.int64)
            d_base = disparity_full_group(y, yhat, z, "dp")
            eps_base = math.ceil(d_base * 1e6) / 1e6  # rounded up: eps >= the base disparity
            eps_grid = sorted({*np.round(np.linspace(0.005, 0.3,
                                                     sizes(scale, smoke=7, small=16)), 4),
                               eps_base})
            table = np.array([[min_feasible_abstention(y, yhat, z, epsilon=e, eta=(h, h))
                               for e in eps_grid] for h in etas])
            cf = np.array([[_closed_or_nan(y, yhat, z, e, h) for e in eps_grid] for h in etas])
            null = np.array([[_closed_or_nan(y, yhat, z, e, 1.0) for e in eps_grid]
                             for _ in etas])  # the no-harm term off
            ok, ok_null = ~np.isnan(cf), ~np.isnan(null)
            counts["mismatches"] += int(np.sum(np.abs(table - cf)[ok] > tol))
            counts["null_mismatches"] += int(np.sum(np.abs(table - null)[ok_null] > tol))
            counts["points_checked"] += int(ok.sum())
            counts["outside_closed_form"] += int((~ok).sum())
            counts["violations_eps"] += int(np.sum(np.diff(table, axis=1) > tol))
            counts["violations_eta"] += int(np.sum(np.diff(table, axis=0) > tol))
            at_base.append(float(table[0, eps_grid.index(eps_base)]))
            d_bases.append(d_base)
            if s == seeds[0]:
                frontiers[threshold] = (eps_grid, table, cf, null, d_base)
            rows += [{"seed": s, "threshold": threshold, "eps": e,
                      **{f"program_eta_{h}": float(table[k, i]) for k, h in enumerate(etas)},
                      **{f"closed_form_eta_{h}": float(cf[k, i]) for k, h in enumerate(etas)},
                      "null_no_harm_off": float(null[0, i])} for i, e in enumerate(eps_grid)]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.5))
    for a, threshold in enumerate(BASE_THRESHOLDS):
        eps_grid, table, cf, null, d_base = frontiers[threshold]
        ax = fig.add_subplot(1, len(BASE_THRESHOLDS), a + 1)
        for k, h in enumerate(etas):
            line, = ax.plot(eps_grid, table[k], "o", ms=4, label=f"program, eta = {h}")
            ax.plot(eps_grid, cf[k], "-", color=line.get_color(), lw=1)
        ax.plot(eps_grid, null[0], "k:", label="closed form without no harm")
        ax.axvline(d_base, color="grey", lw=1, ls="--")
        ax.set_title(f"base yhat = 1[s >= {threshold}]", fontsize=9)
        ax.set_xlabel("DP tolerance eps")
        ax.set_ylabel("minimal feasible abstention delta")
        ax.legend(fontsize=6)
    return Measurement(
        metrics={**{k: float(v) for k, v in counts.items()},
                 "max_delta_at_base_disparity": max(at_base),
                 "mean_base_disparity": float(np.mean(d_bases))},
        figure=fig,
        tables={"frontier": rows},
        notes="violations_eps / violations_eta / max_delta_at_base_disparity are reported "
              "only: they cannot fail for an exact solver. The figure shows the first seed.")
