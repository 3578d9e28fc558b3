"""The pretrained parts as interfaces, so real models and the tiny stand-ins are interchangeable.

The paper freezes three big models: DeepFloyd IF stage I with its T5-XXL text encoder (the
text-to-image model the concepts are distilled from), BLIP-2 (the VQA model whose answers anchor
each axis) and CLIP ViT-L/14 (whose multi-layer CLS features the concept encoders read). Their
weights are out of reach here (no downloads, CPU only); a user with local weights wraps them in
these protocols. The claims plug in the stand-ins of :mod:`.standins`.

Image conventions: every image that crosses these interfaces is ``(B, 3, H, W)`` in [0, 1];
the text-to-image model works in [-1, 1] internally (as IF does) and a feature extractor does
its own preprocessing (CLIP's resize and mean/std), so the conversions are explicit and local.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch

__all__ = ["ImageFeatureExtractor", "TextEncoder", "TextToImageModel", "VQAModel"]


@runtime_checkable
class TextEncoder(Protocol):
    """A frozen text encoder that can run on input embeddings (T5's ``inputs_embeds``)."""

    embedding_dim: int

    def input_embeddings(self, token_ids: torch.Tensor) -> torch.Tensor:
        """The embedding-table rows of ``token_ids``: (..., L) -> (..., L, embedding_dim)."""

    def __call__(self, inputs_embeds: torch.Tensor) -> torch.Tensor:
        """Encode a sequence of input embeddings: (B, L, D) -> (B, L, C) conditioning."""


@runtime_checkable
class TextToImageModel(Protocol):
    """A frozen diffusion model: noise schedule, eps-prediction and sampling.

    Images are in [-1, 1] here (IF's range); ``cond`` is the text encoder's output (B, L, C).
    """

    image_size: int
    channels: int
    num_timesteps: int

    def add_noise(self, x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) eps, per sample t (B,)."""

    def predict_noise(self, x_t: torch.Tensor, t: torch.Tensor, cond: torch.Tensor
                      ) -> torch.Tensor:
        """eps_theta(x_t, t, cond): (B, channels, H, W)."""

    def sample(self, cond: torch.Tensor, generator: torch.Generator, steps: int, *,
               uncond: torch.Tensor | None = None, guidance: float = 1.0) -> torch.Tensor:
        """Images in [-1, 1] (B, channels, H, W) generated from ``cond``; with ``uncond`` (the
        null caption's encoding) and ``guidance`` w, classifier-free guidance
        eps_u + w (eps_c - eps_u) as IF samples."""


@runtime_checkable
class VQAModel(Protocol):
    """A frozen visual question answering model with a closed answer list (BLIP-2 here)."""

    def answer(self, images: torch.Tensor, question: str, choices: Sequence[str]) -> list[str]:
        """One answer per image (B, 3, H, W in [0, 1]); an answer may fall outside
        ``choices`` (then the caller uses the axis's generic fallback word)."""


@runtime_checkable
class ImageFeatureExtractor(Protocol):
    """A frozen image model whose per-layer global features feed the concept encoders (CLIP)."""

    num_layers: int
    feature_dim: int

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) in [0, 1] -> (B, num_layers, feature_dim)."""
