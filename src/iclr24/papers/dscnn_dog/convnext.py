"""A micro ConvNeXt (Liu et al. 2022) for 32 x 32 grey images, a standard-CNN twin, and the
training loop used by the claims.

Layout: stem 2x2 conv stride 2 -> 3 stages (channels 32/64/128, 2 blocks each; LayerNorm +
2x2 stride-2 conv between stages) -> global average pool -> LayerNorm -> linear head. A block
is the ConvNeXt v1 block in its original order: depthwise 7x7 -> LayerNorm -> 1x1 expand x4
-> GELU -> 1x1 project -> layer scale -> residual. Initialisation as ConvNeXt (truncated normal,
std 0.02; layer scale 1e-6); AdamW. 2*32 + 2*64 + 2*128 = 448 depthwise 7x7 kernels.

:class:`MicroCNN` is the same network with each depthwise conv replaced by a dense 7x7 conv
(groups = 1): the "standard CNN" control whose 7x7 (output, input) slices are compared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["ConvNeXtBlock", "MicroCNN", "MicroConvNeXt", "TrainConfig", "train_classifier"]


class _ChannelsFirstLayerNorm(nn.Module):
    """LayerNorm over the channel axis of (B, C, H, W) tensors (as ConvNeXt's downsampling)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """x: (B, C, H, W) -> same shape. ``depthwise=False`` gives the dense-conv control."""

    def __init__(self, dim: int, kernel_size: int = 7, layer_scale: float = 1e-6,
                 depthwise: bool = True) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size, padding=kernel_size // 2,
                                groups=dim if depthwise else 1)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(layer_scale * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.dwconv(x).permute(0, 2, 3, 1)  # dwconv -> norm -> MLP, ConvNeXt's order
        h = self.pwconv2(self.act(self.pwconv1(self.norm(h))))
        return x + (self.gamma * h).permute(0, 3, 1, 2)


class MicroConvNeXt(nn.Module):
    """images (B, in_chans, H, W) -> logits (B, n_classes)."""

    def __init__(self, n_classes: int = 4, in_chans: int = 1, dims=(32, 64, 128),
                 depths=(2, 2, 2), kernel_size: int = 7, layer_scale: float = 1e-6,
                 depthwise: bool = True) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(in_chans, dims[0], 2, stride=2),
                                  _ChannelsFirstLayerNorm(dims[0]))
        self.downsample = nn.ModuleList(
            nn.Sequential(_ChannelsFirstLayerNorm(dims[i]), nn.Conv2d(dims[i], dims[i + 1], 2, 2))
            for i in range(len(dims) - 1))
        self.stages = nn.ModuleList(
            nn.Sequential(*(ConvNeXtBlock(d, kernel_size, layer_scale, depthwise)
                            for _ in range(n)))
            for d, n in zip(dims, depths))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], n_classes)
        self.apply(self._init)

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for i, stage in enumerate(self.stages):
            if i:
                x = self.downsample[i - 1](x)
            x = stage(x)
        return self.head(self.norm(x.mean(dim=(2, 3))))


class MicroCNN(MicroConvNeXt):
    """The same network with dense 7x7 convolutions in the blocks (the standard-CNN control)."""

    def __init__(self, n_classes: int = 4, in_chans: int = 1, dims=(32, 64, 128),
                 depths=(2, 2, 2), kernel_size: int = 7, layer_scale: float = 1e-6) -> None:
        super().__init__(n_classes, in_chans, dims, depths, kernel_size, layer_scale,
                         depthwise=False)


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1000
    batch_size: int = 64
    lr: float = 2e-3
    weight_decay: float = 0.05
    seed: int = 0


def train_classifier(model: nn.Module, sample_batch: Callable[[np.random.Generator, int],
                     tuple[np.ndarray, np.ndarray]], config: TrainConfig = TrainConfig(),
                     progress: Callable[[float], None] | None = None) -> list[float]:
    """AdamW on cross-entropy; ``sample_batch(rng, n) -> (images (n, H, W), labels (n,))``.
    Trains ``model`` in place on one torch thread; returns the loss per step."""
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(config.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    device = next(model.parameters()).device
    losses = []
    with torch_threads(1):
        model.train()
        for it in range(config.steps):
            x, y = sample_batch(rng, config.batch_size)
            xt = torch.as_tensor(x, dtype=torch.float32, device=device)[:, None]
            loss = nn.functional.cross_entropy(model(xt), torch.as_tensor(y, device=device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if progress is not None and (it + 1) % max(1, config.steps // 10) == 0:
                progress((it + 1) / config.steps)
        model.eval()
    return losses
