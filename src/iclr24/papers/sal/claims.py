"""SAL claims: the gradient filter separates the wild outliers better than a gradient-norm or a
random filter, and the detector learned from its candidates beats post-hoc scores and
all-wild-as-OOD training in FPR95. Smoke: the synthetic Gaussian mixture (one seed); small:
digits 0-5 ID vs 6-9 OOD at pi = 0.1, ten seeds (splits, mixture and models all reseeded).
Each claim measures a null arm in the same run and its ``control`` requires that the null does
not pass the rule: random directions in place of the singular vectors (filter) and random wild
points in place of the candidates (detector)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    assess_rule,
    claim,
    seed_difference,
    seed_metric,
    sizes,
)

_FILTER_RULE = "f1_gain_vs_gradnorm > 0 and f1_gain_vs_random > 0"
_DETECTION_RULE = "fpr95_gain_vs_msp > 0 and fpr95_gain_vs_energy > 0 and fpr95_gain_vs_naive > 0"


def _mixture_and_classifier(scale: Scale, seed: int):
    from iclr24.kits.small_classifiers import MLPTrainer

    from .wild_data import digits_wild_mixture, gaussian_wild_mixture

    if sizes(scale, smoke=True, small=False):
        data = gaussian_wild_mixture(n_id=600, n_wild=600, pi=0.1, n_test_id=400,
                                     n_test_ood=200, seed=seed)
    else:
        data = digits_wild_mixture(pi=0.1, seed=seed)
    trainer = MLPTrainer(hidden=(128, 128), epochs=sizes(scale, smoke=10, small=50), lr=1e-3,
                         batch_size=64, num_classes=data.num_classes)
    return data, trainer(data.X_id, data.y_id, rng=seed)


def _seeds(scale: Scale, seed: int) -> list[int]:
    return [seed * 1000 + k for k in range(sizes(scale, smoke=1, small=10))]


def _null_fails(rule: str, prefix: str):
    """A control: ``rule`` read on the null arm's metrics (``prefix + name``) is not true."""
    def control(m) -> bool:
        return assess_rule(rule, {k: m[prefix + k] for k in m if prefix + k in m})[0] \
            is not True

    control.__doc__ = f"the null arm ({prefix}*) does not pass `{rule}`"
    return control


def _random_direction_scores(g, labels, means, directions) -> np.ndarray:
    """The null arm of the filter: tau with each class's top singular vector replaced by a
    fixed random unit direction, tau = <g - g_bar_c, u_c>^2."""
    return np.sum((g - means[labels]) * directions[labels], axis=1) ** 2


def _direction_cosine(g_w, pred, means) -> float:
    """Mean over predicted classes of |cos(v_c, g_bar_c)|: near 1, the top singular vector is
    the reference gradient's own direction and tau ranks the tail like the gradient norm."""
    cos = []
    for c in np.unique(pred):
        rows = pred == c
        if rows.sum() >= 3:
            v = np.linalg.svd(g_w[rows] - means[c], full_matrices=False)[2][0]
            cos.append(abs(v @ means[c]) / (np.linalg.norm(means[c]) + 1e-12))
    return float(np.mean(cos))


