"""Training the parent networks of the laptop-scale study: the kit's MLP on digits with Adam,
plain, with weight decay, or with an L1 penalty lambda sum|theta| (which sharpens the parameter
distribution toward zero, i.e. raises its kurtosis)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr24.kits.small_classifiers import MLP

__all__ = ["ParentConfig", "train_parent"]


@dataclass(frozen=True)
class ParentConfig:
    """Spec defaults: 64->256->256->10, Adam lr 1e-3, 60 epochs, batch 64."""

    hidden: tuple[int, ...] = (256, 256)
    epochs: int = 60
    lr: float = 1e-3
    batch_size: int = 64
    weight_decay: float = 0.0
    l1: float = 0.0


def train_parent(X: torch.Tensor, y: torch.Tensor, num_classes: int, config: ParentConfig,
                 seed: int) -> MLP:
    """A fresh MLP (seeded init) trained with Adam on CE + l1 * sum_i |theta_i|."""
    if config.weight_decay < 0 or config.l1 < 0:
        raise ValueError(f"weight_decay and l1 must be >= 0, got {config.weight_decay}, "
                         f"{config.l1}")
    gen = torch.Generator().manual_seed(seed)
    model = MLP(X.shape[1], num_classes, config.hidden, generator=gen)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    for _ in range(config.epochs):
        model.train()
        order = torch.as_tensor(rng.permutation(n))
        for start in range(0, n, config.batch_size):
            rows = order[start:start + config.batch_size]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(X[rows]), y[rows])
            if config.l1:
                loss = loss + config.l1 * sum(p.abs().sum() for p in model.parameters())
            loss.backward()
            opt.step()
    return model.eval()
