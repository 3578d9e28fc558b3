"""Policy-Learn: "Efficient Subgraph GNNs by Learning Effective Selection Policies" (Bevilacqua,
Eliasof, Meirom, Ribeiro & Maron, ICLR 2024; arXiv 2310.20082; official code
beabevi/policy-learn).

Subgraph GNNs run a GNN on a bag of subgraphs of each graph (here: node-marked copies, one per
root node) and are more expressive than 1-WL message passing, at the cost of n subgraphs per
graph. Policy-Learn keeps only T of them and learns which: a selection DS-GNN picks one root at
a time conditioned on the bag so far, a prediction DS-GNN solves the task on the bag, and both
train end to end through a straight-through Gumbel-softmax written into the marking channel.

How the code maps to the paper:

- :mod:`.bags`: :func:`node_marked_bag` builds B_T = {G, S_{v_1}, ..., S_{v_T}} with
  S_v = (A, [X ‖ e_v]) for integer roots or soft (straight-through) marking vectors;
- :mod:`.networks`: :class:`DSGNN`, the DS-GNN of both networks (PyG ``GINConv``/``GINEConv``,
  PyG pooling): per-subgraph node states, subgraph readout, mean over subgraphs, MLP head;
- :mod:`.selection`: :func:`straight_through_gumbel` (mask, then Gumbel noise, hard one-hot
  with the soft gradient; no noise at evaluation), :class:`PolicyLearn` (Alg. 1),
  :class:`RandomPolicy` (uniform T roots, ESAN's random policy) and :class:`FullBag` (all n);
- :mod:`.csl_union`: :func:`make_csl_union_dataset`, the paper's motivating family of
  1-WL-indistinguishable graphs (disjoint unions of CSL graphs, Sec. 3);
- :mod:`.csl_experiment`: the experiment of the claims (GIN, random selection, the
  one-mark-per-component :class:`ComponentOracle` as positive control, Policy-Learn; the full
  bag on request) and :func:`time_forward`.

Out of reach here: ZINC-12k, OGB (molhiv, moltox21, molbace, molesol), Alchemy and REDDIT-BINARY
all download at run time, and OSAN / MAG-GNN are not reimplemented. The claims run on the
CSL-union family, where the efficient policy (one mark per component) is known, so they test the
mechanism the paper's Theorems 1-2 and Prop. 1 describe rather than the benchmark numbers.

Usage::

    from torch_geometric.loader import DataLoader
    graphs = make_csl_union_dataset(200, seed=0)
    model = PolicyLearn(DSGNN(1, 32, 6, track_running_stats=False),
                        DSGNN(1, 32, 4, out_dim=10, readout="sum"), T=2, tau=1.0)
    logits, selected = model(next(iter(DataLoader(graphs, batch_size=32))))
"""

from .bags import graph_sizes, node_marked_bag
from .csl_experiment import (
    ARMS,
    ComponentOracle,
    CSLSelectionConfig,
    build_arm,
    distinct_component_fraction,
    run_csl_selection,
    time_forward,
)
from .csl_union import (
    component_labels,
    csl_union_graph,
    make_csl_union_dataset,
    multiset_classes,
)
from .networks import DSGNN
from .selection import FullBag, PolicyLearn, RandomPolicy, straight_through_gumbel

__all__ = [
    "ARMS",
    "DSGNN",
    "CSLSelectionConfig",
    "ComponentOracle",
    "FullBag",
    "PolicyLearn",
    "RandomPolicy",
    "build_arm",
    "component_labels",
    "csl_union_graph",
    "distinct_component_fraction",
    "graph_sizes",
    "make_csl_union_dataset",
    "multiset_classes",
    "node_marked_bag",
    "run_csl_selection",
    "straight_through_gumbel",
    "time_forward",
]
