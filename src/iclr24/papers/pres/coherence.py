"""The memory-coherence objective of PRES (Sec. 4.2).

The paper's convergence bound for batched MDGNN training improves when the memory is *coherent*
across a batch update, so PRES adds a term that rewards similarity between each node's memory
before and after the update:

    L = L_BCE + beta * (1 - coh(s^prev, s^new)),     beta = 0.1 in the official code.

``kind="cosine"`` uses the mean over nodes of cos(s_i^prev, s_i^new) (scale-free, bounded);
``kind="inner"`` the mean inner product <s_i^prev, s_i^new> (unbounded: it can reward growing
memories). The official code computes its term under ``.detach()``, which adds a constant to the
loss and no gradient at all; ``detach=True`` reproduces that. (Its "inner_prod" is also a cosine
taken per memory dimension across nodes after a global min-max rescaling of both matrices; here
the similarity is per node, which is what "memory before vs after the update" means.)
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["COHERENCE_KINDS", "coherence_loss"]

COHERENCE_KINDS = ("cosine", "inner")


def coherence_loss(prev: Tensor, new: Tensor, kind: str = "cosine", *,
                   detach: bool = False) -> Tensor:
    """1 - coh(prev, new), a scalar tensor with gradient w.r.t. ``new`` (and ``prev``).

    Args:
        prev: (K, d) memories before the update.
        new: (K, d) memories after the update.
        kind: "cosine" (mean row-wise cosine similarity; a zero row has similarity 0) or
            "inner" (mean row-wise inner product).
        detach: return the value without gradient (the official code's behaviour).

    K = 0 gives a zero loss (still connected to ``new``'s graph).
    """
    if not isinstance(prev, Tensor) or not isinstance(new, Tensor):
        raise TypeError("prev and new must be tensors")
    if prev.dim() != 2 or prev.shape != new.shape:
        raise ValueError(f"prev and new must be (K, d) tensors of the same shape, got "
                         f"{tuple(prev.shape)} and {tuple(new.shape)}")
    if kind not in COHERENCE_KINDS:
        raise ValueError(f"kind must be one of {COHERENCE_KINDS}, got {kind!r}")
    if not isinstance(detach, bool):
        raise TypeError(f"detach must be a bool, got {detach!r}")
    if prev.shape[0] == 0:
        return new.sum() * 0.0
    if kind == "cosine":
        coh = torch.nn.functional.cosine_similarity(prev, new, dim=1, eps=1e-8).mean()
    else:
        coh = (prev * new).sum(dim=1).mean()
    loss = 1.0 - coh  # beta * (1 - coh(s_prev, s_new)) is added by the caller
    return loss.detach() if detach else loss
