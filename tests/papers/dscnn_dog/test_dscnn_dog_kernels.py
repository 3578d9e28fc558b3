"""Kernel extraction: depthwise only (groups == in_channels > 1), stem and grouped convs skipped."""

import pytest
import torch
from torch import nn

from iclr24.papers.dscnn_dog import (
    MicroCNN,
    MicroConvNeXt,
    depthwise_kernels,
    is_depthwise,
    stack_kernels,
    standard_conv_kernels,
)


def test_micro_convnext_has_448_depthwise_kernels():
    m = MicroConvNeXt()
    ks = depthwise_kernels(m)
    assert len(ks) == 6 and all(v.shape[1:] == (7, 7) for v in ks.values())
    assert stack_kernels(ks).shape == (448, 7, 7)
    assert not any(name.startswith("stem") for name in ks)
    blk = m.stages[0][0].dwconv
    assert torch.equal(ks["stages.0.0.dwconv"], blk.weight[:, 0])
    assert m(torch.randn(2, 1, 32, 32)).shape == (2, 4)


def test_grouped_non_depthwise_and_stem_are_skipped():
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3),                       # stem-like, groups == in_channels == 1
        nn.Conv2d(8, 8, 5, groups=8),             # depthwise
        nn.Conv2d(8, 8, 5, groups=2),             # grouped, not depthwise
        nn.Conv2d(8, 16, 3, groups=8),            # depthwise with multiplier 2
        nn.Conv2d(16, 16, 1),
    )
    ks = depthwise_kernels(net, exclude=())
    assert set(ks) == {"1", "3"}
    assert ks["1"].shape == (8, 5, 5) and ks["3"].shape == (16, 3, 3)
    assert not is_depthwise(net[0]) and not is_depthwise(net[2])
    with pytest.raises(ValueError, match="several sizes"):
        stack_kernels(ks)


def test_errors_and_standard_control():
    with pytest.raises(ValueError, match="no depthwise convolution"):
        depthwise_kernels(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()))
    with pytest.raises(TypeError, match="nn.Module"):
        depthwise_kernels("convnext")
    with pytest.raises(ValueError, match="no depthwise"):
        depthwise_kernels(MicroCNN())
    std = standard_conv_kernels(MicroCNN())
    assert stack_kernels(std).shape == (2 * (32 * 32 + 64 * 64 + 128 * 128), 7, 7)
