"""The NfgTransformer encoder and its three task heads (Liu et al., ICLR 2024, Sec. 3; official
``nfg_transformer/network.py``), ported from JAX/haiku to batched PyTorch.

A game with N players is a payoff tensor ``G: (B, N, T_1, ..., T_N)`` (``G[b, p, s]`` is player
p's payoff at joint action s) and an optional joint-action mask ``(B, T_1, ..., T_N)`` (True =
observed). The encoder keeps one embedding per (player, action), zero-initialised, and refines it
with K :class:`NfgTransformerBlock` s; each block does

1. a2j (action to joint): for every joint action s, N tokens
   ``x_p(s) = GELU(W [a_p^{s_p} ; G_p(s)])`` (player p's action embedding and p's *own* payoff),
   self-attention among the N tokens of that joint action;
2. a2p (action to play): action embedding ``a_p^t`` is one query that cross-attends to the
   ``prod_{q != p} T_q`` player-p tokens of the observed joint actions in which t is played;
3. a2a (action to action): A rounds of self-attention over all ``sum_p T_p`` action embeddings
   (keys restricted to actions that appear in an observed joint action).

Actions that appear in no observed joint action keep their input embedding. Every attention is
the official pre-RMSNorm block: Q/K/V linear maps without bias, RMSNorm on Q and on K before the
dot product (QK-norm), softmax, output projection, residual, then a pre-RMSNorm
Linear(4D)-GELU-Linear(D) dense block with residual. After the K blocks each player's embeddings
get their own RMSNorm. There is no positional encoding anywhere, so the encoder is equivariant to
permutations of each player's actions (the per-player final norms break only *player*
permutation equivariance, as in the official code).

Differences from the official code: the a2j attention of a joint action that is not observed is
left unmasked (the official code masks all its logits, i.e. uniform attention); its output only
feeds the a2p keys, which mask it out, so the encoder's output is the same. Unobserved payoffs
are zeroed before they enter the network, so they cannot leak in.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

__all__ = [
    "CrossAttentionBlock",
    "DeviationGainHead",
    "NashHead",
    "NfgTransformer",
    "NfgTransformerBlock",
    "PayoffHead",
    "QKNormAttention",
    "SelfAttentionBlock",
    "action_masks",
    "check_game",
    "joint_embeddings",
]

_EPS = 1e-5  # haiku's RMSNorm default
_CPU_BACKEND = SDPBackend.MATH


def check_game(payoffs: torch.Tensor, mask: torch.Tensor | None,
               n_players: int | None = None) -> torch.Tensor:
    """Validate ``payoffs: (B, N, T_1..T_N)`` and ``mask: (B, T_1..T_N)`` (bool) and return the
    mask (all True when ``mask`` is None). Raises ``TypeError``/``ValueError`` naming the
    argument."""
    if not isinstance(payoffs, torch.Tensor):
        raise TypeError(f"payoffs must be a torch.Tensor, got {type(payoffs).__name__}")
    if not payoffs.is_floating_point():
        raise TypeError(f"payoffs must be a floating-point tensor, got {payoffs.dtype}")
    if payoffs.ndim < 4:
        raise ValueError("payoffs must have shape (batch, n_players, T_1, ..., T_N) with N >= 2, "
                         f"got shape {tuple(payoffs.shape)}")
    n = payoffs.shape[1]
    if payoffs.ndim != 2 + n:
        raise ValueError(f"payoffs of shape {tuple(payoffs.shape)} has {n} players on axis 1 but "
                         f"{payoffs.ndim - 2} action axes; expected (batch, N, T_1, ..., T_N) "
                         "with one action axis per player")
    if n_players is not None and n != n_players:
        raise ValueError(f"payoffs has {n} players (axis 1) but the model was built for "
                         f"n_players={n_players}")
    if payoffs.shape[0] < 1:
        raise ValueError("payoffs must hold at least one game (batch axis 0 is empty), got shape "
                         f"{tuple(payoffs.shape)}")
    if min(payoffs.shape[2:]) < 1:
        raise ValueError("every player needs at least one action, got shape "
                         f"{tuple(payoffs.shape)}")
    if mask is None:
        if not bool(torch.isfinite(payoffs).all()):
            raise ValueError("payoffs must be finite (found NaN or inf); mark payoffs that are "
                             "not known as unobserved with `mask`")
        return torch.ones((payoffs.shape[0], *payoffs.shape[2:]), dtype=torch.bool,
                          device=payoffs.device)
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a torch.Tensor or None, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = observed), got {mask.dtype}")
    expected = (payoffs.shape[0], *payoffs.shape[2:])
    if tuple(mask.shape) != expected:
        raise ValueError(f"mask must have shape (batch, T_1, ..., T_N) = {expected} for payoffs of "
                         f"shape {tuple(payoffs.shape)}, got {tuple(mask.shape)}")
    if not mask.flatten(1).any(dim=1).all():
        raise ValueError("mask must observe at least one joint action in every game")
    if not bool((torch.isfinite(payoffs) | ~mask[:, None]).all()):
        raise ValueError("payoffs must be finite at every observed joint action (found NaN or "
                         "inf where mask is True)")
    return mask


def action_masks(mask: torch.Tensor) -> list[torch.Tensor]:
    """Joint mask ``(B, T_1..T_N)`` -> per player ``(B, T_p)``: action appears in an observed
    joint action."""
    n = mask.ndim - 1
    return [mask.any(dim=tuple(1 + q for q in range(n) if q != p)) for p in range(n)]


def joint_embeddings(embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
    """Per-player ``(B, T_p, D)`` -> ``(B, N, T_1, ..., T_N, D)``: entry ``[b, p, s]`` is
    ``a_p^{s_p}`` (player p's embedding of the action it plays in s)."""
    n = len(embeddings)
    b, d = embeddings[0].shape[0], embeddings[0].shape[-1]
    sizes = [e.shape[1] for e in embeddings]
    out = []
    for p, e in enumerate(embeddings):
        shape = [b] + [1] * n + [d]
        shape[1 + p] = sizes[p]
        out.append(e.reshape(shape).expand(b, *sizes, d))
    return torch.stack(out, dim=1)


class QKNormAttention(nn.Module):
    """Multi-head attention with bias-free Q/K/V maps and RMSNorm on Q and K (QK-norm).

    ``forward(q_in: (M, Lq, D_q), kv_in: (M, Lk, D_kv), mask: (M, Lq, Lk) bool | None)``
    -> ``(M, Lq, out_dim)``. Uses :func:`torch.nn.functional.scaled_dot_product_attention`.
    """

    def __init__(self, q_dim: int, kv_dim: int, qkv_dim: int, n_heads: int, out_dim: int):
        super().__init__()
        if qkv_dim % n_heads:
            raise ValueError(f"qkv_dim ({qkv_dim}) must be divisible by n_heads ({n_heads})")
        self.n_heads = n_heads
        self.q = nn.Linear(q_dim, qkv_dim, bias=False)
        self.k = nn.Linear(kv_dim, qkv_dim, bias=False)
        self.v = nn.Linear(kv_dim, qkv_dim, bias=False)
        self.norm_q = nn.RMSNorm(qkv_dim, eps=_EPS)  # QK-norm over the full Q vector (official)
        self.norm_k = nn.RMSNorm(qkv_dim, eps=_EPS)
        self.out = nn.Linear(qkv_dim, out_dim)

    def forward(self, q_in: torch.Tensor, kv_in: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        m, lq, _ = q_in.shape
        lk = kv_in.shape[1]
        h = self.n_heads
        q = self.norm_q(self.q(q_in)).reshape(m, lq, h, -1).transpose(1, 2)
        k = self.norm_k(self.k(kv_in)).reshape(m, lk, h, -1).transpose(1, 2)
        v = self.v(kv_in).reshape(m, lk, h, -1).transpose(1, 2)
        attn_mask = None if mask is None else mask[:, None]
        # on CPU the flash kernel is ~3x slower than the math one for these very short sequences
        with sdpa_kernel(_CPU_BACKEND) if q.device.type == "cpu" else contextlib.nullcontext():
            # softmax(q k^T / sqrt(d_head)) v per head
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return self.out(o.transpose(1, 2).reshape(m, lq, -1))


class _Dense(nn.Module):
    def __init__(self, d: int, widening: int = 4):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, widening * d), nn.Linear(widening * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class SelfAttentionBlock(nn.Module):
    """x + Attn(RMSNorm(x)); then + Dense(RMSNorm(.)). ``x: (M, L, D)``, mask ``(M, L, L)``."""

    def __init__(self, d: int, qkv_dim: int, n_heads: int):
        super().__init__()
        self.norm_in = nn.RMSNorm(d, eps=_EPS)
        self.attn = QKNormAttention(d, d, qkv_dim, n_heads, d)
        self.norm_x = nn.RMSNorm(d, eps=_EPS)
        self.dense = _Dense(d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.norm_in(x)
        x = x + self.attn(h, h, mask)
        return x + self.dense(self.norm_x(x))


class CrossAttentionBlock(nn.Module):
    """q + Attn(RMSNorm(q), RMSNorm(kv)); then + Dense(RMSNorm(.))."""

    def __init__(self, d: int, qkv_dim: int, n_heads: int):
        super().__init__()
        self.norm_q = nn.RMSNorm(d, eps=_EPS)
        self.norm_kv = nn.RMSNorm(d, eps=_EPS)
        self.attn = QKNormAttention(d, d, qkv_dim, n_heads, d)
        self.norm_x = nn.RMSNorm(d, eps=_EPS)
        self.dense = _Dense(d)

    def forward(self, q: torch.Tensor, kv: torch.Tensor,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        x = q + self.attn(self.norm_q(q), self.norm_kv(kv), mask)
        return x + self.dense(self.norm_x(x))


class NfgTransformerBlock(nn.Module):
    """One a2j -> a2p -> a2a refinement of the action embeddings (see the module docstring)."""

    def __init__(self, d_model: int, n_heads: int, qkv_dim: int, n_action_self_attn: int):
        super().__init__()
        self.action_value = nn.Linear(d_model + 1, d_model)
        self.a2j = SelfAttentionBlock(d_model, qkv_dim, n_heads)
        self.a2p = CrossAttentionBlock(d_model, qkv_dim, n_heads)
        self.a2a = nn.ModuleList(SelfAttentionBlock(d_model, qkv_dim, n_heads)
                                 for _ in range(n_action_self_attn))

    def forward(self, payoffs: torch.Tensor, embeddings: list[torch.Tensor],
                mask: torch.Tensor, amasks: list[torch.Tensor]) -> list[torch.Tensor]:
        b, n = payoffs.shape[:2]
        sizes = list(payoffs.shape[2:])
        d = embeddings[0].shape[-1]
        # a2j: token_p(s) = GELU(W [a_p^{s_p}; G_p(s)]), attention among the N tokens of s
        tokens = torch.cat([joint_embeddings(embeddings), payoffs[..., None]], dim=-1)
        tokens = F.gelu(self.action_value(tokens))  # (B, N, T.., D)
        tokens = tokens.reshape(b, n, -1, d).transpose(1, 2).reshape(-1, n, d)
        tokens = self.a2j(tokens).reshape(b, -1, n, d).transpose(1, 2)  # (B, N, J, D)
        tokens = tokens.reshape(b, n, *sizes, d)
        # a2p: a_p^t attends to the player-p tokens of observed joint actions that play t
        refined = []
        for p in range(n):
            kv = tokens[:, p].movedim(1 + p, 1).reshape(b * sizes[p], -1, d)
            kv_mask = mask.movedim(1 + p, 1).reshape(b * sizes[p], 1, -1)
            seen = amasks[p].reshape(-1)
            # rows of absent actions attend to everything; their result is discarded below
            kv_mask = kv_mask | ~seen[:, None, None]
            q = embeddings[p].reshape(b * sizes[p], 1, d)
            refined.append(self.a2p(q, kv, kv_mask).reshape(b, sizes[p], d))
        # a2a: self-attention over all sum_p T_p action embeddings (keys: observed actions)
        x = torch.cat(refined, dim=1)
        key_mask = torch.cat(amasks, dim=1)  # (B, sum T)
        att_mask = key_mask[:, None, :].expand(b, x.shape[1], x.shape[1])
        for layer in self.a2a:
            x = layer(x, att_mask)
        out = list(torch.split(x, sizes, dim=1))
        # actions in no observed joint action keep their input embedding (official)
        return [torch.where(amasks[p][..., None], out[p], embeddings[p]) for p in range(n)]


class NfgTransformer(nn.Module):
    """Equivariant encoder of N-player normal-form games into per-(player, action) embeddings.

    ``NfgTransformer(n_players=2, d_model=64, n_blocks=8, n_heads=8, qkv_dim=64,
    n_action_self_attn=2)`` are the defaults of the official notebook run (the official library
    defaults are D=16, K=2, heads 4, qkv 16, A=1). The parameter count does not depend on the
    game size; ``n_players`` fixes only the number of final per-player RMSNorms.

    ``forward(payoffs: (B, N, T_1..T_N), mask: (B, T_1..T_N) bool | None)``
    -> list of N tensors ``(B, T_p, d_model)``.
    """

    def __init__(self, n_players: int = 2, d_model: int = 64, n_blocks: int = 8,
                 n_heads: int = 8, qkv_dim: int = 64, n_action_self_attn: int = 2):
        super().__init__()
        for name, v in (("n_players", n_players), ("d_model", d_model), ("n_blocks", n_blocks),
                        ("n_heads", n_heads), ("qkv_dim", qkv_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if n_players < 2:
            raise ValueError(f"n_players must be >= 2, got {n_players}")
        if not isinstance(n_action_self_attn, int) or n_action_self_attn < 0:
            raise ValueError(f"n_action_self_attn must be a non-negative int, got "
                             f"{n_action_self_attn!r}")
        self.n_players, self.d_model = n_players, d_model
        self.blocks = nn.ModuleList(
            NfgTransformerBlock(d_model, n_heads, qkv_dim, n_action_self_attn)
            for _ in range(n_blocks))
        self.final_norms = nn.ModuleList(nn.RMSNorm(d_model, eps=_EPS) for _ in range(n_players))

    def forward(self, payoffs: torch.Tensor, mask: torch.Tensor | None = None
                ) -> list[torch.Tensor]:
        mask = check_game(payoffs, mask, self.n_players)
        amasks = action_masks(mask)
        payoffs = payoffs.masked_fill(~mask[:, None], 0.0)  # unobserved payoffs never enter
        b = payoffs.shape[0]
        emb = [payoffs.new_zeros(b, t, self.d_model) for t in payoffs.shape[2:]]
        for block in self.blocks:
            emb = block(payoffs, emb, mask, amasks)
        return [norm(e) for norm, e in zip(self.final_norms, emb)]


class NashHead(nn.Module):
    """Per-action linear map -> logits (official ``NfgPerAction``); absent actions get -inf.

    ``forward(embeddings: list[(B, T_p, D)], mask: (B, T..) | None)`` -> list of ``(B, T_p)``
    logits; ``softmax(-1)`` of each is player p's mixed strategy.
    """

    def __init__(self, d_model: int):
        super().__init__()
        self.linear = nn.Linear(d_model, 1)

    def forward(self, embeddings: Sequence[torch.Tensor], mask: torch.Tensor | None = None
                ) -> list[torch.Tensor]:
        logits = [self.linear(e).squeeze(-1) for e in embeddings]
        if mask is None:
            return logits
        return [lg.masked_fill(~m, -math.inf) for lg, m in zip(logits, action_masks(mask))]


class DeviationGainHead(nn.Module):
    """Per joint action: sum of the N action embeddings -> MLP(4D, GELU, 1) (official
    ``NfgPerJoint``). ``forward(list[(B, T_p, D)]) -> (B, T_1..T_N)``."""

    def __init__(self, d_model: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, 1))

    def forward(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        return self.mlp(joint_embeddings(embeddings).sum(dim=1)).squeeze(-1)


class PayoffHead(nn.Module):
    """Per joint action: self-attention over its N player tokens -> linear -> payoff per player
    (official ``NfgPerPayoff``). ``forward(list[(B, T_p, D)]) -> (B, N, T_1..T_N)``."""

    def __init__(self, d_model: int, n_heads: int = 4, qkv_dim: int = 16):
        super().__init__()
        self.a2j = SelfAttentionBlock(d_model, qkv_dim, n_heads)
        self.linear = nn.Linear(d_model, 1)

    def forward(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        joint = joint_embeddings(embeddings)  # (B, N, T.., D)
        b, n, d = joint.shape[0], joint.shape[1], joint.shape[-1]
        sizes = joint.shape[2:-1]
        x = joint.reshape(b, n, -1, d).transpose(1, 2).reshape(-1, n, d)
        x = self.linear(self.a2j(x)).reshape(b, -1, n).transpose(1, 2)
        return x.reshape(b, n, *sizes)
