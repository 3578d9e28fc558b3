"""Chameleon claims: label-only TPR at low FPR against the gap and augmentation attacks, and the
adaptive-vs-fixed poison-count ablation, on scikit-learn's digits with a memorising MLP.

Both claims decide over independent replicates (3 at small, 1 at smoke): each replicate redraws
the challenge points and reruns Stages I-III (shadows, adaptive counts, neighbourhoods, targets)
from its own seed, so the intervals carry the Stage I-II variance that a bootstrap over the trials
of one run cannot see. Each claim measures a null arm in the same replicates and its ``control``
requires that the null does not pass the rule: Chameleon's neighbourhood queries on the
*unpoisoned* targets (``label_only_tpr``: poisoning switched off) and the adaptive counts randomly
permuted across points (``adaptive_vs_fixed_poison``: same budget and count histogram, per-point
adaptivity removed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    Truth,
    claim,
    evaluate_rule,
    seed_difference,
    seed_metric,
    sizes,
)

_TPR_RULE = "gain_vs_aug > 0 and gain_vs_gap > 0 and ratio_vs_aug >= 3"
_ABLATION_RULE = "gain_vs_fixed1 > 0 and gain_vs_fixedmax > 0"


def _null_does_not_pass(rule: str, prefix: str) -> Callable[[Mapping], Truth]:
    """A control: ``rule`` read on the null arm's metrics (every name prefixed by ``prefix``)
    is not true. Kleene logic would make ``not (null rule)`` unknown whenever a null gain's
    interval straddles 0, i.e. for every null with no effect; "does not pass" is what the
    control must say."""
    null_rule = re.sub(r"\b([a-z_][a-z0-9_]*)\b", lambda m: prefix + m.group(1)
                       if m.group(1) not in ("and", "or", "not") else m.group(1), rule)

    def control(metrics: Mapping) -> Truth:
        return evaluate_rule(null_rule, metrics) is not True

    control.__doc__ = f"`{null_rule}` is not true (the null arm does not pass the rule)"
    return control


def _config(scale: Scale) -> dict:
    # small: 3 replicates of 84 challenge points x 24 targets = 2,016 trials (1,008 non-members,
    # >= 10/0.01) with 8 shadows, R = 128, tau = 0.75, t_p = 0.13 (official) and k_max = 4 (the
    # spec's small value; the official 8 does not fit three replicates in the CPU budget).
    # smoke: one replicate of fewer, cheaper models on a quarter of the pool, judged at 10% FPR
    # (1% would rest on < 2 negatives)
    return {
        "replicates": sizes(scale, smoke=1, small=3),
        "points": sizes(scale, smoke=24, small=84),
        "shadows": sizes(scale, smoke=4, small=8),
        "k_max": sizes(scale, smoke=3, small=4),
        "targets": sizes(scale, smoke=10, small=24),
        "n_aug": sizes(scale, smoke=64, small=128),
        "base_fraction": sizes(scale, smoke=0.25, small=0.5),
        "epochs": sizes(scale, smoke=100, small=150),
        "fpr": sizes(scale, smoke=0.1, small=0.01),
    }


def _replicate_setup(cfg: dict, seed: int, rep: int):
    """The data, a fresh rng, challenge points and trainer of replicate ``rep``."""
    from sklearn.datasets import load_digits

    from iclr24.kits.small_classifiers import MLPTrainer

    d = load_digits()
    X, y = (d.data / 16.0).astype(np.float32), d.target.astype(np.int64)
    rng = np.random.default_rng([seed, rep])
    challenge = np.sort(rng.choice(y.size, cfg["points"], replace=False))
    trainer = MLPTrainer(hidden=(128,), epochs=cfg["epochs"], lr=1e-2, num_classes=10)
    return X, y, rng, challenge, trainer


def _fit_attack(cfg: dict, trainer, X, y, chal, rng):
    from .attacks import ChameleonAttack

    return ChameleonAttack(trainer, 10, n_shadow=cfg["shadows"], k_max=cfg["k_max"],
                           n_aug=cfg["n_aug"], base_fraction=cfg["base_fraction"]
                           ).fit(X, y, chal, rng)


def _ratio(num: list[float], den: list[float], floor: float) -> float:
    """mean(num) / mean(den) over replicates, the denominator floored at ``floor``."""
    return float(np.mean(num)) / max(float(np.mean(den)), floor)


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


def _label_only_replicate(cfg: dict, seed: int, rep: int) -> dict:
    """One replicate of ``label_only_tpr``: per-attack scores (T*k,) and membership (T*k,)."""
    from iclr24.kits.threads import torch_threads

    from .attacks import augmentation_score, fraction_labelled, gap_score
    from .neighbourhood import shift_noise_augment
    from .poisoning import draw_population, train_population

    X, y, rng, chal, trainer = _replicate_setup(cfg, seed, rep)
    with torch_threads(1):
        attack = _fit_attack(cfg, trainer, X, y, chal, rng)
        pop = draw_population(y.size, chal, cfg["targets"], rng, cfg["base_fraction"])
        report = attack.run(cfg["targets"], rng, population=pop)
        clean = train_population(trainer, X, y, pop)  # the unpoisoned twins of the targets
        aug_rng = np.random.default_rng([seed, rep, 1])
        augs = [shift_noise_augment(X[r], cfg["n_aug"], aug_rng) for r in chal]
        scores = {
            "chameleon": report.scores,
            "gap": np.stack([gap_score(m, X[chal], y[chal]) for m in clean]),
            "augmentation": np.stack([augmentation_score(m, augs, y[chal]) for m in clean]),
            # null arm: the same neighbourhood queries on the unpoisoned twins
            "nopoison": np.stack([fraction_labelled(m, attack.neighbourhoods_, y[chal])
                                  for m in clean]),
        }
        return {"scores": {k: v.ravel() for k, v in scores.items()},
                "members": pop.masks.ravel().astype(np.int64), "counts": report.counts,
                "acc_poisoned": report.target_accuracy,
                "acc_clean": _clean_accuracy(clean, X, y, pop),
                "neighbourhood": float(np.mean(report.extra["neighbourhood_sizes"]))}


@claim(
    rule=_TPR_RULE,
    control=_null_does_not_pass(_TPR_RULE, "nopoison_"),
    paper="Chameleon (adaptive poisoning + membership-neighbourhood queries) raises label-only "
          "TPR at 1% and 0.1% FPR by large factors (order of magnitude) over prior label-only "
          "attacks (gap attack, decision-boundary/augmentation attacks), which are near zero at "
          "low FPR on CIFAR-10/100 and GTSRB with ResNet-18 (exact table values not retrieved).",
    against=("gap and augmentation label-only attacks on unpoisoned twins of the same targets "
             "(challenge points, base sets, masks); null arm: Chameleon's neighbourhood queries "
             "on those unpoisoned twins (poisoning switched off)"),
    resources={"cpus": 1},
)
def label_only_tpr(scale: Scale, seed: int, progress=None) -> Measurement:
    """Chameleon vs the gap attack vs the augmentation attack on the same challenge points and
    the same target base sets/masks/seeds (baselines on the unpoisoned twins of the targets).
    Decides on TPR at FPR <= 1% (10% at smoke, where 1% would rest on < 2 negatives), one value
    per replicate; ``gain_vs_*`` are paired differences over replicates (each replicate reruns
    Stages I-III from its own seed) whose interval must be above 0, and the ratio of mean TPRs
    to the augmentation attack must be >= 3 (the spec's "several times larger"; denominator
    floored at 1/#members). TPR@0.1%FPR is withheld (< 10,000 non-member trials).

    Null arm (added with the replicates, before any run of it): the same neighbourhood queries
    asked of the unpoisoned twins, i.e. Chameleon with its poisoning switched off. Control:
    that arm must not pass the rule; if it does, the gain is the query selection's, not the
    poisoning's, and the test bed cannot tell. The old rule read a stratified bootstrap over the
    trials of one run, which misses the Stage I-II variance."""
    progress = progress or (lambda *a, **k: None)
    cfg = _config(scale)
    reps = cfg["replicates"]
    runs = []
    for rep in range(reps):
        runs.append(_label_only_replicate(cfg, seed, rep))
        progress((rep + 1) / reps, f"replicate {rep + 1}/{reps}")
    return _label_only_measurement(cfg, runs)


def _label_only_measurement(cfg: dict, runs: list[dict]) -> Measurement:
    from .attacks import membership_metrics

    fpr = cfg["fpr"]
    arms = ("chameleon", "gap", "augmentation", "nopoison")
    mets = [{a: membership_metrics(r["scores"][a], r["members"]) for a in arms} for r in runs]
    tpr = {a: [m[a]["tpr_at_fpr"][fpr] for m in mets] for a in arms}
    floor = 1.0 / int(runs[0]["members"].sum())
    metrics = {f"tpr_{short}": seed_metric(tpr[a]) for a, short in
               (("chameleon", "chameleon"), ("gap", "gap"), ("augmentation", "aug"),
                ("nopoison", "nopoison"))}
    for arm, prefix in (("chameleon", ""), ("nopoison", "nopoison_")):
        metrics[f"{prefix}gain_vs_aug"] = seed_difference(tpr[arm], tpr["augmentation"])
        metrics[f"{prefix}gain_vs_gap"] = seed_difference(tpr[arm], tpr["gap"])
        metrics[f"{prefix}ratio_vs_aug"] = _ratio(tpr[arm], tpr["augmentation"], floor)
    metrics["gain_vs_nopoison"] = seed_difference(tpr["chameleon"], tpr["nopoison"])
    for a, short in (("chameleon", "chameleon"), ("gap", "gap"), ("augmentation", "aug")):
        metrics[f"auc_{short}"] = seed_metric([m[a]["auc"] for m in mets])
    metrics.update({
        "decision_fpr": fpr, "replicates": len(runs),
        "n_nonmember_trials_per_replicate": float(mets[0]["chameleon"]["n_nonmembers"]),
        "mean_poisons_per_point": float(np.mean([r["counts"].mean() for r in runs])),
        "target_acc_poisoned": seed_metric([r["acc_poisoned"] for r in runs]),
        "target_acc_clean": seed_metric([r["acc_clean"] for r in runs]),
        "mean_neighbourhood_size": float(np.mean([r["neighbourhood"] for r in runs])),
    })
    rows = [{"replicate": i, "attack": a, "tpr_at_decision_fpr": m[a]["tpr_at_fpr"][fpr],
             "auc": m[a]["auc"], "balanced_accuracy": m[a]["balanced_accuracy"]}
            for i, m in enumerate(mets) for a in arms]
    fig = _roc_figure({a: (runs[0]["scores"][a], runs[0]["members"]) for a in arms}, fpr)
    counts = np.bincount(np.concatenate([r["counts"] for r in runs])).tolist()
    return Measurement(
        metrics=metrics, figure=fig, tables={"attacks": rows},
        notes=(f"{len(runs)} replicate(s) of {cfg['points']} challenge points x "
               f"{cfg['targets']} targets ({int((runs[0]['members'] == 0).sum())} non-member "
               f"trials each); TPR at FPR <= {fpr:g} (max TPR subject to the bound), intervals "
               f"over replicates. TPR@0.1%FPR withheld (needs >= 10,000 non-member trials). "
               f"Poison counts {counts} (index = count, all replicates); targets' accuracy on "
               f"rows they did not train on, poisoned vs clean, shows the utility cost. ROC of "
               f"replicate 0."))


def _clean_accuracy(models, X, y, pop) -> float:
    pool = np.setdiff1d(np.arange(y.size), pop.challenge_idx)
    accs = [np.mean(np.argmax(m(X[np.setdiff1d(pool, b)]), 1) == y[np.setdiff1d(pool, b)])
            for m, b in zip(models, pop.base_sets)]
    return float(np.mean(accs))


def _ablation_replicate(cfg: dict, seed: int, rep: int) -> dict:
    """One replicate of ``adaptive_vs_fixed_poison``: per-variant scores, budgets, accuracy."""
    from iclr24.kits.threads import torch_threads

    from .poisoning import draw_population

    X, y, rng, chal, trainer = _replicate_setup(cfg, seed, rep)
    with torch_threads(1):
        attack = _fit_attack(cfg, trainer, X, y, chal, rng)
        pop = draw_population(y.size, chal, cfg["targets"], rng, cfg["base_fraction"])
        variants = {"adaptive": attack.counts_,
                    "fixed1": np.ones_like(attack.counts_),
                    "fixedmax": np.full_like(attack.counts_, cfg["k_max"]),
                    # null arm: the adaptive counts given to the wrong points
                    "shuffled": np.random.default_rng([seed, rep, 2]).permutation(attack.counts_)}
        reports = {k: attack.run(cfg["targets"], rng, population=pop, counts=c)
                   for k, c in variants.items()}
    return {"scores": {k: r.scores.ravel() for k, r in reports.items()},
            "members": pop.masks.ravel().astype(np.int64),
            "budget": {k: int(c.sum()) for k, c in variants.items()},
            "acc": {k: r.target_accuracy for k, r in reports.items()},
            "counts": attack.counts_}


@claim(
    rule=_ABLATION_RULE,
    control=_null_does_not_pass(_ABLATION_RULE, "shuffled_"),
    paper="Ablation: adaptive per-point poison counts beat fixed-count label-flip poisoning "
          "(the same number of poisons for every point) in TPR at low FPR; too many poisons "
          "make members misclassified too, too few leave non-members correct (exact numbers "
          "not retrieved).",
    against=("fixed-count poisoning (k = 1 and k = k_max for every point) with the same "
             "neighbourhoods, targets and masks; null arm: the adaptive counts randomly "
             "permuted across the challenge points"),
    resources={"cpus": 1},
)
def adaptive_vs_fixed_poison(scale: Scale, seed: int, progress=None) -> Measurement:
    """Adaptive counts vs fixed k = 1 and k = k_max for every point, the same neighbourhoods
    (Stage II uses the zero-poison shadows, so it does not depend on the counts) and the same
    targets' base sets/masks/seeds. Decides on TPR at FPR <= 1% (10% at smoke), one value per
    replicate; both gains are paired differences over replicates (each reruns Stages I-III from
    its own seed) whose interval must be above 0. Poison budgets are reported beside.

    Null arm (added with the replicates, before any run of it): the adaptive counts randomly
    permuted across the challenge points, the same budget and count histogram without the
    per-point adaptation. Control: that arm must not pass the rule; if it does, what beats the
    fixed counts is the count mix, not the adaptation, and the test bed cannot tell. The old rule
    read a stratified bootstrap over the trials of one run, which misses the Stage I-II
    variance."""
    from .attacks import membership_metrics

    progress = progress or (lambda *a, **k: None)
    cfg = _config(scale)
    reps, fpr = cfg["replicates"], cfg["fpr"]
    runs = []
    for rep in range(reps):
        runs.append(_ablation_replicate(cfg, seed, rep))
        progress((rep + 1) / reps, f"replicate {rep + 1}/{reps}")
    variants = ("adaptive", "fixed1", "fixedmax", "shuffled")
    mets = [{k: membership_metrics(r["scores"][k], r["members"]) for k in variants}
            for r in runs]
    tpr = {k: [m[k]["tpr_at_fpr"][fpr] for m in mets] for k in variants}
    metrics: dict = {f"tpr_{k}": seed_metric(tpr[k]) for k in variants}
    for arm, prefix in (("adaptive", ""), ("shuffled", "shuffled_")):
        metrics[f"{prefix}gain_vs_fixed1"] = seed_difference(tpr[arm], tpr["fixed1"])
        metrics[f"{prefix}gain_vs_fixedmax"] = seed_difference(tpr[arm], tpr["fixedmax"])
    metrics["gain_vs_shuffled"] = seed_difference(tpr["adaptive"], tpr["shuffled"])
    metrics["decision_fpr"] = fpr
    metrics["replicates"] = reps
    rows = []
    for k in variants:
        metrics[f"auc_{k}"] = seed_metric([m[k]["auc"] for m in mets])
        metrics[f"budget_{k}"] = float(np.mean([r["budget"][k] for r in runs]))
        metrics[f"target_acc_{k}"] = seed_metric([r["acc"][k] for r in runs])
        rows += [{"replicate": i, "poisoning": k, "total_poisons": r["budget"][k],
                  "tpr_at_decision_fpr": m[k]["tpr_at_fpr"][fpr], "auc": m[k]["auc"],
                  "target_accuracy": r["acc"][k]} for i, (r, m) in enumerate(zip(runs, mets))]
    fig = _roc_figure({k: (runs[0]["scores"][k], runs[0]["members"]) for k in variants}, fpr)
    counts = np.bincount(np.concatenate([r["counts"] for r in runs])).tolist()
    return Measurement(
        metrics=metrics, figure=fig, tables={"poisoning": rows},
        notes=(f"{reps} replicate(s); TPR at FPR <= {fpr:g}, intervals over replicates; "
               f"adaptive counts {counts} (index = count, all replicates), k_max = "
               f"{cfg['k_max']}. fixedmax spends at least the adaptive budget; fixed1 may spend "
               f"less or more; shuffled spends exactly the adaptive budget. ROC of replicate 0."))
