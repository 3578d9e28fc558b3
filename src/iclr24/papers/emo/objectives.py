"""Sequence-level training objectives: MLE, EMO (DEMD + MLE with a dynamic weight), MixCE, TaiLr.

All losses share one signature, ``loss(logits, labels, ...) -> Tensor``, follow the
Hugging Face convention of the official code (DRSY/EMO, ``language_modeling/gpt2.py``) and
average over non-ignored tokens:

* ``logits``: (B, T, V) (or (N, V) with ``shift=False``); ``labels``: (B, T) (or (N,));
* ``shift=True``: ``logits[:, :-1]`` predict ``labels[:, 1:]``;
* labels equal to ``ignore_index`` (−100) are replaced by 0 for the one-hot lookup and removed
  by the mask.

Per-token terms (NLL_t = −log q_t(y_t), DEMD_t from :func:`~.demd.demd`, sg = stop-gradient):

* MLE:    ``ℓ_t = NLL_t``
* EMO, mode 1 (default): the GPT-2 language-modelling code (``language_modeling/gpt2.py``),
  which the paper's language-modelling results come from:
  ``ℓ_t = ½ (NLL_t + sg(NLL_t / (DEMD_t + 1e-10)) · DEMD_t)``
* EMO, mode 2 (Llama-2 code, ``EMOLoss(mode=2)``):
  ``ℓ_t = sg(DEMD_t / (NLL_t + 1e-10)) · NLL_t + DEMD_t``
  Both give each token the gradient direction ∇NLL + (NLL/DEMD)·∇DEMD: the DEMD term is
  rescaled to the size of the NLL term, token by token. The official LLaMA-1 scripts are not
  this formula in every version: some cap the mode-1 weight at 3 and subtract sg(q_y) inside
  the transport term (as does a stored version of the PyPI ``emoloss`` package).
  ``max_weight=3.0`` reproduces the cap only; the sg(q_y) variant is not implemented.
* MixCE (Zhang et al., ACL 2023) as the official code has it:
  ``ℓ_t = η NLL_t + (1 − η) sg(q_y) NLL_t``
* TaiLr / TVD (Ji et al., ICLR 2023) as the official code has it (γ = η):
  ``ℓ_t = η NLL_t + (1 − η) clamp(q_y / ((1 − γ) + γ q_y), 0.2, 1) NLL_t`` (weight detached)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .demd import _check_embedding, cosine_cost_embedding, demd

__all__ = [
    "OBJECTIVES",
    "EMOLoss",
    "emo_dynamic_weight",
    "emo_loss",
    "emo_token_loss",
    "make_objective",
    "mixce_loss",
    "mle_loss",
    "tailr_loss",
    "token_nll",
]

_EPS = 1e-10  # the official code's guard in the dynamic weight
Reduction = Literal["mean", "sum", "none"]


def _flatten(logits: Tensor, labels: Tensor, ignore_index: int, shift: bool
             ) -> tuple[Tensor, Tensor, Tensor, tuple[int, ...]]:
    """Validate and flatten -> (logits (N, V), safe labels (N,), mask (N,), label shape)."""
    if not isinstance(logits, Tensor) or not logits.dtype.is_floating_point:
        raise TypeError("logits must be a floating-point torch.Tensor of shape (B, T, V)")
    if not isinstance(labels, Tensor) or labels.dtype.is_floating_point \
            or labels.dtype == torch.bool:
        raise TypeError("labels must be an integer torch.Tensor of shape (B, T)")
    if not isinstance(shift, bool):
        raise TypeError(f"shift must be a bool, got {shift!r}")
    if logits.dim() < 2:
        raise ValueError(f"logits must have shape (B, T, V) or (N, V), got {tuple(logits.shape)}")
    if labels.shape != logits.shape[:-1]:
        raise ValueError(f"labels must have shape {tuple(logits.shape[:-1])} to match logits "
                         f"{tuple(logits.shape)}, got {tuple(labels.shape)}")
    if shift:
        if logits.dim() != 3:
            raise ValueError("shift=True needs logits of shape (B, T, V) and labels (B, T)")
        logits, labels = logits[:, :-1], labels[:, 1:]
    vocab = logits.shape[-1]
    mask = labels != ignore_index
    kept = labels[mask]
    if kept.numel() and (int(kept.min()) < 0 or int(kept.max()) >= vocab):
        raise ValueError(f"labels must lie in [0, {vocab}) or equal ignore_index="
                         f"{ignore_index}; got range [{int(kept.min())}, {int(kept.max())}]")
    safe = torch.where(mask, labels, torch.zeros_like(labels))  # −100 -> 0 for the lookup
    shape = tuple(labels.shape)
    return logits.reshape(-1, vocab), safe.reshape(-1).long(), mask.reshape(-1), shape


def _reduce(per_token: Tensor, mask: Tensor, shape: tuple[int, ...], reduction: str) -> Tensor:
    per_token = per_token * mask.to(per_token.dtype)
    if reduction == "mean":
        # average over non-padding tokens (0 when every label is ignored, as the official code)
        return per_token.sum() / mask.sum().clamp(min=1).to(per_token.dtype)
    if reduction == "sum":
        return per_token.sum()
    if reduction == "none":
        return per_token.reshape(shape)
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _check_mixing_ratio(mixing_ratio: float) -> float:
    if not isinstance(mixing_ratio, (int, float)) or not 0.0 <= float(mixing_ratio) <= 1.0:
        raise ValueError(f"mixing_ratio must be a number in [0, 1], got {mixing_ratio!r}")
    return float(mixing_ratio)


def token_nll(logits: Tensor, target: Tensor) -> Tensor:
    """Per-token negative log-likelihood. logits: (N, V), target: (N,) -> (N,)."""
    return F.cross_entropy(logits, target, reduction="none")


def _check_max_weight(max_weight: float | None) -> None:
    if max_weight is not None and not (isinstance(max_weight, (int, float)) and max_weight > 0):
        raise ValueError(f"max_weight must be None or a positive number, got {max_weight!r}")


def emo_dynamic_weight(nll: Tensor, demd_value: Tensor, mode: int = 1,
                       max_weight: float | None = None) -> Tensor:
    """The per-token, stop-gradient weight that puts DEMD and NLL on the same scale.

    mode 1: ``sg(NLL / (DEMD + 1e-10))`` multiplies DEMD; mode 2: ``sg(DEMD / (NLL + 1e-10))``
    multiplies NLL. ``max_weight`` optionally caps the weight. nll, demd_value: (N,) -> (N,)
    (detached).
    """
    _check_max_weight(max_weight)
    if mode == 1:
        weight = (nll / (demd_value + _EPS)).detach()
    elif mode == 2:
        weight = (demd_value / (nll + _EPS)).detach()
    else:
        raise ValueError(f"mode must be 1 or 2, got {mode!r}")
    return weight if max_weight is None else weight.clamp(max=float(max_weight))


def emo_token_loss(logits: Tensor, target: Tensor, cost_embedding: Tensor, mode: int = 1,
                   max_weight: float | None = None) -> Tensor:
    """Per-token EMO objective. logits: (N, V), target: (N,), cost_embedding: (V, d) -> (N,)."""
    if mode not in (1, 2):
        raise ValueError(f"mode must be 1 or 2, got {mode!r}")
    nll = token_nll(logits, target)
    dist = demd(logits, target, cost_embedding)
    weight = emo_dynamic_weight(nll, dist, mode, max_weight)
    if mode == 1:
        return 0.5 * (nll + weight * dist)  # ½ (NLL + sg(NLL/DEMD)·DEMD)
    return weight * nll + dist  # sg(DEMD/NLL)·NLL + DEMD


def mle_loss(logits: Tensor, labels: Tensor, *, ignore_index: int = -100, shift: bool = True,
             reduction: Reduction = "mean") -> Tensor:
    """Masked cross-entropy (MLE). logits: (B, T, V), labels: (B, T) -> scalar."""
    flat, target, mask, shape = _flatten(logits, labels, ignore_index, shift)
    return _reduce(token_nll(flat, target), mask, shape, reduction)


def emo_loss(logits: Tensor, labels: Tensor, cost_embedding: Tensor, *,
             ignore_index: int = -100, mode: Literal[1, 2] = 1, shift: bool = True,
             reduction: Reduction = "mean", max_weight: float | None = None) -> Tensor:
    """EMO: MLE combined with the DEMD bound by the per-token dynamic weight.

    logits: (B, T, V); labels: (B, T); cost_embedding: (V, d), a frozen copy of a pretrained
    output embedding (rows are normalised and detached inside). Returns a scalar for
    ``reduction="mean"`` (over non-ignored tokens) or ``"sum"``, or the (B, T') per-token
    losses (zeros at ignored positions) for ``"none"``. ``max_weight``: optional cap of the
    dynamic weight (None, the paper's GPT-2 code).
    """
    flat, target, mask, shape = _flatten(logits, labels, ignore_index, shift)
    _check_embedding(cost_embedding)
    _check_max_weight(max_weight)
    return _reduce(emo_token_loss(flat, target, cost_embedding, mode, max_weight), mask, shape,
                   reduction)


def mixce_loss(logits: Tensor, labels: Tensor, *, mixing_ratio: float = 0.5,
               ignore_index: int = -100, shift: bool = True, reduction: Reduction = "mean"
               ) -> Tensor:
    """MixCE as in the official EMO code: ``η NLL + (1 − η) sg(q_y) NLL``."""
    eta = _check_mixing_ratio(mixing_ratio)
    flat, target, mask, shape = _flatten(logits, labels, ignore_index, shift)
    nll = token_nll(flat, target)
    q_y = torch.exp(-nll.detach())
    return _reduce(eta * nll + (1.0 - eta) * q_y * nll, mask, shape, reduction)


def tailr_loss(logits: Tensor, labels: Tensor, *, mixing_ratio: float = 0.5,
               ignore_index: int = -100, shift: bool = True, reduction: Reduction = "mean"
               ) -> Tensor:
    """TaiLr (TVD) as in the official EMO code, γ = η:
    ``η NLL + (1 − η) clamp(q_y / ((1 − γ) + γ q_y), 0.2, 1) NLL``."""
    eta = _check_mixing_ratio(mixing_ratio)
    flat, target, mask, shape = _flatten(logits, labels, ignore_index, shift)
    nll = token_nll(flat, target)
    q_y = torch.exp(-nll.detach())
    weight = torch.clamp(q_y / ((1.0 - eta) + eta * q_y), min=0.2, max=1.0)
    return _reduce(eta * nll + (1.0 - eta) * weight * nll, mask, shape, reduction)


class EMOLoss(nn.Module):
    """:func:`emo_loss` with its frozen cost embedding held as a buffer.

    ``EMOLoss(model.head.weight)`` copies (and normalises) the weight *now*: later updates of
    the model do not change the cost, as in the paper. ``forward(logits (B,T,V), labels (B,T))``.
    """

    def __init__(self, cost_weight: Tensor, *, mode: Literal[1, 2] = 1,
                 ignore_index: int = -100, shift: bool = True,
                 max_weight: float | None = None) -> None:
        super().__init__()
        if mode not in (1, 2):
            raise ValueError(f"mode must be 1 or 2, got {mode!r}")
        _check_max_weight(max_weight)
        self.register_buffer("cost_embedding", cosine_cost_embedding(cost_weight))
        self.mode, self.ignore_index, self.shift = mode, ignore_index, shift
        self.max_weight = max_weight

    def forward(self, logits: Tensor, labels: Tensor) -> Tensor:
        return emo_loss(logits, labels, self.cost_embedding, ignore_index=self.ignore_index,
                        mode=self.mode, shift=self.shift, max_weight=self.max_weight)


OBJECTIVES = ("mle", "emo", "mixce", "tailr")


def make_objective(name: str, *, cost_embedding: Tensor | None = None, mode: int = 1,
                   mixing_ratio: float = 0.5, shift: bool = True,
                   max_weight: float | None = None) -> Callable[[Tensor, Tensor], Tensor]:
    """``loss(logits, labels)`` for one of :data:`OBJECTIVES` (EMO needs ``cost_embedding``)."""
    if name == "mle":
        return partial(mle_loss, shift=shift)
    if name == "emo":
        if cost_embedding is None:
            raise ValueError("objective 'emo' needs a cost_embedding (V, d)")
        if mode not in (1, 2):
            raise ValueError(f"mode must be 1 or 2, got {mode!r}")
        _check_max_weight(max_weight)
        return partial(emo_loss, cost_embedding=cosine_cost_embedding(cost_embedding),
                       mode=mode, shift=shift, max_weight=max_weight)
    if name == "mixce":
        return partial(mixce_loss, mixing_ratio=_check_mixing_ratio(mixing_ratio), shift=shift)
    if name == "tailr":
        return partial(tailr_loss, mixing_ratio=_check_mixing_ratio(mixing_ratio), shift=shift)
    raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}; got {name!r}")
