"""dscnn_dog claims: DoG-family coverage vs controls, autoencoder clusters, coverage per stage."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .autoencoder import cluster_kernels, name_clusters
from .convnext import MicroCNN, MicroConvNeXt, TrainConfig, train_classifier
from .coverage import coverage_at, coverage_report
from .kernels import depthwise_kernels, stack_kernels, standard_conv_kernels
from .matching import match_templates, permute_pixels, random_kernels
from .templates import dog_template_bank, lowpass_references

TAU = 0.7  # the spec's headline threshold (coverage is also reported at 0.6 and 0.8)
MAX_LOWPASS_COS = 0.5  # bank: drop templates with |cos| > 0.5 to the flat kernel or a broad blob
N_CLASSES = 8


def _bank():
    """The DoG-family bank without its low-pass members (see ``dog_template_bank``), and the
    best cosine any low-pass reference (flat kernel, sigma = 2 blob) reaches in it: a known
    answer that must stay below the lowest reported tau (0.6), else the bank counts
    smoothing as DoG structure."""
    bank, labels = dog_template_bank(7, max_lowpass_cosine=MAX_LOWPASS_COS)
    refs = lowpass_references(7)
    lowpass_best = float(np.nanmax(match_templates(refs, bank, 0.5).scores))
    return bank, labels, lowpass_best


def _seeds(scale: Scale, seed: int) -> list[int]:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}")
    return [int(seed) + 1000 * i for i in range(sizes(scale, smoke=1, small=3, full=5))]


def _summary(xs):
    return seed_metric(xs)


def _train(scale: Scale, seed: int, model_cls=MicroConvNeXt, progress=None, **model_kw):
    """Dead-leaves images of 8 radius exponents in [2, 4] (the spec's task B) -> classify the
    exponent from random 32x32 crops. Returns (model, copy of the initial depthwise kernels,
    mean training loss over the last 10 % of steps, held-out accuracy).

    Held-out accuracy: 512 (smoke 128) crops of a separately generated dead-leaves pool (its
    own seed), chance 1/8. The spec's default task A (4-way rotation of dead-leaves crops) is
    not learnable: dead leaves are statistically rotation invariant (loss stayed at log 4);
    rotation of the two bundled photographs did not learn in 400 steps either (loss 1.387 vs
    log 4 = 1.386, our probe), so task B stays.

    Budget: the audit found 100 steps (the previous small) leave the network at chance (loss
    2.009 vs 2.079); small now trains 400 steps of batch 32 (AdamW 2e-3, the spec's lr), which
    is where the loss starts to fall in our probe (seed 0: 1.79 at the end, held-out accuracy
    0.25 vs chance 0.125). The spec's 1 000 x 64 does not fit 3 seeds in 5 min on one CPU
    thread (~0.1 s per step at batch 32); it is kept for ``full`` (2 000 x 64)."""
    import torch

    from iclr24.kits.image_sources import dead_leaves_exponents, random_crops

    per_class = sizes(scale, smoke=3, small=16, full=128)
    cfg = TrainConfig(steps=sizes(scale, smoke=25, small=400, full=2000),
                      batch_size=sizes(scale, smoke=16, small=32, full=64), seed=seed)
    pool, pool_labels = dead_leaves_exponents(per_class, size=64, seed=seed)

    def batch(rng, n):
        crops, idx = random_crops(pool, n, 32, rng, return_index=True)
        return crops, pool_labels[idx]

    torch.manual_seed(seed)
    model = model_cls(n_classes=N_CLASSES, **model_kw)
    init = {k: v.clone() for k, v in (depthwise_kernels(model).items()
                                      if model_cls is MicroConvNeXt else [])}
    losses = train_classifier(model, batch, cfg, progress)
    test_pool, test_labels = dead_leaves_exponents(max(2, per_class // 2), size=64,
                                                   seed=seed + 7919)
    rng = np.random.default_rng(seed + 7919)
    x, idx = random_crops(test_pool, sizes(scale, smoke=128, small=512, full=2048), 32, rng,
                          return_index=True)
    from iclr24.kits.threads import torch_threads

    with torch.no_grad(), torch_threads(1):
        pred = model(torch.as_tensor(x, dtype=torch.float32)[:, None]).argmax(1).numpy()
    acc = float(np.mean(pred == test_labels[idx]))
    return model, init, float(np.mean(losses[-max(1, cfg.steps // 10):])), acc


def _ratio(a: float, b: float, n: int) -> float:
    """a / b with b floored at one kernel in n (coverage 0 at init is common)."""
    return a / max(b, 1.0 / n)


@claim(
    rule={"smoke": "ratio_init >= 3 and ratio_permuted >= 3",
          "small": "ratio_init >= 3 and ratio_permuted >= 3 and gap_standard > 0"},
    control={"smoke": "acc_gain > 0 and lowpass_best_cos < 0.6",
             "small": "acc_gain > 0 and acc_gain_standard > 0 and lowpass_best_cos < 0.6"},
    paper="Abstract: > 95 % (ConvNeXtV2) and > 90 % (ConvNeXt) of ImageNet-trained depthwise "
          "filters fall into identifiable DoG-family clusters; regular convolutions do not show "
          "such clean structure. Not re-measurable here (hub weights); the comparison with "
          "controls (spec: trained >= 3x init and permuted at tau = 0.7, DS > standard CNN) is.",
    paper_numbers={"coverage_trained": 0.9},
    against=("the same network's kernels at initialisation and pixel-permuted trained kernels "
             "(null arms; a second independent permutation measures the permuted arm as if it "
             "were the method); at small, a dense-conv CNN trained identically (standard CNN)"),
)
def dog_coverage(scale: Scale, seed: int, progress) -> Measurement:
    """Share of depthwise 7x7 kernels whose best DoG-family template (both signs, low-pass
    templates removed) has cosine >= 0.7, for the trained micro ConvNeXt (method), the same
    network at initialisation, the trained kernels with pixels permuted (two independent
    permutations), i.i.d. Gaussian kernels (the bank's chance rate) and, at small, every 7x7
    (out, in) slice of a dense-conv twin trained identically (standard CNN). ``ratio_*`` =
    coverage(trained) / coverage(control) per seed, the control floored at 1/N; ``gap_standard``
    = coverage(trained) - coverage(standard), paired by seed.

    Rule (the spec's, unchanged): trained >= 3x init and >= 3x permuted, and (small) above the
    standard CNN. Control, new after the audit and fixed before running it: (i) the network
    learns: held-out accuracy minus chance (1/8), ``acc_gain``, > 0 over the seeds (the audit's
    small run sat at loss 2.009 vs chance 2.079, where no kernel statistic means anything), and
    at small the standard CNN learns too (``acc_gain_standard`` > 0; an untrained twin would be
    a straw baseline with init coverage); (ii) the bank does not count smoothing as DoG: the
    best cosine of the flat kernel and of a sigma = 2 blob with the bank, ``lowpass_best_cos``,
    is < 0.6. The full bank matched a constant kernel at 0.85 and trained kernels are largely
    same-sign (a permutation keeps their mean, which is why the permuted arm nearly matched
    the trained one, 0.19 vs 0.23); templates with |cos| > 0.5 to those references are now
    dropped (812 of 940 remain). Full-bank coverages are still reported (``*_fullbank``).

    The standard CNN is the micro ConvNeXt with dense 7x7 convolutions at half width (dims
    16/32/64, ~0.6 M parameters against the ConvNeXt's ~0.4 M; the full-width dense twin has
    2.4 M and costs 3x the ConvNeXt per step, which does not fit 3 seeds in 5 min)."""
    bank, labels, lowpass_best = _bank()
    full_bank, _ = dog_template_bank(7)
    with_standard = scale is not Scale.SMOKE
    seeds = _seeds(scale, seed)
    rows, table = [], []
    for i, s in enumerate(seeds):
        model, init, loss, acc = _train(scale, s)
        tr = stack_kernels(depthwise_kernels(model)).numpy()
        perm = permute_pixels(tr, s)
        groups = {"trained": tr, "init": stack_kernels(init).numpy(),
                  "permuted": perm, "permuted2": permute_pixels(tr, s + 1),
                  "random": random_kernels(len(tr), 7, s)}
        if with_standard:
            cnn, _, loss_cnn, acc_cnn = _train(scale, s, MicroCNN, dims=(16, 32, 64))
            groups["standard_cnn"] = stack_kernels(standard_conv_kernels(cnn)).numpy()
        cov = {g: coverage_at(k, bank, TAU) for g, k in groups.items()}
        n = len(tr)
        row = {"seed": s, "loss": loss, "acc_gain": acc - 1.0 / N_CLASSES,
               **{f"coverage_{g}": c for g, c in cov.items()},
               "coverage_trained_fullbank": coverage_at(tr, full_bank, TAU),
               "coverage_permuted_fullbank": coverage_at(perm, full_bank, TAU),
               "ratio_init": _ratio(cov["trained"], cov["init"], n),
               "ratio_permuted": _ratio(cov["trained"], cov["permuted"], n),
               # null arm as the method: the permuted kernels against the same controls
               "null_ratio_init": _ratio(cov["permuted"], cov["init"], n),
               "null_ratio_permuted": _ratio(cov["permuted"], cov["permuted2"], n)}
        if with_standard:
            row["loss_standard_cnn"] = loss_cnn
            row["acc_gain_standard"] = acc_cnn - 1.0 / N_CLASSES
        rows.append(row)
        table += [{"seed": s, **r} for r in coverage_report(groups, bank, labels)]
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {k: _summary([r[k] for r in rows]) for k in rows[0] if k not in ("seed",)}
    metrics["lowpass_best_cos"] = lowpass_best
    if with_standard:
        metrics["gap_standard"] = seed_difference(
            [r["coverage_trained"] for r in rows], [r["coverage_standard_cnn"] for r in rows])
        metrics["null_gap_standard"] = seed_difference(
            [r["coverage_permuted"] for r in rows], [r["coverage_standard_cnn"] for r in rows])
    return Measurement(
        metrics=metrics,
        figure=_coverage_figure(table),
        tables={"coverage_per_tau": table, "per_seed": rows},
        notes="Absolute coverage is far below the paper's 90-95 %: a 0.4 M-parameter network "
              "trained for 400 CPU steps (small) on synthetic dead-leaves images, not ImageNet "
              "models. Not thresholded; the rule compares against controls measured in this "
              "run. Bank: DoG family without its low-pass members (|cos| > 0.5 to a flat "
              "kernel or a sigma = 2 blob); *_fullbank columns use all 940 templates.",
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
    rule="n_matched_trained >= 3 and matched_gap_permuted > 0 and matched_gap_init > 0",
    control="acc_gain > 0 and lowpass_best_cos < 0.6",
    paper="Sec. 4: unsupervised clustering (autoencoder, cosine loss) of trained depthwise "
          "kernels yields a handful of recurring DoG-family patterns (roughly ten cover most "
          "filters).",
    against=("the same autoencoder + k-means clustering of the same network's kernels at init "
             "and of the trained kernels with pixels permuted (null arms)"),
)
def cluster_structure(scale: Scale, seed: int, progress) -> Measurement:
    """Autoencoder (k^2 -> 64 -> 16 -> 2, cosine loss) + k-means (k = 10) on the trained
    depthwise kernels and, separately, on the same network's initial kernels and on the
    trained kernels with pixels permuted. A cluster is matched when its mean normalised kernel
    has cosine >= 0.8 with a DoG-family template (bank without low-pass templates, see
    ``dog_coverage``). ``matched_gap_*`` = matched clusters (trained) - matched clusters
    (control), paired by seed.

    Rule, changed after the audit (fixed before running it): the audit found the permuted
    trained kernels gave *more* matched clusters (6, share 0.65) than the trained ones (5,
    0.55) while the old rule compared only with init; so the trained kernels must now also beat
    the permuted ones. Control: the network learns (``acc_gain`` > 0, held-out accuracy over
    chance 1/8) and a flat kernel / broad blob is not DoG in this bank (``lowpass_best_cos`` <
    0.6, below the cluster threshold 0.8 too)."""
    bank, labels, lowpass_best = _bank()
    ae_steps = sizes(scale, smoke=100, small=1500, full=3000)
    seeds = _seeds(scale, seed)
    rows, clusters = [], []
    for i, s in enumerate(seeds):
        model, init, _, acc = _train(scale, s)
        trained = stack_kernels(depthwise_kernels(model)).numpy()
        row = {"seed": s, "acc_gain": acc - 1.0 / N_CLASSES}
        for g, ks in (("trained", trained), ("init", stack_kernels(init).numpy()),
                      ("permuted", permute_pixels(trained, s))):
            res = cluster_kernels(ks, 2, 10, seed=s, steps=ae_steps)
            named = name_clusters(res, bank, labels, tau=0.8)
            clusters += [{"seed": s, "kernels": g, **c} for c in named]
            matched = [c for c in named if c["matched"]]
            row[f"n_matched_{g}"] = len(matched)
            row[f"share_matched_{g}"] = sum(c["size"] for c in matched) / res.sizes.sum()
            row[f"ae_loss_{g}"] = res.loss
        rows.append(row)
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {k: _summary([r[k] for r in rows]) for k in rows[0] if k != "seed"}
    metrics["lowpass_best_cos"] = lowpass_best
    col = {g: [r[f"n_matched_{g}"] for r in rows] for g in ("trained", "init", "permuted")}
    metrics["matched_gap_init"] = seed_difference(col["trained"], col["init"])
    metrics["matched_gap_permuted"] = seed_difference(col["trained"], col["permuted"])
    # the null arm (permuted kernels) in the method's place, against init
    metrics["null_matched_gap_init"] = seed_difference(col["permuted"], col["init"])
    return Measurement(metrics=metrics, tables={"clusters": clusters, "per_seed": rows},
                       notes="Clusters are named by the template-match rule on their mean "
                             "kernel (family of the best template), never by eye. Bank without "
                             "low-pass templates (see dog_coverage).")


def _stage(kernels: dict, stage: int) -> np.ndarray:
    return np.concatenate([v.numpy() for k, v in kernels.items()
                           if k.startswith(f"stages.{stage}.")])


@claim(
    rule="min_stage_gap_permuted > 0 and min_stage_gap_init > 0",
    control="acc_gain > 0 and lowpass_best_cos < 0.6",
    paper="Sec. 4: DoG-family clusters appear in all layers, not only the first.",
    against=("pixel-permuted copies of each stage's trained kernels and the same stage's "
             "kernels at initialisation (null arms); a second permutation measures the permuted "
             "arm as if it were the method"),
)
def layerwise(scale: Scale, seed: int, progress) -> Measurement:
    """Coverage per stage (tau 0.6/0.7/0.8) of the trained, initial and pixel-permuted
    kernels (bank without low-pass templates). ``min_stage_gap_permuted`` = min over the 3
    stages of coverage(trained) - coverage(permuted) at tau = 0.7 per seed (interval over
    seeds); ``min_stage_gap_init`` the same against the initial kernels: structure beyond both
    nulls in every stage. The absolute numbers are not thresholded.

    Changed after the audit (before running it): the init arm now enters the rule beside the
    permuted one, and the control of ``dog_coverage`` (the network learns: ``acc_gain`` > 0;
    the bank does not match a flat kernel or a broad blob: ``lowpass_best_cos`` < 0.6)
    applies."""
    bank, labels, lowpass_best = _bank()
    seeds = _seeds(scale, seed)
    cols: dict[str, list[float]] = {"permuted": [], "init": [], "null_permuted": [],
                                    "null_init": [], "acc_gain": []}
    table = []
    for i, s in enumerate(seeds):
        model, init, _, acc = _train(scale, s)
        trained = depthwise_kernels(model)
        groups = {}
        for stage in range(3):
            tr = _stage(trained, stage)
            groups[f"stage{stage + 1}/trained"] = tr
            groups[f"stage{stage + 1}/init"] = _stage(init, stage)
            groups[f"stage{stage + 1}/permuted"] = permute_pixels(tr, s + stage)
            groups[f"stage{stage + 1}/permuted2"] = permute_pixels(tr, s + stage + 500)
        rep = coverage_report(groups, bank, labels)
        table += [{"seed": s, **r} for r in rep]
        cov = {(r["group"], r["tau"]): r["coverage"] for r in rep}

        def gap(a: str, b: str, cov=cov) -> float:
            return min(cov[(f"stage{j}/{a}", TAU)] - cov[(f"stage{j}/{b}", TAU)]
                       for j in (1, 2, 3))

        cols["permuted"].append(gap("trained", "permuted"))
        cols["init"].append(gap("trained", "init"))
        cols["null_permuted"].append(gap("permuted", "permuted2"))
        cols["null_init"].append(gap("permuted", "init"))
        cols["acc_gain"].append(acc - 1.0 / N_CLASSES)
        progress((i + 1) / len(seeds), f"seed {s}")
    metrics = {"min_stage_gap_permuted": _summary(cols["permuted"]),
               "min_stage_gap_init": _summary(cols["init"]),
               "null_min_stage_gap_permuted": _summary(cols["null_permuted"]),
               "null_min_stage_gap_init": _summary(cols["null_init"]),
               "acc_gain": _summary(cols["acc_gain"]),
               "lowpass_best_cos": lowpass_best}
    for j in (1, 2, 3):
        for g in ("trained", "init", "permuted"):
            metrics[f"coverage_stage{j}_{g}"] = _summary(
                [r["coverage"] for r in table if r["group"] == f"stage{j}/{g}" and r["tau"] == TAU])
    return Measurement(metrics=metrics, tables={"coverage_per_stage": table},
                       figure=_coverage_figure(table))
