"""Claims of Foundation Model-oriented Robustness: oracle bounding preserves labels (judged by a
held-out judge) and FMR separates robust from standard training, on digits (see
:mod:`.digit_world` for the scaled-down world).

Each claim measures its null arm in the same run and its ``control`` requires that the null does
not pass the rule: for label preservation, the same oracle-bounded generation with a
label-shifted oracle (:meth:`.OracleZoo.label_shifted`: the mechanism kept, the oracle's
knowledge of y removed); for FMR, the plain CNN (the robust models' architecture without robust
training) in place of the robust models. FMR is a rate in [0, 1] here, not the paper's PA / SA
(see :mod:`.robustness_metric`). Images are 8 x 8 at smoke and small against the spec's 16 x 16:
the digits' native size; upsampling adds no information and makes generation about 4x dearer
(see :mod:`.digit_world`); ``full`` uses 16 x 16."""

from __future__ import annotations

import numpy as np
import torch

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.threads import torch_threads

from .digit_world import DigitWorld, DigitWorldConfig, build_digit_world, gaussian_noise
from .latent_generation import generate_oracle_bounded, latent_attack
from .robustness_metric import foundation_model_robustness, label_agreement

_LR = 0.05  # latent sign-step size (the spec's default)
_NOISE_SIGMA = 0.3  # the fixed Gaussian-noise benchmark (an ImageNet-C stand-in)
_ROBUST, _STANDARD = ("cnn_noise", "cnn_pgd"), ("logreg", "mlp")
_NULL_SHIFT = 1  # the null oracle keeps label y + 1 (mod 10) instead of y


def _setting(scale: Scale, seed: int) -> tuple[DigitWorld, torch.Tensor, torch.Tensor, int, list]:
    config = sizes(scale, smoke=DigitWorldConfig(vq_steps=40, oracle_widths=(8, 12, 16),
                                           oracle_epochs=3, model_epochs=10),
                   small=DigitWorldConfig(), full=DigitWorldConfig(size=16, vq_ch=16,
                                                                   vq_steps=2000,
                                                                   oracle_epochs=40))
    world = build_digit_world(config, seed)
    x, y = world.part("test")
    n_test = sizes(scale, smoke=120, small=len(x))
    pick = torch.from_numpy(np.sort(np.random.default_rng(seed).permutation(len(x))[:n_test]))
    steps = sizes(scale, smoke=15, small=50)
    replicates = [100 * seed + r for r in range(sizes(scale, smoke=1, small=3))]
    return world, x[pick], y[pick], steps, replicates


def _accuracy(model, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    with torch.no_grad():
        right = model(x).argmax(1) == y
    return float((right if mask is None else right[mask]).double().mean())


def _sample_figure(x, rows: dict[str, tuple[torch.Tensor, torch.Tensor]], y, n: int = 10):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(n * 0.9, 1.1 * (len(rows) + 1)))
    axes = fig.subplots(len(rows) + 1, n, squeeze=False)
    for j in range(n):
        axes[0][j].imshow(x[j, 0].numpy(), cmap="gray", vmin=0, vmax=1)
        axes[0][j].set_title(f"y={int(y[j])}", fontsize=7)
        for i, (name, (imgs, judged)) in enumerate(rows.items(), start=1):
            axes[i][j].imshow(imgs[j, 0].numpy(), cmap="gray", vmin=0, vmax=1)
            axes[i][j].set_title(f"judge {int(judged[j])}", fontsize=7)
    for i, name in enumerate(["test image", *rows]):
        axes[i][0].set_ylabel(name, fontsize=7)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


