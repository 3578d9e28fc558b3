"""LASER claims: the lowest-connectivity choice against LASER's own random-in-orbit ablation at
equal locality and sparsity (Sec. 3 desiderata, Sec. 4 connectivity measure), and a long-range
task with distractors, where rewiring must bring a source within reach *and* respect locality
(stand-in for LRGB, Table 1).

Both claims measure their null arm in the same run and state, in ``control``, what the test bed
must show for the verdict to mean anything:

- ``locality_sparsity``: a second, independent draw of the random-in-orbit ablation judged as
  LASER would be (against the first draw) must not pass; LASER's locality and sparsity are the
  ablation's by construction (same orbits, same counts), so only the choice inside the orbit is
  judged.
- ``long_range_task``: the full 3-hop rewiring (local, dense) must beat random shortcuts at
  LASER's budget, i.e. the task rewards locality and not any long edge.
"""

from __future__ import annotations

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    claim,
    evaluate_rule,
    seed_difference,
    seed_metric,
    sizes,
)

_L1_MAX_DISTANCE = 4  # L = 3 snapshots: added edges span 2..4 hops
_L1_RHO = 0.25
_L1_REPEAT_SEED = 7919  # offset of the second random-in-orbit draw (the null judged as LASER)
_L2_MAX_DISTANCE = 3  # L = 2: distances 2 and 3, a 3-layer GCN then covers up to 9 hops
_L2_RHOS = (0.1, 0.25, 0.5, 1.0)
_L2_DECIDING_RHO = 0.5  # fixed before running: the LRGB configs' larger factor
_L2_LAYERS, _L2_HIDDEN, _L2_DISTANCE, _L2_CLASSES = 3, 64, 6, 4
# distractors just outside what any rewiring of reach 3 lets 3 layers see: 3 * 3 + 1 hops
_L2_DISTRACTORS, _L2_DISTRACTOR_DISTANCE = 2, _L2_LAYERS * _L2_MAX_DISTANCE + 1


def _pairs(data, rewired) -> int:
    """New unordered node pairs that ``rewired`` connects."""
    from .diagnostics import added_mask

    e = rewired.edge_index[:, added_mask(data, rewired)].numpy()
    return len({(min(u, v), max(u, v)) for u, v in e.T})


def _repeat_draw_does_not_pass(metrics) -> bool:
    """not holds(repeat_gain_over_orbit_random > 0)"""
    # the null arm, a second random-in-orbit draw judged as LASER is, must not pass; an
    # interval across 0 is "not holds" (the expression `not (x > 0)` would be unknown there)
    return evaluate_rule("repeat_gain_over_orbit_random > 0", metrics) is not True


_L1_METHODS = ("laser", "laser_random_orbit", "laser_random_orbit_repeat", "laser_highest",
               "random", "spectral", "khop")


def _sparsity_replicate(n_tree: int, n_roc: int, n_grid: int, s: int) -> list[dict]:
    """One seed's graphs (fresh draws, tie-breaking and random picks seeded by ``s``): a row
    per (graph, method) with the added edges' distances, growth and resistance drop."""
    from iclr24.kits.graphs import grid, random_tree, ring_of_cliques, to_pyg

    from .baselines import greedy_resistance_rewiring, khop_rewiring, random_rewiring
    from .diagnostics import added_edge_distances, edge_growth, resistance_drop
    from .rewiring import LaserTransform

    rng = np.random.default_rng(s)
    graphs = ([("tree", random_tree(60, seed=int(rng.integers(2**31)))) for _ in range(n_tree)]
              + [("ring_of_cliques", ring_of_cliques(6, 8, seed=int(rng.integers(2**31))))
                 for _ in range(n_roc)]
              + [("grid", grid(8, 8, seed=int(rng.integers(2**31)))) for _ in range(n_grid)])
    transforms = {
        "laser": LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO, seed=s),
        "laser_random_orbit": LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO,
                                             selection="random", seed=s),
        "laser_random_orbit_repeat": LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO,
                                                    selection="random",
                                                    seed=s + _L1_REPEAT_SEED),
        "laser_highest": LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO,
                                        selection="highest", seed=s),
    }
    rows = []
    for i, (family, g) in enumerate(graphs):
        data = to_pyg(g)
        rewired = {name: t(data) for name, t in transforms.items()}
        budget = _pairs(data, rewired["laser"])
        rewired["random"] = random_rewiring(data, budget, seed=s + i, symmetric=True)
        rewired["spectral"] = greedy_resistance_rewiring(data, budget)
        rewired["khop"] = khop_rewiring(data, _L1_MAX_DISTANCE)
        for m in _L1_METHODS:
            d = added_edge_distances(data, rewired[m]).numpy()
            rows.append({"seed": s, "family": family, "graph": i, "method": m,
                         "distances": d, "added_columns": len(d),
                         "new_pairs": _pairs(data, rewired[m]),
                         "mean_distance": float(d.mean()), "max_distance": int(d.max()),
                         "edge_growth": edge_growth(data, rewired[m]),
                         "resistance_drop": resistance_drop(data, rewired[m])})
    return rows


