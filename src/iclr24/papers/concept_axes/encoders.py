"""Concept encoders f_k, one per axis (paper Sec. 3, "Concept encoder").

Each encoder reads the frozen feature extractor's per-layer global features ((layers, dim) per
image; CLIP ViT-L/14 CLS tokens of 12 of 24 layers in the paper, 1024 wide) and maps them to one
word embedding in the text encoder's input space (T5's 4096):

    h_l = Dropout_0.2(W_l x_l)          one linear map per layer
    e_k = W_out LeakyReLU(mean_l h_l)   linear to the input-embedding width

The official code stacks three identical copies of the feature tensor and averages them, which
changes nothing but the dropout masks; it is not repeated here. Defaults are the paper's sizes;
the claims use small ones (4 layers of a small CNN, 32 wide).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ConceptEncoder", "ConceptEncoders"]


class ConceptEncoder(nn.Module):
    """f_k: (B, feat_layers, feat_dim) -> (B, out_dim)."""

    def __init__(self, feat_layers: int = 12, feat_dim: int = 1024, out_dim: int = 4096,
                 dropout: float = 0.2) -> None:
        super().__init__()
        for name, v in (("feat_layers", feat_layers), ("feat_dim", feat_dim),
                        ("out_dim", out_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.feat_layers, self.feat_dim, self.out_dim = feat_layers, feat_dim, out_dim
        # one (feat_dim x feat_dim) map per layer, as a batched weight
        self.layer_weight = nn.Parameter(torch.empty(feat_layers, feat_dim, feat_dim))
        self.layer_bias = nn.Parameter(torch.zeros(feat_layers, feat_dim))
        bound = feat_dim ** -0.5
        nn.init.uniform_(self.layer_weight, -bound, bound)
        self.dropout = nn.Dropout(dropout)
        self.act = nn.LeakyReLU()
        self.out = nn.Linear(feat_dim, out_dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if not isinstance(features, torch.Tensor) or features.ndim != 3 \
                or features.shape[1:] != (self.feat_layers, self.feat_dim):
            got = tuple(features.shape) if isinstance(features, torch.Tensor) else type(features)
            raise ValueError(f"features must be (batch, {self.feat_layers}, {self.feat_dim}), "
                             f"got {got}")
        h = torch.einsum("bli,loi->blo", features, self.layer_weight) + self.layer_bias  # W_l x_l
        h = self.dropout(h).mean(dim=1)                                     # mean over layers
        return self.out(self.act(h))                                        # e_k


class ConceptEncoders(nn.Module):
    """One :class:`ConceptEncoder` per axis; forward stacks them: (B, L, F) -> (B, K, D)."""

    def __init__(self, axes: Sequence[str], **encoder_kwargs) -> None:
        super().__init__()
        if isinstance(axes, str) or not axes or not all(isinstance(a, str) and a for a in axes):
            raise TypeError("axes must be a non-empty sequence of axis names")
        if len(set(axes)) != len(axes):
            raise ValueError(f"axes must be distinct, got {list(axes)}")
        self.axes = tuple(axes)
        self.encoders = nn.ModuleDict({a: ConceptEncoder(**encoder_kwargs) for a in self.axes})

    def encode_axis(self, axis: str, features: torch.Tensor) -> torch.Tensor:
        if axis not in self.encoders:
            raise ValueError(f"unknown axis {axis!r}; axes are {list(self.axes)}")
        return self.encoders[axis](features)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.stack([self.encoders[a](features) for a in self.axes], dim=1)