@claim(
    rule="judge_gain >= 0.15 and acc_oracle <= 0.6",
    control="not (judge_gain_null >= 0.15 and acc_null <= 0.6)",
    paper="Abstract / Sec. 3: the generated images are perturbed enough that evaluated models "
          "fail on them, yet stay within the image-label structure of the original, as bounded "
          "by the foundation-model oracle (reviewers: often visually mild). No number is given; "
          "the spec's reading: with the oracle, a held-out judge agrees with y on >= 85% of "
          "accepted images while the model's accuracy is <= 50%; without it (lambda = 0, same "
          "budget) judge agreement drops (e.g. below 65%).",
    paper_numbers={"judge_oracle": 0.85, "acc_oracle": 0.5},
    against=("the same latent attack and budget without the oracle (lam = 0, no acceptance); the "
             "filter-only ablation reported"),
)
def oracle_preserves_labels(scale: Scale, seed: int, progress=None) -> Measurement:
    """The small CNN attacked in the VQ latent with the same budget three ways: oracle-bounded
    (lam = 1, last accepted iterate: the method), unconstrained (lam = 0, no acceptance: the
    oracle removed) and filter-only (lam = 0, oracle acceptance kept: an ablation, reported).
    ``judge_*`` is the held-out judge's (RBF SVC on pixels, never used in generation) agreement
    with y on the accepted (method) or all (unconstrained) generated images; ``acc_*`` is the
    model's accuracy there. judge_gain = judge_oracle - judge_free, paired over training seeds
    of the evaluated CNN (the oracle zoo, generator and judge are fixed per claim seed).

    Null arm (added in the repair, rule unchanged): the method with a label-shifted oracle (the
    zoo keeps and accepts y + 1 instead of y), same model, images and budget. It keeps penalty,
    acceptance and fallback to the reconstruction, so if the judge gain came from that machinery
    rather than from the oracle knowing the label, the null would pass the rule too; the control
    requires it does not (judge_gain_null = judge_null - judge_free, on its accepted images, or
    on all of its images where it accepted none)."""
    progress = progress or (lambda *a, **k: None)
    with torch_threads(1):
        world, x, y, steps, reps = _setting(scale, seed)
        cols: dict[str, list[float]] = {k: [] for k in (
            "judge_oracle", "acc_oracle", "accept_oracle", "judge_free", "acc_free",
            "judge_filter", "acc_filter", "accept_filter", "judge_null", "acc_null",
            "accept_null", "clean_acc")}
        null_zoo = world.zoo.label_shifted(_NULL_SHIFT)
        rows = []
        for r, rep in enumerate(reps):
            progress(r / len(reps), f"replicate {r + 1}/{len(reps)}")
            model = world.train_model("cnn", rep)
            x1, ok1 = generate_oracle_bounded(model, world.zoo, world.generator, x, y,
                                              steps=steps, lr=_LR, lam=1.0)
            x0, ok0 = generate_oracle_bounded(model, world.zoo, world.generator, x, y,
                                              steps=steps, lr=_LR, lam=0.0)
            xf = latent_attack(model, world.generator, x, y, steps=steps, lr=_LR)
            xn, okn = generate_oracle_bounded(model, null_zoo, world.generator, x, y,
                                              steps=steps, lr=_LR, lam=1.0)
            mask_null = okn if bool(okn.any()) else None
            row = {"judge_oracle": label_agreement(world.judge, x1, y, ok1),
                   "acc_oracle": _accuracy(model, x1, y, ok1),
                   "accept_oracle": float(ok1.double().mean()),
                   "judge_free": label_agreement(world.judge, xf, y),
                   "acc_free": _accuracy(model, xf, y),
                   "judge_filter": label_agreement(world.judge, x0, y, ok0),
                   "acc_filter": _accuracy(model, x0, y, ok0),
                   "accept_filter": float(ok0.double().mean()),
                   "judge_null": label_agreement(world.judge, xn, y, mask_null),
                   "acc_null": _accuracy(model, xn, y, mask_null),
                   "accept_null": float(okn.double().mean()),
                   "clean_acc": _accuracy(model, x, y)}
            for k, v in row.items():
                cols[k].append(v)
            rows.append({"seed": rep, **row})
        judge_recon = label_agreement(world.judge, world.generator.reconstruct(x), y)
        judge_clean = label_agreement(world.judge, x, y)
        fig = _sample_figure(x, {"oracle-bounded": (x1, world.judge(x1)),
                                 "unconstrained": (xf, world.judge(xf))}, y)
    metrics = {k: seed_metric(v) for k, v in cols.items()}
    metrics["judge_gain"] = seed_difference(cols["judge_oracle"], cols["judge_free"])
    metrics["judge_gain_null"] = seed_difference(cols["judge_null"], cols["judge_free"])
    metrics["judge_recon"] = judge_recon
    metrics["judge_clean"] = judge_clean
    return Measurement(
        metrics=metrics, figure=fig, tables={"replicates": rows},
        notes=f"{len(x)} test digits ({world.config.size}x{world.config.size}), {steps} latent "
              f"sign steps of {_LR}; zoo of {len(world.zoo)} CNNs (accept: ensemble argmax = y "
              f"with p >= {world.zoo.accept_threshold}); judge = RBF SVC on pixels. Null arm: "
              f"the oracle keeps label y + {_NULL_SHIFT} instead of y. 8 x 8 images (the "
              "digits' native size) except at full: upsampling adds no information and makes "
              "generation about 4x dearer. The figure's bottom rows are from the last "
              "replicate.")


