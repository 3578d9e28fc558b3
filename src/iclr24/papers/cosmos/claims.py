"""Cosmos claims: relational composition (RC-Team) and entity composition (EC), paper Sec. 5.

Both compare Cosmos with the better of Aligned NPS and a GNN over 3 seeds at small, and both
measure copy-the-frame beside the models as their null arm (issue 38); the relational claim
also measures the baseline's generalisation gap on an in-distribution test set, the positive
control that the test bed needs what symbols give."""

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


def _subset_means(r: dict, model: str, composition: str) -> tuple[float, float]:
    """Mean test MSE of ``model`` (or "copy") on held-out and on in-distribution transitions of
    one replicate, over the transitions where the setting's relation acts (Team: the actor has a
    same-colored partner; EC: all)."""
    held = r["copy"] if model == "copy" else r["metrics"][model]
    seen = r["copy_indist"] if model == "copy" else r["indist"][model]
    if composition == "team":
        return (float(held["mse_per_transition"][r["team_subset"]].mean()),
                float(seen["mse_per_transition"][r["indist_team_subset"]].mean()))
    return float(held["mse"]), float(seen["mse"])


def _comparison_metrics(runs: list[dict], composition: str) -> tuple[dict, str]:
    """The claim's metrics from :func:`~.experiment.run_comparison` replicates (one per seed),
    and the name of the best baseline (lowest mean held-out MSE over the seeds).

    ``mse_ratio``: per seed MSE_Cosmos / MSE_best (the rule); ``mse_ratio_copy``: per seed
    MSE_copy / MSE_best, the copy-the-frame null in Cosmos's place (> 1: the best baseline beats
    copying the frame); ``heldout_gap_<m>`` (models only): per seed (MSE_m / MSE_copy on
    held-out transitions) / (MSE_m / MSE_copy on in-distribution transitions), over the
    transitions where the relation acts (Team subset for RC, all for EC);
    ``heldout_gap_best_baseline``: that of the best baseline; ``copy_mse_heldout_over_indist``:
    the copy's raw MSE held-out over seen (how many more pixels move in one subset than in the
    other); per-model MSE, position and scene accuracy, train MSE; for RC the ratio on the Team
    subset. Several seeds give Student-t estimates, one seed plain numbers."""
    mse = {m: [r["metrics"][m]["mse"] for r in runs] for m in MODELS}
    baselines = [m for m in MODELS if m != "cosmos"]
    best = min(baselines, key=lambda m: float(np.mean(mse[m])))
    copy = [r["copy"]["mse"] for r in runs]
    metrics = {"mse_ratio": seed_metric([c / b for c, b in zip(mse["cosmos"], mse[best])]),
               "mse_ratio_copy": seed_metric([c / b for c, b in zip(copy, mse[best])]),
               "mse_copy": seed_metric(copy),
               "position_accuracy_copy": seed_metric(
                   [r["copy"]["position_accuracy"] for r in runs]),
               "symbol_accuracy": seed_metric([r["symbol_accuracy"] for r in runs]),
               "best_baseline": float(MODELS.index(best))}
    for m in MODELS:
        metrics[f"mse_{m}"] = seed_metric(mse[m])
        for key in ("position_accuracy", "scene_accuracy", "train_mse"):
            metrics[f"{key}_{m}"] = seed_metric([r["metrics"][m][key] for r in runs])
        metrics[f"mse_indist_{m}"] = seed_metric([r["indist"][m]["mse"] for r in runs])
    gaps = {}
    for m in MODELS:
        gaps[m] = []
        for r in runs:
            (m_held, m_seen), (c_held, c_seen) = (_subset_means(r, m, composition),
                                                  _subset_means(r, "copy", composition))
            gaps[m].append((m_held / c_held) / (m_seen / c_seen))   # relative-MSE gap
        metrics[f"heldout_gap_{m}"] = seed_metric(gaps[m])
    metrics["heldout_gap_best_baseline"] = seed_metric(gaps[best])
    metrics["copy_mse_heldout_over_indist"] = seed_metric(
        [np.divide(*_subset_means(r, "copy", composition)) for r in runs])
    if composition == "team":  # test transitions whose actor has a same-colored partner
        sub = {m: [float(r["metrics"][m]["mse_per_transition"][r["team_subset"]].mean())
                   for r in runs] for m in MODELS}
        metrics["mse_ratio_team_subset"] = seed_metric(
            [c / b for c, b in zip(sub["cosmos"], sub[best])])
    return metrics, best


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
    metrics, best = _comparison_metrics(runs, composition)
    mse = {m: [r["metrics"][m]["mse"] for r in runs] for m in MODELS}
    rows = [{"seed": s, **{f"mse_{m}": r["metrics"][m]["mse"] for m in MODELS},
             **{f"mse_indist_{m}": r["indist"][m]["mse"] for m in MODELS},
             **{f"pos_acc_{m}": r["metrics"][m]["position_accuracy"] for m in MODELS},
             "mse_copy": r["copy"]["mse"], "pos_acc_copy": r["copy"]["position_accuracy"],
             "mse_copy_indist": r["copy_indist"]["mse"],
             "symbol_accuracy": r["symbol_accuracy"],
             "ratio_vs_best_baseline": r["metrics"]["cosmos"]["mse"] / r["metrics"][best]["mse"]}
            for s, r in zip(seeds, runs)]
    notes = (f"best baseline (lowest mean test MSE): {best}. Test scenes are held-out "
             f"combinations only; the in-distribution set holds {cfg.n_test} fresh transitions "
             "of seen combinations (generalisation gaps are MSE relative to copy-the-frame, "
             "held-out over seen, on the transitions where the relation acts). Sizes: "
             f"{cfg}. Labeler: frozen CNN on single-object renders (CLIP stand-in); "
             "segmenter: connected components (SAM stand-in).")
    return Measurement(metrics=metrics,
                       figure=_figure(mse, [r["copy"]["mse"] for r in runs], seeds,
                                      composition),
                       tables={"per_seed": rows}, notes=notes)


