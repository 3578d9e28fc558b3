"""Collecting 2-D spatial kernels from any PyTorch model.

A depthwise convolution is an ``nn.Conv2d`` with groups == in_channels > 1: each output channel
filters one input channel with its own k x k kernel, weight (C_out, 1, k, k). Grouped
convolutions with another group count, the stem (a regular convolution, and with one input
channel groups == in_channels == 1 is not depthwise either) and 1x1 layers are skipped. Works
on any module tree (a user's timm or torchvision ConvNeXt, MobileNet, ...): only ``nn.Conv2d``
instances are read.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["depthwise_kernels", "is_depthwise", "stack_kernels", "standard_conv_kernels"]


def is_depthwise(conv: nn.Module) -> bool:
    """True for an ``nn.Conv2d`` with groups == in_channels > 1."""
    return isinstance(conv, nn.Conv2d) and conv.in_channels > 1 and \
        conv.groups == conv.in_channels


def _check_model(model) -> None:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")


def depthwise_kernels(model: nn.Module, exclude: tuple[str, ...] = ("stem",)
                      ) -> dict[str, torch.Tensor]:
    """{layer name: kernels (C_out, kh, kw)} for every depthwise conv of ``model`` whose name does
    not start with one of ``exclude``. Raises ``ValueError`` when there is none."""
    _check_model(model)
    out = {}
    for name, mod in model.named_modules():
        if is_depthwise(mod) and not any(name.startswith(e) for e in exclude):
            w = mod.weight.detach().to("cpu", torch.float32)
            out[name] = w[:, 0].clone()  # (C_out, 1, kh, kw) -> (C_out, kh, kw)
    if not out:
        raise ValueError("model has no depthwise convolution (nn.Conv2d with groups == "
                         "in_channels > 1) outside the excluded names "
                         f"{exclude}; nothing to analyse")
    return out


def standard_conv_kernels(model: nn.Module, kernel_size: int = 7,
                          exclude: tuple[str, ...] = ("stem",)) -> dict[str, torch.Tensor]:
    """{layer name: (C_out * C_in / groups, k, k)}: every (output, input) slice of the regular
    (non-depthwise) ``kernel_size`` x ``kernel_size`` convolutions (the standard-CNN control)."""
    _check_model(model)
    out = {}
    for name, mod in model.named_modules():
        if isinstance(mod, nn.Conv2d) and not is_depthwise(mod) and \
                mod.kernel_size == (kernel_size, kernel_size) and \
                not any(name.startswith(e) for e in exclude):
            w = mod.weight.detach().to("cpu", torch.float32)
            out[name] = w.reshape(-1, kernel_size, kernel_size).clone()
    if not out:
        raise ValueError(f"model has no regular {kernel_size}x{kernel_size} convolution")
    return out


def stack_kernels(kernels: dict[str, torch.Tensor]) -> torch.Tensor:
    """Concatenate the per-layer kernels (all of one size) into (N, k, k)."""
    if not kernels:
        raise ValueError("kernels is empty")
    shapes = {tuple(k.shape[1:]) for k in kernels.values()}
    if len(shapes) != 1:
        raise ValueError(f"kernels of several sizes {sorted(shapes)}: analyse each size apart")
    return torch.cat(list(kernels.values()), dim=0)