@claim(
    rule="fmr_gap >= 0.1",
    control="not (fmr_gap_plain_cnn >= 0.1)",
    paper="Sec. 5 (MNIST / CIFAR-10 / ImageNet): FMR ranks models differently from fixed "
          "benchmarks; robustness methods change FMR (DAT best per a reviewer); exact FMR numbers "
          "were not retrieved. The spec's reading at digit scale: the noise-augmented and "
          "PGD-trained CNNs exceed the MLP and logistic regression in FMR by >= 0.1.",
    paper_numbers={},
    against=("standard models (MLP, logistic regression), each on its own oracle-bounded set from "
             "the same images and budget"),
)
def fmr_separates_training(scale: Scale, seed: int, progress=None) -> Measurement:
    """FMR of each evaluated model on its own oracle-bounded generated set (same test images,
    budget, lam = 1 and acceptance rule for all): of the test images it classifies right whose
    generated image the oracle accepts, the fraction it still classifies right there (a rate; the
    paper's PA / SA, reported as pa_over_sa_<model>, compares accepted-only accuracy with
    whole-set accuracy and exceeded 1 before the repair). fmr_gap = min FMR over the robust
    models present (noise-augmented, PGD-trained CNN) - max FMR over the standard ones (MLP,
    logistic regression), paired over training seeds. Reported, not judged: SA, acceptance rate,
    judge agreement on the accepted images, accuracy under fixed Gaussian noise (sigma 0.3) and
    the Spearman correlation of the FMR and noise rankings (over the models' means).

    Null arm (added in the repair, rule unchanged): the plain CNN, the robust models'
    architecture without robust training, measured at every scale. fmr_gap_plain_cnn = its FMR
    - max FMR over the standard models; if it passes the rule too, a gap is the architecture's,
    not the training's, and the control makes the verdict inconclusive."""
    from scipy.stats import spearmanr

    progress = progress or (lambda *a, **k: None)
    kinds = sizes(scale, smoke=("logreg", "mlp", "cnn", "cnn_noise"),
                  small=("logreg", "mlp", "cnn", "cnn_noise", "cnn_pgd"))
    with torch_threads(1):
        world, x, y, steps, reps = _setting(scale, seed)
        noisy = gaussian_noise(x, _NOISE_SIGMA, torch.Generator().manual_seed(seed))
        per: dict[str, dict[str, list[float]]] = {
            k: {"fmr": [], "pa_over_sa": [], "sa": [], "pa": [], "accept": [], "judge": [],
                "noise_acc": []}
            for k in kinds}
        rows = []
        for r, rep in enumerate(reps):
            for i, kind in enumerate(kinds):
                progress((r * len(kinds) + i) / (len(reps) * len(kinds)), f"{kind} seed {rep}")
                model = world.train_model(kind, rep)
                res = foundation_model_robustness(model, world.zoo, world.generator, [(x, y)],
                                                  steps=steps, lr=_LR, lam=1.0)
                row = {"fmr": res.fmr, "pa_over_sa": res.pa_over_sa, "sa": res.sa, "pa": res.pa,
                       "accept": res.accept_rate,
                       "judge": label_agreement(world.judge, res.x_generated, y, res.accepted),
                       "noise_acc": _accuracy(model, noisy, y)}
                for k, v in row.items():
                    per[kind][k].append(v)
                rows.append({"model": kind, "seed": rep, **row})
    robust = [k for k in kinds if k in _ROBUST]
    standard = [k for k in kinds if k in _STANDARD]
    best_standard = [max(per[k]["fmr"][r] for k in standard) for r in range(len(reps))]
    worst_robust = [min(per[k]["fmr"][r] for k in robust) for r in range(len(reps))]
    metrics = {"fmr_gap": seed_difference(worst_robust, best_standard),
               "fmr_gap_plain_cnn": seed_difference(per["cnn"]["fmr"], best_standard)}
    for kind in kinds:
        for name, values in per[kind].items():
            metrics[f"{name}_{kind}"] = seed_metric(values)
    mean_fmr = [float(np.mean(per[k]["fmr"])) for k in kinds]
    mean_noise = [float(np.mean(per[k]["noise_acc"])) for k in kinds]
    rho = spearmanr(mean_fmr, mean_noise).statistic
    metrics["spearman_fmr_noise"] = float(rho) if np.isfinite(rho) else 0.0

    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.2))
    ax = fig.subplots()
    pos = np.arange(len(kinds))
    ax.bar(pos - 0.2, mean_fmr, 0.4, label="FMR (oracle-bounded)")
    ax.bar(pos + 0.2, mean_noise, 0.4, label=f"accuracy, Gaussian noise {_NOISE_SIGMA}")
    ax.set_xticks(pos, kinds)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title(f"{len(reps)} seed(s), {steps} steps, {len(x)} test digits", fontsize=8)
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"models": rows},
        notes="FMR per model is the fraction of its clean-correct, oracle-accepted test images it "
              "still gets right after generation (a rate; the paper's PA / SA is pa_over_sa); "
              "every model gets its own generated set from the same test images. Null arm: the "
              "plain CNN (fmr_gap_plain_cnn). 8 x 8 images (native) except at full. "
              "judge_<model> says "
              "whether the zoo really bounded that model's generated set: where the held-out "
              "judge disagrees with y on most accepted images, the attack fooled the oracle too "
              "and a low FMR reflects the oracle's weakness, not the model's. "
              "spearman_fmr_noise is 0 when a ranking is constant.")
