"""Training loops of the NfgTransformer tasks (official ``run_experiment.ipynb``), scaled down.

- :class:`NfgNashSolver` = :class:`~.network.NfgTransformer` + :class:`~.network.NashHead`,
  trained without labels by minimising NashConv (max over players, the official NE loss) of
  softmax(logits) on freshly sampled L2-invariant games (:func:`train_nash_solver`).
- :class:`NfgPayoffPredictor` = encoder + :class:`~.network.PayoffHead`, trained on masked
  DISC games to reconstruct every payoff (official loss: MSE over all payoffs; the inpainting MSE
  on unobserved entries is what is reported) (:func:`train_payoff_predictor`).

Optimiser: AdamW (weight decay 0.1, not on biases or norm scales, as the official mask) with a
linear warm-up and cosine decay to 1e-6, as the official schedule. Differences: the official
adaptive gradient clipping (0.01) is replaced by global-norm clipping at 1.0, and the claims use
far fewer steps (hundreds to a few thousand, not 20 000) and smaller models (see ``claims.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from .equilibria import nash_conv
from .games import disc_games, l2_invariant_games
from .network import NashHead, NfgTransformer, PayoffHead

__all__ = [
    "NfgNashSolver",
    "NfgPayoffPredictor",
    "TrainConfig",
    "make_optimizer",
    "train_nash_solver",
    "train_payoff_predictor",
]


@dataclass(frozen=True)
class TrainConfig:
    """Steps, batch and schedule (official: 20 000 steps, batch 32, peak lr 1e-4, 1 000 warm-up
    steps, weight decay 0.1)."""

    steps: int = 3000
    batch: int = 32
    lr: float = 3e-4
    warmup_frac: float = 0.05
    weight_decay: float = 0.1
    clip_norm: float = 1.0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch < 1:
            raise ValueError(f"steps and batch must be >= 1, got {self.steps}, {self.batch}")
        if self.lr <= 0 or not 0 <= self.warmup_frac < 1:
            raise ValueError(f"need lr > 0 and warmup_frac in [0, 1), got {self.lr}, "
                             f"{self.warmup_frac}")


class NfgNashSolver(nn.Module):
    """Encoder + NE head: ``forward(payoffs, mask=None) -> list of (B, T_p) logits``."""

    def __init__(self, **encoder_kwargs):
        super().__init__()
        self.encoder = NfgTransformer(**encoder_kwargs)
        self.head = NashHead(self.encoder.d_model)

    def forward(self, payoffs: torch.Tensor, mask: torch.Tensor | None = None
                ) -> list[torch.Tensor]:
        return self.head(self.encoder(payoffs, mask), mask)


class NfgPayoffPredictor(nn.Module):
    """Encoder + payoff head: ``forward(payoffs, mask) -> (B, N, T_1..T_N)`` predicted payoffs."""

    def __init__(self, head_heads: int = 4, head_qkv_dim: int = 16, **encoder_kwargs):
        super().__init__()
        self.encoder = NfgTransformer(**encoder_kwargs)
        self.head = PayoffHead(self.encoder.d_model, head_heads, head_qkv_dim)

    def forward(self, payoffs: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encoder(payoffs, mask))


def make_optimizer(model: nn.Module, config: TrainConfig
                   ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW with decay on weight matrices only, warm-up + cosine schedule to 1e-6."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    warm = max(1, int(config.warmup_frac * config.steps))
    floor = 1e-6 / config.lr

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        t = (step - warm) / max(1, config.steps - warm)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _train(model: nn.Module, loss_fn: Callable[[], torch.Tensor], config: TrainConfig,
           progress: Callable[[float, str], None] | None) -> list[float]:
    opt, sched = make_optimizer(model, config)
    history = []
    model.train()
    for step in range(config.steps):
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        opt.step()
        sched.step()
        history.append(float(loss.detach()))
        if progress is not None and step % 100 == 0:
            progress(step / config.steps, f"step {step}: loss {history[-1]:.4f}")
    model.eval()
    return history


def train_nash_solver(model: nn.Module, shape: tuple[int, ...], config: TrainConfig,
                      generator: torch.Generator,
                      progress: Callable[[float, str], None] | None = None) -> list[float]:
    """Minimise mean NashConv (max form) of ``softmax(model(G))`` over L2-invariant games of
    ``shape`` sampled on the fly. ``model(payoffs) -> list of logits``. Returns the loss curve."""

    def loss() -> torch.Tensor:
        g = l2_invariant_games(config.batch, shape, generator)
        strategies = [lg.softmax(-1) for lg in model(g)]
        return nash_conv(g, strategies, reduce="max").mean()

    return _train(model, loss, config, progress)


def train_payoff_predictor(model: nn.Module, n_strategies: int, config: TrainConfig,
                           generator: torch.Generator, latent_dim: int = 4,
                           keep_prob: float = 0.5,
                           progress: Callable[[float, str], None] | None = None) -> list[float]:
    """Minimise the MSE over all payoffs of masked DISC games (official RECONSTRUCTION loss);
    ``model(payoffs, mask) -> payoffs``. Returns the loss curve."""

    def loss() -> torch.Tensor:
        g, m = disc_games(config.batch, n_strategies, latent_dim, keep_prob, generator)
        return (model(g, m) - g).square().mean()

    return _train(model, loss, config, progress)
