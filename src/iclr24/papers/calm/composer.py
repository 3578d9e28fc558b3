"""CALM's cross-attention composition block and the cross-model causal mask.

Paper: "LLM Augmented LLMs: Expanding Capabilities through Composition" (R. Bansal, B. Samanta,
S. Dalmia, N. Gupta, S. Vashishth, S. Ganapathy, A. Bapna, P. Jain, P. Talukdar; ICLR 2024;
arXiv 2401.02412), Sec. 3.1 "Learnable parameters" and Sec. 3.2 "Composition layers".

For composed layer pair j (augmenting layer l_A^j, anchor layer l_B^j):

- projection (Sec. 3.1): H̃_A^j = H_A^j W_proj^j, mapping the augmenting width D_A to the
  anchor width D_B;
- cross-attention (Sec. 3.2): f_cross(H̃_A^j, H_B^j) = Concat_h softmax(Q_h K_hᵀ / √d_h) V_h W_O
  with queries Q = H_B^j W_Q from the anchor and keys/values K = H̃_A^j W_K, V = H̃_A^j W_V from
  the projected augmenting states;
- the caller adds f_cross to the anchor's residual stream after layer l_B^j
  (:class:`~.composition.CALM` does).

Choices the paper does not state (said here plainly): W_O is zero-initialised by default, so a
fresh composition computes exactly the anchor (the unofficial port lucidrains/CALM-pytorch does
the same); the anchor queries and the projected augmenting states go through an RMSNorm first
(the residual streams of the two models have unrelated scales). :func:`cross_model_mask` builds
the causal mask between two tokenisations of the same text from character spans: anchor token t
may read augmenting token s only when s's text ends at or before t's does, so that teacher-forced
training sees no future augmenting token (the paper is silent on this; without it the anchor
could read the answer from m_A's future positions, which generation never offers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["CrossAttentionComposer", "cross_model_mask", "shared_tokenizer_mask"]


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class CrossAttentionComposer(nn.Module):
    """One composition block: ``forward(h_anchor, h_aug, mask) -> f_cross`` (not yet added).

    d_anchor: anchor width D_B (queries, output); d_augment: augmenting width D_A;
    n_heads: attention heads (D_B must be divisible by it); zero_init: W_O = 0 so the block
    starts as the zero function; norm: RMSNorm on queries and projected states.
    Trainable parameters: W_proj (D_A·D_B + D_B), W_Q, W_K, W_V, W_O (4·D_B²), norms (2·D_B).
    """

    def __init__(self, d_anchor: int, d_augment: int, n_heads: int = 4, zero_init: bool = True,
                 norm: bool = True) -> None:
        super().__init__()
        _positive_int(d_anchor, "d_anchor")
        _positive_int(d_augment, "d_augment")
        _positive_int(n_heads, "n_heads")
        if d_anchor % n_heads:
            raise ValueError(f"d_anchor ({d_anchor}) must be divisible by n_heads ({n_heads})")
        self.d_anchor, self.d_augment, self.n_heads = d_anchor, d_augment, n_heads
        self.head_dim = d_anchor // n_heads
        self.proj = nn.Linear(d_augment, d_anchor)            # W_proj: D_A -> D_B
        self.norm_q = nn.RMSNorm(d_anchor) if norm else nn.Identity()
        self.norm_kv = nn.RMSNorm(d_anchor) if norm else nn.Identity()
        self.q = nn.Linear(d_anchor, d_anchor, bias=False)   # W_Q (anchor queries)
        self.k = nn.Linear(d_anchor, d_anchor, bias=False)   # W_K (projected aug keys)
        self.v = nn.Linear(d_anchor, d_anchor, bias=False)   # W_V (projected aug values)
        self.out = nn.Linear(d_anchor, d_anchor, bias=False)  # W_O
        if zero_init:
            nn.init.zeros_(self.out.weight)

    def forward(self, h_anchor: Tensor, h_aug: Tensor, mask: Tensor | None = None) -> Tensor:
        """h_anchor: (B, T, D_B); h_aug: (B, S, D_A); mask: (B, T, S) or (T, S) bool, True where
        anchor position t may attend to augmenting position s (None: everything).
        Returns f_cross: (B, T, D_B). Rows whose mask is all False read nothing and get
        exactly 0; elsewhere a NaN in the hidden states gives NaN (never a silent 0)."""
        if not isinstance(h_anchor, Tensor) or h_anchor.dim() != 3 \
                or h_anchor.shape[-1] != self.d_anchor:
            raise ValueError(f"h_anchor must have shape (batch, seq, {self.d_anchor}), got "
                             f"{tuple(getattr(h_anchor, 'shape', ()))}")
        if not isinstance(h_aug, Tensor) or h_aug.dim() != 3 \
                or h_aug.shape[-1] != self.d_augment or h_aug.shape[0] != h_anchor.shape[0]:
            raise ValueError(f"h_aug must have shape ({h_anchor.shape[0]}, seq, "
                             f"{self.d_augment}), got {tuple(getattr(h_aug, 'shape', ()))}")
        b, t, _ = h_anchor.shape
        s = h_aug.shape[1]
        h_aug = h_aug.to(self.proj.weight.dtype)
        h_tilde = self.norm_kv(self.proj(h_aug))              # H̃_A = H_A W_proj
        q = self.q(self.norm_q(h_anchor.to(self.q.weight.dtype)))

        def heads(x: Tensor) -> Tensor:                       # (B, L, D) -> (B, H, L, d_h)
            return x.view(b, -1, self.n_heads, self.head_dim).transpose(1, 2)

        q, k, v = heads(q), heads(self.k(h_tilde)), heads(self.v(h_tilde))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # Q Kᵀ / √d_h: (B,H,T,S)
        seen = None
        if mask is not None:
            mask = _check_mask(mask, b, t, s).to(scores.device)
            # a row with no visible position attends nowhere: softmax over it is undefined, so
            # it is computed unmasked (finite) and its output set to exactly 0 below; NaN in
            # the hidden states is never hidden and propagates like any other layer's
            seen = mask.any(-1)                               # (B, T)
            scores = scores.masked_fill(~(mask | ~seen[..., None])[:, None], float("-inf"))
        attn = F.softmax(scores, dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, self.d_anchor)  # Concat_h softmax(.)V
        if seen is not None:
            y = torch.where(seen[..., None], y, torch.zeros((), dtype=y.dtype))
        return self.out(y).to(h_anchor.dtype)                 # · W_O


def _check_mask(mask: Tensor, b: int, t: int, s: int) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor of shape ({b}, {t}, {s}), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.dim() == 2 and tuple(mask.shape) == (t, s):
        mask = mask[None].expand(b, t, s)
    if tuple(mask.shape) != (b, t, s):
        raise ValueError(f"mask must have shape ({b}, {t}, {s}) or ({t}, {s}), got "
                         f"{tuple(mask.shape)}")
    return mask


def shared_tokenizer_mask(t: int, s: int | None = None, device: torch.device | str = "cpu"
                          ) -> Tensor:
    """Causal cross mask when both models read the same token sequence: (T, S) bool with
    ``mask[t, s] = s <= t`` (S defaults to T)."""
    _positive_int(t, "t")
    s = t if s is None else _positive_int(s, "s")
    return torch.ones(t, s, dtype=torch.bool, device=device).tril()


def cross_model_mask(anchor_ends: Sequence[int] | Tensor, aug_ends: Sequence[int] | Tensor
                     ) -> Tensor:
    """Causal cross mask between two tokenisations of one text, from character end offsets.

    anchor_ends: (T,) or (B, T) end offset (exclusive, in characters) of the text each anchor
    input position has read; aug_ends: (S,) or (B, S) the same for the augmenting model (a start
    token has end 0). Returns (T, S) or (B, T, S) bool: ``aug_ends[s] <= anchor_ends[t]``.
    Padding positions should carry a large end offset on the augmenting side (never visible).
    """
    a = torch.as_tensor(anchor_ends)
    g = torch.as_tensor(aug_ends)
    if a.dtype.is_floating_point or g.dtype.is_floating_point:
        raise TypeError("anchor_ends and aug_ends must hold integer character offsets")
    if a.dim() not in (1, 2) or g.dim() != a.dim() or (a.dim() == 2 and a.shape[0] != g.shape[0]):
        raise ValueError(f"anchor_ends and aug_ends must both be (T,)/(S,) or (B, T)/(B, S) with "
                         f"one batch size, got {tuple(a.shape)} and {tuple(g.shape)}")
    return g.unsqueeze(-2) <= a.unsqueeze(-1)
