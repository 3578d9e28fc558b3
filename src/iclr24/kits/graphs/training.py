"""Graph-level training and evaluation: seeded order, stratified splits, checkpoint selection.

``fit_graph_classifier`` trains any module mapping a PyG ``Batch`` to logits (B, C) with Adam,
shuffles with its own ``torch.Generator`` (the same seed gives the same batches and the same
numbers), evaluates on the validation graphs after every epoch and keeps, for each metric in
``select_on``, the state with the best validation value (ties keep the earlier epoch). Custom
losses (``loss_fn``) and forward passes (``forward``, e.g. a subgraph bag built per batch) plug in.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

__all__ = [
    "FitResult",
    "classification_metrics",
    "evaluate_graph_classifier",
    "fit_graph_classifier",
    "stratified_split",
]

METRICS = ("accuracy", "macro_f1", "auc")
Forward = Callable[[torch.nn.Module, Any], torch.Tensor]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def stratified_split(labels: Any, fractions: Sequence[float] = (0.7, 0.15, 0.15), *,
                     seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split indices per class: each class is shuffled and cut by ``fractions`` (train, val, test).

    Cuts per class at floor(f_train n) and floor((f_train + f_val) n); a class with at least
    three members puts at least one member in each part whose fraction is positive.
    """
    y = np.asarray(labels.cpu() if hasattr(labels, "cpu") else labels).reshape(-1)
    if y.size == 0:
        raise ValueError("labels must be non-empty")
    fr = np.asarray(fractions, dtype=float)
    if fr.shape != (3,) or (fr < 0).any() or not math.isclose(fr.sum(), 1.0, abs_tol=1e-9):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1; "
                         f"got {tuple(fractions)}")
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[], [], []]
    for cls in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == cls))
        n = len(idx)
        cut_train = int(np.floor(fr[0] * n + 1e-9))  # cumulative cuts, as int(0.7 n), int(0.85 n)
        cut_val = int(np.floor((fr[0] + fr[1]) * n + 1e-9))
        if n >= 3:  # at least one member of the class in each part that has a positive fraction
            cut_val = min(max(cut_val, cut_train + (fr[1] > 0)), n - (fr[2] > 0))
            cut_train = min(cut_train, cut_val - (fr[1] > 0))
            cut_train = max(cut_train, 1 if fr[0] > 0 else 0)
        parts[0].append(idx[:cut_train])
        parts[1].append(idx[cut_train:cut_val])
        parts[2].append(idx[cut_val:])
    return tuple(np.sort(np.concatenate(p)).astype(np.int64) for p in parts)  # type: ignore


