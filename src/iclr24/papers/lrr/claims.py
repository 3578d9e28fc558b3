"""LRR claims: surrogate-task training (vs final-answer-only) and the motion stream (vs spatial
only), on MiniCATER's CATER task 3 analogue, scored with the model's own Look answers.

Issue 38: each claim has a *learning control* measured in the same run: the arms must beat the
input-ignoring predictor (the most frequent final cell of the training videos,
:func:`~.experiment.majority_floor`) over the whole seed interval before their difference is
judged; an untrained or collapsed comparison reads *inconclusive* (the test bed cannot tell),
not holds or fails."""

from __future__ import annotations

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .experiment import ExperimentConfig, majority_floor, make_data, run_arm

_SMOKE = ExperimentConfig(n_train=300, n_test=100, n_frames=8, steps=25, batch_size=16)
_SMALL = ExperimentConfig(n_train=2000, n_test=400, n_frames=12, steps=800, batch_size=16)


def _setup(scale: Scale, seed: int) -> tuple[ExperimentConfig, list[int]]:
    config = sizes(scale, smoke=_SMOKE, small=_SMALL)
    n_seeds = sizes(scale, smoke=1, small=3)
    return config, [seed + k for k in range(n_seeds)]


def _compare(scale: Scale, seed: int, method: str, baseline: str, progress) -> tuple[
        dict, list[dict], ExperimentConfig]:
    from iclr24.kits.threads import torch_threads

    progress = progress or (lambda *a, **k: None)
    config, seeds = _setup(scale, seed)
    runs: dict[str, list[dict]] = {method: [], baseline: [], "floor": []}
    rows = []
    with torch_threads(1):
        for s in seeds:
            data = make_data(config, s)
            runs["floor"].append(majority_floor(data))
            for arm in (method, baseline):
                res = run_arm(arm, config, s, data)
                runs[arm].append(res)
                rows.append({"seed": s, "arm": arm, **res})
                progress((len(rows)) / (2 * len(seeds)), f"seed {s}: {arm} acc {res['acc']:.3f}")
    return runs, rows, config


