"""LASER: Locality-Aware Graph Rewiring in GNNs (F. Barbero, A. Velingker, A. Saberi,
M. Bronstein, F. Di Giovanni; ICLR 2024; arXiv 2310.01668; official code Fedzbar/laser-release).

What the paper does. Rewiring should (i) reduce over-squashing, (ii) respect the locality of the
graph and (iii) keep it sparse; spatial (multi-hop) rewiring gets (i)+(ii), spectral rewiring
(i)+(iii). LASER builds snapshots G_0 = G, G_1, ..., G_L: snapshot l adds, for every node v, a
fraction rho of its orbit O_l(v) = {u : d_G(v, u) = l + 1}, taking the nodes worst connected to v
by mu(v, u) = ((A + I)^k)_{vu}; a relational GNN then treats each snapshot as its own edge type.

How the code maps to it.
- :mod:`.rewiring`: :class:`LaserTransform` (a PyG ``BaseTransform``; orbits on the original
  graph, lowest mu first, seeded tie-breaking, ``edge_snapshot`` ids), ``connectivity_measure``,
  ``orbit_sizes``.
- :mod:`.snapshot_gnn`: :class:`SnapshotGNN`, ``mode="relational"`` (the Section 4 update, one
  conv per snapshot in every layer; the default) or ``"official"`` (released code: union of
  edges until the last layer, relational last layer), ``progressive`` snapshots.
- :mod:`.baselines`: ``khop_rewiring`` (spatial, dense), ``random_rewiring`` (uniform non-edges),
  ``greedy_resistance_rewiring`` (spectral-like: greedy drop of total effective resistance).
- :mod:`.diagnostics`: ``added_edge_distances``, ``edge_growth``, ``resistance_drop``,
  ``total_effective_resistance`` (from the graph kit).
- :mod:`.long_range`: ``make_long_range_trees`` (the synthetic long-range task, optionally with
  distractors far from the target), ``target_logits`` (read out at the target node),
  ``receptive_field`` / ``within_receptive_field`` (which nodes can reach t at all).
- ``claims.py``: ``locality_sparsity`` (LASER's lowest-mu choice against its random-in-orbit
  ablation on total effective resistance, plus the locality/sparsity trade-off against random,
  spectral-like and k-hop additions on trees, rings of cliques and grids) and
  ``long_range_task`` (accuracy and added edges per rho on the tree task with distractors).

What differs / is scaled down. The paper's benchmarks (LRGB Peptides / PCQM-Contact, TUDatasets)
download at run time and are out of reach: the claims use synthetic graph families, where the
answer is known, and a source-to-target tree task standing in for long-range molecular tasks.
FoSR and SDRF are not in PyG and their code may not be copied; the spectral arm is an exact
greedy minimiser of total effective resistance. The rewiring's departures from the released
code (edge orientation, exact tie-breaking, exact orbits) are listed in :mod:`.rewiring`.

Usage::

    from torch_geometric.loader import DataLoader
    from iclr24.papers.locality_rewiring import LaserTransform, SnapshotGNN
    graphs = [LaserTransform(max_distance=3, rho=0.1, seed=0)(g) for g in graphs]
    model = SnapshotGNN(in_dim, 64, num_classes, num_snapshots=3)
    logits = model(next(iter(DataLoader(graphs, batch_size=32))))
"""

from .baselines import greedy_resistance_rewiring, khop_rewiring, random_rewiring
from .diagnostics import (
    added_edge_distances,
    added_mask,
    edge_growth,
    resistance_drop,
    total_effective_resistance,
)
from .long_range import (
    make_long_range_trees,
    receptive_field,
    target_logits,
    within_receptive_field,
)
from .rewiring import LaserTransform, connectivity_measure, orbit_sizes
from .snapshot_gnn import SnapshotGNN

__all__ = [
    "LaserTransform",
    "SnapshotGNN",
    "added_edge_distances",
    "added_mask",
    "connectivity_measure",
    "edge_growth",
    "greedy_resistance_rewiring",
    "khop_rewiring",
    "make_long_range_trees",
    "orbit_sizes",
    "random_rewiring",
    "receptive_field",
    "resistance_drop",
    "target_logits",
    "total_effective_resistance",
    "within_receptive_field",
]
