"""Zip: classification first, then discovery (paper Sec. 3, Fig. 2; official ``zip_utils.py``).

:class:`Zip` chains the three parts of :mod:`.protocols`:

1. *Classification first.* The activator's image-level scores decide which classes are present
   (probability >= ``presence_threshold``); each present class c has an activation map A_c.
2. *Boundary prior.* The dense features of one intermediate layer are clustered once per image
   (:func:`.discovery.kmeans_grid_init`, k = 20, grid initialisation).
3. *Discovery.* Per present class, :func:`.discovery.discover_instances` keeps the fragments that
   are activated (> 0.3) and not boundary-shaped (bbox area / area < 3) and returns the connected
   components of their union; their boxes are rescaled from the cluster grid to the image.
4. *Prompting.* Each box prompts the segmenter; the instance score is the class's presence
   probability times the mean normalised activation inside the mask, then greedy mask NMS per
   class. The paper scores SAM's masks with CLIP plus a boundary/objectness score; that scoring
   code is not released, so this simpler semantic score is used (the same for every arm of the
   claims).

The optional self-training of a detector on Zip's pseudo-labels (paper Sec. 3.3) is out of scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .discovery import check_fragment_rules, discover_instances, kmeans_grid_init
from .protocols import (
    DenseFeatureExtractor,
    Instance,
    PromptableSegmenter,
    SemanticActivator,
    check_class_names,
    check_image,
)

__all__ = ["Zip", "ZipConfig", "grid_boxes", "prompt_and_score"]


@dataclass(frozen=True)
class ZipConfig:
    """Zip's hyper-parameters; defaults are the official demo's (``min_area`` is in pixels of
    the clustering grid; ``nms_iou`` and ``presence_threshold`` are this implementation's)."""

    k: int = 20
    iters: int = 100
    act_ratio: float = 0.7
    min_activated: float = 0.3
    max_box_fill: float = 3.0
    min_area: int = 100
    top_clusters: int = 20
    presence_threshold: float = 0.5
    nms_iou: float = 0.5

    def __post_init__(self) -> None:
        for name in ("k", "iters", "top_clusters"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if isinstance(self.min_area, bool) or not isinstance(self.min_area, int) \
                or self.min_area < 0:
            raise ValueError(f"min_area must be a non-negative int, got {self.min_area!r}")
        check_fragment_rules(self.act_ratio, self.min_activated, self.max_box_fill)
        for name in ("presence_threshold", "nms_iou"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")


def grid_boxes(masks: Sequence[np.ndarray], image_shape: tuple[int, int]) -> np.ndarray:
    """Boxes (N, 4) (x0, y0, x1, y1), exclusive max, of grid masks (h, w) rescaled to an image
    of ``image_shape`` (H, W)."""
    boxes = np.zeros((len(masks), 4), dtype=np.float64)
    for i, m in enumerate(masks):
        rows, cols = np.nonzero(m)
        sy, sx = image_shape[0] / m.shape[0], image_shape[1] / m.shape[1]
        boxes[i] = (cols.min() * sx, rows.min() * sy, (cols.max() + 1) * sx,
                    (rows.max() + 1) * sy)
    return boxes


def _check_feature_grid(features: object, image_shape: tuple[int, int]) -> None:
    """The extractor's map must be channels first, (D, h, w), on a grid with the image's aspect
    ratio (within 10 %, room for stride rounding); a channels-last (h, w, D) map fails this for
    any non-trivial D and would otherwise be clustered along the wrong axes."""
    shape = getattr(features, "shape", None)
    if shape is None or len(shape) != 3:
        raise ValueError(f"feature_extractor.features must return (D, h, w), got shape {shape}")
    h, w = int(shape[1]), int(shape[2])
    H, W = image_shape
    if h < 1 or w < 1 or abs(h / w - H / W) > 0.1 * (H / W):
        raise ValueError(f"feature_extractor.features returned shape {tuple(shape)}: expected "
                         f"channels first (D, h, w) with h / w ~ H / W = {H}/{W}; a channels-last "
                         "(h, w, D) map needs .transpose(2, 0, 1)")


def _mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


def prompt_and_score(image: np.ndarray, boxes: np.ndarray, box_classes: Sequence[int],
                     class_names: Sequence[str], activation: np.ndarray,
                     presence: np.ndarray, segmenter: PromptableSegmenter,
                     nms_iou: float) -> list[Instance]:
    """Prompt ``segmenter`` with ``boxes`` (N, 4), score each mask by presence[c] times the mean
    of the normalised A_c (activation (C, H, W)) inside it, drop empty masks, then greedy mask
    NMS per class at ``nms_iou``. Returns instances sorted by decreasing score."""
    if len(boxes) == 0:
        return []
    masks = segmenter.segment(image, np.asarray(boxes, dtype=np.float64))
    candidates = []
    for mask, box, c in zip(masks, boxes, box_classes):
        if not mask.any():
            continue
        score = float(presence[c] * activation[c][mask].mean())  # semantic score of the mask
        candidates.append(Instance(mask.astype(bool), tuple(float(v) for v in box),
                                   class_names[c], score))
    candidates.sort(key=lambda inst: -inst.score)
    kept: list[Instance] = []
    for inst in candidates:
        if all(k.label != inst.label or _mask_iou(k.mask, inst.mask) <= nms_iou for k in kept):
            kept.append(inst)
    return kept


class Zip:
    """Zero-shot instance segmentation: activation first, then clustering-based discovery, then
    box prompts (see the module docstring).

    ``predict(image, class_names)``: image (H, W, 3) float in [0, 1], a non-empty list of class
    names; returns a list of :class:`~.protocols.Instance` sorted by decreasing score. The
    extractor's map must be channels first, (D, h, w), with the image's aspect ratio (within
    10 %); anything else, e.g. a channels-last (h, w, D) map, is refused with a ValueError.
    """

    def __init__(self, activator: SemanticActivator, feature_extractor: DenseFeatureExtractor,
                 segmenter: PromptableSegmenter, config: ZipConfig | None = None) -> None:
        for name, part, proto in (("activator", activator, SemanticActivator),
                                  ("feature_extractor", feature_extractor,
                                   DenseFeatureExtractor),
                                  ("segmenter", segmenter, PromptableSegmenter)):
            if not isinstance(part, proto):
                raise TypeError(f"{name} must implement {proto.__name__}, got "
                                f"{type(part).__name__}")
        self.activator, self.feature_extractor, self.segmenter = (activator, feature_extractor,
                                                                  segmenter)
        self.config = config or ZipConfig()

    def propose(self, image: np.ndarray, class_names: Sequence[str]
                ) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
        """Steps 1-3: boxes (N, 4) in image pixels, their class indices, the activation maps
        (C, H, W) and presence probabilities (C,)."""
        image = check_image(image)
        names = check_class_names(class_names)
        cfg = self.config
        presence = np.asarray(self.activator.scores(image, names), dtype=np.float64)
        activation = np.asarray(self.activator.activation(image, names), dtype=np.float64)
        if activation.shape != (len(names), *image.shape[:2]):
            raise ValueError(f"activator returned activation of shape {activation.shape}, "
                             f"expected {(len(names), *image.shape[:2])}")
        present = [c for c in range(len(names)) if presence[c] >= cfg.presence_threshold]
        boxes, classes = [], []
        if present:
            features = self.feature_extractor.features(image)
            _check_feature_grid(features, image.shape[:2])
            labels = kmeans_grid_init(features, cfg.k, cfg.iters)
            for c in present:
                masks = discover_instances(labels, activation[c], cfg.act_ratio,
                                           cfg.min_activated, cfg.max_box_fill, cfg.min_area,
                                           cfg.top_clusters)
                boxes.extend(grid_boxes(masks, image.shape[:2]))
                classes.extend([c] * len(masks))
        return np.reshape(np.asarray(boxes), (-1, 4)), classes, activation, presence

    def predict(self, image: np.ndarray, class_names: Sequence[str]) -> list[Instance]:
        boxes, classes, activation, presence = self.propose(image, class_names)
        return prompt_and_score(check_image(image), boxes, classes,
                                check_class_names(class_names), activation, presence,
                                self.segmenter, self.config.nms_iou)