def _figure(rows: list[dict], arms: tuple[str, str], title: str, floor: list[dict]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 3.8))
    ax = fig.add_subplot(1, 1, 1)
    keys = ["acc", "acc_contained", "acc_visible"]
    width = 0.38
    for j, arm in enumerate(arms):
        vals = [[r[k] for r in rows if r["arm"] == arm] for k in keys]
        xs = [i + (j - 0.5) * width for i in range(len(keys))]
        ax.bar(xs, [sum(v) / len(v) for v in vals], width, label=arm)
        for x, v in zip(xs, vals):
            ax.plot([x] * len(v), v, "k.", ms=4)
    ax.axhline(1 / 36, color="grey", ls=":", lw=1, label="chance (1/36)")
    ax.axhline(sum(f["acc"] for f in floor) / len(floor), color="k", ls="--", lw=1,
               label="most frequent cell (learning floor)")
    ax.set_xticks(range(len(keys)), ["all", "contained at end", "visible at end"])
    ax.set_ylabel("final-cell top-1 accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _arm_metrics(runs: dict[str, list[dict]], arm: str, prefix: str) -> dict:
    keys = sorted(set().union(*[r.keys() for r in runs[arm]]))
    return {f"{prefix}_{k}": seed_metric([r[k] for r in runs[arm]]) for k in keys}


def _learned(runs: dict[str, list[dict]], arm: str, key: str = "acc"):
    """Paired margin of ``arm`` over the input-ignoring predictor (same seed, same test set)."""
    return seed_difference([r[key] for r in runs[arm]], [r[key] for r in runs["floor"]])


@claim(
    rule="gain >= 0.1 and gain_contained >= 0.1",
    control="learned_lrr > 0 and learned_final_only_visible > 0",
    paper="Sec. 4.5 ablations (CATER): training without the surrogate tasks (final answer only) "
          "loses much of LRR's accuracy, most on snitch localisation under containment; the "
          "spec's laptop analogue expects LRR (own Look answers) to beat the same architecture "
          "trained on the final answer by >= 10 points top-1, and by more on the "
          "contained-at-end subset (paper's exact ablation numbers not retrieved).",
    paper_numbers={"gain": 0.1},
    against=("the same architecture trained on the final answer only, same data and seed per "
             "pair; learning control: the input-ignoring predictor (most frequent training "
             "cell)"),
    resources={"cpus": 1},
)
def surrogate_tasks(scale: Scale, seed: int, progress=None) -> Measurement:
    """LRR (surrogate Look questions in training, own Look answers at test) vs the same model
    trained on the final answer only; same data and initial seed per pair. ``gain`` /
    ``gain_contained`` are paired differences of top-1 final-cell accuracy over seeds (all test
    videos / those ending with the snitch contained). Teacher-forced LRR accuracy (ground-truth
    Look answers in context) and Look-answer accuracy are reported, not judged.

    Control (issue 38, fixed before the small run): both arms learn before their difference is
    judged. LRR beats the input-ignoring predictor (``learned_lrr``: paired margin of its
    accuracy over the majority-cell floor), and the baseline beats it on the videos whose last
    frame shows the snitch (``learned_final_only_visible``): there the final answer can be read
    off the screen without any surrogate, so a baseline that cannot is a straw man, not
    evidence for the surrogates. Either margin's interval touching 0: inconclusive."""
    runs, rows, config = _compare(scale, seed, "lrr", "final_only", progress)
    a, b = runs["lrr"], runs["final_only"]
    metrics = {
        "learned_lrr": _learned(runs, "lrr"),
        "learned_final_only_visible": _learned(runs, "final_only", "acc_visible"),
        **_arm_metrics(runs, "floor", "floor"),
        "gain": seed_difference([r["acc"] for r in a], [r["acc"] for r in b]),
        "gain_contained": seed_difference([r["acc_contained"] for r in a],
                                          [r["acc_contained"] for r in b]),
        **_arm_metrics(runs, "lrr", "lrr"), **_arm_metrics(runs, "final_only", "final_only"),
    }
    return Measurement(
        metrics=metrics, figure=_figure(rows, ("lrr", "final_only"),
                                        "Surrogate tasks vs final answer only", runs["floor"]),
        tables={"per_seed": rows},
        notes=f"{config}. Accuracies are on {config.n_test} test videos per seed, about half "
              "ending with the snitch contained (chance 1/36; a last-frame-only reader can at "
              "best guess among the 2-3 look-alike cones there). LRR is scored with its own "
              "generated Look answers in context (lrr_acc); lrr_acc_tf puts the ground-truth "
              "Look answers there instead (the exposure-bias gap).")


@claim(
    rule="motion_gain > 0 and motion_gain_contained > 0",
    control="learned_lrr > 0 and learned_spatial_only > 0",
    paper="Sec. 4.5 ablations: removing the motion stream of the two-stream encoder lowers "
          "accuracy, most on tasks that need tracking under occlusion/containment (CATER); the "
          "spec expects two streams >= spatial only, possibly by a small margin (exact numbers "
          "not retrieved).",
    against=("LRR with the spatial stream only (motion stream off), same surrogate training, "
             "data and seed per pair; learning control: the input-ignoring predictor (most "
             "frequent training cell)"),
    resources={"cpus": 1},
)
def motion_stream(scale: Scale, seed: int, progress=None) -> Measurement:
    """LRR with both streams vs LRR with the spatial stream only (same surrogate training, same
    data and seed per pair), both scored with their own Look answers. ``motion_gain`` /
    ``motion_gain_contained``: paired differences of top-1 final-cell accuracy over seeds.

    Control (issue 38, fixed before the small run): both arms beat the input-ignoring predictor
    (``learned_lrr``, ``learned_spatial_only``: paired margins of accuracy over the majority-cell
    floor) over the whole interval; otherwise the comparison is between models that have not
    learnt the task, and the verdict is inconclusive."""
    runs, rows, config = _compare(scale, seed, "lrr", "spatial_only", progress)
    a, c = runs["lrr"], runs["spatial_only"]
    metrics = {
        "learned_lrr": _learned(runs, "lrr"),
        "learned_spatial_only": _learned(runs, "spatial_only"),
        **_arm_metrics(runs, "floor", "floor"),
        "motion_gain": seed_difference([r["acc"] for r in a], [r["acc"] for r in c]),
        "motion_gain_contained": seed_difference([r["acc_contained"] for r in a],
                                                 [r["acc_contained"] for r in c]),
        **_arm_metrics(runs, "lrr", "lrr"), **_arm_metrics(runs, "spatial_only", "spatial_only"),
    }
    return Measurement(
        metrics=metrics, figure=_figure(rows, ("lrr", "spatial_only"),
                                        "Two streams vs spatial stream only", runs["floor"]),
        tables={"per_seed": rows},
        notes=f"{config}. The spatial-only model has no motion tokens (half the visual memory) "
              "but the same temporal position embeddings, so it can still compare frames.")