@claim(
    rule="laser_max_distance <= 4 and laser_khop_edge_ratio <= 0.7 "
         "and spectral_local_fraction < 0.5 and laser_spectral_drop_ratio >= 0.5 "
         "and drop_gain_over_orbit_random > 0",
    control=_repeat_draw_does_not_pass,
    paper="Sec. 3 / Fig. 3 (and Sec. 5 runtime/density discussion): spatial multi-hop rewiring "
          "keeps locality but densifies the graph, spectral rewiring (FoSR) keeps it sparse but "
          "adds edges between distant nodes; LASER adds only edges of length <= L + 1, far fewer "
          "than multi-hop rewiring, and lowers over-squashing comparably to spectral rewiring. "
          "Sec. 4: inside each orbit LASER connects the nodes with the lowest connectivity "
          "mu = ((A + I)^k)_vu, the pairs where over-squashing bites; the random choice inside "
          "the orbit (laser_random) is the ablation of that choice. No single number is given "
          "for our graph families.",
    paper_numbers={"laser_max_distance": 4.0},
    against=("LASER's random-in-orbit ablation (same orbits, same per-node counts: same "
             "locality and sparsity) on the total effective resistance, and a second independent "
             "draw of it as the null judged like LASER; the mechanism reversed (highest mu first, "
             "reported); at LASER's budget, greedy effective-resistance rewiring (spectral-like, "
             "not FoSR) and random non-edges; full 4-hop rewiring as the dense reference"),
)
def locality_sparsity(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random trees (n = 60), rings of 6 cliques of 8, 8 x 8 grids; 5 seeds at small (each a
    fresh draw of 20 + 10 + 10 graphs and of every random choice), 1 at smoke (3 graphs).
    Arms: LASER (L = 3, rho = 0.25), its random-in-orbit ablation (uniform choice inside the same
    orbits, the same per-node counts), a second draw of that ablation with another seed, LASER
    with the highest-mu choice (mechanism reversed), and at LASER's budget (its number of new
    unordered pairs) uniform random non-edges and the greedy effective-resistance
    ("spectral-like") rewiring; full 4-hop rewiring as the dense reference.

    Why the rule changed (issue 35). The old rule (max distance <= 4, 4-hop edge ratio <= 0.7,
    spectral local fraction < 0.5, resistance drop >= 0.5 of the spectral one) is true by
    construction for any choice inside the orbits: the random-in-orbit ablation passed it too.
    LASER's own point is the choice: the lowest-mu orbit members relieve over-squashing more
    than random members of the same orbits, at the same locality and sparsity. The deciding part
    is now ``drop_gain_over_orbit_random`` = LASER's minus the ablation's relative drop of the
    total effective resistance R_tot (the over-squashing measure the spec names, Black et al.
    2023), per seed the mean over graphs, paired over seeds; the whole interval must be > 0.
    Decided before running; it fails when the ablation relieves R_tot as much or more. The old
    parts stay (now over seeds) as the paper's trade-off statements.

    Null arm and control. A second independent random-in-orbit draw judged as LASER is
    (``repeat_gain_over_orbit_random``, its gain over the first draw) must not give holds on
    the deciding comparison; otherwise seed-to-seed noise alone passes and the test bed cannot
    tell. ``highest_gain_over_orbit_random`` (reported) shows whether the ordering by mu matters
    at all for R_tot, and in which direction.

    Metrics over seeds: ``laser_khop_edge_ratio`` = LASER's added columns / 4-hop's;
    ``laser_spectral_drop_ratio`` = LASER's mean resistance drop / the greedy's;
    ``<method>_local_fraction`` = fraction of added edges spanning <= 4 hops;
    ``laser_max_distance`` the largest over all seeds and graphs."""
    progress = progress or (lambda *a, **k: None)
    n_tree, n_roc, n_grid = sizes(scale, smoke=(1, 1, 1), small=(20, 10, 10))
    num_seeds = sizes(scale, smoke=1, small=5)
    rows: list[dict] = []
    for rep in range(num_seeds):
        rows += _sparsity_replicate(n_tree, n_roc, n_grid, seed * 1000 + rep)
        progress((rep + 1) / num_seeds, f"seed {rep + 1}/{num_seeds}")
    seeds = sorted({r["seed"] for r in rows})

    def per_seed(method: str, stat) -> list[float]:
        return [float(stat([r for r in rows if r["method"] == method and r["seed"] == s]))
                for s in seeds]

    def distances(mine):
        return np.concatenate([r["distances"] for r in mine])

    stats = {
        "mean_distance": lambda mine: distances(mine).mean(),
        "local_fraction": lambda mine: (distances(mine) <= _L1_MAX_DISTANCE).mean(),
        "edge_growth": lambda mine: np.mean([r["edge_growth"] for r in mine]),
        "resistance_drop": lambda mine: np.mean([r["resistance_drop"] for r in mine]),
        "added_columns": lambda mine: sum(r["added_columns"] for r in mine),
    }
    values = {(m, k): per_seed(m, f) for m in _L1_METHODS for k, f in stats.items()}
    metrics: dict = {}
    summary = []
    for m in _L1_METHODS:
        metrics[f"{m}_max_distance"] = float(max(r["max_distance"] for r in rows
                                                 if r["method"] == m))
        for k in stats:
            metrics[f"{m}_{k}"] = seed_metric(values[m, k])
        summary.append({"method": m, "max_distance": metrics[f"{m}_max_distance"],
                        **{k: float(np.mean(values[m, k])) for k in stats}})
    for family in ("tree", "ring_of_cliques", "grid"):
        for m in _L1_METHODS:
            mine = [r for r in rows if r["method"] == m and r["family"] == family]
            summary.append({"method": f"{m} ({family})",
                            "mean_distance": float(distances(mine).mean()),
                            "max_distance": float(max(r["max_distance"] for r in mine)),
                            "edge_growth": float(np.mean([r["edge_growth"] for r in mine])),
                            "resistance_drop": float(np.mean([r["resistance_drop"]
                                                              for r in mine]))})
    drop = {m: values[m, "resistance_drop"] for m in _L1_METHODS}
    cols = {m: values[m, "added_columns"] for m in _L1_METHODS}
    metrics["laser_khop_edge_ratio"] = seed_metric(
        [a / b for a, b in zip(cols["laser"], cols["khop"])])
    metrics["laser_spectral_drop_ratio"] = seed_metric(
        [a / b for a, b in zip(drop["laser"], drop["spectral"])])
    metrics["orbit_random_spectral_drop_ratio"] = seed_metric(
        [a / b for a, b in zip(drop["laser_random_orbit"], drop["spectral"])])
    # the deciding comparison: lowest-mu choice vs uniform choice inside the same orbits
    metrics["drop_gain_over_orbit_random"] = seed_difference(drop["laser"],
                                                             drop["laser_random_orbit"])
    metrics["repeat_gain_over_orbit_random"] = seed_difference(
        drop["laser_random_orbit_repeat"], drop["laser_random_orbit"])  # the null as LASER
    metrics["highest_gain_over_orbit_random"] = seed_difference(drop["laser_highest"],
                                                                drop["laser_random_orbit"])
    pairs = {m: per_seed(m, lambda mine: sum(r["new_pairs"] for r in mine))
             for m in ("laser", "laser_random_orbit")}
    # same columns, but lowest-mu picks are more often mutual (mu is symmetric): fewer pairs
    metrics["laser_orbit_random_pair_ratio"] = seed_metric(
        [a / b for a, b in zip(pairs["laser"], pairs["laser_random_orbit"])])
    metrics["num_seeds"] = float(num_seeds)

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0))
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    top = int(max(metrics[f"{m}_max_distance"] for m in _L1_METHODS))
    bins = np.arange(1.5, top + 1.5)
    for m in ("laser", "random", "spectral"):
        ax1.hist(distances([r for r in rows if r["method"] == m]), bins=bins, histtype="step",
                 density=True, label=m)
    ax1.axvline(_L1_MAX_DISTANCE + 0.5, color="grey", ls=":")
    ax1.set_xlabel("original hop distance of an added edge")
    ax1.set_ylabel("fraction of added edges")
    ax1.legend()
    for m in _L1_METHODS:
        ax2.scatter(np.mean(values[m, "edge_growth"]), np.mean(drop[m]), label=m)
    ax2.set_xlabel("edge growth (added / original edge_index columns)")
    ax2.set_ylabel("drop of total effective resistance")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    per_graph = [{k: v for k, v in r.items() if k != "distances"} for r in rows]
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"per_method": summary, "per_graph": per_graph},
        notes="Budget = LASER's number of new unordered pairs; random and spectral-like add that "
              "many pairs in both directions (so they get more edge_index columns than LASER, "
              "whose additions are mostly one-directional). The three in-orbit arms (lowest, "
              "random, highest mu) add exactly LASER's per-node counts. The spectral arm is an "
              "exact greedy minimiser of total effective resistance, not FoSR. Deterministic "
              "given the seed.")


def _train_arm(graphs, split, seed: int, epochs: int) -> float:
    import torch

    from iclr24.kits.graphs import evaluate_graph_classifier, fit_graph_classifier

    from .long_range import target_logits
    from .snapshot_gnn import SnapshotGNN

    train, val, test = ([graphs[i] for i in idx] for idx in split)
    torch.manual_seed(seed)
    model = SnapshotGNN(_L2_CLASSES + 2, _L2_HIDDEN, _L2_CLASSES, num_layers=_L2_LAYERS,
                        num_snapshots=_L2_MAX_DISTANCE)
    fit_graph_classifier(model, train, val, epochs=epochs, seed=seed, lr=1e-3, batch_size=32,
                         forward=target_logits)
    return evaluate_graph_classifier(model, test, forward=target_logits)["accuracy"]


def _arm(rho: float) -> str:
    return f"laser_{round(rho * 100):03d}"  # rho 0.25 -> laser_025 (metric names are identifiers)


def _edge_set(data) -> set:
    return set(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist(),
                   data.edge_snapshot.tolist()))


@claim(
    rule="gain_over_original > 0 and gain_over_random > 0",
    control="khop_gain_over_random > 0",
    paper="Table 1 (LRGB, GCN): LASER improves Peptides-func AP 0.5930 -> 0.6440 and "
          "Peptides-struct MAE 0.3496 -> 0.3043 over the un-rewired GCN and beats GCN+FoSR/SDRF; "
          "Sec. 3: rewiring should respect locality (ii); Sec. 4: rho interpolates between the "
          "MPNN (rho -> 0) and the multi-hop GNN (rho = 1) while LASER keeps a fraction of the "
          "multi-hop edges. Our task is synthetic; the paper's numbers are not comparable in "
          "magnitude.",
    paper_numbers={"gain_over_original": 0.051},
    against=("the same GCN on the un-rewired trees and with random non-edges at LASER's rho = 0.5 "
             "per-snapshot counts (null arm: shortcuts that ignore locality), same splits and "
             "init; full 3-hop rewiring as the positive control; LASER's random-in-orbit "
             "ablation (reported)"),
)
def long_range_task(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random trees of 30 nodes; a source s with a one-hot class (4 classes) and a target t at
    distance 6, and two distractors that look exactly like sources (own random class, source
    indicator) at >= 10 hops from t; predict the class of the source nearest to t, read out at
    t, with the same 3-layer, hidden-64 relational GCN (SnapshotGNN) on: the original tree
    (3 layers cannot reach s: chance = 0.25), LASER with L = 2 (distances 2 and 3) at rho in
    {0.1, 0.25, 0.5, 1.0}, uniform random non-edges with LASER's per-snapshot counts at
    rho = 0.5, and LASER's random-in-orbit ablation at rho = 0.5 (reported). rho = 1 is the full
    3-hop rewiring (its edge set is checked equal to ``khop_rewiring``'s). Test accuracy at the
    best-validation epoch; gains are paired over 3 seeds at small (same trees, split and init
    per seed) at rho = 0.5, the comparison fixed before running.

    Why the test bed changed (issue 35). Without distractors random shortcuts put s within
    t's receptive field in 0.99 of the graphs against LASER's 0.56: the task rewarded any long
    edge, the opposite of the paper's locality argument (ii). Distractors 10 = 3 * 3 + 1 hops
    away lie outside what 3 layers over any rewiring of reach 3 (LASER, 3-hop) can see, while
    non-local edges bring them in as often as the source; the nearest source is the answer, as
    nearby structure is in molecules. Designed and fixed before any run of it; the rule is
    unchanged.

    Control (positive, measured in the same run): the full 3-hop rewiring, local but dense,
    must beat the random shortcuts (``khop_gain_over_random > 0``); if non-local edges do as
    well as local ones, the task does not reward locality and the LASER-vs-random comparison
    cannot tell. ``reach_<arm>`` / ``distractor_reach_<arm>`` (reported) are the fractions of
    graphs where s / a distractor lies in t's 3-layer receptive field."""
    from iclr24.kits.graphs import stratified_split
    from iclr24.kits.threads import torch_threads

    from .baselines import khop_rewiring, random_rewiring
    from .long_range import make_long_range_trees, receptive_field
    from .rewiring import LaserTransform

    progress = progress or (lambda *a, **k: None)
    num_graphs, num_nodes = sizes(scale, smoke=(120, 30), small=(800, 30))
    epochs = sizes(scale, smoke=3, small=20)
    num_seeds = sizes(scale, smoke=1, small=3)
    acc: dict[str, list[float]] = {}
    added: dict[str, list[float]] = {}
    reach: dict[str, list[float]] = {}
    distractor_reach: dict[str, list[float]] = {}
    steps = num_seeds * (len(_L2_RHOS) + 3)
    done = 0
    with torch_threads(1):
        for rep in range(num_seeds):
            s = seed * 1000 + rep
            base = make_long_range_trees(num_graphs, num_nodes, distance=_L2_DISTANCE,
                                         num_classes=_L2_CLASSES,
                                         num_distractors=_L2_DISTRACTORS,
                                         distractor_distance=_L2_DISTRACTOR_DISTANCE, seed=s)
            split = stratified_split([int(g.y) for g in base], seed=s)
            arms = {"original": base}
            for rho in _L2_RHOS:
                t = LaserTransform(max_distance=_L2_MAX_DISTANCE, rho=rho, seed=s)
                arms[_arm(rho)] = [t(g) for g in base]
            ref = arms[_arm(_L2_DECIDING_RHO)]
            arms["random"] = [
                random_rewiring(g, [int((r.edge_snapshot == lvl).sum())
                                    for lvl in range(1, _L2_MAX_DISTANCE)], seed=s + i)
                for i, (g, r) in enumerate(zip(base, ref))]
            ablation = LaserTransform(max_distance=_L2_MAX_DISTANCE, rho=_L2_DECIDING_RHO,
                                      selection="random", seed=s)
            arms["orbit_random"] = [ablation(g) for g in base]
            if not all(_edge_set(r) == _edge_set(khop_rewiring(g, _L2_MAX_DISTANCE))
                       for g, r in zip(base, arms[_arm(1.0)])):
                raise AssertionError("LASER at rho = 1 must equal the 3-hop rewiring")
            e0 = sum(g.edge_index.shape[1] for g in base)
            for name, graphs in arms.items():
                fields = [receptive_field(g, _L2_LAYERS) for g in graphs]
                reach.setdefault(name, []).append(float(np.mean(
                    [bool(f[g.source_mask].any()) for f, g in zip(fields, graphs)])))
                distractor_reach.setdefault(name, []).append(float(np.mean(
                    [bool(f[g.distractor_mask].any()) for f, g in zip(fields, graphs)])))
                acc.setdefault(name, []).append(_train_arm(graphs, split, s, epochs))
                added.setdefault(name, []).append(
                    (sum(g.edge_index.shape[1] for g in graphs) - e0) / len(base))
                done += 1
                progress(done / steps, f"seed {rep + 1}/{num_seeds}: {name}")

    deciding, dense, sparse = _arm(_L2_DECIDING_RHO), _arm(1.0), _arm(_L2_RHOS[0])
    khop_added = float(np.mean(added[dense]))
    rho_of = {_arm(r): r for r in _L2_RHOS} | {"original": 0.0, "random": _L2_DECIDING_RHO,
                                               "orbit_random": _L2_DECIDING_RHO}
    rows = []
    for name, accs in acc.items():
        rows.append({"arm": name, "rho": rho_of[name],
                     "test_accuracy_mean": float(np.mean(accs)),
                     "test_accuracy_per_seed": [round(a, 4) for a in accs],
                     "s_within_3_layers_of_t": float(np.mean(reach[name])),
                     "distractor_within_3_layers_of_t": float(np.mean(distractor_reach[name])),
                     "added_edges_per_graph": float(np.mean(added[name])),
                     "fraction_of_3hop_edges": float(np.mean(added[name])) / khop_added})
    metrics = {f"acc_{name}": seed_metric(v) for name, v in acc.items()}
    metrics.update({f"reach_{name}": float(np.mean(v)) for name, v in reach.items()})
    metrics.update({f"distractor_reach_{name}": float(np.mean(v))
                    for name, v in distractor_reach.items()})
    metrics.update({
        "acc_khop": seed_metric(acc[dense]),
        "gain_over_original": seed_difference(acc[deciding], acc["original"]),
        "gain_over_random": seed_difference(acc[deciding], acc["random"]),
        "khop_gain_over_random": seed_difference(acc[dense], acc["random"]),
        "random_gain_over_original": seed_difference(acc["random"], acc["original"]),
        "gain_over_orbit_random": seed_difference(acc[deciding], acc["orbit_random"]),
        "rho_trend": seed_difference(acc[dense], acc[sparse]),
        "khop_minus_laser": seed_difference(acc[dense], acc[deciding]),
        "laser_khop_edge_fraction": float(np.mean(added[deciding])) / khop_added,
        "added_edges_laser": float(np.mean(added[deciding])),
        "added_edges_khop": khop_added,
        "num_seeds": float(num_seeds),
    })

    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 4.2))
    ax = fig.add_subplot(1, 1, 1)
    fr = [float(np.mean(added[_arm(r)])) / khop_added for r in _L2_RHOS]
    ax.plot(fr, [np.mean(acc[_arm(r)]) for r in _L2_RHOS], "o-", label="LASER (rho labels)")
    for r, x in zip(_L2_RHOS, fr):
        ax.annotate(f"{r}", (x, np.mean(acc[_arm(r)])))
    for name, marker in (("random", "s"), ("orbit_random", "^")):
        ax.scatter([float(np.mean(added[name])) / khop_added], [np.mean(acc[name])],
                   marker=marker, label=f"{name}, LASER rho={_L2_DECIDING_RHO} budget")
    ax.axhline(np.mean(acc["original"]), color="grey", ls="--", label="original graph")
    ax.set_xlabel("added edges / 3-hop added edges")
    ax.set_ylabel("test accuracy")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_per_arm": rows},
        notes=f"{num_graphs} trees of {num_nodes} nodes per seed, {num_seeds} seed(s), "
              f"{epochs} epochs, Adam lr 1e-3, batch 32, 70/15/15 stratified split; "
              f"{_L2_DISTRACTORS} distractors at >= {_L2_DISTRACTOR_DISTANCE} hops from t. "
              f"rho = 1 is the 3-hop arm (same edges). Scaled down from the spec's 2000 trees "
              f"so that the 21 trainings fit the 5-minute budget.")
