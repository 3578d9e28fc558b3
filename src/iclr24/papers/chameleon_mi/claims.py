"""Chameleon claims: label-only TPR at low FPR against the gap and augmentation attacks, and the
adaptive-vs-fixed poison-count ablation, on scikit-learn's digits with a memorising MLP."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes


def _setup(scale: Scale, seed: int):
    from sklearn.datasets import load_digits

    from iclr24.kits.small_classifiers import MLPTrainer

    # small: the official defaults (8 shadows, k_max = 8, R = 128, tau = 0.75, t_p = 0.13) and
    # 60 challenge points x 40 targets = 2,400 trials (1,200 non-members, >= 10/0.01), so the
    # challenge points are ~6% of a training set (the paper: 500 of 25,000 = 2%). smoke: fewer,
    # cheaper models on a quarter of the pool, judged at 10% FPR (1% would rest on < 2 negatives)
    cfg = {
        "points": sizes(scale, smoke=24, small=60),
        "shadows": sizes(scale, smoke=4, small=8),
        "k_max": sizes(scale, smoke=3, small=8),
        "targets": sizes(scale, smoke=10, small=40),
        "n_aug": sizes(scale, smoke=64, small=128),
        "base_fraction": sizes(scale, smoke=0.25, small=0.5),
        "epochs": sizes(scale, smoke=100, small=150),
        "fpr": sizes(scale, smoke=0.1, small=0.01),
        "resamples": sizes(scale, smoke=300, small=1000),
    }
    d = load_digits()
    X, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    rng = np.random.default_rng(seed)
    challenge = np.sort(rng.choice(y.size, cfg["points"], replace=False))
    trainer = MLPTrainer(hidden=(128,), epochs=cfg["epochs"], lr=1e-2, num_classes=10)
    return cfg, X, y, rng, challenge, trainer


def _paired_gain(cols: np.ndarray, members: np.ndarray, i: int, j: int, fpr: float,
                 resamples: int, seed: int) -> Estimate:
    """TPR_i - TPR_j at FPR <= fpr over the same trials, stratified paired bootstrap."""
    from iclr24.kits.small_classifiers import stratified_bootstrap, tpr_at_fpr

    def gain(s, lab):
        return tpr_at_fpr(s[:, i], lab, fpr) - tpr_at_fpr(s[:, j], lab, fpr)

    v, lo, hi = stratified_bootstrap(cols, members, gain, n_resamples=resamples, seed=seed)
    return Estimate(v, lo, hi, int(members.size), 0.95, "stratified paired bootstrap")


def _tpr_estimate(scores: np.ndarray, members: np.ndarray, fpr: float, resamples: int,
                  seed: int) -> Estimate:
    from iclr24.kits.small_classifiers import stratified_bootstrap, tpr_at_fpr

    v, lo, hi = stratified_bootstrap(scores, members, lambda s, lab: tpr_at_fpr(s, lab, fpr),
                                     n_resamples=resamples, seed=seed)
    return Estimate(v, lo, hi, int(members.size), 0.95, "stratified bootstrap")


def _roc_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], fpr: float):
    from matplotlib.figure import Figure
    from sklearn.metrics import roc_curve

    fig = Figure(figsize=(5, 4))
    ax = fig.add_subplot()
    for name, (s, m) in curves.items():
        f, t, _ = roc_curve(m, s)
        ax.plot(np.maximum(f, 1e-4), t, label=name, drawstyle="steps-post")
    ax.axvline(fpr, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.legend(fontsize=8)
    ax.set_title("label-only membership inference on digits")
    return fig


@claim(
    rule="gain_vs_aug > 0 and gain_vs_gap > 0 and ratio_vs_aug >= 3",
    paper="Chameleon (adaptive poisoning + membership-neighbourhood queries) raises label-only "
          "TPR at 1% and 0.1% FPR by large factors (order of magnitude) over prior label-only "
          "attacks (gap attack, decision-boundary/augmentation attacks), which are near zero at "
          "low FPR on CIFAR-10/100 and GTSRB with ResNet-18 (exact table values not retrieved).",
    against=("gap and augmentation label-only attacks on unpoisoned twins of the same targets "
             "(challenge points, base sets, masks)"),
    resources={"cpus": 1},
)
def label_only_tpr(scale: Scale, seed: int, progress=None) -> Measurement:
    """Chameleon vs the gap attack vs the augmentation attack on the same challenge points,
    the same target base sets/masks/seeds (baselines on the unpoisoned twins of the targets).
    Decides on TPR at FPR <= 1% (10% at smoke, where 1% would rest on < 1 negative): the paired
    bootstrap intervals of TPR_chameleon - TPR_baseline must be above 0 and the TPR ratio to the
    augmentation attack >= 3 (the spec's "several times larger"; its denominator is floored at
    1/#members). TPR@0.1%FPR is withheld (< 10,000 non-member trials)."""
    from iclr24.kits.threads import torch_threads

    from .attacks import ChameleonAttack, augmentation_score, gap_score, membership_metrics
    from .neighbourhood import shift_noise_augment
    from .poisoning import draw_population, train_population

    progress = progress or (lambda *a, **k: None)
    cfg, X, y, rng, chal, trainer = _setup(scale, seed)
    with torch_threads(1):
        progress(0.05, "stage I-II: adaptive poisons and neighbourhoods")
        attack = ChameleonAttack(trainer, 10, n_shadow=cfg["shadows"], k_max=cfg["k_max"],
                                 n_aug=cfg["n_aug"], base_fraction=cfg["base_fraction"]
                                 ).fit(X, y, chal, rng)
        pop = draw_population(y.size, chal, cfg["targets"], rng, cfg["base_fraction"])
        progress(0.5, "stage III: poisoned targets")
        report = attack.run(cfg["targets"], rng, population=pop)
        progress(0.75, "baselines: unpoisoned targets")
        clean = train_population(trainer, X, y, pop)
        aug_rng = np.random.default_rng(seed + 1)
        augs = [shift_noise_augment(X[r], cfg["n_aug"], aug_rng) for r in chal]
        gap = np.stack([gap_score(m, X[chal], y[chal]) for m in clean])
        aug = np.stack([augmentation_score(m, augs, y[chal]) for m in clean])
        acc_clean = _clean_accuracy(clean, X, y, pop)
    members = pop.masks.ravel().astype(np.int64)
    cols = np.stack([report.scores.ravel(), gap.ravel(), aug.ravel()], axis=1)
    fpr, res = cfg["fpr"], cfg["resamples"]
    mets = {name: membership_metrics(cols[:, i], members)
            for i, name in enumerate(("chameleon", "gap", "augmentation"))}
    tpr = {k: mets[k]["tpr_at_fpr"][fpr] for k in mets}
    floor = 1.0 / members.sum()
    metrics = {
        "tpr_chameleon": _tpr_estimate(cols[:, 0], members, fpr, res, seed),
        "tpr_gap": tpr["gap"],
        "tpr_aug": tpr["augmentation"],
        "gain_vs_aug": _paired_gain(cols, members, 0, 2, fpr, res, seed),
        "gain_vs_gap": _paired_gain(cols, members, 0, 1, fpr, res, seed),
        "ratio_vs_aug": tpr["chameleon"] / max(tpr["augmentation"], floor),
        "auc_chameleon": mets["chameleon"]["auc"],
        "auc_gap": mets["gap"]["auc"],
        "auc_aug": mets["augmentation"]["auc"],
        "decision_fpr": fpr,
        "n_nonmember_trials": float(mets["chameleon"]["n_nonmembers"]),
        "mean_poisons_per_point": float(report.counts.mean()),
        "target_acc_poisoned": report.target_accuracy,
        "target_acc_clean": acc_clean,
        "mean_neighbourhood_size": float(np.mean(report.extra["neighbourhood_sizes"])),
    }
    rows = [{"attack": k, "tpr_at_decision_fpr": tpr[k], "auc": mets[k]["auc"],
             "balanced_accuracy": mets[k]["balanced_accuracy"],
             "tpr_at_0.1%_fpr": mets[k]["tpr_at_fpr"][0.001]} for k in mets]
    fig = _roc_figure({k: (cols[:, i], members) for i, k in enumerate(mets)}, fpr)
    return Measurement(
        metrics=metrics, figure=fig, tables={"attacks": rows},
        notes=(f"{cfg['points']} challenge points x {cfg['targets']} targets = {members.size} "
               f"trials ({int((members == 0).sum())} non-members); TPR at FPR <= {fpr:g} "
               f"(max TPR subject to the bound). TPR@0.1%FPR withheld "
               f"(needs >= 10,000 non-member trials). Poison counts "
               f"{np.bincount(report.counts).tolist()} (index = count); targets' accuracy on "
               f"rows they did not train on, poisoned vs clean, shows the utility cost."))


def _clean_accuracy(models, X, y, pop) -> float:
    pool = np.setdiff1d(np.arange(y.size), pop.challenge_idx)
    accs = [np.mean(np.argmax(m(X[np.setdiff1d(pool, b)]), 1) == y[np.setdiff1d(pool, b)])
            for m, b in zip(models, pop.base_sets)]
    return float(np.mean(accs))


@claim(
    rule="gain_vs_fixed1 > 0 and gain_vs_fixedmax > 0",
    paper="Ablation: adaptive per-point poison counts beat fixed-count label-flip poisoning "
          "(the same number of poisons for every point) in TPR at low FPR; too many poisons "
          "make members misclassified too, too few leave non-members correct (exact numbers "
          "not retrieved).",
    against=("fixed-count poisoning (k = 1 and k = k_max for every point) with the same "
             "neighbourhoods, targets and masks"),
    resources={"cpus": 1},
)
def adaptive_vs_fixed_poison(scale: Scale, seed: int, progress=None) -> Measurement:
    """Adaptive counts vs fixed k = 1 and k = k_max for every point, the same neighbourhoods
    (Stage II uses the zero-poison shadows, so it does not depend on the counts) and the same
    targets' base sets/masks/seeds. Decides on TPR at FPR <= 1% (10% at smoke): both paired
    bootstrap gains must be above 0. Poison budgets are reported beside."""
    from iclr24.kits.threads import torch_threads

    from .attacks import ChameleonAttack, membership_metrics
    from .poisoning import draw_population

    progress = progress or (lambda *a, **k: None)
    cfg, X, y, rng, chal, trainer = _setup(scale, seed)
    fpr, res = cfg["fpr"], cfg["resamples"]
    with torch_threads(1):
        progress(0.05, "stage I-II")
        attack = ChameleonAttack(trainer, 10, n_shadow=cfg["shadows"], k_max=cfg["k_max"],
                                 n_aug=cfg["n_aug"], base_fraction=cfg["base_fraction"]
                                 ).fit(X, y, chal, rng)
        pop = draw_population(y.size, chal, cfg["targets"], rng, cfg["base_fraction"])
        variants = {"adaptive": attack.counts_,
                    "fixed1": np.ones_like(attack.counts_),
                    "fixedmax": np.full_like(attack.counts_, cfg["k_max"])}
        reports = {}
        for i, (name, counts) in enumerate(variants.items()):
            progress(0.4 + 0.2 * i, f"targets with {name} poisons")
            reports[name] = attack.run(cfg["targets"], rng, population=pop, counts=counts)
    members = pop.masks.ravel().astype(np.int64)
    cols = np.stack([reports[k].scores.ravel() for k in variants], axis=1)
    mets = {k: membership_metrics(cols[:, i], members) for i, k in enumerate(variants)}
    metrics = {
        "tpr_adaptive": _tpr_estimate(cols[:, 0], members, fpr, res, seed),
        "tpr_fixed1": mets["fixed1"]["tpr_at_fpr"][fpr],
        "tpr_fixedmax": mets["fixedmax"]["tpr_at_fpr"][fpr],
        "gain_vs_fixed1": _paired_gain(cols, members, 0, 1, fpr, res, seed),
        "gain_vs_fixedmax": _paired_gain(cols, members, 0, 2, fpr, res, seed),
        "decision_fpr": fpr,
    }
    rows = []
    for k, counts in variants.items():
        metrics[f"auc_{k}"] = mets[k]["auc"]
        metrics[f"budget_{k}"] = float(counts.sum())
        metrics[f"target_acc_{k}"] = reports[k].target_accuracy
        rows.append({"poisoning": k, "total_poisons": int(counts.sum()),
                     "tpr_at_decision_fpr": mets[k]["tpr_at_fpr"][fpr], "auc": mets[k]["auc"],
                     "target_accuracy": reports[k].target_accuracy})
    fig = _roc_figure({k: (cols[:, i], members) for i, k in enumerate(variants)}, fpr)
    return Measurement(
        metrics=metrics, figure=fig, tables={"poisoning": rows},
        notes=(f"TPR at FPR <= {fpr:g}; adaptive counts {np.bincount(attack.counts_).tolist()} "
               f"(index = count), k_max = {cfg['k_max']}. fixedmax spends at least the adaptive "
               f"budget; fixed1 may spend less or more."))
