"""FAN claims on the spec's synthetic fairness data: the IP's guarantees on its sample, the
test-time disparity against per-group confidence abstention, and the feasibility frontier."""

from __future__ import annotations

import math

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes


def _data(n: int, seed: int):
    from sklearn.linear_model import LogisticRegression

    from .synthetic import make_fairness_data

    X, y, z = make_fairness_data(n, seed)
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
    paper="The IP's solution satisfies its constraints: disparity <= eps on the accepted "
          "predictions (abstained = not positive), each group's error on accepted <= its base "
          "error (no harm, eta = 0), abstention <= delta per group (official src/IP.py).",
    against=("the IP's own constraints checked on its w, h; the per-sample IP formulation on the "
             "first 400 samples as a reference optimum"),
    resources={"cpus": 1},
)
def ip_correctness(scale: Scale, seed: int) -> Measurement:
    """On the IP sample (the training split; n = 1,000 smoke / 3,000 small), with DP, eps = 0.02,
    delta = 0.2, eta = 0: the counts solver's w, h must meet every constraint (violations are
    measured from w, h, not read from the solver), and on the first 400 samples the counts and
    per-sample solvers must reach the same optimum (or both report infeasible), with and without
    flips (``solver_gap``: the largest |difference|, infinite if only one is feasible). The
    base classifier's own disparity is reported beside."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _ip_correctness(scale, seed)


def _ip_correctness(scale: Scale, seed: int) -> Measurement:
    from .abstainer import disparity_full_group
    from .ip import solve_abstention_ip

    n = sizes(scale, smoke=2000, small=6000)
    parts, base = _data(n, seed)
    X, y, z = parts["train"]
    s = base.predict_proba(X)[:, 1]
    yhat = (s >= 0.5).astype(np.int64)
    eps, delta = 0.02, 0.2
    res = solve_abstention_ip(y, yhat, z, s, fairness="dp", epsilon=eps, delta=delta)
    pred = np.where(res.w == 1, res.h, -1)
    dp = disparity_full_group(y, pred, z, "dp")
    base_pred = yhat
    harm = max(_group_error(y, pred, z, g) - _group_error(y, base_pred, z, g) for g in (0, 1))
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
        rows.append({"allow_flip": flip, "counts": f"{a.status} {a.objective}",
                     "per_sample": f"{b.status} {b.objective}"})
    return Measurement(
        metrics={"dp_violation": max(0.0, dp - eps), "harm_violation": max(0.0, harm),
                 "abstention_violation": max(0.0, abst), "solver_gap": max(gaps),
                 "dp_ip": dp, "dp_base": disparity_full_group(y, base_pred, z, "dp"),
                 "objective": res.objective, "errors_base": float(np.sum(yhat != y))},
        tables={"solvers_n400": rows},
        notes="With flips allowed the IP may relabel training samples (h != yhat), so its "
              "error count can drop to 0 on its own sample; that is the official program.")


@claim(
    rule={"smoke": "disparity_ratio <= 0.6 and min_acc_gain >= -0.01",
          "small": "disparity_ratio <= 0.6 and min_acc_gain >= -0.01"},
    paper="At similar abstention rates FAN attains lower DP/EOp/EOd disparity than the baselines "
          "(LTD, FSCS) while each group's accuracy stays at least at the base level (Adult, "
          "COMPAS, Law; exact numbers not retrieved).",
    against=("per-group confidence abstention at FAN's realised per-group rates, and the base "
             "classifier's per-group accuracy (LTD and FSCS are not run)"),
    resources={"cpus": 1},
)
def abstention_vs_confidence_baseline(scale: Scale, seed: int, progress=None) -> Measurement:
    """Test data: FAN (IP on the training split, surrogates on [x, s], delta = 0.2, eta = 0)
    vs per-group confidence abstention at FAN's realised per-group abstention rates.
    ``disparity_ratio`` = FAN's full-group disparity / the baseline's, averaged over the grid
    (smoke: DP, eps = 0.03; small: eps in {0.01, 0.03, 0.05} x {DP, EOp, EOd}) per seed, an
    Estimate over 3 seeds at small; must be <= 0.6. ``min_acc_gain`` = the smallest per-group
    accuracy-on-accepted minus the base classifier's accuracy (no abstention) over the grid,
    averaged over seeds; must be >= -1 point."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():  # BLAS threads spin on a busy 2-core machine
        return _abstention_vs_confidence(scale, seed, progress)


