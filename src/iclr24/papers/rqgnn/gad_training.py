"""Training and evaluation protocol of RQGNN ("Experimental Settings" of the paper; official
``main.py``), on top of the shared loop ``iclr24.kits.graphs.fit_graph_classifier``.

- Adam, lr 5e-3, weight decay 0, batch 512 graphs, 100 epochs (official defaults), the
  class-balanced focal loss with beta = 0.999, gamma = 1.5 and the training set's class counts.
- After every epoch the validation AUC and Macro-F1 are measured; two checkpoints are kept, the
  best-validation-AUC one and the best-validation-Macro-F1 one. The paper reports test AUC of
  the first and test Macro-F1 of the second (``evaluate_gad(..., fit=...)``).

Differences from the official loop: ties keep the earlier epoch (the code's ``<=`` keeps the
later one); there is no early stopping (the code stops after 50 epochs without a better
validation Macro-F1, which rarely triggers within its 100 epochs); data order comes from a
seeded ``torch.Generator``; a ``batch_size`` that would leave a last training batch of one graph
is refused for a model with BatchNorm (the code would crash inside BatchNorm1d).

Macro-F1 is that of the arg-max prediction, as in the official ``utils.compute_metrics`` (no
tuned threshold). Early in training it is low even when the AUC is not: after a dozen Adam steps
BatchNorm's running statistics (momentum 0.1) still hold ~30% of their initial (0, 1), and the
class-balanced weights (~1.8 anomalous vs ~0.2 normal at 10% anomalies) favour class 1, so the
eval-mode model may call every graph anomalous (Macro-F1 ~0.09); it recovers with training
(measured: 3 epochs of 4 batches, val F1 0.08; 15 epochs, 0.6).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .focal_loss import class_balanced_focal_loss

__all__ = ["evaluate_gad", "fit_gad"]


def _labels(graphs: Sequence[Any], name: str) -> torch.Tensor:
    if len(graphs) == 0:
        raise ValueError(f"{name} must hold at least one graph")
    try:
        return torch.cat([g.y.reshape(-1) for g in graphs]).long()
    except AttributeError:
        raise TypeError(f"every graph in {name} must be a PyG Data with a label y") from None


def fit_gad(model: torch.nn.Module, train: Sequence[Any], val: Sequence[Any], *,
            epochs: int = 100, seed: int, lr: float = 5e-3, weight_decay: float = 0.0,
            batch_size: int = 512, beta: float = 0.999, gamma: float = 1.5,
            progress: Callable[[float, str], None] | None = None):
    """Train a binary graph classifier (logits (B, 2); label 1 = anomalous) with the
    class-balanced focal loss, keeping the best-validation-AUC and best-Macro-F1 checkpoints.

    Returns the kit's ``FitResult``: ``best_states["auc"]``, ``best_states["macro_f1"]``, their
    epochs and validation values, the per-epoch history. ``model`` ends in the best-AUC state.
    """
    from iclr24.kits.graphs import fit_graph_classifier

    y = _labels(train, "train")
    _labels(val, "val")
    if int(y.min()) < 0 or int(y.max()) > 1:
        raise ValueError(f"labels must be 0 (normal) or 1 (anomalous); got range "
                         f"[{int(y.min())}, {int(y.max())}]")
    counts = torch.bincount(y, minlength=2)
    if bool((counts == 0).any()):
        raise ValueError(f"train needs graphs of both classes for the class-balanced loss; "
                         f"got counts (normal, anomalous) = {tuple(counts.tolist())}")
    if isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size > 0 \
            and len(train) % batch_size == 1 \
            and any(isinstance(m, torch.nn.BatchNorm1d) for m in model.modules()):
        raise ValueError(f"batch_size={batch_size} leaves a training batch of 1 graph "
                         f"({len(train)} train graphs), on which BatchNorm1d has no batch "
                         "statistics; choose a batch_size that does not divide len(train) - 1")
    loss_fn = functools.partial(class_balanced_focal_loss, class_counts=counts.tolist(),
                                beta=beta, gamma=gamma)
    return fit_graph_classifier(model, train, val, epochs=epochs, seed=seed, lr=lr,
                                weight_decay=weight_decay, batch_size=batch_size,
                                select_on=("auc", "macro_f1"), loss_fn=loss_fn,
                                progress=progress)


def evaluate_gad(model: torch.nn.Module, graphs: Sequence[Any], *, fit: Any = None,
                 batch_size: int = 512) -> dict[str, float]:
    """Test ``{"auc", "macro_f1"}``: AUC of the softmax probability of class 1, Macro-F1 of the
    arg-max. Without ``fit``, of ``model`` as it is; with the ``FitResult`` of :func:`fit_gad`,
    AUC from its best-AUC state and Macro-F1 from its best-Macro-F1 state (the paper's
    protocol); ``model`` is then left in the best-AUC state."""
    from iclr24.kits.graphs import evaluate_graph_classifier

    _labels(graphs, "graphs")
    if fit is None:
        out = evaluate_graph_classifier(model, graphs, batch_size=batch_size)
        return {"auc": out["auc"], "macro_f1": out["macro_f1"]}
    states = getattr(fit, "best_states", None)
    if not isinstance(states, dict) or not {"auc", "macro_f1"} <= set(states):
        raise ValueError("fit must be the FitResult of fit_gad (best_states for 'auc' and "
                         "'macro_f1')")
    model.load_state_dict(states["macro_f1"])
    f1 = evaluate_graph_classifier(model, graphs, batch_size=batch_size)["macro_f1"]
    model.load_state_dict(states["auc"])
    auc = evaluate_graph_classifier(model, graphs, batch_size=batch_size)["auc"]
    return {"auc": auc, "macro_f1": f1}
