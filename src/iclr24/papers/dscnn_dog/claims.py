"""dscnn_dog claims: DoG-family coverage vs controls, autoencoder clusters, coverage per stage."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .autoencoder import cluster_kernels, name_clusters
from .convnext import MicroCNN, MicroConvNeXt, TrainConfig, train_classifier
from .coverage import coverage_at, coverage_report
from .kernels import depthwise_kernels, stack_kernels, standard_conv_kernels
from .matching import permute_pixels, random_kernels
from .templates import dog_template_bank

TAU = 0.7  # the spec's headline threshold (coverage is also reported at 0.6 and 0.8)


def _seeds(scale: Scale, seed: int) -> list[int]:
    return [seed + 1000 * i for i in range(sizes(scale, smoke=1, small=3, full=5))]


def _summary(xs):
    return Estimate.mean_of(xs) if len(xs) >= 2 else float(xs[0])


def _train(scale: Scale, seed: int, model_cls=MicroConvNeXt, progress=None):
    """Dead-leaves images of 8 radius exponents in [2, 4] (the spec's task B) -> classify the
    exponent from random 32x32 crops. Returns (model, copy of the initial depthwise kernels,
    mean training loss over the last 10 % of steps, chance = log 8 = 2.08).

    The spec's default task A (4-way rotation of dead-leaves crops) is not learnable: dead
    leaves are statistically rotation invariant, and in our probe the loss stayed at log 4."""
    import torch

    from iclr24.kits.image_sources import dead_leaves_exponents, random_crops

    per_class = sizes(scale, smoke=3, small=16, full=128)
    cfg = TrainConfig(steps=sizes(scale, smoke=25, small=100, full=2000),
                      batch_size=sizes(scale, smoke=16, small=32, full=64), seed=seed)
    pool, pool_labels = dead_leaves_exponents(per_class, size=64, seed=seed)

    def batch(rng, n):
        crops, idx = random_crops(pool, n, 32, rng, return_index=True)
        return crops, pool_labels[idx]

    torch.manual_seed(seed)
    model = model_cls(n_classes=8)
    init = {k: v.clone() for k, v in (depthwise_kernels(model).items()
                                      if model_cls is MicroConvNeXt else [])}
    losses = train_classifier(model, batch, cfg, progress)
    return model, init, float(np.mean(losses[-max(1, cfg.steps // 10):]))


def _ratio(a: float, b: float, n: int) -> float:
    """a / b with b floored at one kernel in n (coverage 0 at init is common)."""
    return a / max(b, 1.0 / n)


@claim(
    rule={"smoke": "ratio_init >= 3 and ratio_permuted >= 3",
          "small": "ratio_init >= 3 and ratio_permuted >= 3 and gap_standard > 0"},
    paper="Abstract: > 95 % (ConvNeXtV2) and > 90 % (ConvNeXt) of ImageNet-trained depthwise "
          "filters fall into identifiable DoG-family clusters; regular convolutions do not show "
          "such clean structure. Not re-measurable here (hub weights); the comparison with "
          "controls (spec: trained >= 3x init and permuted at tau = 0.7, DS > standard CNN) is.",
    paper_numbers={"coverage_trained": 0.9},
    against=("the same network's kernels at initialisation and pixel-permuted trained kernels; "
             "at small, a dense-conv CNN trained identically (standard CNN)"),
)
def dog_coverage(scale: Scale, seed: int, progress) -> Measurement:
    """Share of depthwise 7x7 kernels whose best DoG-family template (940 templates, both
    signs) has cosine >= 0.7, for the trained micro ConvNeXt (method), the same network at
    initialisation, the trained kernels with pixels permuted, i.i.d. Gaussian kernels (the
    bank's chance rate) and, at small, every 7x7 (out, in) slice of the same network with dense
    convolutions trained identically (standard CNN). ``ratio_*`` = coverage(trained) /
    coverage(control) with the control floored at 1/N; ``gap_standard`` = coverage(trained) -
    coverage(standard), paired by seed."""
    bank, labels = dog_template_bank(7)
    with_standard = scale is not Scale.SMOKE
    seeds = _seeds(scale, seed)
    rows, table = [], []
    for i, s in enumerate(seeds):
        model, init, loss = _train(scale, s)
        tr = stack_kernels(depthwise_kernels(model)).numpy()
        groups = {"trained": tr, "init": stack_kernels(init).numpy(),
                  "permuted": permute_pixels(tr, s), "random": random_kernels(len(tr), 7, s)}
        if with_standard:
            cnn, _, loss_cnn = _train(scale, s, MicroCNN)
            groups["standard_cnn"] = stack_kernels(standard_conv_kernels(cnn)).numpy()
        cov = {g: coverage_at(k, bank, TAU) for g, k in groups.items()}
        n = len(tr)
        row = {"seed": s, "loss": loss, **{f"coverage_{g}": c for g, c in cov.items()},
               "ratio_init": _ratio(cov["trained"], cov["init"], n),
               "ratio_permuted": _ratio(cov["trained"], cov["permuted"], n)}
        if with_standard:
            row["loss_standard_cnn"] = loss_cnn
        rows.append(row)
        table += [{"seed": s, **r} for r in coverage_report(groups, bank, labels)]
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {k: _summary([r[k] for r in rows]) for k in rows[0] if k not in ("seed",)}
    if with_standard:
        metrics["gap_standard"] = Estimate.difference(
            [r["coverage_trained"] for r in rows], [r["coverage_standard_cnn"] for r in rows],
            paired=True)
    return Measurement(
        metrics=metrics,
        figure=_coverage_figure(table),
        tables={"coverage_per_tau": table, "per_seed": rows},
        notes="Absolute coverage is far below the paper's 90-95 %: a 0.4 M-parameter network "
              "trained for 100 CPU steps (small) on synthetic images, not ImageNet models. "
              "Not thresholded; the rule compares against controls measured in this run.",
    )


def _coverage_figure(table):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    groups = list(dict.fromkeys(r["group"] for r in table))
    taus = sorted({r["tau"] for r in table})
    w = 0.8 / len(groups)
    for j, g in enumerate(groups):
        vals = [np.mean([r["coverage"] for r in table if r["group"] == g and r["tau"] == t])
                for t in taus]
        ax.bar(np.arange(len(taus)) + j * w, vals, w, label=g)
    ax.set_xticks(np.arange(len(taus)) + 0.4 - w / 2, [f"tau = {t:g}" for t in taus])
    ax.set_ylabel("share of kernels matched")
    ax.set_title("DoG-family coverage (mean over seeds)")
    ax.legend()
    fig.tight_layout()
    return fig


@claim(
    rule={"smoke": "n_matched_trained >= 3 and matched_gap > 0",
          "small": "n_matched_trained >= 3 and matched_gap > 0"},
    paper="Sec. 4: unsupervised clustering (autoencoder, cosine loss) of trained depthwise "
          "kernels yields a handful of recurring DoG-family patterns (roughly ten cover most "
          "filters).",
    against="the same autoencoder + k-means clustering of the same network's kernels at init",
)
def cluster_structure(scale: Scale, seed: int, progress) -> Measurement:
    """Autoencoder (k^2 -> 64 -> 16 -> 2, cosine loss) + k-means (k = 10) on the trained
    depthwise kernels and, separately, on the same network's initial kernels. A cluster is
    matched when its mean normalised kernel has cosine >= 0.8 with a DoG-family template.
    ``matched_gap`` = matched clusters (trained) - matched clusters (init), paired by seed."""
    bank, labels = dog_template_bank(7)
    ae_steps = sizes(scale, smoke=100, small=1500, full=3000)
    seeds = _seeds(scale, seed)
    rows, clusters = [], []
    for i, s in enumerate(seeds):
        model, init, _ = _train(scale, s)
        row = {"seed": s}
        for g, ks in (("trained", depthwise_kernels(model)), ("init", init)):
            res = cluster_kernels(stack_kernels(ks).numpy(), 2, 10, seed=s, steps=ae_steps)
            named = name_clusters(res, bank, labels, tau=0.8)
            clusters += [{"seed": s, "kernels": g, **c} for c in named]
            matched = [c for c in named if c["matched"]]
            row[f"n_matched_{g}"] = len(matched)
            row[f"share_matched_{g}"] = sum(c["size"] for c in matched) / res.sizes.sum()
            row[f"ae_loss_{g}"] = res.loss
        rows.append(row)
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {k: _summary([r[k] for r in rows]) for k in rows[0] if k != "seed"}
    a, b = [r["n_matched_trained"] for r in rows], [r["n_matched_init"] for r in rows]
    metrics["matched_gap"] = (Estimate.difference(a, b, paired=True) if len(rows) >= 2
                              else float(a[0] - b[0]))
    return Measurement(metrics=metrics, tables={"clusters": clusters, "per_seed": rows},
                       notes="Clusters are named by the template-match rule on their mean "
                             "kernel (family of the best template), never by eye.")


def _stage(kernels: dict, stage: int) -> np.ndarray:
    return np.concatenate([v.numpy() for k, v in kernels.items()
                           if k.startswith(f"stages.{stage}.")])


@claim(
    rule="min_stage_gap > 0",
    paper="Sec. 4: DoG-family clusters appear in all layers, not only the first.",
    against="pixel-permuted copies of each stage's trained kernels (null arm); init kernels shown",
)
def layerwise(scale: Scale, seed: int, progress) -> Measurement:
    """Coverage per stage (tau 0.6/0.7/0.8) of the trained, initial and pixel-permuted
    kernels. ``min_stage_gap`` = min over the 3 stages of coverage(trained) -
    coverage(permuted) at tau = 0.7 (per seed, then an interval over seeds): structure beyond
    chance in every stage. The table is the report; the absolute numbers are not thresholded."""
    bank, labels = dog_template_bank(7)
    seeds = _seeds(scale, seed)
    gaps, table = [], []
    for i, s in enumerate(seeds):
        model, init, _ = _train(scale, s)
        trained = depthwise_kernels(model)
        groups = {}
        for stage in range(3):
            tr = _stage(trained, stage)
            groups[f"stage{stage + 1}/trained"] = tr
            groups[f"stage{stage + 1}/init"] = _stage(init, stage)
            groups[f"stage{stage + 1}/permuted"] = permute_pixels(tr, s + stage)
        rep = coverage_report(groups, bank, labels)
        table += [{"seed": s, **r} for r in rep]
        cov = {(r["group"], r["tau"]): r["coverage"] for r in rep}
        gaps.append(min(cov[(f"stage{j}/trained", TAU)] - cov[(f"stage{j}/permuted", TAU)]
                        for j in (1, 2, 3)))
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {"min_stage_gap": _summary(gaps)}
    for j in (1, 2, 3):
        for g in ("trained", "init", "permuted"):
            metrics[f"coverage_stage{j}_{g}"] = _summary(
                [r["coverage"] for r in table if r["group"] == f"stage{j}/{g}" and r["tau"] == TAU])
    return Measurement(metrics=metrics, tables={"coverage_per_stage": table},
                       figure=_coverage_figure(table))
