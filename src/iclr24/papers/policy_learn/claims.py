"""Policy-Learn claims on the CSL-union family (see :mod:`.csl_experiment`): learned selection
beats random selection at the same budget T = 2, and costs a fraction of the full bag.

Each claim measures its null arm in the same run: random selection (the baseline of
``learned_vs_random_selection``, whose control is a positive one: the one-mark-per-component
oracle must beat random, otherwise the test bed cannot show what selection buys) and a second
full bag timed in the method's place (``cost_vs_full_bag``, an A/A null that must not show a
speed-up)."""

from __future__ import annotations

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes

_PAPER_SELECTION = (
    "Abstract / Tables 1-3: Policy-Learn outperforms random selection (and OSAN, MAG-GNN) at the "
    "same number of subgraphs T across ZINC-12k, OGB and REDDIT-BINARY, e.g. ZINC MAE about 0.120 "
    "at T = 2 (from memory, not verified); Theorems 1-2 / Prop. 1: on disjoint unions of "
    "1-WL-indistinguishable graphs one mark per component identifies the graph, random selection "
    "needs many more, and Policy-Learn can implement the efficient policy. Spec expectation on "
    "CSL unions: GIN about 0.125 (chance), random T = 2 about 0.55-0.65, Policy-Learn T = 2 >= 0.9, "
    "full bag about 1.0; distinct-component selections about 1.0 vs about 0.5.")


def _config(scale: Scale):
    """Sizes per scale. Small: n = 17 (34-node graphs) instead of the spec's 41, decided before
    the run for two reasons: the CPU budget (four arms x 3 seeds in <= ~200 s single-threaded;
    cost grows with the 82-node graphs' size) and the selection depth: with n = 41 the official
    6 selection layers see at most 6 hops, less than the CSL eccentricity (up to 10), so even
    an ideal policy could not tell a far node of the marked component from the other
    component; with n = 17 every component has diameter <= 4. 400 training graphs and the
    spec's 30 epochs: a one-seed pilot of the four arms took ~45 s CPU (before any claim ran
    at small). Full keeps n = 41 with 10 selection layers."""
    from .csl_experiment import CSLSelectionConfig

    return sizes(
        scale,
        smoke=CSLSelectionConfig(num_train=48, num_val=24, num_test=48, skips=(2, 3, 4),
                                 epochs=2),
        small=CSLSelectionConfig(num_train=400, num_val=150, num_test=300, epochs=30),
        full=CSLSelectionConfig(num_train=1000, num_val=200, num_test=500, n=41, epochs=200,
                                selection_layers=10))


def _run_seed(cfg, seed: int) -> dict:
    from iclr24.kits.threads import torch_threads

    from .csl_experiment import run_csl_selection

    with torch_threads(1):
        return run_csl_selection(cfg, seed)


def _figure(per_seed: dict, arms: tuple[str, ...]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.8, 3.2))
    ax, bx = fig.subplots(1, 2)
    for i, arm in enumerate(arms):
        accs = [r[arm]["accuracy"] for r in per_seed.values()]
        ax.bar(i, sum(accs) / len(accs), color=f"C{i}", alpha=0.6)
        ax.plot([i] * len(accs), accs, "k.")
    ax.axhline(next(iter(per_seed.values()))["data"]["chance"], color="0.5", ls="--", lw=1,
               label="most frequent class")
    ax.set_xticks(range(len(arms)), [a.replace("_", "\n") for a in arms], fontsize=8)
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    bars = [("random", "distinct_fraction"), ("oracle", "distinct_fraction"),
            ("policy_learn", "distinct_fraction"), ("policy_learn", "distinct_fraction_sampled")]
    for i, (arm, key) in enumerate(bars):
        fr = [r[arm][key] for r in per_seed.values()]
        bx.bar(i, sum(fr) / len(fr), color=f"C{arms.index(arm)}", alpha=0.6)
        bx.plot([i] * len(fr), fr, "k.")
    bx.set_xticks(range(len(bars)), ["random", "oracle", "policy\nlearn", "policy learn\n(sampled)"],
                  fontsize=8)
    bx.set_ylabel("selections in distinct components")
    bx.set_ylim(0, 1.05)
    fig.suptitle("CSL unions (2 components), T = 2", fontsize=9)
    fig.tight_layout()
    return fig


