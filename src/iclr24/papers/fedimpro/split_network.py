"""The low-level / high-level split f = H o L of FedImpro (Sec. 4).

``SplitNet(low, high)`` wraps the two parts: ``features(x)`` returns the flattened low-level
features z = flatten(L(x)) of shape (B, D), ``head(z)`` maps flat features (real or synthetic)
back to the feature-map shape and through H. The official ResNet-18 run cuts after ``layer2``;
our digits MLP (64 -> 128 -> 128 -> 10) cuts after the first Linear+ReLU (D = 128).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SplitNet", "digits_mlp", "split_sequential"]


class SplitNet(nn.Module):
    """f = high o low. ``features`` -> (B, D) flat; ``head`` accepts (B, D) flat features."""

    def __init__(self, low: nn.Module, high: nn.Module) -> None:
        super().__init__()
        self.low = low
        self.high = high
        self.feature_shape: tuple[int, ...] | None = None

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """z = flatten(L(x)): (B, D)."""
        h = self.low(x)
        self.feature_shape = tuple(h.shape[1:])
        return h.flatten(1)

    def head(self, z: torch.Tensor) -> torch.Tensor:
        """H applied to flat features z: (B, D), reshaped to L's output shape first."""
        if self.feature_shape is not None and len(self.feature_shape) > 1:
            z = z.view(z.shape[0], *self.feature_shape)
        return self.high(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))

    def feature_dim(self, example: torch.Tensor) -> int:
        """D for inputs shaped like ``example`` (one forward pass, no gradient)."""
        with torch.no_grad():
            return int(self.features(example[:1]).shape[1])


def split_sequential(model: nn.Sequential, cut: int) -> SplitNet:
    """Split an ``nn.Sequential`` into L = model[:cut] and H = model[cut:] (shared modules)."""
    if not isinstance(model, nn.Sequential):
        raise TypeError(f"model must be an nn.Sequential, got {type(model).__name__}")
    if not isinstance(cut, int) or not 0 < cut < len(model):
        raise ValueError(f"cut must be an int in [1, {len(model) - 1}], got {cut!r}")
    return SplitNet(model[:cut], model[cut:])


def digits_mlp(in_dim: int = 64, hidden: int = 128, num_classes: int = 10, *,
               generator_seed: int = 0) -> SplitNet:
    """The spec's MLP 64 -> 128 -> 128 -> 10 (ReLU), split after the first Linear+ReLU."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(generator_seed)
        model = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                              nn.ReLU(), nn.Linear(hidden, num_classes))
    return split_sequential(model, 2)
