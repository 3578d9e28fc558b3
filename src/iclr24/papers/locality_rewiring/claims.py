"""LASER claims: locality and sparsity at equal budget (Sec. 3 desiderata, Fig. 3), and a
long-range task where rewiring must bring a source within reach (stand-in for LRGB, Table 1)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

_L1_MAX_DISTANCE = 4  # L = 3 snapshots: added edges span 2..4 hops
_L1_RHO = 0.25
_L2_MAX_DISTANCE = 3  # L = 2: distances 2 and 3, a 3-layer GCN then covers 6 + hops
_L2_RHOS = (0.1, 0.25, 0.5, 1.0)
_L2_DECIDING_RHO = 0.5  # fixed before running: the LRGB configs' larger factor
_L2_LAYERS, _L2_HIDDEN, _L2_DISTANCE, _L2_CLASSES = 3, 64, 6, 4


def _pairs(data, rewired) -> int:
    """New unordered node pairs that ``rewired`` connects."""
    from .diagnostics import added_mask

    e = rewired.edge_index[:, added_mask(data, rewired)].numpy()
    return len({(min(u, v), max(u, v)) for u, v in e.T})


@claim(
    rule="laser_max_distance <= 4 and laser_khop_edge_ratio <= 0.7 "
         "and spectral_local_fraction < 0.5 and laser_spectral_drop_ratio >= 0.5",
    paper="Sec. 3 / Fig. 3 (and Sec. 5 runtime/density discussion): spatial multi-hop rewiring "
          "keeps locality but densifies the graph, spectral rewiring (FoSR) keeps it sparse but "
          "adds edges between distant nodes; LASER adds only edges of length <= L + 1, far fewer "
          "than multi-hop rewiring, and lowers over-squashing measures (effective resistance) "
          "comparably to spectral rewiring. No single number is given for our graph families.",
    paper_numbers={"laser_max_distance": 4.0},
    against=("at LASER's budget: greedy effective-resistance rewiring (spectral-like, not FoSR) "
             "and random non-edges; full 4-hop rewiring as the dense reference"),
)
def locality_sparsity(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random trees (n = 60), rings of 6 cliques of 8, 8 x 8 grids. Arms at equal budget (the
    number of new unordered pairs LASER connects, L = 3, rho = 0.25): LASER, uniform random
    non-edges, the greedy effective-resistance ("spectral-like") rewiring, and LASER's
    random-inside-orbit ablation (reported); full 4-hop rewiring as the dense reference.
    Metrics pool the added edges of all graphs: original hop distance (mean, max, fraction
    <= 4), growth of edge_index columns, relative drop of the total effective resistance.
    ``laser_khop_edge_ratio`` = LASER's added columns / 4-hop's; ``laser_spectral_drop_ratio``
    = LASER's mean resistance drop / the greedy's."""
    from iclr24.kits.graphs import grid, random_tree, ring_of_cliques, to_pyg

    from .baselines import greedy_resistance_rewiring, khop_rewiring, random_rewiring
    from .diagnostics import added_edge_distances, edge_growth, resistance_drop
    from .rewiring import LaserTransform

    progress = progress or (lambda *a, **k: None)
    n_tree, n_roc, n_grid = sizes(scale, smoke=(1, 1, 1), small=(20, 10, 10))
    rng = np.random.default_rng(seed)
    graphs = ([("tree", random_tree(60, seed=int(rng.integers(2**31)))) for _ in range(n_tree)]
              + [("ring_of_cliques", ring_of_cliques(6, 8, seed=int(rng.integers(2**31))))
                 for _ in range(n_roc)]
              + [("grid", grid(8, 8, seed=int(rng.integers(2**31)))) for _ in range(n_grid)])
    laser = LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO, seed=seed)
    ablation = LaserTransform(max_distance=_L1_MAX_DISTANCE, rho=_L1_RHO, selection="random",
                              seed=seed)
    methods = ("laser", "laser_random_orbit", "random", "spectral", "khop")
    dists = {m: [] for m in methods}
    rows = []
    for i, (family, g) in enumerate(graphs):
        data = to_pyg(g)
        rewired = {"laser": laser(data), "laser_random_orbit": ablation(data)}
        budget = _pairs(data, rewired["laser"])
        rewired["random"] = random_rewiring(data, budget, seed=seed + i, symmetric=True)
        rewired["spectral"] = greedy_resistance_rewiring(data, budget)
        rewired["khop"] = khop_rewiring(data, _L1_MAX_DISTANCE)
        for m in methods:
            d = added_edge_distances(data, rewired[m]).numpy()
            dists[m].append(d)
            rows.append({"family": family, "graph": i, "method": m,
                         "added_columns": len(d), "new_pairs": _pairs(data, rewired[m]),
                         "mean_distance": float(d.mean()), "max_distance": int(d.max()),
                         "edge_growth": edge_growth(data, rewired[m]),
                         "resistance_drop": resistance_drop(data, rewired[m])})
        progress((i + 1) / len(graphs), f"{family} {i + 1}/{len(graphs)}")

    summary, metrics = [], {}
    for m in methods:
        d = np.concatenate(dists[m])
        mine = [r for r in rows if r["method"] == m]
        stats = {"mean_distance": float(d.mean()), "max_distance": float(d.max()),
                 "local_fraction": float((d <= _L1_MAX_DISTANCE).mean()),
                 "edge_growth": float(np.mean([r["edge_growth"] for r in mine])),
                 "resistance_drop": float(np.mean([r["resistance_drop"] for r in mine])),
                 "added_columns": len(d)}
        summary.append({"method": m, **stats})
        metrics.update({f"{m}_{k}": float(v) for k, v in stats.items()})
    for family in ("tree", "ring_of_cliques", "grid"):
        for m in methods:
            mine = [r for r in rows if r["method"] == m and r["family"] == family]
            if mine:
                summary.append({"method": f"{m} ({family})",
                                "mean_distance": float(np.mean([r["mean_distance"] for r in mine])),
                                "max_distance": float(max(r["max_distance"] for r in mine)),
                                "edge_growth": float(np.mean([r["edge_growth"] for r in mine])),
                                "resistance_drop": float(np.mean([r["resistance_drop"]
                                                                  for r in mine]))})
    metrics["laser_khop_edge_ratio"] = metrics["laser_added_columns"] / metrics["khop_added_columns"]
    metrics["laser_spectral_drop_ratio"] = (metrics["laser_resistance_drop"]
                                            / metrics["spectral_resistance_drop"])
    metrics["laser_vs_orbit_random_drop"] = (metrics["laser_resistance_drop"]
                                             - metrics["laser_random_orbit_resistance_drop"])

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0))
    ax1, ax2 = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    top = int(max(np.concatenate(dists[m]).max() for m in methods))
    bins = np.arange(1.5, top + 1.5)
    for m in ("laser", "random", "spectral"):
        ax1.hist(np.concatenate(dists[m]), bins=bins, histtype="step", density=True, label=m)
    ax1.axvline(_L1_MAX_DISTANCE + 0.5, color="grey", ls=":")
    ax1.set_xlabel("original hop distance of an added edge")
    ax1.set_ylabel("fraction of added edges")
    ax1.legend()
    for m in methods:
        ax2.scatter(metrics[f"{m}_edge_growth"], metrics[f"{m}_resistance_drop"], label=m)
    ax2.set_xlabel("edge growth (added / original edge_index columns)")
    ax2.set_ylabel("drop of total effective resistance")
    ax2.legend()
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"per_method": summary, "per_graph": rows},
        notes="Budget = LASER's number of new unordered pairs; random and spectral-like add that "
              "many pairs in both directions (so they get more edge_index columns than LASER, "
              "whose additions are mostly one-directional). The spectral arm is an exact greedy "
              "minimiser of total effective resistance, not FoSR. Deterministic given the seed.")


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
    paper="Table 1 (LRGB, GCN): LASER improves Peptides-func AP 0.5930 -> 0.6440 and "
          "Peptides-struct MAE 0.3496 -> 0.3043 over the un-rewired GCN and beats GCN+FoSR/SDRF; "
          "Sec. 4: rho interpolates between the MPNN (rho -> 0) and the multi-hop GNN (rho = 1) "
          "while LASER keeps a fraction of the multi-hop edges. Our task is synthetic; the "
          "paper's numbers are not comparable in magnitude.",
    paper_numbers={"gain_over_original": 0.051},
    against=("the same GCN on the un-rewired trees and with random non-edges at LASER's rho = 0.5 "
             "per-snapshot counts (null arm), same splits and init"),
)
def long_range_task(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random trees; a source s with a one-hot class (4 classes) and a target t at distance 6;
    predict s's class at t with the same 3-layer, hidden-64 relational GCN (SnapshotGNN) on:
    the original tree (3 layers cannot reach s: chance = 0.25), LASER with L = 2 (distances 2
    and 3) at rho in {0.1, 0.25, 0.5, 1.0}, and uniform random non-edges with LASER's
    per-snapshot counts at rho = 0.5 (random ids follow LASER's counts). rho = 1 is the full
    3-hop rewiring (its edge set is checked equal to ``khop_rewiring``'s). Test accuracy at the
    best-validation epoch; gains are paired over seeds (same trees, split and init per seed)
    at rho = 0.5, the comparison fixed before running. ``reach_<arm>`` (reported, not judged)
    is the fraction of graphs where s lies in t's 3-layer receptive field at all, the ceiling
    of what the GCN can learn; ``reach_laser_orbit_random_050`` is the same for the paper's
    random-inside-orbit ablation (not trained)."""
    from iclr24.kits.graphs import stratified_split
    from iclr24.kits.threads import torch_threads

    from .baselines import khop_rewiring, random_rewiring
    from .long_range import make_long_range_trees, within_receptive_field
    from .rewiring import LaserTransform

    progress = progress or (lambda *a, **k: None)
    num_graphs, num_nodes = sizes(scale, smoke=(200, 20), small=(800, 30))
    epochs = sizes(scale, smoke=3, small=20)
    num_seeds = sizes(scale, smoke=1, small=3)
    acc: dict[str, list[float]] = {}
    added: dict[str, list[float]] = {}
    reach: dict[str, list[float]] = {}
    steps = num_seeds * (len(_L2_RHOS) + 2)
    done = 0
    with torch_threads(1):
        for rep in range(num_seeds):
            s = seed * 1000 + rep
            base = make_long_range_trees(num_graphs, num_nodes, distance=_L2_DISTANCE,
                                         num_classes=_L2_CLASSES, seed=s)
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
            if not all(_edge_set(r) == _edge_set(khop_rewiring(g, _L2_MAX_DISTANCE))
                       for g, r in zip(base, arms[_arm(1.0)])):
                raise AssertionError("LASER at rho = 1 must equal the 3-hop rewiring")
            ablation = LaserTransform(max_distance=_L2_MAX_DISTANCE, rho=_L2_DECIDING_RHO,
                                      selection="random", seed=s)
            reach.setdefault("laser_orbit_random_050", []).append(float(np.mean(
                [within_receptive_field(ablation(g), _L2_LAYERS) for g in base])))
            for name, graphs in arms.items():
                reach.setdefault(name, []).append(float(np.mean(
                    [within_receptive_field(g, _L2_LAYERS) for g in graphs])))
                acc.setdefault(name, []).append(_train_arm(graphs, split, s, epochs))
                e0 = sum(g.edge_index.shape[1] for g in base)
                added.setdefault(name, []).append(
                    (sum(g.edge_index.shape[1] for g in graphs) - e0) / len(base))
                done += 1
                progress(done / steps, f"seed {rep + 1}/{num_seeds}: {name}")

    deciding, dense, sparse = _arm(_L2_DECIDING_RHO), _arm(1.0), _arm(_L2_RHOS[0])
    khop_added = float(np.mean(added[dense]))
    rho_of = {_arm(r): r for r in _L2_RHOS} | {"original": 0.0, "random": _L2_DECIDING_RHO}
    rows = []
    for name, accs in acc.items():
        rows.append({"arm": name, "rho": rho_of[name],
                     "test_accuracy_mean": float(np.mean(accs)),
                     "test_accuracy_per_seed": [round(a, 4) for a in accs],
                     "s_within_3_layers_of_t": float(np.mean(reach[name])),
                     "added_edges_per_graph": float(np.mean(added[name])),
                     "fraction_of_3hop_edges": float(np.mean(added[name])) / khop_added})
    metrics = {f"acc_{name}": seed_metric(v) for name, v in acc.items()}
    metrics.update({f"reach_{name}": float(np.mean(v)) for name, v in reach.items()})
    metrics.update({
        "acc_khop": seed_metric(acc[dense]),
        "gain_over_original": seed_difference(acc[deciding], acc["original"]),
        "gain_over_random": seed_difference(acc[deciding], acc["random"]),
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
    ax.scatter([float(np.mean(added["random"])) / khop_added], [np.mean(acc["random"])],
               marker="s", label=f"random, LASER rho={_L2_DECIDING_RHO} budget")
    ax.axhline(np.mean(acc["original"]), color="grey", ls="--", label="original graph")
    ax.set_xlabel("added edges / 3-hop added edges")
    ax.set_ylabel("test accuracy")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_per_arm": rows},
        notes=f"{num_graphs} trees of {num_nodes} nodes per seed, {num_seeds} seed(s), "
              f"{epochs} epochs, Adam lr 1e-3, batch 32, 70/15/15 stratified split. rho = 1 is "
              f"the 3-hop arm (same edges). Scaled down from the spec's 2000 trees so that the "
              f"18 trainings fit the 5-minute budget.")