@claim(
    rule="acc_gain > 0",
    control="oracle_gain > 0",
    paper=_PAPER_SELECTION,
    paper_numbers={"acc_policy_learn": 0.9, "acc_random": 0.6, "distinct_policy_learn": 1.0,
                   "distinct_random": 0.5},
    against=("random selection of T = 2 subgraphs with the same prediction network, data and "
             "training (null arm); positive control: the one-mark-per-component oracle with the "
             "same network and training must beat random; GIN shown (OSAN, MAG-GNN not run)"),
    resources={"cpus": 1},
)
def learned_vs_random_selection(scale: Scale, seed: int, progress=None) -> Measurement:
    """``acc_gain``: test accuracy of Policy-Learn (T = 2) minus that of random selection
    (T = 2, the null arm) with the same prediction network, data and training, paired over 3
    seeds at small (one at smoke); holds only if the whole interval is above 0, fails if it
    lies at or below 0. Rule unchanged.

    Control (added before running this version): ``oracle_gain`` = accuracy of the
    one-mark-per-component oracle (:class:`.ComponentOracle`, the paper's efficient policy, a
    uniformly random node of each component) minus random selection's, paired over the same
    seeds, must be > 0. If even the oracle does not beat random with this network and training
    budget, the test bed cannot show what selection buys and a loss of Policy-Learn says
    nothing. The full bag, the previous upper reference, was trained on 100 graphs for 8 epochs
    and sat at chance: it is dropped from this claim (its cost is ``cost_vs_full_bag``).

    Reported beside: GIN (1-WL, expected at chance), the fraction of test graphs whose two
    marks lie in distinct components, for Policy-Learn both at evaluation (arg-max, as the
    official code) and as sampled in training (Gumbel noise), and the checkpointed epoch."""
    cfg = _config(scale)
    seeds = sizes(scale, smoke=[seed], small=[seed, seed + 1, seed + 2])
    arms = cfg.arms
    per_seed: dict[int, dict] = {}
    for k, s in enumerate(seeds):
        per_seed[s] = _run_seed(cfg, s)
        if progress:
            progress((k + 1) / len(seeds), f"seed {s} ({k + 1}/{len(seeds)})")

    def values(arm: str, key: str) -> list[float]:
        return [per_seed[s][arm][key] for s in seeds]

    metrics = {
        "acc_gain": seed_difference(values("policy_learn", "accuracy"),
                                    values("random", "accuracy")),
        "oracle_gain": seed_difference(values("oracle", "accuracy"),
                                       values("random", "accuracy")),
        "chance": seed_metric([per_seed[s]["data"]["chance"] for s in seeds]),
    }
    for arm in arms:
        metrics[f"acc_{arm}"] = seed_metric(values(arm, "accuracy"))
    for arm in ("random", "oracle", "policy_learn"):
        metrics[f"distinct_{arm}"] = seed_metric(values(arm, "distinct_fraction"))
    metrics["distinct_policy_learn_sampled"] = seed_metric(
        values("policy_learn", "distinct_fraction_sampled"))
    metrics["best_epoch_policy_learn"] = seed_metric(values("policy_learn", "best_epoch"))
    rows = [{"seed": s, "arm": arm, **{k: round(v, 4) for k, v in per_seed[s][arm].items()}}
            for s in seeds for arm in arms]
    return Measurement(
        metrics=metrics,
        figure=_figure(per_seed, arms),
        tables={"per_seed": rows},
        notes=(f"CSL unions of 2 x CSL({cfg.n}, s), skips {cfg.skips}, {cfg.num_classes} "
               f"classes; {cfg.num_train} train / {cfg.num_val} val / {cfg.num_test} test graphs "
               f"per seed; {cfg.epochs} epochs (paper: 1000 on ZINC), Adam lr {cfg.lr}, batch "
               f"{cfg.batch_size}, checkpoint on validation accuracy (Policy-Learn validated "
               f"with arg-max selection). Prediction DS-GNN: {cfg.prediction_layers} GIN layers, "
               f"width {cfg.hidden}, {cfg.readout} readout; selection DS-GNN: "
               f"{cfg.selection_layers} GIN layers (official default 6), tau {cfg.tau}, "
               f"drop_ratio {cfg.drop_ratio}. Selected nodes are masked at later steps (as in "
               "the official code), so a node is never re-selected; two marks can still fall in "
               "the same component. Prediction BatchNorm uses batch statistics at evaluation "
               "(see csl_experiment)."),
    )


