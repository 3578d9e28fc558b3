"""JEI-DNN claims on shifted digits (see :mod:`.digits_experiment`): the accuracy-cost
trade-off against max-probability threshold exits on the same frozen backbone, calibration of
the exited predictions, and the size of per-exit conformal sets at the target coverage.

Controls: ``calibration_bias`` requires the paper's premise (over-confident threshold exits)
to appear in the test bed; ``conformal_coverage`` requires the baseline to reach the target
coverage and not to lose on set size to its null arm, input-ignoring routing at JEI-DNN's exit
histogram, measured in the same run."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

_PAPER_TRADEOFF = ("Fig. 3 / Table 2: on CIFAR-10, CIFAR-100, SVHN and CIFAR-100-LT with frozen "
                   "T2T-ViT-7/14 backbones, JEI-DNN's accuracy vs MACs curve lies above those of "
                   "threshold-gated EDNNs (BoostedNets, L2W-DEN, max-probability thresholds) "
                   "trained on the same backbone; exact figures not retrieved.")


def _config(scale: Scale):
    from .digits_experiment import DigitsExitConfig

    thresholds = (0.0, *np.round(np.linspace(0.5, 0.995, 12), 4).tolist(), float("inf"))
    return sizes(scale,
                 smoke=DigitsExitConfig(backbone_epochs=10, warmup_epochs=5, joint_epochs=10,
                                        lams=(0.25, 1.0), thresholds=thresholds),
                 small=DigitsExitConfig(),
                 # budget check (lambda in {0.25, 1, 2}): 250 joint epochs moved the gain of
                 # seed 0 from -1.2 to -0.2 points and of seed 1 from -2.1 to -1.0
                 full=DigitsExitConfig(joint_epochs=300))


def _runs(scale: Scale, seed: int, progress) -> tuple[object, list[dict]]:
    from .digits_experiment import run_digits_experiment

    cfg = _config(scale)
    seeds = sizes(scale, smoke=[seed], small=[seed + i for i in range(5)])
    out = []
    for i, s in enumerate(seeds):
        if progress:
            progress(i / len(seeds), f"seed {s}")
        out.append(run_digits_experiment(cfg, s))
    return cfg, out


def _figure(result: dict, title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.add_subplot()
    b = sorted(result["baseline"], key=lambda r: r["cost"])
    ax.plot([r["cost"] for r in b], [100 * r["acc"] for r in b], "-", color="0.5",
            label="max-prob threshold (sweep)")
    ax.plot([r["cost"] for r in result["jei"]], [100 * r["acc"] for r in result["jei"]], "o",
            color="C3", label="JEI-DNN (one model per lambda)")
    ax.set_xlabel("average inference cost (plain backbone = 1)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _rows(results: list[dict], seeds: list[int], keys: tuple[str, ...]) -> list[dict]:
    from .digits_experiment import nearest_baseline

    rows = []
    for s, res in zip(seeds, results):
        for r in res["jei"]:
            m = nearest_baseline(res["baseline"], r["cost"])
            rows.append({"seed": s, "lam": r["lam"], "jei_exits": str(r["exits"]),
                         "baseline_threshold": m["threshold"],
                         **{f"jei_{k}": round(r[k], 4) for k in keys},
                         **{f"baseline_{k}": round(m[k], 4) for k in keys}})
    return rows


@claim(
    rule="acc_gain > 0",
    paper=_PAPER_TRADEOFF,
    against=("max-probability threshold exits on the same frozen backbone and IMs, swept over "
             "thresholds and interpolated at JEI-DNN's cost"),
    resources={"cpus": 1},
)
def accuracy_cost_tradeoff(scale: Scale, seed: int, progress=None) -> Measurement:
    """``acc_gain``: JEI-DNN's test accuracy minus the threshold baseline's accuracy
    interpolated at JEI-DNN's average cost (baseline swept over thresholds 0, 0.5..0.999, inf),
    in points, averaged over lambda in {0.05, 0.1, 0.25, 0.5, 1, 2} (smoke: {0.25, 1}); an
    Estimate over 5 seeds at small. Holds only if the whole interval is above 0: the spec's
    non-inferiority margin (> -0.5 points) would let the baseline passed as the method hold."""
    from .digits_experiment import baseline_at_cost, tradeoff_gain

    cfg, results = _runs(scale, seed, progress)
    seeds = sizes(scale, smoke=[seed], small=[seed + i for i in range(5)])
    gains = [tradeoff_gain(r) for r in results]
    jei_acc = [100 * np.mean([j["acc"] for j in r["jei"]]) for r in results]
    base_acc = [100 * np.mean([baseline_at_cost(r["baseline"], j["cost"]) for j in r["jei"]])
                for r in results]
    cost = [np.mean([j["cost"] for j in r["jei"]]) for r in results]
    return Measurement(
        metrics={"acc_gain": seed_metric(gains), "jei_acc": seed_metric(jei_acc),
                 "baseline_acc_at_cost": seed_metric(base_acc), "jei_cost": seed_metric(cost),
                 "final_head_acc": seed_metric([100 * r["exit_acc"][-1] for r in results])},
        figure=_figure(results[0], f"shifted digits, seed {seeds[0]}"),
        tables={"per_lambda": _rows(results, seeds, ("cost", "acc")),
                "exit_accuracy": [{"seed": s, **{f"exit_{l}": round(a, 4)
                                                 for l, a in enumerate(r["exit_acc"])}}
                                  for s, r in zip(seeds, results)]},
        notes="Backbone: 6 residual MLP blocks (width 64) trained with CE, then frozen; IMs are "
              "linear heads after blocks 1-5 (official dynamic warm-up); costs are MACs incl. "
              "IM and gate/threshold overhead. Data: digits translated by up to 1 pixel (plain "
              "digits put every exit within 1.5 points of the head). JEI-DNN: official "
              "defaults (SGD 0.01, momentum 0.9, wd 5e-4, cosine, batch 64, alternation every "
              "20 batches, positive weights capped at 5), intended (detached) IM loss, "
              f"{cfg.joint_epochs} joint epochs, deterministic exits.")


@claim(
    rule="ece_ratio < 1",
    control="baseline_bias_early > 0",
    paper="Sec. 5.2 / Table 3: threshold gating gives exited predictions a positive "
          "(over-confidence) bias; JEI-DNN's gated predictions have lower ECE than the "
          "baselines' at comparable cost (spec expectation: ECE ratio 0.5-0.9; exact figures "
          "not retrieved).",
    against=("the max-probability threshold exit whose test cost is nearest JEI-DNN's, same "
             "frozen backbone and IMs; positive control: that baseline's early exits must be "
             "over-confident (the paper's premise); null arm reported: input-ignoring routing "
             "of the baseline's IMs at JEI-DNN's exit histogram"),
    resources={"cpus": 1},
)
def calibration_bias(scale: Scale, seed: int, progress=None) -> Measurement:
    """Against the threshold whose test cost is nearest JEI-DNN's, per lambda:
    ``ece_ratio`` = mean ECE of JEI-DNN's gated predictions / the matched baseline's (15
    equal-width bins); the rule: < 1 over the whole interval (Estimates over 5 seeds at small).

    Control (the paper's premise, a positive control of the test bed): ``baseline_bias_early``
    = mean confidence - accuracy of the matched baseline's samples leaving at IMs 1-3 must be
    > 0. The first version put this premise in the rule, so a test bed whose threshold exits
    are under-confident (measured -0.066 at smoke: linear warm-up IMs, early-stopped with weight
    decay) made the paper's claim *fail*; it is a property of the test bed, not of JEI-DNN, so
    it now gates the verdict: without over-confident threshold exits the claim's mechanism
    cannot appear and the verdict is "the test bed cannot tell". The test bed is not changed
    to force the premise.

    Null arm, measured in the same run and reported (``ece_random_route``,
    ``random_route_ece_ratio``): the baseline's IMs with exits drawn at random from JEI-DNN's
    exit histogram (same expected cost, no selection on confidence). It is not in the control:
    the paper predicts that any routing which does not select on confidence removes the
    threshold's bias, so the null beating the baseline is consistent with the claim."""
    from .digits_experiment import calibration_summary

    _, results = _runs(scale, seed, progress)
    seeds = sizes(scale, smoke=[seed], small=[seed + i for i in range(5)])
    summ = [calibration_summary(r) for r in results]
    return Measurement(
        metrics={k: seed_metric([s[k] for s in summ]) for k in summ[0]},
        tables={"per_lambda": _rows(results, seeds, ("cost", "ece", "bias_early"))},
        notes="ECE of the prediction at the exit each test sample takes (top-label, 15 bins, "
              "the kit's torchmetrics-equivalent binning). 359 test samples per seed, so one "
              "ECE is noisy; the interval over seeds decides.")


@claim(
    rule="abs(coverage_gap_5) < 0.02 and coverage_gap_1 > -0.01 and set_size_reduction_5 > 0",
    control="abs(coverage_gap_5_baseline) < 0.02 and not (random_route_set_size_reduction_5 > 0)",
    paper="Sec. 5.3 / Fig. 5: per-exit split-conformal sets (score 1 - p_y, quantile level "
          "ceil((n+1)(1-alpha))/n) built on JEI-DNN's exits reach the target coverage 1 - alpha "
          "for alpha in 0.01..0.05 with smaller sets than the baselines' (exact figures not "
          "retrieved).",
    against=("the cost-matched max-probability threshold baseline with the same per-exit "
             "conformal procedure; null arm: input-ignoring routing of the baseline's IMs at "
             "JEI-DNN's exit histogram"),
    resources={"cpus": 1},
)
def conformal_coverage(scale: Scale, seed: int, progress=None) -> Measurement:
    """Per-exit quantiles on the validation split (an exit with <= 20 validation samples falls
    back to all validation scores at its head, as the official code does), sets on test; means
    over lambda, Estimates over 5 seeds at small.

    Rule: JEI-DNN's sets reach the target (``coverage_gap_5`` = coverage - 0.95 within +-2
    points, ``coverage_gap_1`` at alpha = 0.01 not more than 1 point short) AND are smaller
    than the cost-matched threshold baseline's at alpha = 0.05: ``set_size_reduction_5`` =
    baseline set size - JEI-DNN's, paired over seeds, > 0. The first version judged coverage
    only, which split conformal guarantees for any router; the paper's claim is the smaller
    sets at that coverage, so the rule now decides on it (it fails when JEI-DNN's sets are
    larger over the whole interval).

    Control: the comparison means something only if (a) the baseline's sets reach the same
    target (``abs(coverage_gap_5_baseline) < 0.02``), and (b) the baseline is no straw for set
    size: the null arm, the baseline's IMs with exits drawn at random from JEI-DNN's exit
    histogram (same expected cost, input ignored), measured in the same run, must not already
    give smaller sets than the baseline (``random_route_set_size_reduction_5``)."""
    from .digits_experiment import conformal_summary

    cfg, results = _runs(scale, seed, progress)
    seeds = sizes(scale, smoke=[seed], small=[seed + i for i in range(5)])
    summ = [conformal_summary(r, cfg.alphas) for r in results]
    keys = tuple(k for a in cfg.alphas for k in (f"coverage_{a}", f"set_size_{a}"))
    metrics = {k: seed_metric([s[k] for s in summ]) for k in summ[0]}
    base = [s["set_size_5_baseline"] for s in summ]
    metrics["set_size_reduction_5"] = seed_difference(base, [s["set_size_5"] for s in summ])
    metrics["random_route_set_size_reduction_5"] = seed_difference(
        base, [s["set_size_5_random_route"] for s in summ])
    return Measurement(
        metrics=metrics,
        tables={"per_lambda": _rows(results, seeds, keys)},
        notes="Coverage is marginal over test samples with each sample's set built at the exit "
              "it takes; per-exit (Mondrian) quantiles are valid when validation and test "
              "samples are routed by the same gates, as here.")
