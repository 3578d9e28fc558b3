"""Cosmos claims: relational composition (RC-Team) and entity composition (EC), paper Sec. 5."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_metric, sizes

from .environment import COLORS, SHAPES, BlockPushingEnv
from .experiment import MODELS, ComparisonConfig, run_comparison
from .perception import AttributeClassifier, FrozenAttributeLabeler, fit_attribute_classifier


def _labeler(seed: int) -> FrozenAttributeLabeler:
    """The frozen foundation-model stand-in, trained once per machine on single-object renders."""
    from iclr24.kits.frozen_standins import cached_standin

    env = BlockPushingEnv(seed=seed)
    images, labels = env.single_object_renders()
    attributes = {"shape": SHAPES, "color": COLORS}
    config = {"cell": env.cell, "grid": env.grid, "steps": 150, "batch_size": 64}

    def make() -> AttributeClassifier:
        import torch

        with torch.random.fork_rng():
            torch.manual_seed(seed)
            return AttributeClassifier({a: len(v) for a, v in attributes.items()},
                                       env.image_size)

    def train(model: AttributeClassifier) -> None:
        fit_attribute_classifier(model, images, labels, seed=seed, steps=config["steps"],
                                 batch_size=config["batch_size"])

    return FrozenAttributeLabeler(cached_standin("cosmos-labeler", config, seed, make, train),
                                  attributes)


def _compare(composition: str, scale: Scale, seed: int, progress) -> Measurement:
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    cfg = sizes(scale,
                smoke=ComparisonConfig(composition, n_train=400, n_test=200,
                                       warm_start_steps=60, steps=40, batch_size=16),
                small=ComparisonConfig(composition))
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    runs = []
    with torch_threads(1):
        labeler = _labeler(seed)
        for i, s in enumerate(seeds):
            runs.append(run_comparison(
                cfg, s, labeler,
                lambda f, m, i=i: progress((i + f) / len(seeds), m)))
    mse = {m: [r["metrics"][m]["mse"] for r in runs] for m in MODELS}
    baselines = [m for m in MODELS if m != "cosmos"]
    best = min(baselines, key=lambda m: float(np.mean(mse[m])))
    ratio = [c / b for c, b in zip(mse["cosmos"], mse[best])]
    metrics = {"mse_ratio": seed_metric(ratio),
               "mse_copy": seed_metric([r["copy_mse"] for r in runs]),
               "symbol_accuracy": seed_metric([r["symbol_accuracy"] for r in runs])}
    for m in MODELS:
        metrics[f"mse_{m}"] = seed_metric(mse[m])
        for key in ("position_accuracy", "scene_accuracy", "train_mse"):
            metrics[f"{key}_{m}"] = seed_metric([r["metrics"][m][key] for r in runs])
    if composition == "team":  # test transitions whose actor has a same-colored partner
        sub = {m: [float(r["metrics"][m]["mse_per_transition"][r["team_subset"]].mean())
                   for r in runs] for m in MODELS}
        metrics["mse_ratio_team_subset"] = seed_metric(
            [c / b for c, b in zip(sub["cosmos"], sub[best])])
    rows = [{"seed": s, **{f"mse_{m}": r["metrics"][m]["mse"] for m in MODELS},
             **{f"pos_acc_{m}": r["metrics"][m]["position_accuracy"] for m in MODELS},
             "mse_copy": r["copy_mse"], "symbol_accuracy": r["symbol_accuracy"],
             "ratio_vs_best_baseline": q} for s, r, q in zip(seeds, runs, ratio)]
    notes = (f"best baseline (lowest mean test MSE): {best}. Test scenes are held-out "
             f"combinations only; sizes: {cfg}. Labeler: frozen CNN on single-object renders "
             "(CLIP stand-in); segmenter: connected components (SAM stand-in).")
    return Measurement(metrics=metrics, figure=_figure(mse, seeds, composition),
                       tables={"per_seed": rows}, notes=notes)


def _figure(mse: dict[str, list[float]], seeds: list[int], composition: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    ax = fig.add_subplot()
    xs = np.arange(len(MODELS))
    means = [float(np.mean(mse[m])) for m in MODELS]
    ax.bar(xs, means, color=["tab:green", "tab:blue", "tab:orange"])
    for j, m in enumerate(MODELS):
        ax.scatter([j] * len(seeds), mse[m], color="black", s=10, zorder=3)
    ax.set_xticks(xs, ["Cosmos", "Aligned NPS", "GNN"])
    ax.set_ylabel("next-state pixel MSE (held-out)")
    ax.set_title(f"block pushing, {composition}: bars = mean, dots = seeds")
    fig.tight_layout()
    return fig


@claim(
    rule="mse_ratio <= 0.7",
    paper="Sec. 5 / project page: on relational composition (Team: objects sharing the actor's "
          "color move with it) Cosmos sets a new state of the art in next-state prediction on "
          "unseen compositions; both Aligned NPS and the GNN mispredict (e.g. move an object that "
          "shares no attribute with the actor). The spec asks for Cosmos MSE <= 0.7 x the better "
          "baseline (table numbers not retrieved).",
    against=("the better (lower mean MSE) of Aligned NPS and a GNN with the same autoencoder, "
             "data and seeds; copy-the-frame MSE reported"),
    resources={"cpus": 1},
)
def relational_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """RC-Team: next-state pixel MSE on held-out same-color pairs, Cosmos vs the better of
    Aligned NPS and GNN. ``mse_ratio`` = per-seed MSE_Cosmos / MSE_best-baseline (Student-t over
    3 replicates at small); holds if the whole interval is <= 0.7."""
    return _compare("team", scale, seed, progress)


@claim(
    rule="mse_ratio <= 1.2",
    paper="Sec. 5 / project page: on entity composition the baselines are already strong (the "
          "dynamics do not depend on the composition) and Cosmos matches or beats them; the "
          "spec asks for Cosmos MSE <= 1.2 x the best baseline (table numbers not retrieved).",
    against=("the better (lower mean MSE) of Aligned NPS and a GNN with the same autoencoder, "
             "data and seeds; copy-the-frame MSE reported"),
    resources={"cpus": 1},
)
def entity_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """EC: next-state pixel MSE on held-out atom triples, Cosmos vs the better baseline;
    holds if the whole interval of the per-seed ratio is <= 1.2 (no loss where composition does
    not matter)."""
    return _compare("entity", scale, seed, progress)
