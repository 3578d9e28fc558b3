"""VertiBench claims: alpha controls party importance, beta controls inter-party correlation,
and VFL algorithms differ in their sensitivity to both (laptop-scale, scikit-learn data).

Every claim measures a null arm in the same run and its ``control`` requires that the null does
not pass the rule: random equal-size splits (blind to alpha and beta, the usual benchmark
practice) drawn at every alpha (``alpha_controls_importance``), at every beta
(``beta_controls_correlation``), and as two groups whose gap difference is split noise alone
(``algorithm_sensitivity``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import pairwise

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes
from iclr24.kits.statistics import difference_interval as _diff_ci
from iclr24.kits.statistics import mean_interval as _mean_ci
from iclr24.kits.threads import single_threaded


def _tag(value: float) -> str:
    return f"{value:g}".replace(".", "p").replace("-", "m")


def _r(x: float, nd: int = 4) -> float:
    return round(float(x), nd)


def _children(seed: int, n: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(n)]


# ----------------------------------------------------------------------------- claim 1
def _importance_rule_metrics(alpha_hats: dict[float, list[float]],
                             share_stds: dict[float, list[float]]) -> dict[str, float]:
    """What claim 1's rule reads, from the splits drawn at each requested alpha: Spearman
    correlation of log alpha with log alpha_hat over all splits, and whether the mean std of
    the importance shares decreases strictly from one alpha to the next (alphas ascending)."""
    from scipy.stats import spearmanr

    alphas = sorted(alpha_hats)
    log_a = np.concatenate([[math.log(a)] * len(alpha_hats[a]) for a in alphas])
    log_ahat = np.log(np.concatenate([alpha_hats[a] for a in alphas]))
    rho = float(spearmanr(log_a, log_ahat).statistic)
    std_means = [float(np.mean(share_stds[a])) for a in alphas]
    return {"spearman_log_alpha": 0.0 if math.isnan(rho) else rho,  # NaN: alpha_hat constant
            "share_std_decreasing": float(all(x > y for x, y in pairwise(std_means)))}


def _alpha_controls_importance(scale: Scale, seed: int,
                              progress: Callable[..., None] = lambda *a, **k: None
                              ) -> Measurement:
    """Breast cancer (569 x 30), K = 4 parties: importance splits at several alpha, Shapley
    importance of a standardised logistic regression (shap Permutation explainer) per party,
    alpha_hat per split; random equal-size splits (the usual benchmark practice), drawn at every
    alpha, as the null arm."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from .party_importance import (
        estimate_alpha,
        feature_shapley,
        importance_shares,
        party_importance_from_shapley,
    )
    from .splitters import ImportanceSplitter, RandomEqualSplitter

    K = 4
    alphas = sizes(scale, smoke=[0.1, 100.0], small=[0.1, 1.0, 10.0, 100.0])
    n_splits = sizes(scale, smoke=3, small=10)
    n_explain = sizes(scale, smoke=20, small=40)
    background = sizes(scale, smoke=50, small=100)

    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(X, y)
    progress(0.05, "Shapley values")
    # Shapley values of the fixed model do not depend on the split: compute once, sum per party
    phi = feature_shapley(lambda Z: model.predict_proba(Z)[:, 1], X, n_explain, seed=seed,
                          background_size=background)
    progress(0.6, "splits")
    rngs = _children(seed, len(alphas) + 1)

    def measure(splitter) -> tuple[list[float], list[float], list[float]]:
        ahat, sstd, smax = [], [], []
        for _ in range(n_splits):
            parts = splitter.split_indices(X.shape[1])
            imp = party_importance_from_shapley(phi, parts)
            shares = importance_shares(imp)
            ahat.append(estimate_alpha(imp))
            sstd.append(float(np.std(shares)))
            smax.append(float(shares.max()))
        return ahat, sstd, smax

    per_alpha = {a: measure(ImportanceSplitter(K, a, rng=r)) for a, r in zip(alphas, rngs)}
    # null arm: a splitter that ignores alpha (random equal-size splits), drawn as many times
    # at every alpha as the method and read by the same rule
    null_splitter = RandomEqualSplitter(K, rng=rngs[-1])
    null_alpha = {a: measure(null_splitter) for a in alphas}
    rand = tuple([v for a in alphas for v in null_alpha[a][i]] for i in range(3))

    metrics: dict[str, float] = _importance_rule_metrics(
        {a: per_alpha[a][0] for a in alphas}, {a: per_alpha[a][1] for a in alphas})
    null_metrics = _importance_rule_metrics(
        {a: null_alpha[a][0] for a in alphas}, {a: null_alpha[a][1] for a in alphas})
    metrics.update({f"null_{k}": v for k, v in null_metrics.items()})
    rho = metrics["spearman_log_alpha"]
    std_means = [float(np.mean(per_alpha[a][1])) for a in alphas]
    rows, diffs = [], []
    for a in alphas:
        ahat, sstd, smax = per_alpha[a]
        lm, llo, lhi = _mean_ci(np.log10(ahat))
        sm, slo, shi = _mean_ci(sstd)
        metrics[f"share_std_alpha_{_tag(a)}"] = sm
        metrics[f"median_alpha_hat_alpha_{_tag(a)}"] = float(np.median(ahat))
        rows.append({"split": f"importance alpha={a:g}", "n_splits": n_splits,
                     "median_alpha_hat": _r(np.median(ahat), 3),
                     "log10_alpha_hat": _r(lm, 3), "log10_alpha_hat_ci": f"[{llo:.2f}, {lhi:.2f}]",
                     "share_std": _r(sm), "share_std_ci": f"[{slo:.4f}, {shi:.4f}]",
                     "max_share": _r(np.mean(smax))})
    ahat, sstd, smax = rand
    sm, slo, shi = _mean_ci(sstd)
    metrics["share_std_random_equal"] = sm
    metrics["median_alpha_hat_random_equal"] = float(np.median(ahat))
    rows.append({"split": "random equal-size (null arm, all alphas)", "n_splits": len(sstd),
                 "median_alpha_hat": _r(np.median(ahat), 3),
                 "log10_alpha_hat": _r(np.mean(np.log10(ahat)), 3), "log10_alpha_hat_ci": "",
                 "share_std": _r(sm), "share_std_ci": f"[{slo:.4f}, {shi:.4f}]",
                 "max_share": _r(np.mean(smax))})
    for a_lo, a_hi in pairwise(alphas):
        d, lo, hi = _diff_ci(per_alpha[a_lo][1], per_alpha[a_hi][1])
        diffs.append({"difference": f"share_std(alpha={a_lo:g}) - share_std(alpha={a_hi:g})",
                      "mean": _r(d), "ci95": f"[{lo:.4f}, {hi:.4f}]"})

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    for a in alphas:
        ax1.scatter([a] * n_splits, per_alpha[a][0], s=14, alpha=0.7)
    ax1.plot([min(alphas), max(alphas)], [min(alphas), max(alphas)], "k--", lw=1,
             label="alpha_hat = alpha")
    ax1.axhspan(min(rand[0]), max(rand[0]), color="grey", alpha=0.2,
                label="random equal splits")
    ax1.set(xscale="log", yscale="log", xlabel="alpha (generator)",
            ylabel="alpha_hat (Shapley importance)", title=f"Spearman = {rho:.2f}")
    ax1.legend(fontsize=8)
    errs = [[m - _mean_ci(per_alpha[a][1])[1] for a, m in zip(alphas, std_means)],
            [_mean_ci(per_alpha[a][1])[2] - m for a, m in zip(alphas, std_means)]]
    ax2.errorbar(alphas, std_means, yerr=errs, marker="o", capsize=3, label="importance split")
    ax2.axhline(metrics["share_std_random_equal"], color="grey", ls=":",
                label="random equal split")
    ax2.set(xscale="log", xlabel="alpha", ylabel="std of party importance shares",
            title="Importance imbalance vs alpha (K=4)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    progress(1.0, "done")
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"importance_by_alpha": rows, "share_std_differences": diffs},
        notes=(f"breast_cancer 569x30, K={K}, {n_splits} splits per alpha, Shapley values of a "
               f"standardised logistic regression (P(y=1)) on {n_explain} sampled rows with a "
               f"{background}-row background; computed once because Shapley values of a fixed "
               "model do not depend on the split. alpha_hat clipped to [1e-3, 1e3]. With only "
               "30 features the multinomial assignment noise (and the one-feature-per-party "
               "pre-assignment) caps how balanced a split can be, so alpha_hat saturates for "
               "large alpha; the paper's datasets have many more features."),
    )