def _abstention_vs_confidence(scale: Scale, seed: int, progress=None) -> Measurement:
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
    ratios, gains, rows = [], [], []
    for i, s in enumerate(seeds):
        parts, base = _data(n, s)
        (Xtr, ytr, ztr), (Xte, yte, zte) = parts["train"], parts["test"]
        s_te = base.predict_proba(Xte)[:, 1]
        base_pred = (s_te >= 0.5).astype(np.int64)
        seed_ratio, seed_gain = [], []
        for j, (fair, eps) in enumerate(grid):
            progress((i * len(grid) + j) / (len(seeds) * len(grid)), f"seed {s} {fair} {eps}")
            fan = FairAbstainer(base, fairness=fair, epsilon=eps, delta=0.2,
                                random_state=s).fit(Xtr, ytr, ztr)
            pred = fan.predict(Xte, zte)
            r = fan.ip_result_
            d_ip = disparity_full_group(ytr, np.where(r.w == 1, r.h, -1), ztr, fair)
            d_sur_train = disparity_full_group(ytr, fan.predict(Xtr, ztr), ztr, fair)
            rates = [float(np.mean(pred[zte == g] == -1)) for g in (0, 1)]
            conf = per_group_confidence_abstention(s_te, zte, rates)
            d_fan = disparity_full_group(yte, pred, zte, fair)
            d_conf = disparity_full_group(yte, conf, zte, fair)
            gain = min(1 - _group_error(yte, pred, zte, g)
                       - (1 - _group_error(yte, base_pred, zte, g)) for g in (0, 1))
            seed_ratio.append(d_fan / max(d_conf, 1e-9))
            seed_gain.append(gain)
            rows.append({"seed": s, "fairness": fair, "epsilon": eps,
                         "disparity_fan": d_fan, "disparity_confidence": d_conf,
                         "disparity_base": disparity_full_group(yte, base_pred, zte, fair),
                         "disparity_ip_train": d_ip, "disparity_surrogate_train": d_sur_train,
                         "disparity_fan_accepted_only": disparity_accepted_only(yte, pred, zte,
                                                                                fair),
                         "abstention_g0": rates[0], "abstention_g1": rates[1],
                         "acc_fan_g0": 1 - _group_error(yte, pred, zte, 0),
                         "acc_fan_g1": 1 - _group_error(yte, pred, zte, 1),
                         "acc_base_g0": 1 - _group_error(yte, base_pred, zte, 0),
                         "acc_base_g1": 1 - _group_error(yte, base_pred, zte, 1)})
        ratios.append(float(np.mean(seed_ratio)))
        gains.append(float(np.min(seed_gain)))

    def agg(xs):
        return Estimate.mean_of(xs) if len(xs) > 1 else xs[0]

    return Measurement(
        metrics={"disparity_ratio": agg(ratios), "min_acc_gain": agg(gains),
                 "mean_abstention": float(np.mean([(r["abstention_g0"] + r["abstention_g1"]) / 2
                                                   for r in rows])),
                 "mean_disparity_fan": float(np.mean([r["disparity_fan"] for r in rows])),
                 "mean_disparity_confidence": float(np.mean([r["disparity_confidence"]
                                                             for r in rows])),
                 "mean_disparity_base": float(np.mean([r["disparity_base"] for r in rows])),
                 "mean_disparity_ip_train": float(np.mean([r["disparity_ip_train"]
                                                           for r in rows])),
                 "mean_disparity_surrogate_train": float(np.mean(
                     [r["disparity_surrogate_train"] for r in rows]))},
        tables={"settings": rows},
        notes="Disparities use the full-group convention (abstained = not positive), as the "
              "IP; the accepted-only disparity is in the table. Surrogates are scikit-learn "
              "MLPs (64, 64) on [x, z, s(x)]. disparity_ip_train is the IP's own solution on "
              "its sample (<= eps by construction); disparity_surrogate_train shows how much "
              "of it the surrogates reproduce on that same sample.")


