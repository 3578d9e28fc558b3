"""Zip claims: activation-first clustering discovery separates touching instances, and the
clustered layer matters (laptop-scale analogue of the paper's COCO results)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, sizes

from .baselines import CAMComponents, SuperpixelDiscovery
from .coco_ap import Detections, GroundTruth, coco_mask_ap
from .pipeline import Zip, ZipConfig
from .scenes import CLASS_NAMES, SceneSet, make_scenes, touching_pairs
from .standins import (
    CNNActivator,
    CNNFeatureExtractor,
    CNNTraining,
    GrabCutSegmenter,
    RGBFeatures,
    trained_cnn,
    untrained_cnn,
)

# min_area: the official 100 px on a ~128x96 clustering grid (2048-px pass, stride 16) is ~0.8%
# of the grid; 0.8% of our 64x64 grid is 32 px.
_CONFIG = ZipConfig(min_area=32)
_TEST_SEED_OFFSET = 10_000
_VAL_SEED_OFFSET = 20_000  # layer_matters picks its stage on these scenes, scores on the test set


def _training(scale: Scale) -> CNNTraining:
    return sizes(scale, smoke=CNNTraining(n_train=128, steps=30, batch_size=16),
                 small=CNNTraining(n_train=1000, steps=500, batch_size=16))


def _replicate_seeds(scale: Scale, seed: int) -> list[int]:
    return [seed + r for r in range(sizes(scale, smoke=1, small=3))]


def _evaluate(arm, scenes: SceneSet) -> dict[str, float]:
    """AP / AP50 over all scenes and over the scenes with touching same-class instances, and
    the mean absolute count error on the touching scenes."""
    h, w = scenes.images.shape[1:3]
    dets, gts, counts = [], [], []
    for image, masks, classes in zip(scenes.images, scenes.masks, scenes.classes):
        found = arm.predict(image, CLASS_NAMES)
        dets.append(Detections(np.array([i.mask for i in found], dtype=bool).reshape(-1, h, w),
                               np.array([CLASS_NAMES.index(i.label) for i in found], dtype=int),
                               np.array([i.score for i in found], dtype=float)))
        gts.append(GroundTruth(masks, classes))
        counts.append((len(found), len(classes)))
    touching = [touching_pairs(m, c) > 0 for m, c in zip(scenes.masks, scenes.classes)]
    every = coco_mask_ap(dets, gts)
    touch = coco_mask_ap([d for d, t in zip(dets, touching) if t],
                         [g for g, t in zip(gts, touching) if t])
    count_error = np.mean([abs(p - g) for (p, g), t in zip(counts, touching) if t])
    return {"ap50_touching": touch["ap50"], "ap_touching": touch["ap"],
            "ap50_all": every["ap50"], "ap_all": every["ap"], "count_error": float(count_error)}


def _metric(values: list[float]):
    return Estimate.mean_of(values) if len(values) > 1 else float(values[0])


def _gain(a: list[float], b: list[float]):
    """a - b over paired replicates (same stand-in, same test scenes)."""
    if len(a) > 1:
        return Estimate.difference(a, b, paired=True)
    return float(a[0] - b[0])


def _standins(scale: Scale, rep_seed: int, n_test: int):
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        model = trained_cnn(_training(scale), rep_seed)
    scenes = make_scenes(n_test, rep_seed + _TEST_SEED_OFFSET)
    return model, scenes


@claim(
    rule="ap50_gain_vs_cam >= 0.10 and ap50_gain_vs_superpixel > 0 "
         "and count_error_reduction_vs_cam > 0",
    paper="Zip boosts SAM's mask AP on COCO by 12.5% (abstract) and is comparable to "
          "open-vocabulary detectors trained with base annotations; the spec's analogue expects "
          "Zip >= CAM-threshold baseline + 10 AP50 points on scenes with touching instances.",
    paper_numbers={"ap50_gain_vs_cam": 0.10},
    against=("CAM threshold -> connected components -> box prompts, and superpixel discovery; "
             "same CAM stand-in and GrabCut"),
    control="not (ap50_gain_rgb_vs_cam >= 0.10)",
)
def touching_instances(scale: Scale, seed: int, progress=None) -> Measurement:
    """Three arms on the same frozen CAM stand-in (trained on image-level labels only) and the
    same GrabCut segmenter, on procedural scenes: (Z) Zip clustering stage-2 features of a 2x
    upsampled pass; (B1) CAM threshold -> 4-connected components -> box prompts (Zip without its
    discovery step); (B2) discovery first: colour-merged Felzenszwalb superpixels classified by
    mean activation. COCO-protocol mask AP50 and AP on the scenes with touching same-class
    instances (and on all scenes, reported), mean |#predicted - #true| instances on the touching
    scenes. Replicates: a stand-in and a test set per seed (3 at small); gains are paired.

    Null arm (added with the evidence issue, before the small run it was published from; the
    rule is unchanged): ``zip_rgb``, the same Zip pipeline clustering raw RGB instead of a learned
    layer. If clustering colour alone also clears the +10 AP50 bar over CAM, the scenes separate
    instances by colour and cannot show that Zip's learned-feature clusters matter, so the
    verdict is *inconclusive* rather than *holds*."""
    from iclr24.kits.threads import single_threaded

    progress = progress or (lambda *a, **k: None)
    n_test = sizes(scale, smoke=5, small=60)
    per_arm: dict[str, list[dict[str, float]]] = {"zip": [], "cam": [], "superpixel": [],
                                                  "zip_rgb": []}
    seeds = _replicate_seeds(scale, seed)
    for r, rep_seed in enumerate(seeds):
        progress(r / len(seeds), f"stand-in and test scenes for seed {rep_seed}")
        model, scenes = _standins(scale, rep_seed, n_test)
        activator, segmenter = CNNActivator(model, CLASS_NAMES), GrabCutSegmenter()
        arms = {"zip": Zip(activator, CNNFeatureExtractor(model, stage=2, upsample=2),
                           segmenter, _CONFIG),
                "cam": CAMComponents(activator, segmenter, _CONFIG),
                "superpixel": SuperpixelDiscovery(activator, segmenter, _CONFIG),
                "zip_rgb": Zip(activator, RGBFeatures(), segmenter, _CONFIG)}
        with single_threaded():
            for name, arm in arms.items():
                per_arm[name].append(_evaluate(arm, scenes))
    rows = [{"arm": name, "seed": s, **res} for name, results in per_arm.items()
            for s, res in zip(seeds, results)]

    def col(arm: str, key: str) -> list[float]:
        return [res[key] for res in per_arm[arm]]

    metrics = {}
    for arm in per_arm:
        for key in ("ap50_touching", "ap_touching", "ap50_all", "count_error"):
            metrics[f"{key}_{arm}"] = _metric(col(arm, key))
    metrics["ap50_gain_vs_cam"] = _gain(col("zip", "ap50_touching"), col("cam", "ap50_touching"))
    metrics["ap50_gain_vs_superpixel"] = _gain(col("zip", "ap50_touching"),
                                               col("superpixel", "ap50_touching"))
    metrics["ap50_gain_rgb_vs_cam"] = _gain(col("zip_rgb", "ap50_touching"),
                                            col("cam", "ap50_touching"))
    metrics["count_error_reduction_vs_cam"] = _gain(col("cam", "count_error"),
                                                    col("zip", "count_error"))
    metrics["count_error_reduction_vs_superpixel"] = _gain(col("superpixel", "count_error"),
                                                           col("zip", "count_error"))
    return Measurement(metrics=metrics, figure=_arms_figure(per_arm), tables={"runs": rows},
                       notes=f"{len(seeds)} seed(s) x {n_test} test scenes; CAM CNN "
                             f"{_training(scale)}; Zip {_CONFIG}.")


@claim(
    rule="ap50_gain_best_vs_rgb > 0 and ap50_gain_best_vs_last > 0",
    control="not (ap50_gain_best_vs_rgb_untrained > 0 and ap50_gain_best_vs_last_untrained > 0)",
    paper="Clustering one particular middle layer of CLIP (a ConvNeXt stage) gives "
          "boundary-like clusters that separate instances; other layers do worse (the paper's "
          "empirical observation; per-layer numbers were not retrieved).",
    against=("the same Zip pipeline clustering raw RGB or the last stage (stage 4) of the same "
             "CNN stand-in; null arm: the same pipeline clustering the stages of the untrained "
             "network (random features, same architecture and initial weights)"),
)
def layer_matters(scale: Scale, seed: int, progress=None) -> Measurement:
    """The same Zip pipeline (the trained CAM stand-in's activations, GrabCut) clustering raw
    RGB or stage 1, 2, 3 or 4 of a feature network (2x upsampled pass, every map resized
    bilinearly to the 64x64 grid). Replicates: a stand-in, validation and test scenes per seed
    (3 at small); gains are paired.

    Rule (unchanged in form): ``best`` is the middle stage (1-3) with the highest AP50 on the
    touching *validation* scenes of the replicate; its AP50 on the test scenes must beat raw
    RGB (``ap50_gain_best_vs_rgb``) and the last stage (``ap50_gain_best_vs_last``) over the
    whole paired interval. It fails if RGB or the last stage is better.

    Control (issue 38, written before the small run it is published from). The first version
    chose ``best`` on the test scenes it then scored (optimistic by the choice among three) and
    had no null: now the stage is chosen on held-out scenes, and the same choice is made for
    the *untrained* network (:func:`untrained_cnn`: same architecture and initial weights, no
    training; the CAM activator stays the trained one, so only the clustered features change).
    If random features pass the rule too (``*_untrained``), a middle layer wins because of
    its receptive field and resolution, not because of what the network learned, and the
    verdict is *inconclusive*."""
    from iclr24.kits.threads import single_threaded

    progress = progress or (lambda *a, **k: None)
    # 20 test scenes per seed at small: 40 took 275 s of CPU with the stand-ins already cached
    # (~440 s from an empty cache), past the 5-minute budget
    n_test, n_val = sizes(scale, smoke=3, small=20), sizes(scale, smoke=2, small=10)
    layers = ["rgb", "stage1", "stage2", "stage3", "stage4"]
    middle = ["stage1", "stage2", "stage3"]
    ap50: dict[str, dict[str, list[float]]] = {"trained": {n: [] for n in layers},
                                               "untrained": {n: [] for n in layers[1:]}}
    best: dict[str, list[str]] = {"trained": [], "untrained": []}
    seeds = _replicate_seeds(scale, seed)
    rows = []
    for r, rep_seed in enumerate(seeds):
        progress(r / len(seeds), f"stand-in and scenes for seed {rep_seed}")
        model, scenes = _standins(scale, rep_seed, n_test)
        val_scenes = make_scenes(n_val, rep_seed + _VAL_SEED_OFFSET)
        activator, segmenter = CNNActivator(model, CLASS_NAMES), GrabCutSegmenter()
        networks = {"trained": model, "untrained": untrained_cnn(rep_seed)}
        with single_threaded():
            for features, per_layer in ap50.items():
                arms = {name: Zip(activator, RGBFeatures() if name == "rgb" else
                                  CNNFeatureExtractor(networks[features], stage=int(name[-1]),
                                                      upsample=2, grid=scenes.images.shape[1:3]),
                                  segmenter, _CONFIG) for name in per_layer}
                val = {n: _evaluate(arms[n], val_scenes)["ap50_touching"] for n in middle}
                best[features].append(max(middle, key=val.__getitem__))
                for name in per_layer:
                    res = _evaluate(arms[name], scenes)
                    per_layer[name].append(res["ap50_touching"])
                    rows.append({"features": features, "layer": name, "seed": rep_seed,
                                 "chosen_on_validation": name == best[features][-1],
                                 "ap50_touching_validation": val.get(name, float("nan")),
                                 **res})
    metrics = {}
    for features, per_layer in ap50.items():
        suffix = "" if features == "trained" else "_untrained"
        chosen = [per_layer[b][k] for k, b in enumerate(best[features])]
        for name, values in per_layer.items():
            metrics[f"ap50_{name}{suffix}"] = _metric(values)
        metrics[f"ap50_best{suffix}"] = _metric(chosen)
        metrics[f"ap50_gain_best_vs_rgb{suffix}"] = _gain(chosen, ap50["trained"]["rgb"])
        metrics[f"ap50_gain_best_vs_last{suffix}"] = _gain(chosen, per_layer["stage4"])
    metrics["best_stage"] = float(np.mean([int(b[-1]) for b in best["trained"]]))
    means = {n: np.mean(v) for n, v in ap50["trained"].items()}
    metrics["argmax_layer_is_middle"] = float(max(layers, key=lambda n: means[n]) in middle)
    return Measurement(metrics=metrics, figure=_layers_figure(layers, ap50), tables={"runs": rows},
                       notes=f"{len(seeds)} seed(s) x {n_test} test scenes ({n_val} validation "
                             f"scenes choose the middle stage); stages chosen (trained): "
                             f"{best['trained']}, (untrained): {best['untrained']}.")


def _arms_figure(per_arm: dict[str, list[dict[str, float]]]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3))
    for j, key in enumerate(("ap50_touching", "count_error")):
        ax = fig.add_subplot(1, 2, j + 1)
        names = list(per_arm)
        vals = [[res[key] for res in per_arm[n]] for n in names]
        ax.bar(names, [np.mean(v) for v in vals], color=[f"C{i}" for i in range(len(names))])
        for i, v in enumerate(vals):
            ax.plot([i] * len(v), v, "k.", ms=4)
        ax.set_title({"ap50_touching": "mask AP50 (touching scenes)",
                      "count_error": "|#pred - #true| (touching scenes)"}[key], fontsize=9)
    fig.tight_layout()
    return fig


def _layers_figure(layers: list[str], ap50: dict[str, dict[str, list[float]]]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.5, 3))
    ax = fig.add_subplot(1, 1, 1)
    for features, per_layer in ap50.items():
        xs = [layers.index(n) for n in per_layer]
        ax.plot(xs, [np.mean(v) for v in per_layer.values()], "o-", label=f"{features} network")
        for x, v in zip(xs, per_layer.values()):
            ax.plot([x] * len(v), v, "k.", ms=4)
    ax.set_xticks(range(len(layers)), layers)
    ax.set_ylabel("mask AP50 (touching test scenes)")
    ax.set_title("Zip by clustered layer (rgb: no network)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