@claim(
    rule="speedup > 2",
    control="not (null_speedup > 2)",
    paper="Sec. 5 / App. timing tables: Policy-Learn with T = 2 or 5 subgraphs runs several "
          "times faster than the full node-marking bag (n subgraphs) at inference, approaching "
          "its accuracy (exact timings not retrieved). Spec expectation on CSL unions (83 vs "
          "3 subgraphs plus two selection passes): >= 5x.",
    paper_numbers={"speedup": 5.0},
    against=("the full node-marking bag (83 subgraphs) on the same batch of graphs, "
             "freshly initialised, single-threaded; null arm: a second, independently "
             "initialised full bag timed in the method's place (an A/A comparison)"),
    resources={"cpus": 1},
)
def cost_vs_full_bag(scale: Scale, seed: int) -> Measurement:
    """``speedup``: median wall time of one evaluation forward of the full bag divided by that
    of Policy-Learn (T = 2, selection passes included) on the same batch of 32 CSL-union
    graphs (8 at smoke) (n = 41, the spec's 82-node graphs, at every scale: nothing is trained here),
    single-threaded, interleaved repeats; the interval is a paired bootstrap over the repeats.
    Holds if it lies above 2 ("several times faster"), fails if at or below. Timing does not
    depend on the weights, so the networks are freshly initialised. Rule unchanged.

    Null arm (added before running this version, measured in the same interleaved loop): a
    second full bag with its own initialisation timed in Policy-Learn's place,
    ``null_speedup`` = median(full bag) / median(second full bag), which is 1 up to noise.
    Control: ``not (null_speedup > 2)``; a harness (or a machine this noisy) that shows a 2x
    "speed-up" between identical models cannot tell."""
    from dataclasses import replace

    import numpy as np
    import torch
    from torch_geometric.loader import DataLoader

    from iclr24.kits.threads import torch_threads

    from .csl_experiment import build_arm, time_forward
    from .csl_union import make_csl_union_dataset

    cfg = replace(_config(scale), n=41)
    repeats = sizes(scale, smoke=3, small=15)
    num_graphs = sizes(scale, smoke=8, small=32)
    graphs = make_csl_union_dataset(num_graphs, cfg.num_components, cfg.skips, cfg.n, seed=seed)
    batch = next(iter(DataLoader(graphs, batch_size=num_graphs)))
    models = {"policy_learn": build_arm("policy_learn", cfg, seed),
              "full_bag": build_arm("full_bag", cfg, seed),
              "full_bag_null": build_arm("full_bag", cfg, seed + 1),
              "random": build_arm("random", cfg, seed)}
    with torch_threads(1), torch.no_grad():
        times = time_forward(models, batch, repeats=repeats)
    full, pl, null, rnd = (np.asarray(times[a])
                           for a in ("full_bag", "policy_learn", "full_bag_null", "random"))

    def ratio(a, b):
        return float(np.median(a) / np.median(b))

    speedup = Estimate.bootstrap((full, pl), ratio, paired=True, seed=seed)
    null_speedup = Estimate.bootstrap((full, null), ratio, paired=True, seed=seed)
    # proxy: node-layer passes per graph (message passing on every copy of every layer)
    sel_passes = sum(t + 1 for t in range(cfg.T)) * cfg.selection_layers
    pl_passes = sel_passes + (cfg.T + 1) * cfg.prediction_layers
    full_passes = (cfg.num_components * cfg.n + 1) * cfg.prediction_layers
    return Measurement(
        metrics={"speedup": speedup,
                 "null_speedup": null_speedup,
                 "full_bag_ms": float(np.median(full) * 1e3),
                 "policy_learn_ms": float(np.median(pl) * 1e3),
                 "random_ms": float(np.median(rnd) * 1e3),
                 "pass_ratio": full_passes / pl_passes},
        tables={"repeats": [{"repeat": i, **{a: round(times[a][i] * 1e3, 3) for a in times}}
                            for i in range(repeats)]},
        notes=(f"One batch of {num_graphs} graphs ({cfg.num_components * cfg.n} nodes each), {repeats} "
               f"interleaved repeats after a warm-up, times in ms. Full bag: "
               f"{cfg.num_components * cfg.n + 1} subgraphs x {cfg.prediction_layers} layers; "
               f"Policy-Learn: selection on 1 then 2 subgraphs x {cfg.selection_layers} layers, "
               "prediction on 3 subgraphs. pass_ratio = copy-layer passes full / Policy-Learn, a "
               "proxy reported beside the measured time. null_speedup: the full bag against a "
               "second full bag, same loop."),
    )
