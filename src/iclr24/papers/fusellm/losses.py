"""Step 4 of FuseLLM: the continual-training objective of the target model.

FuseLLM (Wan et al., ICLR 2024, Sec. 3.2, Eq. 1-3):

    L_CLM    = -Σ_t log Q_θ(x_t | x_<t)
    L_Fusion = -Σ_t Σ_v P_fused,t(v) log Q_θ,t(v)          (soft cross-entropy)
    L        = λ L_CLM + (1 - λ) L_Fusion,                 λ = 0.9

Both terms are averaged over non-pad positions (the official trainer sums over the attention
mask and divides by its sum; its collator puts a one-hot on the pad id, which the mask then
removes; here pads never enter). λ weights the CLM term: λ = 1 is the paper's CLM-only control
("Llama-2 CLM"). ``kind="kl"`` gives the KL variant of the official code, which differs from the
cross-entropy by the fused distribution's entropy (a constant in θ).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["check_lambda", "fusellm_loss", "fusion_loss"]


def check_lambda(lam: float) -> float:
    """λ must be a number in [0, 1]."""
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam (λ, the CLM weight) must be a number in [0, 1], got {lam!r}")
    return float(lam)


def _check_mask(mask: Tensor | None, shape: tuple[int, int], device) -> Tensor:
    if mask is None:
        return torch.ones(shape, dtype=torch.float32, device=device)
    if not isinstance(mask, Tensor) or tuple(mask.shape) != shape:
        raise ValueError(f"mask must be a tensor of shape (B, T) = {shape}, got "
                         f"{getattr(mask, 'shape', type(mask).__name__)}")
    return mask.to(torch.float32)


def _check_rows(probs: Tensor, mask: Tensor, atol: float = 1e-3) -> None:
    """The fused target must be a distribution at every real position: entries >= 0 (NaN
    refused) and rows summing to 1 (``atol`` for float32 rounding of top-k softmaxes). A row
    summing to 3 would silently weight the fusion term 3x at that position."""
    if bool((probs < 0).any()) or bool(torch.isnan(probs).any()):
        raise ValueError("target (the fused distributions) must have entries >= 0 and no NaN")
    real = mask > 0
    if not bool(real.any()):
        return
    sums = probs.sum(-1)[real]
    if bool(((sums - 1.0).abs() > atol).any()):
        raise ValueError(f"target (the fused distributions) must have rows summing to 1 at "
                         f"every real position, got row sums in [{float(sums.min()):.4g}, "
                         f"{float(sums.max()):.4g}]")


def fusion_loss(logits: Tensor, target: Tensor | tuple[Tensor, Tensor],
                mask: Tensor | None = None, kind: str = "ce") -> Tensor:
    """Soft cross-entropy of the model to the fused distributions, mean over masked positions.

    logits: (B, T, V) the target model's logits.
    target: dense probabilities (B, T, V), or sparse ``(ids (B, T, K) long, probs (B, T, K))``
    (padding entries carry probability 0); each real position's row must be a distribution
    (entries >= 0, sum 1 within 1e-3), else ValueError.
    mask: (B, T) 1 for real positions, 0 for padding (None = all real).
    kind: "ce" (the paper's) or "kl" (KL(P_fused || Q), the official code's alternative).
    """
    if not isinstance(logits, Tensor) or logits.dim() != 3:
        raise ValueError(f"logits must be a (B, T, V) tensor, got "
                         f"{getattr(logits, 'shape', type(logits).__name__)}")
    if kind not in ("ce", "kl"):
        raise ValueError(f"kind must be 'ce' or 'kl', got {kind!r}")
    b, t, v = logits.shape
    m = _check_mask(mask, (b, t), logits.device)
    logq = F.log_softmax(logits.float(), dim=-1)
    if isinstance(target, tuple):
        if len(target) != 2:
            raise ValueError("a sparse target must be a pair (ids, probs)")
        ids, probs = target
        if ids.shape != probs.shape or ids.dim() != 3 or tuple(ids.shape[:2]) != (b, t):
            raise ValueError(f"sparse target ids/probs must both be (B, T, K) with (B, T) = "
                             f"{(b, t)}, got {tuple(ids.shape)} and {tuple(probs.shape)}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= v):
            raise ValueError(f"sparse target ids must lie in [0, {v})")
        probs = probs.float()
        _check_rows(probs, m)
        logq_at = logq.gather(-1, ids.long())
        per_pos = -(probs * logq_at).sum(-1)  # -Σ_v P_fused,t(v) log Q_θ,t(v)
        if kind == "kl":
            per_pos = per_pos + torch.where(probs > 0, probs * torch.log(probs.clamp_min(1e-30)),
                                            torch.zeros_like(probs)).sum(-1)
    else:
        if not isinstance(target, Tensor) or tuple(target.shape) != (b, t, v):
            raise ValueError(f"a dense target must be a (B, T, V) = {(b, t, v)} tensor, got "
                             f"{getattr(target, 'shape', type(target).__name__)}")
        p = target.float()
        _check_rows(p, m)
        per_pos = -(p * logq).sum(-1)
        if kind == "kl":
            per_pos = per_pos + torch.where(p > 0, p * torch.log(p.clamp_min(1e-30)),
                                            torch.zeros_like(p)).sum(-1)
    return (per_pos * m).sum() / m.sum().clamp_min(1.0)


def fusellm_loss(logits: Tensor, labels: Tensor, fused: Tensor | tuple[Tensor, Tensor] | None,
                 lam: float = 0.9, mask: Tensor | None = None) -> Tensor:
    """L = λ·L_CLM + (1 − λ)·L_Fusion (both means over real positions).

    logits: (B, T, V); labels: (B, T) next-token ids (-100 or ``mask == 0`` marks padding);
    fused: the fused target (dense or sparse, see :func:`fusion_loss`), may be None only when
    λ = 1 (CLM only); lam: the CLM weight in [0, 1] (paper: 0.9).
    """
    lam = check_lambda(lam)
    if not isinstance(labels, Tensor) or labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must be a (B, T) = {tuple(logits.shape[:2])} tensor, got "
                         f"{getattr(labels, 'shape', type(labels).__name__)}")
    real = labels != -100
    if mask is not None:
        real = real & (_check_mask(mask, tuple(labels.shape), labels.device) > 0)
    m = real.float()
    nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                          labels.clamp_min(0).reshape(-1), reduction="none").view_as(m)
    clm = (nll * m).sum() / m.sum().clamp_min(1.0)  # L_CLM, mean NLL over real positions
    if lam == 1.0:
        return clm
    if fused is None:
        raise ValueError(f"fused targets are needed when lam < 1 (got lam={lam})")
    return lam * clm + (1.0 - lam) * fusion_loss(logits, fused, m)  # Eq. 3
