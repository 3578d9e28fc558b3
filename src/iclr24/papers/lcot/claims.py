"""LCOT claims: speed-up over COT (Fig. 4), fidelity to COT, and class separation (Exp. 2).

Each claim measures its null arm in the same run: the batched COT (the strongest COT) for the
speed-up, OT with the circle cut at 0 for fidelity and classification (LCOT with the optimal
rotation switched off, in effect), shuffled labels for the cross-validated accuracy.
"""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .baselines import (
    cot_pairwise,
    histogram_l2_pairwise,
    ot_interval_distance,
    ot_interval_pairwise,
)
from .embedding import circular_abs, embed_measures, lcot_distance, lcot_embedding, lcot_pairwise
from .synthetic_measures import EXPERIMENT2_CLASSES, experiment2_measures

_FIDELITY_SLACK = 1e-3  # absorbs the O(1/M) grid error of the M = 1000 point embedding
_LOGREG_GRID = 256  # embedding grid used as features for logistic regression (POT uses 100)


def _scalar(x) -> float:
    """POT returns shape-(1,) arrays for 1-D inputs."""
    return float(np.ravel(x)[0])


def _cpu_time_per_call(fn, min_total: float = 0.2, max_reps: int = 50) -> float:
    """Thread CPU seconds per call (POT and our numpy code run on one thread), repeating cheap
    calls until ``min_total`` seconds have passed; thread time ignores what else the machine
    runs."""
    reps, total = 0, 0.0
    while reps < max_reps and (reps == 0 or total < min_total):
        t0 = time.thread_time()
        fn()
        total += time.thread_time() - t0
        reps += 1
    return total / reps


def _lcot_all_pairs(values: np.ndarray, weights: np.ndarray, grid_size: int) -> np.ndarray:
    """LCOT's all-pairs matrix: embed the K measures, then K^2 circular L2 distances."""
    return lcot_pairwise(lcot_embedding(values, weights, grid_size=grid_size))


def _figure():
    from matplotlib.figure import Figure

    return Figure


@claim(
    rule={"smoke": "ratio >= 2 and ratio_batched >= 2",
          "small": "ratio >= 10 and ratio_batched >= 10"},
    control="max_rel_gap <= 0.5",
    paper="Fig. 4 (official time.ipynb): all-pairs distances among K in {2..64} measures of "
          "N in {500, 1000, 5000} atoms; COT (POT binary search) grows like K^2 N log N, LCOT like "
          "K N + K^2 M, and LCOT is orders of magnitude faster for K >~ 10 (log-scale plot; the "
          "exact times are not given in the text).",
    against=("all-pairs COT with POT's binary search, pair by pair as the official notebook and "
             "batched over all pairs (the stronger baseline), on the same measures; control: "
             "the timed LCOT matrix is within 50% of COT on every pair"),
)
def speedup(scale: Scale, seed: int, progress=None) -> Measurement:
    """CPU time of all-pairs COT (POT's binary search, pair by pair as the official notebook,
    and batched over all pairs at once) vs LCOT (embed the K measures, then K^2 circular L2
    distances on a grid of M = N points), same process, same random measures (uniform positions,
    random weights). At the largest K (8 at smoke, 32 at small) the three are timed in
    interleaved repeats (3 at smoke, 5 at small); ``ratio`` = time_COT / time_LCOT and
    ``ratio_batched`` = time_COT_batched / time_LCOT are means over the repeats with a t
    interval. The rule reads both: LCOT must be >= 10x faster (small; 2x at smoke) than COT
    *and* than the batched COT, the strongest implementation of the baseline here (the paper
    says orders of magnitude against its notebook's COT; we ask one order against either). It
    fails when either ratio's whole interval is below the threshold: a speed-up that came from
    vectorisation alone would fail on ``ratio_batched``.

    Control (the sceptic's "fast because it computes nothing"): ``max_rel_gap`` =
    max |LCOT - COT| / COT over the pairs of the *timed* LCOT matrix must be <= 0.5, i.e. the
    timed code returns COT's geometry up to LCOT's linearisation error (a few percent here);
    a stand-in that returns garbage fast makes the verdict inconclusive. Times are thread CPU
    seconds (both sides run on one thread), so another process on the machine does not bias
    the ratio."""
    return _speedup(scale, seed, progress)


