"""A trained softmax transformer for in-context learning under prefix or causal masks
(paper Sec. 5.2; official ``main.py`` / ``model_trainer.py``).

Architecture, as the official trainer: input projection Dense(d_model) plus a learned positional
embedding; pre-LN blocks (LN -> multi-head attention -> residual -> LN -> GELU MLP of width
4 d_model -> residual); a final LN and a linear read-out of the y slot at the query positions.
Loss: squared error on query positions only (the in-context targets are inputs, not labels).
The two models differ *only* in the boolean attention mask (:func:`make_icl_mask`).

Defaults of :class:`ICLTransformer` / :class:`ICLTrainConfig` are the spec's laptop setting
(the paper/official defaults in brackets): d_model 64 [512], 4 layers [12], 4 heads [8], d = 8
[16-ish], 24 examples + 8 queries [40 + 20], AdamW lr 1e-3 [1e-4] with 20% linear warm-up and
cosine decay, 3 000 steps [5000 x 100] of fresh prompts, batch 64. The claim
``trained_prefix_vs_causal`` runs a smaller model to fit its CPU budget (d_model 32, 3 layers,
2 heads, d = 5, 16 + 4, 1 400 steps; see its docstring). Only the final layer is read out
(the official code also trains per-layer probes with stop-gradient; they do not affect the final
prediction). ``shared_block=True`` reuses one block in every layer (the paper's "SL" variant).
The T5 / PaLM-2 / PaLI-X experiments (Sec. 5.3) need pre-trained large models and are not
imitated here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .icl_tasks import ICLBatch, sample_icl_batch

__all__ = [
    "ICLTrainConfig",
    "ICLTransformer",
    "make_icl_mask",
    "query_mse",
    "train_icl_transformer",
]


def make_icl_mask(n_context: int, n_query: int, mode: Literal["prefix", "causal"] = "prefix",
                  device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean attention mask (True = may attend), shape (n_context + n_query,) * 2.

    Row i attends to column j. Every position attends to the n in-context examples only (queries
    are invisible to everyone, themselves included); under ``causal`` example j sees examples
    1..j, itself included. Queries always see all n examples.
    """
    for name, v, lo in (("n_context", n_context, 1), ("n_query", n_query, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if mode not in ("prefix", "causal"):
        raise ValueError(f"mode must be 'prefix' or 'causal', got {mode!r}")
    t = n_context + n_query
    mask = torch.zeros(t, t, dtype=torch.bool, device=device)
    mask[:, :n_context] = True  # official: ones on the first n columns
    if mode == "causal":
        mask[:n_context, :n_context] = torch.ones(n_context, n_context, dtype=torch.bool,
                                                  device=device).tril()
    return mask


class _Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, c = h.shape
        q, k, v = self.qkv(self.ln1(h)).view(b, t, 3, self.n_heads, c // self.n_heads) \
            .permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        h = h + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return h + self.mlp(self.ln2(h))


class ICLTransformer(nn.Module):
    """Pre-LN softmax transformer reading prompts [y_j, x_j] ... [0, x_q].

    d_x: input dimension d; d_y: width of the y slot (1 for regression, K for multiclass);
    max_len: longest prompt (positional-embedding table size). ``mask``: 'prefix' or 'causal'.
    forward(tokens: (batch, n + m, d_y + d_x), n_context=n) -> (batch, m, d_y) query predictions;
    tokens must be finite floats (another float dtype is cast to the parameters' dtype).
    """

    def __init__(self, d_x: int, d_model: int = 64, n_layers: int = 4, n_heads: int = 4,
                 shared_block: bool = False, mask: Literal["prefix", "causal"] = "prefix",
                 d_y: int = 1, max_len: int = 64):
        super().__init__()
        for name, v in (("d_x", d_x), ("d_model", d_model), ("n_layers", n_layers),
                        ("n_heads", n_heads), ("d_y", d_y), ("max_len", max_len)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        if mask not in ("prefix", "causal"):
            raise ValueError(f"mask must be 'prefix' or 'causal', got {mask!r}")
        self.d_x, self.d_y, self.mask_mode, self.n_layers = d_x, d_y, mask, n_layers
        self.embed = nn.Linear(d_y + d_x, d_model)
        self.pos = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        n_blocks = 1 if shared_block else n_layers
        self.blocks = nn.ModuleList(_Block(d_model, n_heads) for _ in range(n_blocks))
        self.ln_f = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, d_y)

    def forward(self, tokens: torch.Tensor, n_context: int) -> torch.Tensor:
        if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3:
            raise ValueError("tokens must be a tensor of shape (batch, n + m, d_y + d_x)")
        if not tokens.is_floating_point():
            raise TypeError(f"tokens must be a floating-point tensor, got dtype {tokens.dtype}")
        if not bool(torch.isfinite(tokens).all()):
            raise ValueError("tokens must be finite (found NaN or inf)")
        # another float width (e.g. float64 from numpy) is cast to the parameters' dtype
        tokens = tokens.to(self.embed.weight.dtype)
        if tokens.shape[-1] != self.d_y + self.d_x:
            raise ValueError(f"tokens' last dim must be d_y + d_x = {self.d_y + self.d_x}, "
                             f"got {tokens.shape[-1]}")
        t = tokens.shape[1]
        if t > self.pos.shape[0]:
            raise ValueError(f"prompt length {t} exceeds max_len {self.pos.shape[0]}")
        if isinstance(n_context, bool) or not isinstance(n_context, int) or not 1 <= n_context < t:
            raise ValueError(f"n_context must be an int in [1, {t - 1}], got {n_context!r}")
        mask = make_icl_mask(n_context, t - n_context, self.mask_mode, tokens.device)
        h = self.embed(tokens) + self.pos[:t]
        for layer in range(self.n_layers):
            h = self.blocks[layer % len(self.blocks)](h, mask)
        return self.readout(self.ln_f(h[:, n_context:]))


@dataclass(frozen=True)
class ICLTrainConfig:
    """Training setup (our CPU defaults; the official ones are in the module docstring)."""

    d: int = 8
    n_context: int = 24
    n_query: int = 8
    task: Literal["linear", "sigmoid", "multiclass"] = "linear"
    steps: int = 3000
    batch: int = 64
    lr: float = 1e-3
    weight_decay: float = 1e-4
    warmup_fraction: float = 0.2
    n_classes: int = 4


def query_mse(model: ICLTransformer, batch: ICLBatch) -> float:
    """Mean squared error of the model's query predictions on ``batch`` (no gradient)."""
    model.eval()
    with torch.no_grad():
        pred = model(torch.as_tensor(batch.tokens), batch.n_context)
        target = torch.as_tensor(batch.query_targets, dtype=pred.dtype)
        return float(((pred - target) ** 2).mean())


def train_icl_transformer(model: ICLTransformer, config: ICLTrainConfig, data_seed: int,
                          progress=None) -> list[float]:
    """Train ``model`` on fresh prompts from ``np.random.default_rng(data_seed)`` (one new batch
    per step, so two models trained with the same ``data_seed`` see the same stream).

    AdamW, linear warm-up over ``warmup_fraction`` of the steps then cosine decay to 0; loss =
    squared error on the query positions only. Returns the training loss per step.
    """
    if not isinstance(config, ICLTrainConfig):
        raise TypeError(f"config must be an ICLTrainConfig, got {type(config).__name__}")
    if config.steps < 1:
        raise ValueError(f"config.steps must be >= 1, got {config.steps}")
    rng = np.random.default_rng(data_seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, int(config.warmup_fraction * config.steps))

    def schedule(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, config.steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    losses = []
    model.train()
    for step in range(config.steps):
        b = sample_icl_batch(config.batch, config.n_context, config.n_query, config.d,
                             config.task, rng=rng, n_classes=config.n_classes)
        pred = model(torch.as_tensor(b.tokens), b.n_context)
        loss = F.mse_loss(pred, torch.as_tensor(b.query_targets, dtype=pred.dtype))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if progress is not None and (step + 1) % 100 == 0:
            progress((step + 1) / config.steps)
    model.eval()
    return losses
