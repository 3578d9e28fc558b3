"""Perception interfaces of Cosmos (paper Sec. 3.1-3.2) and their laptop stand-ins.

Cosmos takes its entities from SAM (an :class:`EntitySegmenter`) and its symbols from CLIP used
zero-shot (an :class:`AttributeLabeler`: per attribute, pick the vocabulary word whose prompt is
most similar to the decoded slot image). Both are foundation models that are out of reach here
(no weights ship offline, and SAM/open_clip import torchvision), so the interfaces are protocols
and the claims plug in:

- :class:`ConnectedComponentSegmenter`: the non-background connected components of the image
  (the renderer leaves a gap between cells, so each component is one object);
- :class:`FrozenAttributeLabeler`: a small CNN classifier per attribute, trained on *single-object*
  renders (separate data that holds no scene and hence no combination) by
  :func:`train_attribute_labeler`, then frozen: the stand-in for a foundation model's prior
  knowledge of shapes and colors. Labels are argmaxes computed under ``torch.no_grad`` on detached
  inputs, so no gradient ever reaches the labeler (the paper's labels are not learned either; only
  the symbol vectors they select are).

Images everywhere in this package are float RGB in [0, 1]; :func:`as_float_images` is the one
place that turns an input into that form (uint8 pixels are scaled by 1/255, other integer types
and floats outside [0, 1] are refused), so that a uint8 frame is never read as floats in
[0, 255] (issue 38).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

__all__ = [
    "AttributeClassifier",
    "AttributeLabeler",
    "ConnectedComponentSegmenter",
    "EntitySegmenter",
    "FrozenAttributeLabeler",
    "as_float_images",
    "fit_attribute_classifier",
    "train_attribute_labeler",
]


def as_float_images(images: object, name: str = "images", *,
                    check_range: bool = True) -> torch.Tensor:
    """``images`` (a numpy array or tensor) as a float32 tensor with values in [0, 1].

    uint8 is read as 8-bit pixels and divided by 255 (exact: 255 maps to 1.0); any other integer
    or bool dtype is a TypeError (its scale is unknown); floats are cast to float32 and, with
    ``check_range``, must lie in [0, 1] (a float image in [0, 255] is a ValueError naming the
    fix). The shape is not checked here.
    """
    x = images if isinstance(images, torch.Tensor) else torch.as_tensor(np.asarray(images))
    if x.dtype == torch.uint8:
        return x.to(torch.float32) / 255.0
    if not x.is_floating_point():
        raise TypeError(f"{name} must be float RGB in [0, 1] or uint8 pixels in [0, 255], got "
                        f"dtype {x.dtype}")
    x = x.to(torch.float32)
    if check_range and x.numel():
        lo, hi = float(x.min()), float(x.max())
        if not (0.0 <= lo and hi <= 1.0):
            raise ValueError(f"{name} must be float RGB in [0, 1], got values in [{lo:g}, "
                             f"{hi:g}]; pass 8-bit images as uint8 (scaled by 1/255) or divide "
                             "by 255")
    return x


@runtime_checkable
class EntitySegmenter(Protocol):
    """Splits an image into entities (SAM in the paper)."""

    def segment(self, image: torch.Tensor) -> torch.Tensor:
        """image: (3, H, W) -> boolean masks (K, H, W), one per entity."""
        ...


@runtime_checkable
class AttributeLabeler(Protocol):
    """Labels entity images per attribute (CLIP zero-shot in the paper).

    ``attributes`` maps each attribute name to its vocabulary, in the canonical attribute order.
    """

    attributes: Mapping[str, Sequence[str]]

    def label(self, images: torch.Tensor, attribute: str) -> torch.Tensor:
        """images: (N, 3, H, W) -> LongTensor (N,) of indices into ``attributes[attribute]``."""
        ...


class ConnectedComponentSegmenter:
    """Entities = connected components (8-connectivity) of pixels brighter than ``threshold`` in
    some channel, in raster order of their first pixel."""

    def __init__(self, threshold: float = 0.1) -> None:
        if not 0.0 <= float(threshold) < 1.0:
            raise ValueError(f"threshold must be in [0, 1), got {threshold}")
        self.threshold = float(threshold)

    def segment(self, image: torch.Tensor) -> torch.Tensor:
        from scipy import ndimage

        if not isinstance(image, torch.Tensor) or image.ndim != 3 or image.shape[0] != 3:
            raise ValueError("image must be a (3, H, W) tensor, got "
                             f"{getattr(image, 'shape', type(image).__name__)}")
        pixels = as_float_images(image.detach().cpu(), "image", check_range=False)
        fg = (pixels.numpy().max(axis=0) > self.threshold)
        labels, n = ndimage.label(fg, structure=np.ones((3, 3), bool))
        masks = np.stack([labels == i for i in range(1, n + 1)]) if n else np.zeros(
            (0,) + fg.shape, bool)
        return torch.from_numpy(masks).to(image.device)


class AttributeClassifier(nn.Module):
    """A small CNN with one linear head per attribute: (N, 3, H, W) -> {attribute: (N, n_values)}
    logits. ``patch`` is the stride of the first (patchifying) convolution."""

    def __init__(self, attribute_sizes: Mapping[str, int], image_size: int, patch: int = 4,
                 width: int = 32) -> None:
        super().__init__()
        if image_size % patch:
            raise ValueError(f"image_size {image_size} must be a multiple of patch {patch}")
        self.features = nn.Sequential(
            nn.Conv2d(3, width, patch, patch), nn.ReLU(),
            nn.Conv2d(width, width, 1), nn.ReLU(),
            nn.AdaptiveMaxPool2d(1), nn.Flatten())  # position-invariant: max over cells
        self.heads = nn.ModuleDict({a: nn.Linear(width, n) for a, n in attribute_sizes.items()})

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.features(images)
        return {a: head(h) for a, head in self.heads.items()}


class FrozenAttributeLabeler:
    """An :class:`AttributeLabeler` over a frozen :class:`AttributeClassifier`."""

    def __init__(self, classifier: AttributeClassifier,
                 attributes: Mapping[str, Sequence[str]]) -> None:
        from iclr24.kits.frozen_standins import freeze

        if set(classifier.heads) != set(attributes):
            raise ValueError("attributes must name exactly the classifier's heads "
                             f"{sorted(classifier.heads)}, got {sorted(attributes)}")
        self.classifier = freeze(classifier)
        self.classifier.zero_grad(set_to_none=True)  # no stale training gradients either
        self.attributes = {a: tuple(v) for a, v in attributes.items()}

    def label(self, images: torch.Tensor, attribute: str) -> torch.Tensor:
        if attribute not in self.attributes:
            raise ValueError(f"attribute must be one of {list(self.attributes)}, got "
                             f"{attribute!r}")
        if not isinstance(images, torch.Tensor) or images.ndim != 4 or images.shape[1] != 3:
            raise ValueError("images must be an (N, 3, H, W) tensor, got "
                             f"{getattr(images, 'shape', type(images).__name__)}")
        # decoded slot images may overshoot [0, 1] slightly: only the dtype is checked here
        pixels = as_float_images(images.detach(), "images", check_range=False)
        with torch.no_grad():
            return self.classifier(pixels)[attribute].argmax(dim=-1)


def fit_attribute_classifier(model: AttributeClassifier, images: np.ndarray, labels: np.ndarray,
                             *, seed: int = 0, steps: int = 150, batch_size: int = 64,
                             noise: float = 0.15, lr: float = 5e-3) -> None:
    """Train ``model`` in place on single-object renders.

    images: (N, 3, H, W) float in [0, 1] (or uint8 pixels); labels: (N, n_attributes) int,
    columns in the order of ``model.heads``. Training adds Gaussian pixel noise (std
    ``noise``) and random brightness so the labeler tolerates the blur of decoded slot images,
    as a foundation model would.
    """
    images_t = as_float_images(images)
    labels_t = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    if images_t.ndim != 4 or images_t.shape[1] != 3:
        raise ValueError(f"images must be (N, 3, H, W), got {tuple(images_t.shape)}")
    names = list(model.heads)
    if labels_t.shape != (images_t.shape[0], len(names)):
        raise ValueError(f"labels must be (N, {len(names)}), got {tuple(labels_t.shape)}")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        idx = torch.randint(images_t.shape[0], (batch_size,), generator=gen)
        scale = 0.6 + 0.4 * torch.rand(batch_size, 1, 1, 1, generator=gen)
        x = images_t[idx] * scale + noise * torch.randn(images_t[idx].shape, generator=gen)
        logits = model(x.clamp(0, 1))
        loss = sum(nn.functional.cross_entropy(logits[a], labels_t[idx, i])
                   for i, a in enumerate(names))
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()


def train_attribute_labeler(images: np.ndarray, labels: np.ndarray,
                            attributes: Mapping[str, Sequence[str]], *, seed: int = 0,
                            **fit_kwargs: float) -> FrozenAttributeLabeler:
    """A fresh :class:`AttributeClassifier` fitted by :func:`fit_attribute_classifier` on
    single-object renders, frozen into a :class:`FrozenAttributeLabeler`."""
    images = np.asarray(images)
    if images.ndim != 4:
        raise ValueError(f"images must be (N, 3, H, W), got shape {images.shape}")
    with torch.random.fork_rng():  # seeded parameter init without touching the global stream
        torch.manual_seed(seed)
        model = AttributeClassifier({a: len(v) for a, v in attributes.items()}, images.shape[-1])
    fit_attribute_classifier(model, images, labels, seed=seed, **fit_kwargs)
    return FrozenAttributeLabeler(model, attributes)
