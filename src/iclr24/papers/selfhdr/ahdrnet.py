"""AHDRNet (Yan et al., CVPR 2019), the first of the four architectures SelfHDR trains; a
narrow version of the official layout (cszhilu1998/SelfHDR, models/ahdrnet.py).

Layout: a shared 3x3 conv embeds each 6-channel frame (H_i, I_i); attention maps from the
concatenated (non-reference, reference) features gate the non-reference features (sigmoid of two
3x3 convs); the three are fused by a 3x3 conv and passed through three dilated residual dense
blocks (DRDB: dilation-2 dense layers, 1x1 fusion, residual), global feature fusion (1x1, 3x3),
a global residual to the reference features, and an output conv with a sigmoid.

Scaled down: the official defaults are 64 features, 5 dense layers per block, growth 32 in 3
blocks (~1.4M parameters); the claims use :class:`~.training.SelfHDRConfig`'s defaults, 8
features, 2 dense layers, growth 4, 2 blocks (about 12 thousand parameters). The output is
``sigmoid(.) * out_scale``; with times relative to the short frame (Kalantari's scale) radiance
stays below 1/t_short = 1, so the trainer's ``out_scale`` is 1, as in the official code.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["AHDRNet"]

_INITIAL_LEVEL = 0.025  # the output at init, in linear radiance


class _DilatedDenseLayer(nn.Module):
    def __init__(self, channels: int, growth: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, growth, 3, padding=2, dilation=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, torch.relu(self.conv(x))], 1)


class _DRDB(nn.Module):
    """Dilated residual dense block."""

    def __init__(self, channels: int, layers: int, growth: int):
        super().__init__()
        self.dense = nn.Sequential(*[_DilatedDenseLayer(channels + i * growth, growth)
                                     for i in range(layers)])
        self.fuse = nn.Conv2d(channels + layers * growth, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fuse(self.dense(x))


class AHDRNet(nn.Module):
    """Attention-guided HDR network: ``forward(x1, x2, x3) -> Y``.

    x1, x2, x3: (B, 6, H, W) each, the concat (H_i, I_i) of the short, reference and long frame;
    returns Y: (B, 3, H, W) linear HDR aligned to the reference, in [0, out_scale]."""

    def __init__(self, channels: int = 64, dense_layers: int = 5, growth: int = 32,
                 blocks: int = 3, out_scale: float = 1.0):
        super().__init__()
        for name, v in (("channels", channels), ("dense_layers", dense_layers),
                        ("growth", growth), ("blocks", blocks)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not out_scale > 0:
            raise ValueError(f"out_scale must be > 0, got {out_scale!r}")
        c = channels
        self.out_scale = float(out_scale)
        self.embed = nn.Conv2d(6, c, 3, padding=1)
        self.att_short = nn.Sequential(nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.LeakyReLU(),
                                       nn.Conv2d(2 * c, c, 3, padding=1), nn.Sigmoid())
        self.att_long = nn.Sequential(nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.LeakyReLU(),
                                      nn.Conv2d(2 * c, c, 3, padding=1), nn.Sigmoid())
        self.merge = nn.Conv2d(3 * c, c, 3, padding=1)
        self.blocks = nn.ModuleList(_DRDB(c, dense_layers, growth) for _ in range(blocks))
        self.gff = nn.Sequential(nn.Conv2d(blocks * c, c, 1), nn.Conv2d(c, c, 3, padding=1))
        self.up = nn.Conv2d(c, c, 3, padding=1)
        self.out = nn.Conv2d(c, 3, 3, padding=1)
        self.act = nn.LeakyReLU()
        # start at a dark mid-tone radiance (0.025 on the short frame's scale, below the median
        # of a scene exposed for a reference at +2 EV), not at out_scale / 2: the sigmoid then
        # does not have to unlearn a large offset first
        level = min(_INITIAL_LEVEL / out_scale, 0.5)
        nn.init.constant_(self.out.bias, float(torch.logit(torch.tensor(level))))

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, x3: torch.Tensor) -> torch.Tensor:
        for name, x in (("x1", x1), ("x2", x2), ("x3", x3)):
            if not isinstance(x, torch.Tensor) or x.ndim != 4 or x.shape[1] != 6:
                shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{name} must be a (B, 6, H, W) tensor (H_i and I_i), got {shape}")
        if not x1.shape == x2.shape == x3.shape:
            raise ValueError(f"x1, x2, x3 must share one shape, got {tuple(x1.shape)}, "
                             f"{tuple(x2.shape)}, {tuple(x3.shape)}")
        f1, f2, f3 = (self.act(self.embed(x)) for x in (x1, x2, x3))
        f1 = f1 * self.att_short(torch.cat([f1, f2], 1))  # attention from the reference
        f3 = f3 * self.att_long(torch.cat([f3, f2], 1))
        h = self.merge(torch.cat([f1, f2, f3], 1))
        feats = []
        for block in self.blocks:
            h = block(h)
            feats.append(h)
        h = self.gff(torch.cat(feats, 1)) + f2  # global residual to the reference features
        return torch.sigmoid(self.out(self.up(h))) * self.out_scale
