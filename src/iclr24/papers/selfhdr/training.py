"""SelfHDR's two-stage training (Sec. 3; official train.py with selfhdr1/selfhdr2 models) and
the two reference arms the claims compare it with.

:class:`SelfHDRTrainer` holds a :class:`SelfHDRConfig` and trains AHDRNets on multi-exposure
LDR stacks (N, 3, 3, H, W) (short, reference, long; RGB; in [0, 1]):

1. :meth:`~SelfHDRTrainer.color_labels`: align each stack to the reference and merge, Y_color;
2. :meth:`~SelfHDRTrainer.fit_stage1`: the structure network S on the *unaligned* inputs with
   L_S = L_expand + 4 L_preserve;
3. :meth:`~SelfHDRTrainer.make_structure_labels`: freeze S and run it once over the (aligned,
   as the official code does) training inputs, Y_stru, with no gradient;
4. :meth:`~SelfHDRTrainer.fit_stage2`: the final network F with L_color (mask M_2) + L_stru,
   Gaussian noise (0.5/255, "gauss0.5") added to the reference LDR and H_2 recomputed.

Also :meth:`~SelfHDRTrainer.fit_color_only` (L_color with M = 1, no structure stage) and
:meth:`~SelfHDRTrainer.fit_supervised` (L1 on T(.) against ground truth, the upper bound).

What differs. The paper trains 150 epochs x 1,200 batches of 16 (128 px patches) with lr 1e-4
(step decay every 50 epochs) on Kalantari's real captures; here a few hundred Adam steps with a
larger lr (3e-3, halved at 1/3 and 2/3 of the steps), batches of 8 random 16 px crops of small
synthetic scenes, and the tiny AHDRNet of :mod:`.ahdrnet`. The color-only arm gets the same
reference noise as stage 2 (only the structure part differs); the supervised arm none (as the
official supervised AHDRNet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .ahdrnet import AHDRNet
from .hdr_imaging import (
    GAMMA,
    align_dense,
    align_to_reference,
    ldr_to_hdr,
    merge_aligned,
    mu_tonemap,
    validate_times,
)
from .losses import Perceptual, gradient_ssim_loss, selfhdr_stage1_loss, selfhdr_stage2_loss

__all__ = ["ALIGNMENTS", "SelfHDRConfig", "SelfHDRTrainer", "network_inputs"]

ALIGNMENTS = ("dense", "global")


@dataclass(frozen=True)
class SelfHDRConfig:
    """Hyper-parameters (paper defaults noted where we differ).

    channels/dense_layers/growth/blocks: AHDRNet width (paper 64/5/32/3); steps, batch_size, lr:
    Adam per stage (paper 180k steps, 16, 1e-4); patch_size: random square training crops
    (paper 128; None = whole scenes); noise_std: stage-2 reference noise (0.5/255);
    perceptual: the structure loss on T(.) (paper VGG-19; stand-in default); times: exposure
    times relative to the short frame (Kalantari's convention, EV 0/+2/+4); alignment: how the
    color component aligns the frames, ``"dense"`` (:func:`align_dense`, block-matching flow,
    the stand-in for the paper's optical flow) or ``"global"`` (one translation per frame,
    :func:`align_to_reference`); seed: network init and batch order."""

    channels: int = 8
    dense_layers: int = 2
    growth: int = 4
    blocks: int = 2
    steps: int = 300
    batch_size: int = 8
    patch_size: int | None = 16
    lr: float = 3e-3
    noise_std: float = 0.5 / 255
    perceptual: Perceptual | None = gradient_ssim_loss
    times: tuple[float, float, float] = (1.0, 4.0, 16.0)
    alignment: str = "dense"
    seed: int = 0

    def __post_init__(self):
        if self.patch_size is not None and (isinstance(self.patch_size, bool) or not
                                            isinstance(self.patch_size, int) or self.patch_size < 4):
            raise ValueError(f"patch_size must be an int >= 4 or None, got {self.patch_size!r}")
        for name in ("channels", "dense_layers", "growth", "blocks", "steps", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 <= self.noise_std < 0.5:
            raise ValueError(f"noise_std must be in [0, 0.5), got {self.noise_std!r}")
        validate_times(self.times)
        if self.alignment not in ALIGNMENTS:
            raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {self.alignment!r}")


def _check_stack(ldrs) -> torch.Tensor:
    x = torch.as_tensor(ldrs, dtype=torch.float32)
    if x.ndim != 5 or x.shape[1] != 3 or x.shape[2] != 3:
        raise ValueError(f"ldrs must have shape (N, 3, 3, H, W) (frames short/ref/long, RGB), "
                         f"got {tuple(x.shape)}")
    lo, hi = float(x.min()), float(x.max())
    if lo < 0 or hi > 1:
        raise ValueError(f"ldrs must hold LDR values in [0, 1], got range [{lo:.4g}, {hi:.4g}]")
    return x


def network_inputs(ldrs, times, gamma: float = GAMMA) -> tuple[torch.Tensor, ...]:
    """The three (N, 6, H, W) network inputs ``cat(H_i, I_i)`` of stacks (N, 3, 3, H, W)."""
    x = _check_stack(ldrs)
    ts = validate_times(times)
    return tuple(torch.cat([ldr_to_hdr(x[:, i], ts[i], gamma), x[:, i]], 1) for i in range(3))


class SelfHDRTrainer:
    """Trains SelfHDR's structure and final networks (and the reference arms)."""

    def __init__(self, config: SelfHDRConfig | None = None):
        config = SelfHDRConfig() if config is None else config
        if not isinstance(config, SelfHDRConfig):
            raise TypeError(f"config must be a SelfHDRConfig, got {type(config).__name__}")
        self.config = config

    def new_network(self) -> AHDRNet:
        """A freshly initialised AHDRNet (same init for every arm of one seed)."""
        c = self.config
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(c.seed)
            return AHDRNet(c.channels, c.dense_layers, c.growth, c.blocks,
                           out_scale=1.0 / c.times[0])  # radiance <= 1 / t_short = 1

    def color_labels(self, ldrs) -> tuple[torch.Tensor, torch.Tensor]:
        """Align every stack to its reference (``config.alignment``: dense block-matching flow,
        :func:`align_dense`, or one global shift, :func:`align_to_reference`) and merge: returns
        (Y_color (N, 3, H, W), the aligned stacks (N, 3, 3, H, W))."""
        x = _check_stack(ldrs).numpy()
        align = align_dense if self.config.alignment == "dense" else align_to_reference
        aligned = np.stack([align(s, self.config.times)[0] for s in x])
        y = merge_aligned(aligned, self.config.times)
        return torch.as_tensor(y, dtype=torch.float32), torch.as_tensor(aligned, dtype=torch.float32)

    def _fit(self, ldrs, loss_fn: Callable[..., torch.Tensor], targets: tuple[torch.Tensor, ...],
             noisy_reference: bool = False) -> AHDRNet:
        c = self.config
        x1, x2, x3 = network_inputs(ldrs, c.times)
        n = x1.shape[0]
        for t in targets:
            if t.shape[0] != n or t.shape[-2:] != x1.shape[-2:]:
                raise ValueError(f"labels of shape {tuple(t.shape)} do not match {n} stacks of "
                                 f"{tuple(x1.shape[-2:])} pixels")
        net = self.new_network()
        net.train()
        opt = torch.optim.Adam(net.parameters(), lr=c.lr)
        sched = torch.optim.lr_scheduler.MultiStepLR(
            opt, milestones=[c.steps // 3, 2 * c.steps // 3], gamma=0.5)
        gen = torch.Generator().manual_seed(c.seed + 1)
        for _ in range(c.steps):
            idx = torch.randint(0, n, (min(c.batch_size, n),), generator=gen)
            h, w = x1.shape[-2:]
            p = min(c.patch_size or h, h, w)
            oy, ox = (int(torch.randint(0, m - p + 1, (1,), generator=gen)) for m in (h, w))
            crop = (idx, slice(None), slice(oy, oy + p), slice(ox, ox + p))
            b1, b2, b3 = x1[crop], x2[crop], x3[crop]
            if noisy_reference:  # "gauss0.5" on I_2 only, H_2 recomputed from it
                i2 = (b2[:, 3:] + c.noise_std * torch.randn(b2[:, 3:].shape, generator=gen)
                      ).clamp(0, 1)
                b2 = torch.cat([ldr_to_hdr(i2, c.times[1]), i2], 1)
            loss = loss_fn(net(b1, b2, b3), *(t[crop] for t in targets))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        net.eval()
        return net

    def fit_stage1(self, ldrs, y_color: torch.Tensor) -> AHDRNet:
        """Structure network S on the unaligned stacks: L_expand + 4 L_preserve."""
        x = _check_stack(ldrs)
        i2 = x[:, 1]
        h2 = ldr_to_hdr(i2, self.config.times[1])

        def loss(out, yc, i2b, h2b):
            return selfhdr_stage1_loss(out, yc, i2b, h2b)

        return self._fit(x, loss, (y_color, i2, h2))

    @torch.no_grad()
    def make_structure_labels(self, structure_net: nn.Module, ldrs) -> torch.Tensor:
        """Y_stru (N, 3, H, W): S frozen (:func:`~iclr24.kits.frozen_standins.freeze`) and run once, no gradient."""
        from iclr24.kits.frozen_standins import freeze

        freeze(structure_net)
        return self.predict(structure_net, ldrs)

    def fit_stage2(self, ldrs, y_color: torch.Tensor, y_stru: torch.Tensor) -> AHDRNet:
        """Final network F: L_color (mask M_2) + 1 * perceptual(T(F), T(Y_stru)); noisy I_2."""
        if y_stru.requires_grad:
            raise ValueError("y_stru must be computed once with S frozen (it requires grad); "
                             "use make_structure_labels")
        perceptual = self.config.perceptual

        def loss(out, yc, ys):
            return selfhdr_stage2_loss(out, yc, ys, perceptual)

        return self._fit(ldrs, loss, (y_color, y_stru), noisy_reference=True)

    def fit_color_only(self, ldrs, y_color: torch.Tensor) -> AHDRNet:
        """The arm without the structure component: L1(T(F), T(Y_color)) (M = 1)."""
        def loss(out, yc):
            return (mu_tonemap(out) - mu_tonemap(yc)).abs().mean()

        return self._fit(ldrs, loss, (y_color,), noisy_reference=True)

    def fit_supervised(self, ldrs, gt: torch.Tensor) -> AHDRNet:
        """The supervised upper bound: L1(T(F), T(GT)) (the official AHDRNet loss)."""
        def loss(out, y):
            return (mu_tonemap(out) - mu_tonemap(y)).abs().mean()

        return self._fit(ldrs, loss, (torch.as_tensor(gt, dtype=torch.float32),))

    @torch.no_grad()
    def predict(self, net: nn.Module, ldrs, batch_size: int = 64) -> torch.Tensor:
        """Run ``net`` over stacks (N, 3, 3, H, W) in eval mode: (N, 3, H, W) linear HDR."""
        x1, x2, x3 = network_inputs(ldrs, self.config.times)
        was_training = net.training
        net.eval()
        out = torch.cat([net(x1[i:i + batch_size], x2[i:i + batch_size], x3[i:i + batch_size])
                         for i in range(0, x1.shape[0], batch_size)])
        net.train(was_training)
        return out
