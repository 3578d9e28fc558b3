"""RQGNN: Rayleigh Quotient Graph Neural Networks for Graph-level Anomaly Detection (X. Dong,
X. Zhang, S. Wang; ICLR 2024; arXiv 2310.02861; official code xydong127/RQGNN).

What the paper does. Graph-level anomaly detection is supervised, heavily imbalanced binary
classification of whole graphs (anomalous = label 1, the minority). The paper observes that
anomalous and normal graphs differ in the accumulated spectral energy of their node signals,
which equals the Rayleigh quotient x^T L x / x^T x of the normalised Laplacian. RQGNN joins an
explicit Rayleigh-quotient branch (RQL) with a Chebyshev-wavelet GNN whose pooling is steered by
the Rayleigh quotient (CWGNN-RQ), trained with a class-balanced focal loss; on ten TU anticancer
screens it beats the best competitor by 6.74% Macro-F1 and 1.44% AUC on average.

How the code maps to it.
- :mod:`.rayleigh`: :func:`rayleigh_quotient`, r_G per graph and channel by message passing
  (paper normalisation by default, the official code's unnormalised x^T L x as an option).
- :mod:`.model`: :class:`RQGNN` (RQL + CWGNN-RQ + BatchNorm/Dropout head), with ablation switches.
- :mod:`.focal_loss`: :func:`class_balanced_focal_loss` and its weights.
- :mod:`.gad_training`: :func:`fit_gad` (best-AUC and best-Macro-F1 checkpoints, via the shared
  ``iclr24.kits.graphs`` loop) and :func:`evaluate_gad`.
- :mod:`.spectral_energy`: dense eigh references (:func:`dense_spectral_energy`) and edge-case
  graphs (:func:`edge_case_graphs`) for the identity check.
- :mod:`.arms`: the seven arms of the comparison, trained alike (:func:`run_arm`).
- :mod:`.synthetic_gad`: :func:`make_spectral_energy_gad` (the comparison's test bed: classes
  differ only in the accumulated spectral energy of real-valued channels),
  :func:`make_spectral_gad` (one-hot types placed smoothly or shuffled) and
  :func:`permute_node_features` (the null: features detached from the structure).
- ``claims.py``: ``spectral_anomalies`` (RQGNN vs GIN, GCN and ChebNet, with RQGNN on permuted
  features as the null arm, logistic regression on r_G as the positive control, RQGNN without
  its RQ mechanism as the ablation) and ``rayleigh_identity`` (message passing r_G =
  eigen-decomposition form, node-permuted features as the null arm).

What differs / is scaled down. The TUDataset benchmarks download at run time and are out of
reach; the claims use synthetic graphs where only the spectral energy of the node signals
differs between classes (this makes the Rayleigh quotient informative by construction: the
claims test the implementation and the direction of the comparison, not the real-data margins). The Chebyshev
filters are trained (``nn.ModuleList``), unlike the official code's plain list; see
:mod:`.model` and :mod:`.gad_training` for the remaining differences.

Usage (a few seconds on a CPU; the paper's setting is ~2,000+ graphs and ``epochs=100``)::

    import torch
    from iclr24.kits.graphs import stratified_split
    from iclr24.papers.rqgnn import RQGNN, evaluate_gad, fit_gad, make_spectral_energy_gad

    graphs = make_spectral_energy_gad(300, seed=0)     # 4 channels, 10% anomalous
    labels = [int(g.y) for g in graphs]
    train, val, test = ([graphs[i] for i in idx] for idx in stratified_split(labels, seed=0))
    torch.manual_seed(0)
    model = RQGNN(in_dim=4, hidden=16, cheb_k=3)
    fit = fit_gad(model, train, val, epochs=5, seed=0, batch_size=64)
    scores = evaluate_gad(model, test, fit=fit)        # {"auc": ..., "macro_f1": ...}
"""

from .focal_loss import class_balanced_focal_loss, class_balanced_weights
from .gad_training import evaluate_gad, fit_gad
from .model import RQGNN
from .rayleigh import rayleigh_quotient
from .spectral_energy import dense_spectral_energy, edge_case_graphs
from .synthetic_gad import make_spectral_energy_gad, make_spectral_gad, permute_node_features

__all__ = [
    "RQGNN",
    "class_balanced_focal_loss",
    "class_balanced_weights",
    "dense_spectral_energy",
    "edge_case_graphs",
    "evaluate_gad",
    "fit_gad",
    "make_spectral_energy_gad",
    "make_spectral_gad",
    "permute_node_features",
    "rayleigh_quotient",
]