@claim(
    rule="spearman_log_alpha >= 0.7 and share_std_decreasing >= 1",
    # the null arm (random equal-size splits drawn at every alpha, same count) must not pass
    control="not (null_spearman_log_alpha >= 0.7 and null_share_std_decreasing >= 1)",
    paper="Sec. 3.1 / Fig. 3: splits drawn with Dirichlet concentration alpha give party "
          "importance shares that follow Dir(alpha): small alpha -> one dominant party, large "
          "alpha -> balanced parties; alpha is recoverable from measured Shapley importance "
          "(alpha_hat). Spec expectation: Spearman(log alpha, log alpha_hat) >= 0.7 and the "
          "std of importance shares decreasing in alpha.",
    against=("the requested alpha (rank correlation with alpha_hat); null arm: random "
             "equal-size splits (the usual practice, blind to alpha) drawn at every alpha and "
             "read by the same rule"),
)
def alpha_controls_importance(scale: Scale, seed: int,
                              progress: Callable[..., None] = lambda *a, **k: None) -> Measurement:
    """Breast cancer (569 x 30), K = 4 parties: importance splits at several alpha, Shapley
    importance of a standardised logistic regression (shap Permutation explainer) per party,
    alpha_hat per split; random equal-size splits (the usual benchmark practice), drawn at every
    alpha, as the null arm."""
    with single_threaded():
        return _alpha_controls_importance(scale, seed, progress)