def classification_metrics(logits: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Accuracy, macro-F1 and AUC of logits (N, C) against labels (N,).

    Binary AUC uses the softmax probability of class 1; multiclass AUC is one-vs-rest macro over
    the classes present. AUC is nan when ``y`` holds a single class.
    """
    from sklearn.metrics import f1_score, roc_auc_score

    logits = torch.as_tensor(logits).detach().float().cpu()
    y = torch.as_tensor(y).detach().long().cpu().reshape(-1)
    if logits.dim() != 2 or logits.shape[0] != y.shape[0]:
        raise ValueError(f"logits must have shape (N, C) with N = len(y) = {len(y)}; "
                         f"got {tuple(logits.shape)}")
    if len(y) == 0:
        raise ValueError("cannot compute metrics on zero graphs")
    pred = logits.argmax(dim=1).numpy()
    yn = y.numpy()
    out = {"accuracy": float((pred == yn).mean()),
           "macro_f1": float(f1_score(yn, pred, average="macro", zero_division=0))}
    prob = torch.softmax(logits, dim=1).numpy()
    present = np.unique(yn)
    if len(present) < 2:
        out["auc"] = float("nan")
    elif logits.shape[1] == 2:
        out["auc"] = float(roc_auc_score(yn, prob[:, 1]))
    else:
        aucs = [roc_auc_score(yn == c, prob[:, c]) for c in present]
        out["auc"] = float(np.mean(aucs))
    return out


@dataclass
class FitResult:
    """What ``fit_graph_classifier`` found: best states and values per selection metric."""

    best_states: dict[str, dict[str, torch.Tensor]]
    best_epochs: dict[str, int]
    best_values: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds_per_batch: float = float("nan")


def _loader(graphs: Sequence[Any], batch_size: int, shuffle: bool,
            generator: torch.Generator | None):
    from torch_geometric.loader import DataLoader

    return DataLoader(list(graphs), batch_size=batch_size, shuffle=shuffle, generator=generator)


@torch.no_grad()
def _predict(model: torch.nn.Module, graphs: Sequence[Any], batch_size: int,
             forward: Forward | None) -> tuple[torch.Tensor, torch.Tensor]:
    was_training = model.training
    model.eval()
    logits, ys = [], []
    for batch in _loader(graphs, batch_size, False, None):
        logits.append(forward(model, batch) if forward is not None else model(batch))
        ys.append(batch.y.reshape(-1))
    model.train(was_training)
    return torch.cat(logits), torch.cat(ys)


def evaluate_graph_classifier(model: torch.nn.Module, graphs: Sequence[Any], *,
                              batch_size: int = 256,
                              forward: Forward | None = None) -> dict[str, float]:
    """``classification_metrics`` of ``model`` (eval mode) on ``graphs`` (Data with ``y``)."""
    if len(graphs) == 0:
        raise ValueError("graphs must be non-empty")
    logits, y = _predict(model, graphs, batch_size, forward)
    return classification_metrics(logits, y)


def fit_graph_classifier(model: torch.nn.Module, train: Sequence[Any], val: Sequence[Any], *,
                         epochs: int, seed: int, lr: float = 1e-3, weight_decay: float = 0.0,
                         batch_size: int = 32, select_on: Sequence[str] = ("accuracy",),
                         loss_fn: LossFn | None = None, forward: Forward | None = None,
                         progress: Callable[[float, str], None] | None = None) -> FitResult:
    """Train ``model`` on ``train`` with Adam, selecting checkpoints on ``val``.

    Returns a ``FitResult``; on return ``model`` holds the best state for ``select_on[0]``.
    Parameters are initialised by the caller (seed torch before building the model).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int; got {epochs!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int; got {batch_size!r}")
    if not (lr > 0):
        raise ValueError(f"lr must be > 0; got {lr!r}")
    if len(train) == 0 or len(val) == 0:
        raise ValueError(f"train and val must be non-empty; got {len(train)} and {len(val)} graphs")
    select = tuple([select_on] if isinstance(select_on, str) else select_on)
    if not select or any(m not in METRICS for m in select):
        raise ValueError(f"select_on must name metrics among {METRICS}; got {select_on!r}")
    loss_fn = loss_fn or torch.nn.functional.cross_entropy
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best_values = {m: -math.inf for m in select}
    best_states: dict[str, dict[str, torch.Tensor]] = {}
    best_epochs: dict[str, int] = {}
    history: list[dict[str, float]] = []
    step_seconds, steps = 0.0, 0
    for epoch in range(epochs):
        model.train()
        total, count = 0.0, 0
        for batch in _loader(train, batch_size, True, gen):
            start = time.perf_counter()
            opt.zero_grad()
            logits = forward(model, batch) if forward is not None else model(batch)
            loss = loss_fn(logits, batch.y.reshape(-1))
            loss.backward()
            opt.step()
            step_seconds += time.perf_counter() - start
            steps += 1
            total += float(loss.detach()) * batch.num_graphs
            count += batch.num_graphs
        val_metrics = evaluate_graph_classifier(model, val, forward=forward)
        history.append({"epoch": epoch, "loss": total / count,
                        **{f"val_{k}": v for k, v in val_metrics.items()}})
        for m in select:
            value = val_metrics[m]
            if not math.isnan(value) and value > best_values[m] or m not in best_states:
                best_values[m] = value
                best_epochs[m] = epoch
                best_states[m] = copy.deepcopy(model.state_dict())
        if progress is not None:
            progress((epoch + 1) / epochs, f"epoch {epoch + 1}/{epochs}")
    model.load_state_dict(best_states[select[0]])
    return FitResult(best_states=best_states, best_epochs=best_epochs, best_values=best_values,
                     history=history, seconds_per_batch=step_seconds / max(steps, 1))