def _speedup(scale: Scale, seed: int, progress=None, all_pairs=_lcot_all_pairs) -> Measurement:
    """The body of :func:`speedup`; ``all_pairs(values, weights, grid_size) -> (K, K)`` is the
    method timed against COT (LCOT; the tests pass null methods)."""
    progress = progress or (lambda *a, **k: None)
    ks = sizes(scale, smoke=[2, 4, 8], small=[2, 4, 8, 16, 32], full=[2, 4, 8, 16, 32, 64])
    n = sizes(scale, smoke=200, small=1000, full=5000)
    repeats = sizes(scale, smoke=3, small=5)
    rng = np.random.default_rng(seed)
    kmax = max(ks)
    values = rng.random((kmax, n))
    weights = rng.random((kmax, n))
    weights /= weights.sum(axis=1, keepdims=True)
    rows = []
    warm = [(values[0, :5], weights[0, :5]), (values[1, :5], weights[1, :5])]
    cot_pairwise(warm)  # import POT and warm caches outside the timed region
    all_pairs(values[:2, :5], weights[:2, :5], 5)
    ratios: list[float] = []
    ratios_b: list[float] = []
    for step, k in enumerate(ks):
        measures = [(values[i], weights[i]) for i in range(k)]

        def run_method(k=k):
            return all_pairs(values[:k], weights[:k], n)

        times: dict[str, list[float]] = {"lcot": [], "cot": [], "cot_b": []}
        for _ in range(repeats if k == kmax else 1):  # interleaved: drift hits all three alike
            times["lcot"].append(_cpu_time_per_call(run_method))
            times["cot"].append(_cpu_time_per_call(
                lambda ms=measures: cot_pairwise(ms, batched=False), min_total=0.0))
            times["cot_b"].append(_cpu_time_per_call(
                lambda ms=measures: cot_pairwise(ms, batched=True), min_total=0.0))
        t_lcot, t_cot, t_cot_b = (float(np.median(times[key])) for key in ("lcot", "cot", "cot_b"))
        rows.append({"K": k, "N": n, "pairs": k * (k - 1) // 2, "repeats": len(times["lcot"]),
                     "time_cot_s": t_cot, "time_cot_batched_s": t_cot_b, "time_lcot_s": t_lcot,
                     "ratio": t_cot / max(t_lcot, 1e-12),
                     "ratio_batched": t_cot_b / max(t_lcot, 1e-12)})
        if k == kmax:
            ratios = [c / max(m, 1e-12) for c, m in zip(times["cot"], times["lcot"])]
            ratios_b = [c / max(m, 1e-12) for c, m in zip(times["cot_b"], times["lcot"])]
        progress((step + 1) / len(ks), f"K = {k}")
    measures = [(values[i], weights[i]) for i in range(kmax)]
    d_method, d_cot = all_pairs(values, weights, n), cot_pairwise(measures)
    iu = np.triu_indices(kmax, 1)
    rel = np.abs(d_method[iu] - d_cot[iu]) / np.maximum(d_cot[iu], 1e-12)
    last = rows[-1]

    Figure = _figure()
    fig = Figure(figsize=(6.0, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    kk = [r["K"] for r in rows]
    ax.plot(kk, [r["time_cot_s"] for r in rows], "o-", label="COT (POT, pair by pair)")
    ax.plot(kk, [r["time_cot_batched_s"] for r in rows], "s--", label="COT (POT, batched pairs)")
    ax.plot(kk, [r["time_lcot_s"] for r in rows], "^-", label="LCOT (embed + pairwise)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("number of measures K")
    ax.set_ylabel("CPU time for all pairs [s]")
    ax.set_title(f"All-pairs distances, N = {n} atoms per measure")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics={"ratio": seed_metric(ratios), "ratio_batched": seed_metric(ratios_b),
                 "time_cot_s": last["time_cot_s"], "time_cot_batched_s": last["time_cot_batched_s"],
                 "time_lcot_s": last["time_lcot_s"], "max_rel_gap": float(rel.max()),
                 "mean_rel_gap": float(rel.mean()),
                 "min_lcot_minus_cot": float(np.min(d_method[iu] - d_cot[iu])),
                 "K": kmax, "N": n, "repeats": repeats},
        figure=fig,
        tables={"timing_per_K": rows},
        notes=f"Thread CPU time in one process; at K = {kmax} the ratios are means over "
              f"{repeats} interleaved repeats (t interval), the table shows medians (one "
              "repeat for smaller K). LCOT computes the full K x K matrix, COT only the "
              "K(K-1)/2 upper pairs. The rel. gap is LCOT's linearisation error (LCOT >= COT); "
              "measures with many uniformly placed atoms sit close to the uniform reference, so "
              "it is small here (see fidelity's mean_rel_gap for the concentrated Exp. 2 "
              "measures).",
    )


def _lcot_geometry(measures: list) -> tuple[np.ndarray, np.ndarray]:
    """LCOT on the M = 1000 grid: all-pairs distances (K, K) and distances to Unif (K,)."""
    emb = embed_measures(measures, grid_size=1000)
    return lcot_pairwise(emb), np.sqrt(np.mean(circular_abs(emb) ** 2, axis=1))  # Unif -> 0


def _ot_cut_geometry(measures: list) -> tuple[np.ndarray, np.ndarray]:
    """The null arm: OT on [0, 1) with the circle cut at 0 (no optimal rotation)."""
    return (ot_interval_pairwise(measures),
            np.array([ot_interval_distance(m) for m in measures]))


def _fidelity_scores(d: np.ndarray, unif: np.ndarray, d_cot: np.ndarray, cot_unif: np.ndarray
                     ) -> dict[str, float | np.ndarray]:
    from scipy.stats import spearmanr

    iu = np.triu_indices(d.shape[0], 1)
    a, b = d[iu], d_cot[iu]
    return {"spearman": float(spearmanr(a, b).statistic), "ge": a >= b - _FIDELITY_SLACK,
            "unif_gap": float(np.max(np.abs(unif - cot_unif)))}


@claim(
    rule="spearman >= 0.9 and frac_lcot_ge_cot >= 0.99 and max_unif_gap <= 1e-3",
    control="cut_spearman < 0.9 or cut_frac_ge_cot < 0.99 or cut_max_unif_gap > 1e-3",
    paper="Sec. 3: LCOT is the linearisation of COT at the reference, equals COT when one "
          "argument is the (uniform) reference and upper-bounds COT; Exp. 1-2: MDS on LCOT "
          "reproduces the COT geometry.",
    paper_numbers={"max_unif_gap": 0.0},
    against=("COT from POT's binary search on the same measures; POT's closed-form COT to the "
             "uniform reference; null arm: OT with the circle cut at 0 scored the same way"),
)
def fidelity(scale: Scale, seed: int, progress=None) -> Measurement:
    """On the six-class Experiment 2 data (1 draw at smoke, 3 independent draws at small):
    ``spearman`` = Spearman correlation between the LCOT (grid M = 1000) and COT (POT) distance
    matrices (mean over draws, t interval); ``frac_lcot_ge_cot`` = fraction of all pairs of all
    draws with LCOT >= COT - 1e-3 (the theorem LCOT >= COT; the slack absorbs grid error);
    ``max_unif_gap`` = max over all measures of |LCOT(nu, Unif) - COT(nu, Unif)| with COT to the
    uniform from POT's closed form ``semidiscrete_wasserstein2_unif_circle`` (the theorem
    LCOT = COT at the reference). The last two are theorem checks: one violation anywhere is a
    violation, an interval over draws would mean nothing. Fails when the correlation's interval
    is below 0.9, or the bound or the equality at the reference is broken.

    Control (the null a sceptic would try: "any reasonable circular-ish distance tracks COT"):
    OT with the circle cut at 0 - LCOT with the optimal rotation switched off, in effect - is
    scored by the same three numbers on the same measures (``cut_*``) and must not pass the
    rule; if it did, the test bed could not tell a linearisation of COT from the cut distance."""
    return _fidelity(scale, seed, progress)


def _fidelity(scale: Scale, seed: int, progress=None, geometry=_lcot_geometry) -> Measurement:
    """The body of :func:`fidelity`; ``geometry(measures) -> (pairwise, to_uniform)`` is the
    method scored against COT (LCOT; the tests pass the null arm)."""
    import ot
    from scipy.stats import pearsonr

    progress = progress or (lambda *a, **k: None)
    n_per = sizes(scale, smoke=8, small=40, full=40)
    n_draws = sizes(scale, smoke=1, small=3)
    ours: dict[str, list] = {"spearman": [], "ge": [], "unif_gap": []}
    cut: dict[str, list] = {"spearman": [], "ge": [], "unif_gap": []}
    pearson, rel_gap, min_diff, exact_gap = [], [], [], []
    for s in range(n_draws):
        measures, labels = experiment2_measures(n_per, seed=seed + s)
        d_lcot, lcot_unif = geometry(measures)
        d_cot = cot_pairwise(measures, progress=lambda f, _s=s: progress(
            (_s + 0.9 * f) / n_draws, f"draw {_s + 1}: COT pairs"))
        cot_unif = np.sqrt(np.array([_scalar(ot.semidiscrete_wasserstein2_unif_circle(m))
                                     for m in measures]))
        for store, (d, unif) in ((ours, (d_lcot, lcot_unif)),
                                 (cut, _ot_cut_geometry(measures))):
            for key, value in _fidelity_scores(d, unif, d_cot, cot_unif).items():
                store[key].append(value)
        iu = np.triu_indices(len(measures), 1)
        a, b = d_lcot[iu], d_cot[iu]
        pearson.append(float(pearsonr(a, b).statistic))
        rel_gap.append(float(np.mean((a - b) / np.maximum(b, 1e-12))))
        min_diff.append(float(np.min(a - b)))
        lcot_unif_exact = np.array([lcot_distance(m, grid_size=None) for m in measures])
        exact_gap.append(float(np.max(np.abs(lcot_unif_exact - cot_unif))))
        if s == 0:
            first = (a, b, lcot_unif, cot_unif, labels, len(measures))
    a, b, lcot_unif, cot_unif, labels, n_measures = first
    progress(1.0, "done")

    Figure = _figure()
    fig = Figure(figsize=(10.0, 4.4))
    ax = fig.add_subplot(1, 2, 1)
    ax.scatter(b, a, s=4, alpha=0.4)
    hi = float(max(a.max(), b.max())) * 1.05
    ax.plot([0, hi], [0, hi], "k--", lw=1, label="y = x (LCOT = COT)")
    ax.set_xlabel("COT_2 (POT)")
    ax.set_ylabel("LCOT_2")
    ax.set_title(f"All pairs, {n_measures} measures (6 classes), draw 1")
    ax.legend()
    ax2 = fig.add_subplot(1, 2, 2)
    ax2.scatter(cot_unif, lcot_unif, s=10, c=labels, cmap="tab10")
    lo2, hi2 = float(cot_unif.min()) * 0.95, float(cot_unif.max()) * 1.05
    ax2.plot([lo2, hi2], [lo2, hi2], "k--", lw=1)
    ax2.set_xlabel("COT_2(nu, Unif) (POT closed form)")
    ax2.set_ylabel("LCOT_2(nu, Unif)")
    ax2.set_title("Against the reference: equal (theorem)")
    fig.tight_layout()
    rows = [{"draw": seed + i, "spearman": round(ours["spearman"][i], 4),
             "cut_spearman": round(cut["spearman"][i], 4),
             "max_unif_gap": ours["unif_gap"][i], "cut_max_unif_gap": cut["unif_gap"][i]}
            for i in range(n_draws)]
    return Measurement(
        metrics={
            "spearman": seed_metric(ours["spearman"]),
            "pearson": seed_metric(pearson),
            "frac_lcot_ge_cot": float(np.mean(np.concatenate(ours["ge"]))),
            "min_lcot_minus_cot": min(min_diff),
            "mean_rel_gap": seed_metric(rel_gap),
            "max_unif_gap": max(ours["unif_gap"]),
            "max_unif_gap_exact": max(exact_gap),
            "cut_spearman": seed_metric(cut["spearman"]),
            "cut_frac_ge_cot": float(np.mean(np.concatenate(cut["ge"]))),
            "cut_max_unif_gap": max(cut["unif_gap"]),
            "n_measures": n_measures,
            "n_draws": n_draws,
        },
        figure=fig,
        tables={"per_draw": rows},
        notes="LCOT on the M = 1000 grid (official default); max_unif_gap_exact uses the exact "
              "breakpoint integral instead of the grid. cut_* score OT with the circle cut at 0 "
              "(the null arm) by the same numbers: it upper-bounds COT by construction and may "
              "correlate with it, but it does not equal COT at the uniform reference.",
    )


def _knn_cv_accuracy(dist: np.ndarray, y: np.ndarray, folds) -> float:
    from sklearn.neighbors import KNeighborsClassifier

    correct = 0
    for train, test in folds:
        knn = KNeighborsClassifier(n_neighbors=5, metric="precomputed")
        knn.fit(dist[np.ix_(train, train)], y[train])
        correct += int(np.sum(knn.predict(dist[np.ix_(test, train)]) == y[test]))
    return correct / y.size


def _logreg_cv_accuracy(features: np.ndarray, y: np.ndarray, folds) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    correct = 0
    for train, test in folds:
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
        model.fit(features[train], y[train])
        correct += int(np.sum(model.predict(features[test]) == y[test]))
    return correct / y.size


def _lcot_knn_distances(measures: list) -> np.ndarray:
    """The k-NN input of the LCOT arm: all-pairs LCOT on the M = 1000 grid."""
    return lcot_pairwise(embed_measures(measures, grid_size=1000))


@claim(
    rule=("diff_lcot_cot >= -0.05 and diff_lcot_ot_cut > 0 and diff_lcot_hist_l2 > 0 "
          "and diff_logreg_lcot_hist >= 0"),
    control="acc_lcot_shuffled <= 0.4 and diff_cot_ot_cut > 0 and diff_cot_hist_l2 > 0",
    paper="Exp. 2 (MDS figure): on six classes of empirical circular measures, LCOT separates the "
          "classes as well as COT and better than OT cut at 0 and the Euclidean (histogram) "
          "distance. Qualitative: the paper reports no accuracy.",
    against=("5-NN on COT (POT), OT cut at 0 and histogram-L2 distances with the same folds; "
             "logistic regression on 64-bin histograms; controls: LCOT 5-NN on shuffled labels, "
             "COT (the geometry LCOT linearises) against the cut and the histograms"),
)
def classification(scale: Scale, seed: int, progress=None) -> Measurement:
    """Six-class Experiment 2 data, 5-fold stratified CV: 5-NN on precomputed LCOT, COT, OT cut at
    0 and 360-bin histogram L2 distances, plus logistic regression on the raw LCOT embedding
    (M = 256 grid points, to keep the fit cheap) vs on 64-bin histograms (the "linear
    embedding" benefit). The rule reads the paper's sentence whole: LCOT within 0.05 of COT,
    above OT cut at 0 and above histogram L2 (5-NN accuracy), and LCOT+logistic >= histogram+
    logistic; these thresholds are OUR operationalisation of the paper's qualitative MDS figure
    (the paper gives no accuracy). Each seed draws its own measures and folds; the differences
    are paired over seeds (95% t intervals at small, 3 seeds) and the rule reads their whole
    intervals. It fails when LCOT is worse than COT by more than 0.05, or not better than the
    cut or the histograms, over a whole interval.

    Control: (1) the null a sceptic tries on any CV accuracy - LCOT 5-NN with the labels
    shuffled (same folds) - must stay near chance (1/6; <= 0.4), else the pipeline leaks;
    (2) the positive control: COT itself, the geometry LCOT linearises, must beat the cut and
    the histograms on this test bed. When even COT does not separate the classes better than
    the cut at 0, accuracy cannot show LCOT doing so and the verdict is inconclusive ("the test
    bed cannot tell") rather than *fails*."""
    return _classification(scale, seed, progress)


def _classification(scale: Scale, seed: int, progress=None,
                    method_distances=_lcot_knn_distances) -> Measurement:
    """The body of :func:`classification`; ``method_distances(measures) -> (K, K)`` feeds the
    method's 5-NN (LCOT; the tests pass the null arm, OT cut at 0)."""
    from sklearn.manifold import MDS
    from sklearn.model_selection import StratifiedKFold

    from .baselines import circular_histogram

    progress = progress or (lambda *a, **k: None)
    n_per = sizes(scale, smoke=10, small=40, full=40)
    n_seeds = sizes(scale, smoke=1, small=3)
    per_seed: dict[str, list[float]] = {}
    for s in range(n_seeds):
        share = (s / n_seeds, 0.85 / n_seeds)
        measures, y = experiment2_measures(n_per, seed=seed + s)
        t0 = time.perf_counter()
        dists = {"lcot": method_distances(measures)}
        t_lcot = time.perf_counter() - t0
        t0 = time.perf_counter()
        dists["cot"] = cot_pairwise(measures, progress=lambda f, _o=share, _s=seed + s: progress(
            _o[0] + _o[1] * 0.8 * f, f"seed {_s}: COT pairs"))
        t_cot = time.perf_counter() - t0
        dists["ot_cut"] = ot_interval_pairwise(measures)
        dists["hist_l2"] = histogram_l2_pairwise(measures, n_bins=360)
        folds = list(StratifiedKFold(n_splits=5, shuffle=True,
                                     random_state=seed + s).split(np.zeros(y.size), y))
        acc = {name: _knn_cv_accuracy(d, y, folds) for name, d in dists.items()}
        shuffled = np.random.default_rng(seed + s).permutation(y)
        acc["lcot_shuffled"] = _knn_cv_accuracy(dists["lcot"], shuffled, folds)
        hist64 = np.stack([circular_histogram(m, n_bins=64) for m in measures])
        emb_lr = embed_measures(measures, grid_size=_LOGREG_GRID)
        acc["lcot_logreg"] = _logreg_cv_accuracy(emb_lr, y, folds)
        acc["hist_logreg"] = _logreg_cv_accuracy(hist64, y, folds)
        acc["time_lcot_matrix_s"], acc["time_cot_matrix_s"] = t_lcot, t_cot
        for name, value in acc.items():
            per_seed.setdefault(name, []).append(value)
        if s == 0:
            first = (dists, y, dict(acc))
    dists, y, acc = first
    progress(0.85, "MDS")

    Figure = _figure()
    fig = Figure(figsize=(15.0, 3.6))
    ax = fig.add_subplot(1, 5, 1)
    names = ["LCOT", "COT", "OT cut 0", "hist L2", "LCOT+LR", "hist64+LR"]
    vals = [acc["lcot"], acc["cot"], acc["ot_cut"], acc["hist_l2"], acc["lcot_logreg"],
            acc["hist_logreg"]]
    ax.bar(range(len(vals)), vals, color=["C0", "C1", "C2", "C3", "C0", "C3"])
    ax.set_xticks(range(len(vals)), names, rotation=45, ha="right")
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("5-fold CV accuracy")
    ax.set_title(f"k-NN (k=5) / logistic regression, seed {seed}")
    titles = {"lcot": "MDS: LCOT", "cot": "MDS: COT", "ot_cut": "MDS: OT cut at 0",
              "hist_l2": "MDS: histogram L2"}
    for p, (name, d) in enumerate(dists.items()):
        mds = MDS(n_components=2, metric="precomputed", random_state=seed, n_init=1,
                  init="classical_mds")
        xy = mds.fit_transform(d)
        axm = fig.add_subplot(1, 5, p + 2)
        for c, cname in enumerate(EXPERIMENT2_CLASSES):
            sel = y == c
            axm.scatter(xy[sel, 0], xy[sel, 1], s=8, label=cname)
        axm.set_title(titles[name])
        axm.set_xticks([])
        axm.set_yticks([])
    fig.axes[-1].legend(fontsize=6, loc="best")
    fig.tight_layout()
    progress(1.0, "done")
    metrics = {f"acc_{name}" if not name.startswith("time") else name: seed_metric(vals)
               for name, vals in per_seed.items()}
    metrics.update(
        # same measures and folds for every method within a seed: paired differences
        diff_lcot_cot=seed_difference(per_seed["lcot"], per_seed["cot"]),
        diff_lcot_ot_cut=seed_difference(per_seed["lcot"], per_seed["ot_cut"]),
        diff_lcot_hist_l2=seed_difference(per_seed["lcot"], per_seed["hist_l2"]),
        diff_cot_ot_cut=seed_difference(per_seed["cot"], per_seed["ot_cut"]),
        diff_cot_hist_l2=seed_difference(per_seed["cot"], per_seed["hist_l2"]),
        diff_logreg_lcot_hist=seed_difference(per_seed["lcot_logreg"], per_seed["hist_logreg"]),
        n_measures=len(y), n_seeds=n_seeds)
    rows = [{"seed": seed + i, **{k: round(v[i], 4) for k, v in per_seed.items()}}
            for i in range(n_seeds)]
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_per_seed": rows},
        notes="Accuracies are our operationalisation of the paper's qualitative MDS figure. "
              "COT pairs are batched through POT's vectorised binary search (zero-mass padding). "
              f"Each of {n_seeds} seed(s) draws {len(y)} new measures and its own 5-fold split; "
              "differences are paired over seeds and read as whole intervals by the rule. The "
              "figure shows the first seed.",
    )