# ----------------------------------------------------------------------------- claim 2
def _correlation_rule_metrics(beta_hats: dict[float, list[float]],
                              icors: dict[float, list[float]]) -> dict[str, float]:
    """What claim 2's rule reads for one dataset, from the splits made at each requested beta:
    the largest |beta_hat - beta| and whether the mean Icor increases strictly with beta."""
    betas = sorted(beta_hats)
    means = [float(np.mean(icors[b])) for b in betas]
    return {"max_abs_beta_error": float(max(abs(v - b) for b in betas for v in beta_hats[b])),
            "icor_increasing": float(all(x < y for x, y in pairwise(means)))}


def _beta_datasets(scale: Scale) -> dict[str, np.ndarray]:
    from sklearn.datasets import load_breast_cancer, make_classification

    Xs, _ = make_classification(n_samples=1000, n_features=24, n_informative=8,
                                n_redundant=8, random_state=0)
    return {"synthetic_24": Xs, "breast_cancer": load_breast_cancer(return_X_y=True)[0]}


def _beta_controls_correlation(scale: Scale, seed: int,
                              progress: Callable[..., None] = lambda *a, **k: None
                              ) -> Measurement:
    """make_classification (1000 x 24) and breast cancer (569 x 30), K = 3 parties: fit the
    Icor extremes with BRKGA, split at each beta, measure Icor and beta_hat; random equal-size
    splits as the baseline and, drawn at every beta, as the null arm."""
    from .splitters import (
        PAPER_FIT_BRKGA,
        PAPER_SPLIT_BRKGA,
        BRKGAConfig,
        CorrelationSplitter,
        RandomEqualSplitter,
    )

    K = 3
    betas = sizes(scale, smoke=[0.0, 1.0], small=[0.0, 0.25, 0.5, 0.75, 1.0])
    n_ga_seeds = sizes(scale, smoke=1, small=3)
    n_random = sizes(scale, smoke=10, small=50)
    reduced = BRKGAConfig(20, 60, 10, 0.7, 20)
    fit_cfg = sizes(scale, smoke=reduced, small=PAPER_FIT_BRKGA)
    split_cfg = sizes(scale, smoke=BRKGAConfig(20, 60, 10, 0.7, 20, ftol=1e-4, period=10),
                      small=PAPER_SPLIT_BRKGA)
    data = _beta_datasets(scale)
    rngs = _children(seed, 2 * len(data))

    rows, diffs = [], []
    errors: list[float] = []
    increasing = True
    null_errors: list[float] = []
    null_increasing = True
    metrics: dict[str, float] = {}
    curves = {}
    for di, (name, X) in enumerate(data.items()):
        progress(di / len(data), f"fit {name}")
        splitter = CorrelationSplitter(K, rng=rngs[2 * di], fit_brkga=fit_cfg,
                                       split_brkga=split_cfg).fit(X)
        icors: dict[float, list[float]] = {}
        bhats: dict[float, list[float]] = {}
        for b in betas:
            icors[b], bhats[b] = [], []
            for _ in range(n_ga_seeds):
                splitter.split_indices(b)
                icors[b].append(splitter.best_icor_)
                bhats[b].append(splitter.best_beta_)
        rand = RandomEqualSplitter(K, rng=rngs[2 * di + 1])
        rand_icor = [splitter.icor_of(rand.split_indices(X.shape[1])) for _ in range(n_random)]
        rand_beta = [splitter.beta_of(rand.split_indices(X.shape[1])) for _ in range(n_random)]
        # null arm: a splitter blind to beta (random equal-size splits), as many splits at
        # every requested beta as the method, read by the same rule
        null_parts = {b: [rand.split_indices(X.shape[1]) for _ in range(n_ga_seeds)]
                      for b in betas}
        null_part = _correlation_rule_metrics(
            {b: [splitter.beta_of(p) for p in null_parts[b]] for b in betas},
            {b: [splitter.icor_of(p) for p in null_parts[b]] for b in betas})
        null_errors.append(null_part["max_abs_beta_error"])
        null_increasing = null_increasing and bool(null_part["icor_increasing"])
        means = [float(np.mean(icors[b])) for b in betas]
        rule_part = _correlation_rule_metrics(bhats, icors)
        errors.append(rule_part["max_abs_beta_error"])
        increasing = increasing and bool(rule_part["icor_increasing"])
        metrics[f"icor_min_{name}"] = splitter.icor_min_
        metrics[f"icor_max_{name}"] = splitter.icor_max_
        metrics[f"random_beta_lo_{name}"] = float(np.min(rand_beta))
        metrics[f"random_beta_hi_{name}"] = float(np.max(rand_beta))
        metrics[f"generated_beta_span_{name}"] = float(
            np.mean(bhats[betas[-1]]) - np.mean(bhats[betas[0]]))
        for b in betas:
            m, lo, hi = _mean_ci(icors[b])
            bm, blo, bhi = _mean_ci(bhats[b])
            rows.append({"dataset": name, "split": f"correlation beta={b:g}",
                         "n": n_ga_seeds, "icor": _r(m), "icor_ci": f"[{lo:.4f}, {hi:.4f}]",
                         "beta_hat": _r(bm, 3), "beta_hat_ci": f"[{blo:.3f}, {bhi:.3f}]",
                         "max_abs_error": _r(max(abs(v - b) for v in bhats[b]), 3)})
        m, lo, hi = _mean_ci(rand_icor)
        bm, blo, bhi = _mean_ci(rand_beta)
        rows.append({"dataset": name, "split": "random equal-size (baseline)", "n": n_random,
                     "icor": _r(m), "icor_ci": f"[{lo:.4f}, {hi:.4f}]", "beta_hat": _r(bm, 3),
                     "beta_hat_ci": f"[{blo:.3f}, {bhi:.3f}]",
                     "max_abs_error": f"range [{min(rand_beta):.3f}, {max(rand_beta):.3f}]"})
        for b_lo, b_hi in pairwise(betas):
            d, lo, hi = _diff_ci(icors[b_hi], icors[b_lo])
            diffs.append({"dataset": name,
                          "difference": f"Icor(beta={b_hi:g}) - Icor(beta={b_lo:g})",
                          "mean": _r(d), "ci95": f"[{lo:.4f}, {hi:.4f}]"})
        curves[name] = (means, [float(np.mean(bhats[b])) for b in betas], rand_beta,
                        splitter.icor_min_, splitter.icor_max_)
    metrics["max_abs_beta_error"] = float(max(errors))
    metrics["icor_increasing"] = float(increasing)
    metrics["null_max_abs_beta_error"] = float(max(null_errors))
    metrics["null_icor_increasing"] = float(null_increasing)

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    for name, (means, bh, rand_beta, lo, hi) in curves.items():
        line = ax1.plot(betas, means, marker="o", label=name)[0]
        ax1.axhline(lo, color=line.get_color(), ls=":", lw=0.8)
        ax1.axhline(hi, color=line.get_color(), ls=":", lw=0.8)
        ax2.plot(betas, bh, marker="o", color=line.get_color(), label=f"{name} (generated)")
        ax2.axhspan(min(rand_beta), max(rand_beta), color=line.get_color(), alpha=0.15,
                    label=f"{name} random splits")
    ax1.set(xlabel="beta (requested)", ylabel="Icor of the split",
            title="Icor vs beta (dotted: fitted Icor min/max)")
    ax1.legend(fontsize=8)
    ax2.plot([0, 1], [0, 1], "k--", lw=1)
    ax2.set(xlabel="beta (requested)", ylabel="beta_hat (measured)",
            title="Requested vs measured beta")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    progress(1.0, "done")
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"icor_by_beta": rows, "icor_differences": diffs},
        notes=(f"K={K}; BRKGA fit {fit_cfg.n_elites}/{fit_cfg.n_offsprings}/{fit_cfg.n_mutants} "
               f"x {fit_cfg.n_gen} generations, split {split_cfg.n_elites}/"
               f"{split_cfg.n_offsprings}/{split_cfg.n_mutants} <= {split_cfg.n_gen} "
               f"generations (ftol {split_cfg.ftol}); {n_ga_seeds} GA seed(s) per beta. "
               "beta_hat is measured against the Icor extremes found by the same fit, so it is "
               "clipped to [0, 1]; a split GA that beats the fitted extreme scores exactly 0 "
               "or 1. Random equal-size splits show the narrow beta range of the usual "
               "practice. The extremes beta = 0 and 1 are the hard targets: the split search "
               "(population 100, early stop when the best value improves < 1e-4 in 10 "
               "generations) must match an extreme found by the 10x larger fit search, so "
               "the largest |beta_hat - beta| sits at beta = 0 or 1 when it is large."),
    )


