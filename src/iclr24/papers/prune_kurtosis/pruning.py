"""Global unstructured pruning with torch's utilities, the random baseline, and the one-epoch
fine-tune of the recipe (official demo: SGD lr 1e-3, momentum 0.9, batch 256, CE).

``global_magnitude_prune`` is ``torch.nn.utils.prune.global_unstructured`` with
``L1Unstructured`` over every tensor named in ``include``; with ``keep_masks=True`` the masks stay
(forward pre-hooks recompute ``weight = weight_orig * mask``), so fine-tuning cannot revive a
pruned weight; ``keep_masks=False`` calls ``prune.remove`` to make zeros permanent.
``random_global_prune`` zeroes round(p n) entries chosen uniformly at random from a seeded
generator (torch's own ``RandomUnstructured`` draws from the global RNG, so it is not used).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils import prune

from .cosine import cosine_similarity, flatten_params, prunable_tensors, prune_count

__all__ = [
    "PruneReport",
    "allowed_amount",
    "evaluate_classifier",
    "global_magnitude_prune",
    "make_pruning_permanent",
    "prune_and_finetune",
    "random_global_prune",
]


def _check_amount(amount: float) -> float:
    if isinstance(amount, bool) or not isinstance(amount, (int, float, np.floating)) \
            or not 0 <= float(amount) <= 1:
        raise ValueError(f"prune amount must be a number in [0, 1], got {amount!r}")
    return float(amount)


def make_pruning_permanent(model: nn.Module) -> nn.Module:
    """``prune.remove`` on every pruned tensor: zeros become plain parameter values."""
    for module in model.modules():
        for name in [k[: -len("_orig")] for k in module._parameters if k.endswith("_orig")]:
            prune.remove(module, name)
    return model


def global_magnitude_prune(model: nn.Module, amount: float, keep_masks: bool = True,
                           include: Sequence[str] = ("weight", "bias")) -> nn.Module:
    """Zero the round(amount n) smallest-magnitude entries over all tensors in ``include``
    (in place). Returns the model."""
    amount = _check_amount(amount)
    params = prunable_tensors(model, include)
    prune.global_unstructured(params, pruning_method=prune.L1Unstructured, amount=amount)
    return model if keep_masks else make_pruning_permanent(model)


def random_global_prune(model: nn.Module, amount: float, rng: np.random.Generator,
                        keep_masks: bool = True, include: Sequence[str] = ("weight", "bias")
                        ) -> nn.Module:
    """Zero round(amount n) entries chosen uniformly at random over all tensors in ``include``
    (in place, via ``prune.custom_from_mask``). Returns the model."""
    amount = _check_amount(amount)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    params = prunable_tensors(model, include)
    sizes = [getattr(m, n).numel() for m, n in params]
    n = int(sum(sizes))
    drop = np.zeros(n, dtype=bool)
    drop[rng.choice(n, prune_count(amount, n), replace=False)] = True
    start = 0
    for (m, name), size in zip(params, sizes):
        t = getattr(m, name)
        mask = torch.as_tensor(~drop[start:start + size]).reshape(t.shape).to(t.device, t.dtype)
        prune.custom_from_mask(m, name, mask)
        start += size
    return model if keep_masks else make_pruning_permanent(model)


def evaluate_classifier(model: nn.Module, X: torch.Tensor, y: torch.Tensor
                        ) -> tuple[float, float]:
    """(accuracy, mean cross-entropy) of ``model`` on (X, y)."""
    model.eval()
    with torch.no_grad():
        logits = model(X)
        return (float((logits.argmax(1) == y).float().mean()),
                float(nn.functional.cross_entropy(logits, y)))


@dataclass(frozen=True)
class PruneReport:
    """Accuracy and loss of the parent, right after pruning, and after fine-tuning; the cosine
    similarity of the pruned parameters to the parent's and the achieved sparsity."""

    amount: float
    method: str
    cosine: float
    sparsity: float
    acc_parent: float
    loss_parent: float
    acc_pruned: float
    loss_pruned: float
    acc_finetuned: float
    loss_finetuned: float


def prune_and_finetune(model: nn.Module, amount: float, X_train: torch.Tensor,
                       y_train: torch.Tensor, X_test: torch.Tensor, y_test: torch.Tensor, *,
                       method: str = "l1", epochs: int = 1, lr: float = 1e-3,
                       momentum: float = 0.9, batch_size: int = 256,
                       rng: np.random.Generator | None = None,
                       include: Sequence[str] = ("weight", "bias")) -> PruneReport:
    """Prune ``model`` in place (``method="l1"`` global magnitude, ``"random"`` random global)
    with masks kept, fine-tune ``epochs`` epochs with SGD (lr, momentum; CE; shuffled batches
    from ``rng``), and report. The masks stay on the model (pruned weights remain zero)."""
    if method not in ("l1", "random"):
        raise ValueError(f"method must be 'l1' or 'random', got {method!r}")
    if method == "random" and rng is None:
        raise ValueError("method='random' needs rng")
    rng = rng if rng is not None else np.random.default_rng(0)
    acc0, loss0 = evaluate_classifier(model, X_test, y_test)
    parent = flatten_params(model, include).double().numpy()
    if method == "l1":
        global_magnitude_prune(model, amount, include=include)
    else:
        random_global_prune(model, amount, rng, include=include)
    theta = flatten_params(model, include).double().numpy()
    acc1, loss1 = evaluate_classifier(model, X_test, y_test)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    n = X_train.shape[0]
    for _ in range(epochs):
        model.train()
        order = torch.as_tensor(rng.permutation(n))
        for start in range(0, n, batch_size):
            rows = order[start:start + batch_size]
            opt.zero_grad()
            nn.functional.cross_entropy(model(X_train[rows]), y_train[rows]).backward()
            opt.step()
    acc2, loss2 = evaluate_classifier(model, X_test, y_test)
    return PruneReport(float(amount), method, cosine_similarity(parent, theta),
                       float(np.mean(theta == 0)), acc0, loss0, acc1, loss1, acc2, loss2)


def allowed_amount(amounts: Sequence[float], accuracies: Sequence[float], acc_parent: float,
                   tolerance: float) -> float:
    """The most an accuracy curve allows: the largest amount a of the (ascending) grid such that
    every grid amount <= a keeps ``acc_parent - accuracy <= tolerance``; 0.0 when the smallest
    amount already loses more. ``accuracies[i]`` is the (fine-tuned) accuracy at ``amounts[i]``.
    """
    a = np.asarray(amounts, dtype=np.float64)
    acc = np.asarray(accuracies, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or a.shape != acc.shape:
        raise ValueError(f"amounts and accuracies must be 1-D of one length, got shapes "
                         f"{a.shape} and {acc.shape}")
    if np.any(np.diff(a) <= 0):
        raise ValueError("amounts must be strictly ascending")
    if not (np.all(np.isfinite(acc)) and np.isfinite(acc_parent) and tolerance >= 0):
        raise ValueError("accuracies and acc_parent must be finite and tolerance >= 0")
    lost = np.flatnonzero(acc_parent - acc > tolerance)
    if lost.size == 0:
        return float(a[-1])
    return float(a[lost[0] - 1]) if lost[0] > 0 else 0.0
