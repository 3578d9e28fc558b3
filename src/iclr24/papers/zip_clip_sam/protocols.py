"""The swappable pretrained parts of Zip, as protocols, and the checks at their boundary.

Zip is a pipeline of three frozen models: CLIP (with CLIP Surgery) says *what* is in the image
and *where* (image-level scores and per-class activation maps), the features of one intermediate
layer of a CLIP image encoder give the boundary prior, and SAM turns box prompts into masks.
CLIP/SAM weights cannot be downloaded here, so the claims plug in small stand-ins
(:mod:`.standins`); a user with local weights wraps them in these protocols:

- :class:`SemanticActivator`: ``scores(image, class_names) -> (C,)`` image-level presence
  probabilities and ``activation(image, class_names) -> (C, H, W)`` activation maps at image
  resolution (CLIP Surgery: text features minus the empty-prompt "redundant" feature, patch-text
  similarity, min-max normalised per class, upsampled);
- :class:`DenseFeatureExtractor`: ``features(image) -> (D, h, w)`` (e.g. a ConvNeXt CLIP stage on
  a high-resolution pass of the image);
- :class:`PromptableSegmenter`: ``segment(image, boxes) -> (N, H, W)`` bool masks, one per
  ``(x0, y0, x1, y1)`` box in image pixels (SAM with box prompts).

Images are ``(H, W, 3)`` float arrays with values in [0, 1] throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["DenseFeatureExtractor", "Instance", "PromptableSegmenter", "SemanticActivator",
           "check_class_names", "check_image"]


@runtime_checkable
class SemanticActivator(Protocol):
    """What and where: image-level class scores and per-class activation maps."""

    def scores(self, image: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
        """(C,) presence probabilities in [0, 1]."""
        ...

    def activation(self, image: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
        """(C, H, W) activation maps at the image's resolution."""
        ...


@runtime_checkable
class DenseFeatureExtractor(Protocol):
    """The intermediate-layer features whose clusters give the boundary prior."""

    def features(self, image: np.ndarray) -> np.ndarray:
        """(D, h, w) per-pixel features on the clustering grid."""
        ...


@runtime_checkable
class PromptableSegmenter(Protocol):
    """Box prompts to masks (SAM's role)."""

    def segment(self, image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """(N, H, W) bool masks for boxes (N, 4) given as (x0, y0, x1, y1) image pixels."""
        ...


@dataclass(frozen=True)
class Instance:
    """One predicted instance: mask (H, W) bool, box (x0, y0, x1, y1) in image pixels (exclusive
    max), its class name and a confidence score used to rank detections."""

    mask: np.ndarray
    box: tuple[float, float, float, float]
    label: str
    score: float


def check_image(image: object, name: str = "image") -> np.ndarray:
    """Validate an (H, W, 3) float image with values in [0, 1]; returns it as float32."""
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of shape (H, W, 3), got "
                        f"{type(image).__name__}")
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"{name} must have shape (H, W, 3) (RGB, channels last), got "
                         f"{image.shape}")
    if image.shape[0] < 8 or image.shape[1] < 8:
        raise ValueError(f"{name} must be at least 8x8 pixels, got {image.shape[:2]}")
    if not np.issubdtype(image.dtype, np.floating):
        raise TypeError(f"{name} must be a float array with values in [0, 1], got dtype "
                        f"{image.dtype} (divide uint8 images by 255)")
    if not np.all(np.isfinite(image)) or image.min() < 0.0 or image.max() > 1.0:
        raise ValueError(f"{name} values must be finite and in [0, 1], got range "
                         f"[{np.nanmin(image):.3g}, {np.nanmax(image):.3g}]")
    return image.astype(np.float32, copy=False)


def check_class_names(class_names: object) -> tuple[str, ...]:
    """Validate a non-empty sequence of distinct, non-empty class-name strings."""
    if isinstance(class_names, str) or not isinstance(class_names, Sequence):
        raise TypeError(f"class_names must be a sequence of strings, got "
                        f"{type(class_names).__name__}")
    names = tuple(class_names)
    if not names:
        raise ValueError("class_names is empty: give at least one class to look for")
    if not all(isinstance(c, str) and c for c in names):
        raise TypeError(f"class_names must hold non-empty strings, got {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"class_names must be distinct, got {names!r}")
    return names