@claim(
    rule="max_abs_beta_error <= 0.1 and icor_increasing >= 1",
    # the null arm (random equal-size splits at every beta, same count) must not pass
    control="not (null_max_abs_beta_error <= 0.1 and null_icor_increasing >= 1)",
    paper="Sec. 3.2 / Fig. 4: the correlation-based split (BRKGA over feature permutations) "
          "reaches a requested beta in [0, 1] between the minimum and maximum Icor, covering a "
          "much wider range of inter-party correlation than random splits or real VFL "
          "datasets. Spec expectation: |beta_hat - beta| <= 0.1 and Icor strictly increasing "
          "in beta.",
    against=("the requested beta and the BRKGA-fitted Icor extremes; null arm: random "
             "equal-size splits (blind to beta) at every beta, read by the same rule"),
)
def beta_controls_correlation(scale: Scale, seed: int,
                              progress: Callable[..., None] = lambda *a, **k: None) -> Measurement:
    """make_classification (1000 x 24) and breast cancer (569 x 30), K = 3 parties: fit the
    Icor extremes with BRKGA, split at each beta, measure Icor and beta_hat; random equal-size
    splits as the baseline and, drawn at every beta, as the null arm."""
    with single_threaded():
        return _beta_controls_correlation(scale, seed, progress)