@claim(
    rule="violations_eps == 0 and violations_eta == 0 and delta_at_base_disparity <= 1e-9 "
         "and delta_at_eps0 > 0",
    paper="Feasibility theory: the abstention rate needed for a disparity tolerance eps and "
          "harm relaxation eta grows as eps and eta shrink, and is zero once the base "
          "classifier already satisfies the tolerance.",
    against=("no baseline: the theory's monotonicity in eps and eta, and delta = 0 at the base "
             "classifier's own disparity"),
    resources={"cpus": 1},
)
def feasibility_frontier(scale: Scale, seed: int) -> Measurement:
    """Minimal feasible delta (abstention only, h = yhat; counts IP with delta free) on the
    training split for eps on a grid x eta in {0, 0.05, 0.1, 0.2} (DP). ``violations_eps`` /
    ``violations_eta`` count increases of delta as eps / eta grow (must be 0); delta must be 0
    at eps = the base disparity and > 0 at eps = 0. The same with flips allowed is reported."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _feasibility_frontier(scale, seed)


def _feasibility_frontier(scale: Scale, seed: int) -> Measurement:
    from .abstainer import disparity_full_group
    from .ip import min_feasible_abstention

    n = sizes(scale, smoke=2000, small=6000)
    parts, base = _data(n, seed)
    X, y, z = parts["train"]
    yhat = (base.predict_proba(X)[:, 1] >= 0.5).astype(np.int64)
    d_base = disparity_full_group(y, yhat, z, "dp")
    eps_base = math.ceil(d_base * 1e6) / 1e6  # rounded up: eps >= the base disparity
    eps_grid = sorted({*np.round(np.linspace(0, 0.3, sizes(scale, smoke=7, small=16)), 4),
                       eps_base})
    etas = [0.0, 0.05, 0.1, 0.2]
    table = np.array([[min_feasible_abstention(y, yhat, z, epsilon=e, eta=(h, h))
                       for e in eps_grid] for h in etas])
    tol = 1e-9
    v_eps = int(np.sum(np.diff(table, axis=1) > tol))
    v_eta = int(np.sum(np.diff(table, axis=0) > tol))
    i_base = eps_grid.index(eps_base)
    # with flips, eps = 0 exactly is a hard combinatorial program (HiGHS stalls): start at grid[1]
    flip = [np.nan] + [min_feasible_abstention(y, yhat, z, epsilon=e, allow_flip=True)
                       for e in eps_grid[1:]]
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.5))
    ax = fig.add_subplot()
    for h, row in zip(etas, table):
        ax.plot(eps_grid, row, "o-", ms=3, label=f"eta = {h}")
    ax.plot(eps_grid, flip, "k:", label="flips allowed, eta = 0")
    ax.axvline(d_base, color="grey", lw=1, ls="--")
    ax.set_xlabel("DP tolerance eps")
    ax.set_ylabel("minimal feasible abstention delta")
    ax.legend(fontsize=8)
    return Measurement(
        metrics={"violations_eps": float(v_eps), "violations_eta": float(v_eta),
                 "delta_at_base_disparity": float(table[0, i_base]),
                 "delta_at_eps0": float(table[0, 0]), "base_disparity": d_base,
                 "delta_at_eps1_with_flips": float(flip[1])},
        figure=fig,
        tables={"frontier": [{"eps": e, **{f"eta_{h}": float(table[k, i])
                                           for k, h in enumerate(etas)},
                              "with_flips": flip[i]} for i, e in enumerate(eps_grid)]})
