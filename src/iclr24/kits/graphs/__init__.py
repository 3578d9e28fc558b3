"""Graph kit: synthetic graph families, dense graph quantities, baseline GNNs, the graph-level
training loop and link-prediction negatives/metrics.

Shared by the graph papers (policy_learn, rqgnn, locality_rewiring, pres, ex_graph):

- ``families.py``: CSL circulants (standard non-isomorphic skips only), random trees,
  Barabási–Albert, random geometric graphs, rings of cliques and grids, each with a seeded node
  relabelling; ``to_pyg`` converts to an undirected PyG ``Data``.
- ``dense.py``: normalised Laplacian, hop distances by boolean powers, total effective
  resistance, with a size guard (``DENSE_NODE_LIMIT``).
- ``models.py``: ``GraphClassifier`` (GIN, GCN or ChebNet from PyG layers, sum/mean pooling),
  so every paper's baseline arms are the same modules.
- ``training.py``: ``stratified_split``, ``fit_graph_classifier`` (seeded order, best
  validation checkpoint per metric, time per batch), ``evaluate_graph_classifier``,
  ``classification_metrics`` (accuracy / macro-F1 / AUC).
- ``link_prediction.py``: ``sample_negative_edges`` (excludes existing edges, respects
  direction, seeded), ``link_metrics`` (AP, AUC, F1, precision, recall), ``mean_std``.

Knowledge-graph pieces (triples, filtered ranking) stay in ``iclr24.kits.knowledge_graphs``.
torch_geometric is imported inside the functions that need it.
"""

from .dense import (
    DENSE_NODE_LIMIT,
    dense_adjacency,
    normalized_laplacian,
    shortest_path_distances,
    total_effective_resistance,
)
from .families import (
    CSL_SKIPS,
    barabasi_albert,
    csl_graph,
    grid,
    random_geometric,
    random_tree,
    relabel,
    ring_of_cliques,
    to_pyg,
)
from .link_prediction import link_metrics, mean_std, sample_negative_edges
from .models import GraphClassifier, pool_graphs
from .training import (
    FitResult,
    classification_metrics,
    evaluate_graph_classifier,
    fit_graph_classifier,
    stratified_split,
)

__all__ = [
    "CSL_SKIPS",
    "DENSE_NODE_LIMIT",
    "FitResult",
    "GraphClassifier",
    "barabasi_albert",
    "classification_metrics",
    "csl_graph",
    "dense_adjacency",
    "evaluate_graph_classifier",
    "fit_graph_classifier",
    "grid",
    "link_metrics",
    "mean_std",
    "normalized_laplacian",
    "pool_graphs",
    "random_geometric",
    "random_tree",
    "relabel",
    "ring_of_cliques",
    "sample_negative_edges",
    "shortest_path_distances",
    "stratified_split",
    "to_pyg",
    "total_effective_resistance",
]