# ----------------------------------------------------------------------------- claim 3
def _algorithm_sensitivity(scale: Scale, seed: int,
                          progress: Callable[..., None] = lambda *a, **k: None
                          ) -> Measurement:
    """Digits (1797 x 64), K = 4: SplitNN vs a stacking local ensemble on importance splits
    (alpha sweep) and correlation splits (beta sweep); gap = acc(SplitNN) - acc(LocalEnsemble)
    with 95% intervals over independent splits; null arm: the same gap difference between two
    groups of random equal-size splits."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from .splitters import (
        PAPER_FIT_BRKGA,
        PAPER_SPLIT_BRKGA,
        BRKGAConfig,
        CorrelationSplitter,
        ImportanceSplitter,
        RandomEqualSplitter,
        apply_split,
    )
    from .vfl_models import LocalEnsemble, SplitNN

    K = 4
    alphas = sizes(scale, smoke=[0.1, 100.0], small=[0.1, 1.0, 100.0])
    betas = sizes(scale, smoke=[0.0, 1.0], small=[0.0, 0.5, 1.0])
    n_splits = sizes(scale, smoke=2, small=5)
    epochs = sizes(scale, smoke=15, small=40)
    n_train = sizes(scale, smoke=500, small=None)  # None: all 1347 training rows
    cv = sizes(scale, smoke=2, small=5)
    fit_cfg = sizes(scale, smoke=BRKGAConfig(20, 60, 10, 0.7, 20), small=PAPER_FIT_BRKGA)
    split_cfg = sizes(scale, smoke=BRKGAConfig(20, 60, 10, 0.7, 20, ftol=1e-4, period=10),
                      small=PAPER_SPLIT_BRKGA)

    X, y = load_digits(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y,
                                              random_state=seed)
    if n_train is not None:
        X_tr, y_tr = X_tr[:n_train], y_tr[:n_train]
    rngs = _children(seed, len(alphas) + 3)
    n_total = (len(alphas) + len(betas) + 2) * n_splits
    done = 0

    def evaluate(parts, run_seed: int) -> tuple[float, float]:
        nonlocal done
        tr, te = apply_split(X_tr, parts), apply_split(X_te, parts)
        acc_s = SplitNN(epochs=epochs, batch_size=128, seed=run_seed).fit(tr, y_tr).score(te, y_te)
        acc_l = LocalEnsemble(cv=cv, seed=run_seed).fit(tr, y_tr).score(te, y_te)
        done += 1
        progress(0.1 + 0.9 * done / n_total, f"split {done}/{n_total}")
        return acc_s, acc_l

    results: dict[str, tuple[list[float], list[float], list[float]]] = {}
    run_seed = int(rngs[-1].integers(2**31 - 1))
    for a, r in zip(alphas, rngs):
        splitter = ImportanceSplitter(K, a, rng=r)
        accs = [evaluate(splitter.split_indices(X.shape[1]), run_seed + i)
                for i in range(n_splits)]
        results[f"alpha={a:g}"] = ([s for s, _ in accs], [l for _, l in accs],
                                   [s - l for s, l in accs])
    corr_splitter = CorrelationSplitter(K, rng=rngs[len(alphas)], fit_brkga=fit_cfg,
                                        split_brkga=split_cfg).fit(X_tr)
    beta_hats: dict[float, list[float]] = {}
    for b in betas:
        accs, beta_hats[b] = [], []
        for i in range(n_splits):
            parts = corr_splitter.split_indices(b)
            beta_hats[b].append(corr_splitter.best_beta_)
            accs.append(evaluate(parts, run_seed + i))
        results[f"beta={b:g}"] = ([s for s, _ in accs], [l for _, l in accs],
                                  [s - l for s, l in accs])

    # null arm: two groups of random equal-size splits (blind to alpha and beta), as many as
    # one setting; their gap difference is what split-to-split noise alone gives
    null_splitter = RandomEqualSplitter(K, rng=rngs[len(alphas) + 1])
    for key in ("random A (null)", "random B (null)"):
        accs = [evaluate(null_splitter.split_indices(X.shape[1]), run_seed + i)
                for i in range(n_splits)]
        results[key] = ([s for s, _ in accs], [l for _, l in accs], [s - l for s, l in accs])

    rows = []
    for key, (s, l, g) in results.items():
        sm, slo, shi = _mean_ci(s)
        lm, llo, lhi = _mean_ci(l)
        gm, glo, ghi = _mean_ci(g)
        row = {"split": key, "n_splits": len(g), "splitnn_acc": _r(sm),
               "splitnn_ci": f"[{slo:.4f}, {shi:.4f}]", "local_ensemble_acc": _r(lm),
               "local_ensemble_ci": f"[{llo:.4f}, {lhi:.4f}]", "gap": _r(gm),
               "gap_ci": f"[{glo:.4f}, {ghi:.4f}]"}
        if key.startswith("beta="):
            row["beta_hat"] = _r(np.mean(beta_hats[float(key[5:])]), 3)
        rows.append(row)
    a_small, a_large = f"alpha={alphas[0]:g}", f"alpha={alphas[-1]:g}"
    b_low, b_high = f"beta={betas[0]:g}", f"beta={betas[-1]:g}"
    # independent splits per setting: Welch intervals, read whole by the rule
    alpha_diff = Estimate.difference(results[a_large][2], results[a_small][2])
    beta_diff = Estimate.difference(results[b_low][2], results[b_high][2])
    ad, adlo, adhi = alpha_diff.value, alpha_diff.low, alpha_diff.high
    bd, bdlo, bdhi = beta_diff.value, beta_diff.low, beta_diff.high
    null_diff = Estimate.difference(results["random B (null)"][2], results["random A (null)"][2])
    split_means = [float(np.mean(results[k][0])) for k in results if "null" not in k]
    metrics = {
        "gap_alpha_small": float(np.mean(results[a_small][2])),
        "gap_alpha_large": float(np.mean(results[a_large][2])),
        "gap_beta_low": float(np.mean(results[b_low][2])),
        "gap_beta_high": float(np.mean(results[b_high][2])),
        "gap_alpha_diff": alpha_diff, "gap_beta_diff": beta_diff,
        "null_gap_diff": null_diff, "null_gap_diff_low": null_diff.low,
        "splitnn_acc_range": max(split_means) - min(split_means),
        "splitnn_acc_mean": float(np.mean(split_means)),
        "local_ensemble_acc_mean": float(np.mean([np.mean(results[k][1]) for k in results
                                                  if "null" not in k])),
    }
    diffs = [
        {"difference": f"gap({a_large}) - gap({a_small})", "mean": _r(ad),
         "ci95": f"[{adlo:.4f}, {adhi:.4f}]"},
        {"difference": f"gap({b_low}) - gap({b_high})", "mean": _r(bd),
         "ci95": f"[{bdlo:.4f}, {bdhi:.4f}]"},
        {"difference": "gap(random B) - gap(random A) (null arm)", "mean": _r(null_diff.value),
         "ci95": f"[{null_diff.low:.4f}, {null_diff.high:.4f}]"},
    ]

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    axes = fig.subplots(1, 2)
    for ax, keys, xs, xlabel, xscale in (
            (axes[0], [f"alpha={a:g}" for a in alphas], alphas, "alpha (importance split)", "log"),
            (axes[1], [f"beta={b:g}" for b in betas], betas, "beta (correlation split)",
             "linear")):
        for idx, label in ((0, "SplitNN"), (1, "LocalEnsemble")):
            cis = [_mean_ci(results[k][idx]) for k in keys]
            ax.errorbar(xs, [c[0] for c in cis],
                        yerr=[[c[0] - c[1] for c in cis], [c[2] - c[0] for c in cis]],
                        marker="o", capsize=3, label=label)
        ax.set(xscale=xscale, xlabel=xlabel, ylabel="test accuracy (digits, K=4)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    progress(1.0, "done")
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"accuracy_by_split": rows, "gap_differences": diffs},
        notes=(f"digits 1797x64 (75/25 stratified split, {len(y_tr)} training rows used), K={K}, "
               f"{n_splits} independent splits per setting; SplitNN: per-party MLP encoders + MLP "
               f"top model, Adam, {epochs} epochs, batch 128; LocalEnsemble: per-party logistic "
               f"regression stacked by a logistic regression on {cv}-fold out-of-fold "
               "log-probabilities. Correlation splits fitted on the "
               "training rows. Intervals: 95% t (per setting) and Welch (differences). This is "
               "an analogue of the paper's benchmark (its algorithms and datasets are not "
               "reproduced), testing the directions the spec expects. On digits a stacked "
               "combiner over per-party class probabilities already recovers most of what the "
               "joint model learns, so differences between split settings are small relative "
               "to split-to-split variation at 5 splits per setting."),
    )


@claim(
    rule="gap_alpha_diff > 0 and gap_beta_diff > 0 and splitnn_acc_range <= 0.03",
    # the null arm (two groups of alpha/beta-blind random splits) must not clear zero: a plain
    # bound, because `not (null_gap_diff > 0)` is unknown whenever the null behaves (spans 0)
    control="null_gap_diff_low <= 0",
    paper="Sec. 5 / Fig. 5-6: VFL algorithms differ in how they react to party importance "
          "(alpha) and inter-party correlation (beta); SplitNN, which learns cross-party "
          "interactions jointly, is comparatively robust, while methods built on local models "
          "suffer when information is spread across parties. The paper gives no direction "
          "for the gap tested here: the directions (gap = acc(SplitNN) - acc(LocalEnsemble) "
          "larger for balanced importance and for low inter-party correlation; SplitNN flat) "
          "are our hypothesis, written down before running, not a paper number (an audit that "
          "used the official vertibench 0.1.2 splitters found it fails there too).",
    against=("a stacking LocalEnsemble of per-party logistic regressions on the same splits, its "
             "gap to SplitNN compared across alpha and beta; null arm: the same gap difference "
             "between two groups of random equal-size splits"),
)
def algorithm_sensitivity(scale: Scale, seed: int,
                          progress: Callable[..., None] = lambda *a, **k: None) -> Measurement:
    """Digits (1797 x 64), K = 4: SplitNN vs a stacking local ensemble on importance splits
    (alpha sweep) and correlation splits (beta sweep); gap = acc(SplitNN) - acc(LocalEnsemble)
    with 95% intervals over independent splits.

    The expected direction of the gaps is our hypothesis, not a number or statement of the
    paper (its Figs. 5-6 show per-algorithm accuracies against alpha and beta on other data
    and algorithms); an audit with the official package's splitters found that it fails there
    too."""
    with single_threaded():
        return _algorithm_sensitivity(scale, seed, progress)
