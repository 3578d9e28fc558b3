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
- :mod:`.arms`: the five arms of the comparison, trained alike (:func:`run_arm`).
- :mod:`.synthetic_gad`: :func:`make_spectral_gad`, graphs whose classes differ only spectrally.
- ``claims.py``: ``spectral_anomalies`` (RQGNN vs GIN, GCN, a ChebNet ablation and logistic
  regression on r_G) and ``rayleigh_identity`` (message passing r_G = eigen-decomposition form).

What differs / is scaled down. The TUDataset benchmarks download at run time and are out of
reach; the claims use synthetic graphs where only the placement of node types differs between
classes (this makes the Rayleigh quotient informative by construction: the claims test the
implementation and the direction of the comparison, not the real-data margins). The Chebyshev
filters are trained (``nn.ModuleList``), unlike the official code's plain list; see
:mod:`.model` and :mod:`.gad_training` for the remaining differences.

Usage::

    from iclr24.papers.rqgnn import RQGNN, evaluate_gad, fit_gad, make_spectral_gad
    graphs = make_spectral_gad(2000, shuffle_frac=0.3, seed=0)
    model = RQGNN(in_dim=8)
    fit = fit_gad(model, train_graphs, val_graphs, epochs=100, seed=0)
    evaluate_gad(model, test_graphs, fit=fit)          # {"auc": ..., "macro_f1": ...}
"""

from .focal_loss import class_balanced_focal_loss, class_balanced_weights
from .gad_training import evaluate_gad, fit_gad
from .model import RQGNN
from .rayleigh import rayleigh_quotient
from .spectral_energy import dense_spectral_energy, edge_case_graphs
from .synthetic_gad import make_spectral_gad

__all__ = [
    "RQGNN",
    "class_balanced_focal_loss",
    "class_balanced_weights",
    "dense_spectral_energy",
    "edge_case_graphs",
    "evaluate_gad",
    "fit_gad",
    "make_spectral_gad",
    "rayleigh_quotient",
]
