"""DEMD: the differentiable upper bound of the earth mover distance used by EMO (Sec. 3).

For a position with model distribution ``q = softmax(z)`` over the vocabulary and data
distribution ``p``, EMO measures

    EMD(q, p) = min_{γ ∈ Π(q, p)} Σ_ij γ_ij C(i, j),        C(i, j) = 1 − ê_iᵀ ê_j,

where ``ê_i`` are the L2-normalised rows of a *frozen* copy of a pretrained output embedding
(the LM head). The product coupling ``γ = q pᵀ`` is feasible, so

    EMD(q, p) ≤ DEMD(q, p) := Σ_ij q_i p_j C(i, j) = qᵀ C p,

and for a one-hot target ``p = δ_y`` the only feasible plan moves all mass to ``y``, so the
bound is tight: ``DEMD = Σ_i q_i C(i, y) = 1 − ê_yᵀ (Êᵀ q)`` (because Σ q = 1). The last form is
what :func:`demd` computes: one (N × V)·(V × d) product, never the V × V cost matrix.

Gradient (the "negative diversity" fix of the paper):
``∂DEMD/∂z_i = q_i (C(i, y) − Σ_j q_j C(j, y))`` — tokens cheaper than the current expected cost
gain mass, distant ones lose mass in proportion to their distance (MLE: ``q_i − 1[i = y]``).
:func:`demd_logit_gradient` returns this closed form (used by tests and the ``bound_exact``
claim to check autograd).

:func:`earth_movers_distance` is the exact EMD by POT's network simplex (``ot.emd2``), the
reference the bound is checked against.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "cosine_cost_embedding",
    "cosine_cost_matrix",
    "demd",
    "demd_logit_gradient",
    "demd_soft",
    "earth_movers_distance",
]


def _check_embedding(weight: Tensor, name: str = "cost_embedding") -> Tensor:
    if not isinstance(weight, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (vocab, dim), got "
                        f"{type(weight).__name__}")
    if not weight.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor, got {weight.dtype}")
    if weight.dim() != 2 or weight.shape[0] < 1 or weight.shape[1] < 1:
        raise ValueError(f"{name} must have shape (vocab, dim), got {tuple(weight.shape)}")
    if not torch.isfinite(weight).all():
        raise ValueError(f"{name} must be finite")
    return weight


def cosine_cost_embedding(weight: Tensor) -> Tensor:
    """Frozen, L2-normalised copy of an output-embedding matrix (the paper's cost embedding).

    weight: (V, d), e.g. a pretrained ``lm_head.weight`` -> (V, d) detached rows ``ê_i`` with
    ``‖ê_i‖ = 1``; ``C(i, j) = 1 − ê_iᵀ ê_j``. Later training of the model does not change it.
    """
    weight = _check_embedding(weight, "weight")
    norms = torch.linalg.vector_norm(weight.detach(), dim=1, keepdim=True)
    if (norms == 0).any():
        bad = int(torch.nonzero(norms[:, 0] == 0)[0])
        raise ValueError(f"weight row {bad} is all zeros: its cosine cost is undefined")
    return (weight.detach() / norms).clone()


def cosine_cost_matrix(cost_embedding: Tensor) -> Tensor:
    """(V, V) cost ``C(i, j) = 1 − ê_iᵀ ê_j`` ∈ [0, 2] with an exact zero diagonal.

    Only for small vocabularies (tests, POT references); the losses never build it.
    """
    e = cosine_cost_embedding(cost_embedding)
    cost = (1.0 - e @ e.T).clamp_(min=0.0, max=2.0)  # clamp rounding outside [0, 2]
    cost.fill_diagonal_(0.0)
    return cost


def _check_logits_target(logits: Tensor, target: Tensor) -> None:
    if not isinstance(logits, Tensor) or not logits.dtype.is_floating_point:
        raise TypeError("logits must be a floating-point torch.Tensor of shape (N, V)")
    if logits.dim() != 2:
        raise ValueError(f"logits must have shape (N, V), got {tuple(logits.shape)}")
    if not isinstance(target, Tensor) or target.dtype.is_floating_point \
            or target.dtype == torch.bool:
        raise TypeError("target must be an integer torch.Tensor of shape (N,)")
    if target.shape != logits.shape[:1]:
        raise ValueError(f"target must have shape ({logits.shape[0]},) to match logits "
                         f"{tuple(logits.shape)}, got {tuple(target.shape)}")
    vocab = logits.shape[1]
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= vocab):
        raise ValueError(f"target ids must lie in [0, {vocab}), got range "
                         f"[{int(target.min())}, {int(target.max())}]")


def _normalised_embedding_for(logits: Tensor, cost_embedding: Tensor) -> Tensor:
    _check_embedding(cost_embedding)
    if cost_embedding.shape[0] != logits.shape[-1]:
        raise ValueError(f"cost_embedding has {cost_embedding.shape[0]} rows but logits have "
                         f"vocabulary size {logits.shape[-1]}")
    # frozen: the cost is never trained (detach), and lives where the logits live
    return cosine_cost_embedding(cost_embedding.to(device=logits.device, dtype=logits.dtype))


def demd(logits: Tensor, target: Tensor, cost_embedding: Tensor) -> Tensor:
    """Per-token DEMD for one-hot targets (= the exact EMD in that case).

    logits: (N, V) unnormalised scores; target: (N,) ids in [0, V); cost_embedding: (V, d)
    (any row scaling: rows are L2-normalised and detached here).
    Returns (N,) ``DEMD_n = 1 − ê_{y_n}ᵀ (Êᵀ q_n)`` with ``q_n = softmax(logits_n)``.
    """
    _check_logits_target(logits, target)
    e = _normalised_embedding_for(logits, cost_embedding)
    q = torch.softmax(logits, dim=-1)
    # DEMD = Σ_i q_i C(i, y) = 1 − ê_yᵀ Σ_i q_i ê_i   (one (N×V)(V×d) matmul)
    expected_embedding = q @ e
    return 1.0 - (e[target] * expected_embedding).sum(dim=-1)


def demd_soft(logits: Tensor, target_probs: Tensor, cost_matrix: Tensor) -> Tensor:
    """DEMD for soft targets: ``qᵀ C p`` per row, an upper bound of EMD(q, p).

    logits: (N, V); target_probs: (N, V) rows of non-negative numbers summing to 1;
    cost_matrix: (V, V) non-negative costs. Returns (N,).
    """
    if not isinstance(logits, Tensor) or not logits.dtype.is_floating_point or logits.dim() != 2:
        raise TypeError("logits must be a floating-point torch.Tensor of shape (N, V)")
    if not isinstance(target_probs, Tensor) or target_probs.shape != logits.shape:
        got = tuple(target_probs.shape) if isinstance(target_probs, Tensor) else type(target_probs)
        raise ValueError(f"target_probs must be a tensor of shape {tuple(logits.shape)} "
                         f"(same as logits), got {got}")
    v = logits.shape[1]
    if not isinstance(cost_matrix, Tensor) or cost_matrix.shape != (v, v):
        got = tuple(cost_matrix.shape) if isinstance(cost_matrix, Tensor) else type(cost_matrix)
        raise ValueError(f"cost_matrix must be a ({v}, {v}) tensor, got {got}")
    if not torch.isfinite(cost_matrix).all() or (cost_matrix < 0).any():
        raise ValueError("cost_matrix must be finite and non-negative (a transport cost); "
                         f"min entry is {float(cost_matrix.min()):.3g}")
    p = target_probs.to(logits)
    if (p < 0).any() or not torch.allclose(p.sum(dim=-1), torch.ones_like(p[:, 0]), atol=1e-5):
        raise ValueError("target_probs rows must be probability vectors (>= 0, summing to 1)")
    q = torch.softmax(logits, dim=-1)
    # DEMD(q, p) = Σ_ij q_i p_j C(i, j) = qᵀ C p   (product coupling γ = q pᵀ)
    return ((q @ cost_matrix.to(logits)) * p).sum(dim=-1)


def demd_logit_gradient(logits: Tensor, target: Tensor, cost_embedding: Tensor) -> Tensor:
    """Closed-form gradient of :func:`demd` w.r.t. the logits.

    Returns (N, V) with entries ``q_i (C(i, y) − Σ_j q_j C(j, y))``.
    """
    _check_logits_target(logits, target)
    e = _normalised_embedding_for(logits, cost_embedding)
    q = torch.softmax(logits.detach(), dim=-1)
    cost_to_target = 1.0 - e[target] @ e.T  # (N, V): C(i, y_n)
    expected = (q * cost_to_target).sum(dim=-1, keepdim=True)  # Σ_j q_j C(j, y)
    return q * (cost_to_target - expected)


def earth_movers_distance(probs: Tensor | np.ndarray, target_probs: Tensor | np.ndarray,
                          cost_matrix: Tensor | np.ndarray) -> np.ndarray:
    """Exact EMD per row by POT's network simplex (``ot.emd2``), in float64.

    probs, target_probs: (N, V) probability rows; cost_matrix: (V, V). Returns (N,) numpy.
    """
    import ot

    a = np.asarray(torch.as_tensor(probs).detach().cpu(), dtype=np.float64)
    b = np.asarray(torch.as_tensor(target_probs).detach().cpu(), dtype=np.float64)
    m = np.asarray(torch.as_tensor(cost_matrix).detach().cpu(), dtype=np.float64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"probs and target_probs must both be (N, V); got {a.shape}, {b.shape}")
    if m.shape != (a.shape[1], a.shape[1]):
        raise ValueError(f"cost_matrix must be ({a.shape[1]}, {a.shape[1]}), got {m.shape}")
    if (m < 0).any():
        raise ValueError("cost_matrix must be non-negative")
    out = np.empty(a.shape[0])
    for n in range(a.shape[0]):
        # renormalise away float rounding so POT sees exactly balanced marginals
        out[n] = float(ot.emd2(a[n] / a[n].sum(), b[n] / b[n].sum(), m))
    return out