def _figure(mse: dict[str, list[float]], copy: list[float], seeds: list[int], composition: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 3.2))
    ax = fig.add_subplot()
    xs = np.arange(len(MODELS))
    means = [float(np.mean(mse[m])) for m in MODELS]
    ax.bar(xs, means, color=["tab:green", "tab:blue", "tab:orange"])
    for j, m in enumerate(MODELS):
        ax.scatter([j] * len(seeds), mse[m], color="black", s=10, zorder=3)
    ax.axhline(float(np.mean(copy)), color="tab:red", ls="--", label="copy the frame")
    ax.set_xticks(xs, ["Cosmos", "Aligned NPS", "GNN"])
    ax.set_ylabel("next-state pixel MSE (held-out)")
    ax.set_title(f"block pushing, {composition}: bars = mean, dots = seeds", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@claim(
    rule="mse_ratio <= 0.7",
    control="mse_ratio_copy > 1 and heldout_gap_best_baseline > 1 / 0.7",
    paper="Sec. 5 / project page: on relational composition (Team: objects sharing the actor's "
          "color move with it) Cosmos sets a new state of the art in next-state prediction on "
          "unseen compositions; both Aligned NPS and the GNN mispredict (e.g. move an object that "
          "shares no attribute with the actor). The spec asks for Cosmos MSE <= 0.7 x the better "
          "baseline (table numbers not retrieved).",
    against=("the better (lower mean MSE) of Aligned NPS and a GNN with the same autoencoder, "
             "data and seeds; null arm: copy-the-frame in Cosmos's place; positive control: the "
             "best baseline's error on held-out vs seen compositions (in-distribution set)"),
    resources={"cpus": 1},
)
def relational_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """RC-Team: next-state pixel MSE on held-out same-color pairs, Cosmos vs the better of
    Aligned NPS and GNN. ``mse_ratio`` = per-seed MSE_Cosmos / MSE_best-baseline (Student-t over
    3 replicates at small); holds if the whole interval is <= 0.7, fails if it is all above.

    Control (issue 38, written before the run at small). (1) Learning floor and null arm:
    copy-the-frame put in Cosmos's place must not pass, and the best baseline must beat it
    (``mse_ratio_copy`` = MSE_copy / MSE_best > 1; a straw baseline makes any ratio
    meaningless). (2) The test bed must need what symbols give. Colors here are pure primaries
    that a neural slot encodes linearly, and Aligned NPS gets the same actor-slot context as
    Cosmos, so "same color as the actor" is within its reach (before issue 38, one seed at small:
    Cosmos 0.00276, Aligned NPS 0.00230). Symbols can only fix what the baseline gets wrong on
    *unseen* compositions: ``heldout_gap_best_baseline`` is the best baseline's MSE relative to
    copy-the-frame on held-out Team transitions over the same on seen ones (in-distribution set,
    Team subset). A Cosmos that generalised perfectly with the baseline's in-distribution skill
    would reach mse_ratio = 1 / gap, so the rule's 0.7 is reachable only if gap > 1 / 0.7; below
    that the verdict is *inconclusive* (the test bed cannot tell) rather than *fails*.
    Every model's gap is reported, and ``copy_mse_heldout_over_indist`` (the copy's raw MSE
    held-out over seen: how much more moves in one subset; the gap divides it out)."""
    return _compare("team", scale, seed, progress)


@claim(
    rule="mse_ratio <= 1.2",
    control="mse_ratio_copy > 1.2",
    paper="Sec. 5 / project page: on entity composition the baselines are already strong (the "
          "dynamics do not depend on the composition) and Cosmos matches or beats them; the "
          "spec asks for Cosmos MSE <= 1.2 x the best baseline (table numbers not retrieved).",
    against=("the better (lower mean MSE) of Aligned NPS and a GNN with the same autoencoder, "
             "data and seeds; null arm: copy-the-frame in Cosmos's place"),
    resources={"cpus": 1},
)
def entity_composition(scale: Scale, seed: int, progress=None) -> Measurement:
    """EC: next-state pixel MSE on held-out atom triples, Cosmos vs the better baseline;
    holds if the whole interval of the per-seed ratio is <= 1.2 (no loss where composition does
    not matter), fails if it is all above.

    Control (issue 38, written before the run at small): the null arm copy-the-frame (next image
    := current image, measured on the same test split) put in Cosmos's place must not pass the
    rule: ``mse_ratio_copy`` = MSE_copy / MSE_best > 1.2. Before issue 38 the claim held at
    smoke with every model worse than copying the frame (MSE 0.018 vs 0.0092, position accuracy
    0): a tolerance of 1.2 around a baseline that has not learned cannot tell a world model from
    no model. The control also makes the best baseline beat the copy (a learning floor)."""
    return _compare("entity", scale, seed, progress)
