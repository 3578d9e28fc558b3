"""EX-Graph: A Pioneering Dataset Bridging Ethereum and X (Q. Wang, Z. Zhang, Z. Liu, S. Lu,
B. Luo, B. He; ICLR 2024; arXiv 2310.01015; official code Persdre/EX-Graph).

What the paper is. A dataset paper: an Ethereum transaction graph, an X (Twitter) follow graph,
30,667 verified address-account links from OpenSea profiles and Dune wash-trading labels, with
three benchmark tasks run by off-the-shelf GNNs with and without X-derived features, to show that
off-chain social data helps on-chain analysis (up to ~8% AUC in link prediction, up to ~18%
recall in wash-trading detection; matching leaderboard led by DAGNN at AUC 0.74).

What is out of reach here. The real data (Google-Drive DGL/pickle files; 2.6M addresses, 29.6M
transfers) cannot be downloaded at run time, so the paper's and the leaderboard's numbers cannot
be approached. The package gives the tasks as software that runs on any ``HeteroData`` in the
released schema, and a faithful synthetic stand-in on which the protocols and a null control are
checked.

How the code maps to it.
- :mod:`.synthetic`: :func:`make_ex_graph_synthetic` (schema, ratios, the ``coupling`` and
  ``wash_shift`` knobs), :func:`ethereum_features` (the 8 per-address statistics),
  :func:`combined_features` (24-d + has-X bit), :func:`spectral_embedding`.
- :mod:`.models`: the baselines from PyG layers (:class:`GraphEncoder`: GCN, GAT, GATv2,
  GraphSAGE, TAGCN, APPNP, DAGNN, GGNN; :class:`RGCNEncoder`), :class:`DAGNN` with its
  :class:`DAGNNPropagation` (a PyG ``MessagePassing``), :class:`EdgeDecoder`.
- :mod:`.deepwalk`: DeepWalk (PyG's Node2Vec walker needs pyg-lib/torch-cluster, absent here).
- :mod:`.protocols`: :func:`ethereum_link_prediction`, :func:`wash_trading_detection`
  (``"official"`` balanced induced subgraphs or ``"full_graph"``), :func:`matching_link_prediction`.
- ``claims.py``: ``x_features_null_control`` (the X gain appears only when the generator couples
  the two sides) and ``protocols_end_to_end`` (every listed baseline runs each protocol; matching
  AUC > 0.5 when coupled).

What differs from the official code (see :mod:`.protocols`): the decoder is trained
(``train_decoder=False`` keeps the official untrained one), held-out edges and matches never
enter message passing or feature statistics, Cluster-GCN and HIN2Vec are not provided, and the
data are synthetic.

Usage::

    from iclr24.papers.ex_graph import make_ex_graph_synthetic, ethereum_link_prediction
    data = make_ex_graph_synthetic("small", coupling=0.5, seed=0)
    res = ethereum_link_prediction(data, model="gcn", use_x=True, runs=5)
    res.summary()["auc"]            # (mean, std) over runs
"""

from .deepwalk import deepwalk_embeddings, uniform_random_walks
from .models import (
    DAGNN,
    ENCODERS,
    DAGNNPropagation,
    EdgeDecoder,
    GraphEncoder,
    RGCNEncoder,
    message_graph,
)
from .protocols import (
    LINK_MODELS,
    MATCHING_MODELS,
    BenchmarkResult,
    LinkSplit,
    MatchingGraph,
    build_matching_graph,
    ethereum_link_prediction,
    fit_link_predictor,
    link_optimizer,
    link_prediction_features,
    matching_link_prediction,
    split_transfers,
    wash_trading_detection,
)
from .synthetic import (
    ETH_FEATURES,
    ExGraphConfig,
    combined_features,
    ethereum_features,
    make_ex_graph_synthetic,
    spectral_embedding,
)

__all__ = [
    "DAGNN",
    "ENCODERS",
    "ETH_FEATURES",
    "LINK_MODELS",
    "MATCHING_MODELS",
    "BenchmarkResult",
    "DAGNNPropagation",
    "EdgeDecoder",
    "ExGraphConfig",
    "GraphEncoder",
    "LinkSplit",
    "MatchingGraph",
    "RGCNEncoder",
    "build_matching_graph",
    "combined_features",
    "deepwalk_embeddings",
    "ethereum_features",
    "ethereum_link_prediction",
    "fit_link_predictor",
    "link_optimizer",
    "link_prediction_features",
    "make_ex_graph_synthetic",
    "matching_link_prediction",
    "message_graph",
    "spectral_embedding",
    "split_transfers",
    "uniform_random_walks",
    "wash_trading_detection",
]
