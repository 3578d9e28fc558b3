"""The arms of the spectral-anomaly comparison (claim ``spectral_anomalies``), trained alike.

- ``rqgnn``: :class:`RQGNN` (RQL + CWGNN-RQ).
- ``gin``: 3 GIN layers, sum pooling; ``gcn``: 3 GCN layers, mean pooling; ``chebnet``: 3
  ChebConv layers (same K as RQGNN), mean pooling. All three are
  ``iclr24.kits.graphs.GraphClassifier``, the baseline arms shared by every graph paper here.
- ``rqgnn_norq``: the ablation, :class:`RQGNN` with the RQ mechanism switched off (no RQL branch,
  mean pooling instead of RQ-pooling): the same pre-MLP, parallel Chebyshev filters and head.
- ``rqgnn_permuted``: the null arm, :class:`RQGNN` trained, selected and tested on the same
  graphs with their node features permuted within each graph (:func:`permute_node_features`):
  every per-graph feature statistic is kept, the spectral placement is gone.
- ``logreg_rq``: scikit-learn logistic regression (balanced class weights) on the standardised
  r_G alone, the positive control that the Rayleigh quotient carries the class.

Every GNN arm is trained by :func:`fit_gad` with the same loss (class-balanced focal loss), data
order, optimiser, epochs, batch size and hidden width, from the same torch seed, and evaluated
with the paper's two-checkpoint protocol (test AUC at the best-val-AUC epoch, test Macro-F1 at
the best-val-F1 epoch). Giving the baselines RQGNN's imbalance-aware loss makes them stronger
than the paper's cross-entropy baselines, so the comparison isolates the architecture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .gad_training import evaluate_gad, fit_gad
from .model import RQGNN
from .rayleigh import rayleigh_quotient
from .synthetic_gad import make_spectral_energy_gad, permute_node_features

__all__ = ["ARMS", "GNN_BASELINES", "ArmConfig", "run_arm", "run_comparison"]

ARMS = ("rqgnn", "gin", "gcn", "chebnet", "rqgnn_norq", "rqgnn_permuted", "logreg_rq")
GNN_BASELINES = ("gin", "gcn", "chebnet")


@dataclass(frozen=True)
class ArmConfig:
    """Training settings shared by all arms (defaults: the official code's, except ``epochs``
    and ``batch_size``, scaled to ~2,000 graphs and a 2-core CPU: 20 epochs x 22 batches of 64
    is ~440 Adam steps, against the official 100 epochs x ~38 batches of 512 on MCF-7)."""

    hidden: int = 64
    width: int = 4
    cheb_k: int = 6
    dropout: float = 0.4
    epochs: int = 20
    batch_size: int = 64
    lr: float = 5e-3
    num_layers: int = 3


def _rq_features(graphs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    from torch_geometric.data import Batch

    b = Batch.from_data_list(list(graphs))
    r = rayleigh_quotient(b.x.float(), b.edge_index, b.batch, num_graphs=b.num_graphs)
    return r.numpy().astype(np.float64), b.y.reshape(-1).numpy()


def _logreg(train: Sequence[Any], test: Sequence[Any], seed: int) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_tr, y_tr = _rq_features(train)
    x_te, y_te = _rq_features(test)
    clf = make_pipeline(StandardScaler(),
                        LogisticRegression(class_weight="balanced", max_iter=1000,
                                           random_state=seed))
    clf.fit(x_tr, y_tr)
    return {"auc": float(roc_auc_score(y_te, clf.predict_proba(x_te)[:, 1])),
            "macro_f1": float(f1_score(y_te, clf.predict(x_te), average="macro",
                                       zero_division=0))}


def _build(arm: str, in_dim: int, config: ArmConfig) -> torch.nn.Module:
    from iclr24.kits.graphs import GraphClassifier

    if arm in ("rqgnn", "rqgnn_permuted"):
        return RQGNN(in_dim, config.hidden, config.width, config.cheb_k, config.dropout)
    if arm == "rqgnn_norq":
        return RQGNN(in_dim, config.hidden, config.width, config.cheb_k, config.dropout,
                     use_rql=False, pooling="mean")
    conv, pool = {"gin": ("gin", "sum"), "gcn": ("gcn", "mean"), "chebnet": ("cheb", "mean")}[arm]
    return GraphClassifier(conv, in_dim, config.hidden, 2, num_layers=config.num_layers,
                           pool=pool, cheb_k=config.cheb_k)


def run_arm(arm: str, train: Sequence[Any], val: Sequence[Any], test: Sequence[Any], *,
            config: ArmConfig, seed: int) -> dict[str, float]:
    """Train ``arm`` on ``train`` (checkpoints chosen on ``val``) and return its test
    ``{"auc", "macro_f1"}``. The torch seed is set to ``seed`` before the model is built; the
    ``rqgnn_permuted`` arm permutes the node features of all three sets (seeded by ``seed``)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}; got {arm!r}")
    if arm == "rqgnn_permuted":
        train, val, test = (permute_node_features(part, seed=seed + k)
                            for k, part in enumerate((train, val, test)))
    if arm == "logreg_rq":
        return _logreg(train, test, seed)
    torch.manual_seed(seed)
    model = _build(arm, int(train[0].x.shape[1]), config)
    fit = fit_gad(model, train, val, epochs=config.epochs, seed=seed, lr=config.lr,
                  batch_size=config.batch_size)
    return evaluate_gad(model, test, fit=fit)


def run_comparison(num_graphs: int, seed: int, config: ArmConfig) -> dict[str, dict[str, float]]:
    """Every arm on one ``make_spectral_energy_gad(num_graphs, seed=seed)`` dataset with one
    70/15/15 stratified split (seeded by ``seed``), single-threaded:
    ``{arm: {"auc", "macro_f1"}}``."""
    from iclr24.kits.graphs import stratified_split
    from iclr24.kits.threads import single_threaded

    with single_threaded():
        graphs = make_spectral_energy_gad(num_graphs, seed=seed)
        labels = np.array([int(g.y) for g in graphs])
        train, val, test = ([graphs[i] for i in idx] for idx in stratified_split(labels, seed=seed))
        return {arm: run_arm(arm, train, val, test, config=config, seed=seed) for arm in ARMS}
