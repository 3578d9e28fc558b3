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
  (``"official"`` balanced induced subgraphs or ``"full_graph"``), :func:`matching_link_prediction`,
  :func:`matching_oracle_auc` (the latent-community oracle on synthetic data, a positive control).
- :mod:`.released_files`: readers of the released text files (``twitter_matching.csv``,
  ``dune_wash_trade_tx.csv``; transfers, follows and X features as CSV exports of the DGL
  pickles' fields) and :func:`load_ex_graph`, which assembles them into the same schema.
- ``claims.py``: ``x_features_null_control`` (the X gain appears where the generator couples
  the two sides, and the uncoupled null arm's gain is shown equivalent to zero) and
  ``protocols_end_to_end`` (every listed baseline runs each protocol; the coupled matcher beats
  chance and the uncoupled null arm of the same seed).

What differs from the official code (see :mod:`.protocols`): the decoder is trained
(``train_decoder=False`` keeps the official untrained one), held-out edges and matches never
enter message passing or feature statistics, Cluster-GCN and HIN2Vec are not provided, and the
data are synthetic.

Usage (a few seconds on one core)::

    from iclr24.papers.ex_graph import make_ex_graph_synthetic, ethereum_link_prediction
    data = make_ex_graph_synthetic("smoke", coupling=0.5, seed=0)  # 2,000 addresses
    res = ethereum_link_prediction(data, model="gcn", use_x=True, runs=2, epochs=30)
    res.summary()["auc"]            # (mean, std) over runs

The paper's protocol on the ``"small"`` graph (20,000 addresses, 300k transfers, all ~250k
training pairs supervised, ``runs=5``, up to 200 epochs) costs about 1.6 s of CPU per epoch
single-threaded (measured on a 2-core machine), so up to ~27 min for 5 runs x 200 epochs (early
stopping may end runs sooner); pass ``max_train_pos`` and fewer ``epochs`` to scale it down, as
the claims do. Released files::

    from iclr24.papers.ex_graph import load_ex_graph
    data = load_ex_graph("transfers.csv", "twitter_matching.csv",
                         wash_trades_csv="dune_wash_trade_tx.csv")
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
    matching_oracle_auc,
    split_transfers,
    wash_trading_detection,
)
from .released_files import (
    Transfers,
    WashTrades,
    load_ex_graph,
    read_follows_csv,
    read_matching_csv,
    read_transfers_csv,
    read_wash_trades_csv,
    read_x_features_csv,
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
    "Transfers",
    "WashTrades",
    "build_matching_graph",
    "combined_features",
    "deepwalk_embeddings",
    "ethereum_features",
    "ethereum_link_prediction",
    "fit_link_predictor",
    "link_optimizer",
    "link_prediction_features",
    "load_ex_graph",
    "make_ex_graph_synthetic",
    "matching_link_prediction",
    "matching_oracle_auc",
    "message_graph",
    "read_follows_csv",
    "read_matching_csv",
    "read_transfers_csv",
    "read_wash_trades_csv",
    "read_x_features_csv",
    "spectral_embedding",
    "split_transfers",
    "uniform_random_walks",
    "wash_trading_detection",
]