def _score_figure(title: str, threshold: float, id_scores, ood_scores, xlabel: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.2))
    ax = fig.add_subplot()
    lo = np.log10(max(1e-8, min(id_scores.min(), ood_scores.min())))
    hi = np.log10(max(id_scores.max(), ood_scores.max()) + 1e-8)
    bins = np.logspace(lo, hi, 40)
    ax.hist(id_scores, bins=bins, alpha=0.6, label="wild ID")
    ax.hist(ood_scores, bins=bins, alpha=0.6, label="wild OOD")
    ax.axvline(threshold, color="k", ls="--", label="T (ID 95th pct.)")
    ax.set(xscale="log", xlabel=xlabel, ylabel="count", title=title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@claim(
    rule=_FILTER_RULE,
    control=_null_fails(_FILTER_RULE, "randdir_"),
    paper="Sec. 3.1 / Thm. 1 and the filtering analysis: the projection of the centred "
          "last-layer gradients on their top singular vector separates the wild outliers with "
          "small error (the official toy script reports precision/recall/F1 of S_T against "
          "the truth, with a gradient-norm filter as ablation); on CIFAR the candidate set "
          "is accurate enough for state-of-the-art detection. No single F1 number is given "
          "for a setting comparable to ours.",
    against=("gradient-norm filter (same ID-percentile threshold) and a random filter of "
             "ceil(pi m) points, same mixture and classifier; null arm: SAL's filter with "
             "random directions in place of the top singular vectors"),
    resources={"cpus": 1},
)
def filter_quality(scale: Scale, seed: int) -> Measurement:
    """Precision / recall / F1 of three candidate sets on the same wild mixture and the same ID
    classifier: SAL (tau > T, T the 95th percentile of the labelled-ID scores), the
    gradient-norm filter (||g||^2 above the 95th percentile of its ID values) and a random
    filter (ceil(pi m) wild points; F1 ~ pi). The rule reads paired F1 differences over seeds;
    it fails when SAL is no better than gradient norm over the whole interval. The AUROC of
    each score on the wild truth, SAL's top-pi variant and ``direction_cos_to_mean`` (how
    parallel the wild top singular vectors are to the ID reference gradients) are reported
    beside, and ``sal_wild_id_flag_rate``: the wild-ID points above T (nominally 5%; more when
    the classifier fits its labelled ID set better than fresh ID points).

    Changed in the repair, before running it: 10 seeds at small (were 5; the F1 gains over
    gradient norm were one or two flagged points). Null arm (rule unchanged): the same filter with each class's top
    singular vector replaced by a fixed random unit direction (same centring, same ID-percentile
    threshold computed with those directions), ``randdir_*``. Control: that null does not pass
    the rule; if it did, the gain would come from centring and thresholding, not from the
    singular-vector projection the paper analyses, and the test bed could not tell."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _filter_quality(scale, seed)


def _filter_quality(scale: Scale, seed: int) -> Measurement:
    from sklearn.metrics import roc_auc_score

    from .detector import sal_filter
    from .gradient_filter import (
        filter_candidates,
        gradnorm_scores,
        last_layer_grad_rows,
    )
    from .gradient_filter import filter_quality as quality

    rows, fig = [], None
    for s in _seeds(scale, seed):
        data, clf = _mixture_and_classifier(scale, s)
        truth = data.wild_is_outlier
        res = sal_filter(clf, data.X_id, data.y_id, data.X_wild)
        g_id = last_layer_grad_rows(clf.features(data.X_id), clf.logits(data.X_id), data.y_id)
        g_w = last_layer_grad_rows(clf.features(data.X_wild), clf.logits(data.X_wild))
        gn_w = gradnorm_scores(g_w)
        gn_mask = filter_candidates(gn_w, threshold=float(np.quantile(gradnorm_scores(g_id),
                                                                       0.95)))
        rand_mask = filter_candidates(np.random.default_rng(s).random(len(truth)), pi=data.pi)
        dirs = np.random.default_rng([s, 1]).standard_normal(res.class_means.shape)
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        t_null = float(np.quantile(_random_direction_scores(g_id, data.y_id, res.class_means,
                                                            dirs), 0.95))
        null_mask = filter_candidates(_random_direction_scores(
            g_w, res.pred_labels, res.class_means, dirs), threshold=t_null)
        row = {"seed": s, "pi": data.pi, "wild": len(truth)}
        for name, mask in (("sal", res.candidate_mask), ("gradnorm", gn_mask),
                           ("random", rand_mask), ("randdir", null_mask),
                           ("sal_top_pi", filter_candidates(res.scores, pi=data.pi))):
            row.update({f"{name}_{k}": v for k, v in quality(mask, truth).items()})
        row["sal_auroc"] = float(roc_auc_score(truth, res.scores))
        row["sal_wild_id_flag_rate"] = float(res.candidate_mask[~truth].mean())
        row["direction_cos_to_mean"] = _direction_cosine(g_w, res.pred_labels,
                                                         res.class_means)
        row["gradnorm_auroc"] = float(roc_auc_score(truth, gn_w))
        rows.append(row)
        if fig is None:
            fig = _score_figure(f"SAL filter scores, seed {s}", res.threshold,
                                res.scores[~truth], res.scores[truth], "tau (log)")

    def col(k):
        return [r[k] for r in rows]

    metrics = {f"{n}_{k}": seed_metric(col(f"{n}_{k}")) for n in ("sal", "gradnorm", "random",
                                                                   "randdir")
               for k in ("precision", "recall", "f1")}
    metrics.update({
        "f1_gain_vs_gradnorm": seed_difference(col("sal_f1"), col("gradnorm_f1")),
        "f1_gain_vs_random": seed_difference(col("sal_f1"), col("random_f1")),
        "randdir_f1_gain_vs_gradnorm": seed_difference(col("randdir_f1"), col("gradnorm_f1")),
        "randdir_f1_gain_vs_random": seed_difference(col("randdir_f1"), col("random_f1")),
        "sal_top_pi_f1": seed_metric(col("sal_top_pi_f1")),
        "sal_auroc": seed_metric(col("sal_auroc")),
        "gradnorm_auroc": seed_metric(col("gradnorm_auroc")),
        "sal_flagged": seed_metric(col("sal_flagged")),
        "direction_cos_to_mean": seed_metric(col("direction_cos_to_mean")),
        "sal_wild_id_flag_rate": seed_metric(col("sal_wild_id_flag_rate")),
    })
    data_name = sizes(scale, smoke="synthetic 3-Gaussian mixture in R^10",
                      small="digits 0-5 ID / 6-9 OOD")
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{data_name}, wild outlier fraction pi = 0.1, {len(rows)} seed(s); MLP "
              "in-128-128-C (Adam) instead of a WRN-40-2. The threshold is the official "
              "use_thres=1 rule (95th percentile of the labelled-ID scores, computed with the "
              "ID data's own singular vectors); the gradient-norm filter uses the same ID "
              "percentile rule on ||g||^2.")


@claim(
    rule=_DETECTION_RULE,
    control=_null_fails(_DETECTION_RULE, "randcand_"),
    paper="Tables 1-2: on CIFAR-10/100 with wild mixtures (pi = 0.1) SAL reaches the lowest "
          "FPR95 and highest AUROC, beating post-hoc scores (MSP, Energy, ...) and training "
          "with the wild data as OOD (OE / energy regularisation, WOODS); e.g. CIFAR-100 "
          "averages of a few percent FPR95 for SAL against tens of percent for MSP/Energy "
          "(exact numbers not retrieved for this spec).",
    against=("MSP and energy of the same ID classifier and all-wild-as-OOD training with the "
             "same step; null arm: the same step on as many random wild points as SAL's "
             "candidates; true-outlier oracle reported"),
    resources={"cpus": 1},
)
def detection_fpr95(scale: Scale, seed: int) -> Measurement:
    """FPR at 95% ID TPR (and AUROC) on held-out ID vs OOD test points for: SAL (filter +
    binary head, official learning step), MSP and energy of the same ID classifier,
    all-wild-as-OOD (the same learning step with every wild point as an outlier) and the oracle
    (the true wild outliers). The rule reads paired FPR95 gains (baseline - SAL) over seeds;
    it fails when SAL is no better than any one of MSP, energy or all-wild over the whole
    interval. The oracle and ID accuracy are reported, not ruled on.

    Changed in the repair, before running it: 10 seeds at small (were 5: the gain over energy
    was a tie with an interval of +-0.1, energy's FPR95 ranging 0.02-0.31 over seeds), and a
    null arm measured in the same run, ``randcand_*``: the learning step on as many *random*
    wild points as SAL has candidates (the filter switched off, the wild outlier share kept at
    pi). Control: that null does not pass the rule; if it did, learning from any wild subset
    would beat the baselines and the test bed could not credit the filter."""
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        return _detection(scale, seed)


def _detection(scale: Scale, seed: int) -> Measurement:
    from sklearn.metrics import roc_auc_score

    from iclr24.kits.small_classifiers import fpr_at_tpr

    from .detector import SALDetector, energy_scores, msp_scores, train_ood_classifier

    epochs = sizes(scale, smoke=10, small=100)
    rows = []
    for s in _seeds(scale, seed):
        data, clf = _mixture_and_classifier(scale, s)
        labels = np.r_[np.ones(len(data.X_test_id)), np.zeros(len(data.X_test_ood))]
        X_test = np.concatenate([data.X_test_id, data.X_test_ood])
        sal = SALDetector(data.num_classes, epochs=epochs, seed=s).fit(
            data.X_id, data.y_id, data.X_wild, backbone=clf)
        naive = train_ood_classifier(clf, data.X_id, data.y_id, data.X_wild, epochs=epochs,
                                     seed=s)
        oracle = train_ood_classifier(clf, data.X_id, data.y_id,
                                      data.X_wild[data.wild_is_outlier], epochs=epochs, seed=s)
        n_cand = int(sal.candidate_mask_.sum())
        pick = np.random.default_rng([s, 2]).choice(len(data.X_wild), n_cand, replace=False)
        randcand = train_ood_classifier(clf, data.X_id, data.y_id, data.X_wild[pick],
                                        epochs=epochs, seed=s)
        logits = clf.logits(X_test)
        scores = {"sal": sal.score_samples(X_test), "msp": msp_scores(logits),
                  "energy": energy_scores(logits), "naive": naive.score_samples(X_test),
                  "oracle": oracle.score_samples(X_test),
                  "randcand": randcand.score_samples(X_test)}
        row = {"seed": s, "candidates": int(sal.candidate_mask_.sum()),
               "sal_id_acc": float(np.mean(sal.predict(data.X_test_id) == data.y_test_id)),
               "classifier_id_acc": float(np.mean(clf.predict(data.X_test_id)
                                                  == data.y_test_id))}
        for name, sc in scores.items():
            row[f"{name}_fpr95"] = fpr_at_tpr(sc, labels, 0.95)
            row[f"{name}_auroc"] = float(roc_auc_score(labels, sc))
        rows.append(row)

    def col(k):
        return [r[k] for r in rows]

    names = ("sal", "msp", "energy", "naive", "oracle", "randcand")
    metrics = {f"{n}_{k}": seed_metric(col(f"{n}_{k}")) for n in names
               for k in ("fpr95", "auroc")}
    for b in ("msp", "energy", "naive"):
        metrics[f"fpr95_gain_vs_{b}"] = seed_difference(col(f"{b}_fpr95"), col("sal_fpr95"))
        metrics[f"randcand_fpr95_gain_vs_{b}"] = seed_difference(col(f"{b}_fpr95"),
                                                                 col("randcand_fpr95"))
        metrics[f"auroc_gain_vs_{b}"] = seed_difference(col("sal_auroc"), col(f"{b}_auroc"))
    metrics["sal_gap_to_oracle"] = seed_difference(col("sal_fpr95"), col("oracle_fpr95"))
    metrics["sal_id_acc"] = seed_metric(col("sal_id_acc"))
    metrics["classifier_id_acc"] = seed_metric(col("classifier_id_acc"))

    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.2))
    ax = fig.add_subplot()
    for i, n in enumerate(names):
        v = np.array(col(f"{n}_fpr95"))
        ax.scatter(np.full(v.size, i), v, alpha=0.7)
        ax.plot([i - 0.25, i + 0.25], [v.mean()] * 2, color="k")
    ax.set(xticks=range(len(names)), xticklabels=names, ylabel="FPR95 (lower is better)",
           title="FPR at 95% ID TPR per seed")
    fig.tight_layout()
    data_name = sizes(scale, smoke="synthetic 3-Gaussian mixture in R^10",
                      small="digits 0-5 ID / 6-9 OOD")
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{data_name}, pi = 0.1, {len(rows)} seed(s). All methods share one ID "
              f"classifier per seed (MLP in-128-128-C, Adam); SAL, all-wild and oracle use "
              f"the official learning step (CE + 10 BCE, SGD 1e-3 Nesterov, cosine, "
              f"{epochs} epochs). FPR95 = fraction of test OOD scored at or above the "
              f"threshold keeping 95% of test ID.")
