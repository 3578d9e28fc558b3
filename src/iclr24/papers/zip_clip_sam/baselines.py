"""The two baselines of the touching-instances claim, sharing Zip's activator and segmenter.

- :class:`CAMComponents` (B1): the activated region A_c > 0.7 * mean(A_c) split into
  4-connected components (>= ``min_area`` px), each component's box prompts the segmenter. This
  is Zip with its key step, the clustering-based discovery, removed: touching instances of one
  class share one activated blob and come out as one instance.
- :class:`SuperpixelDiscovery` (B2, "discovery first", the analogue of SAM-everything followed
  by CLIP classification): Felzenszwalb superpixels merged by mean colour on a region-adjacency
  graph (``skimage.graph.rag_mean_color`` + ``cut_threshold``), then each region is classified
  by its mean activation among the present classes and kept when most of it is activated.

Both score and de-duplicate masks exactly as :class:`~.pipeline.Zip` does
(:func:`~.pipeline.prompt_and_score`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .discovery import activated_region
from .pipeline import ZipConfig, grid_boxes, prompt_and_score
from .protocols import (
    Instance,
    PromptableSegmenter,
    SemanticActivator,
    check_class_names,
    check_image,
)

__all__ = ["CAMComponents", "SuperpixelDiscovery"]


class _Baseline:
    def __init__(self, activator: SemanticActivator, segmenter: PromptableSegmenter,
                 config: ZipConfig | None = None) -> None:
        if not isinstance(activator, SemanticActivator):
            raise TypeError(f"activator must implement SemanticActivator, got "
                            f"{type(activator).__name__}")
        if not isinstance(segmenter, PromptableSegmenter):
            raise TypeError(f"segmenter must implement PromptableSegmenter, got "
                            f"{type(segmenter).__name__}")
        self.activator, self.segmenter = activator, segmenter
        self.config = config or ZipConfig()

    def _proposals(self, image: np.ndarray, activation: np.ndarray, present: list[int]
                   ) -> tuple[list[np.ndarray], list[int]]:
        raise NotImplementedError

    def predict(self, image: np.ndarray, class_names: Sequence[str]) -> list[Instance]:
        """image (H, W, 3) float in [0, 1]; returns instances sorted by decreasing score."""
        image = check_image(image)
        names = check_class_names(class_names)
        presence = np.asarray(self.activator.scores(image, names), dtype=np.float64)
        activation = np.asarray(self.activator.activation(image, names), dtype=np.float64)
        present = [c for c in range(len(names))
                   if presence[c] >= self.config.presence_threshold]
        masks, classes = self._proposals(image, activation, present) if present else ([], [])
        boxes = grid_boxes(masks, image.shape[:2])
        return prompt_and_score(image, boxes, classes, names, activation, presence,
                                self.segmenter, self.config.nms_iou)


class CAMComponents(_Baseline):
    """B1: connected components of the thresholded activation map, then box prompts."""

    def _proposals(self, image: np.ndarray, activation: np.ndarray, present: list[int]
                   ) -> tuple[list[np.ndarray], list[int]]:
        from skimage import measure

        masks, classes = [], []
        for c in present:
            active = activated_region(activation[c], image.shape[:2], self.config.act_ratio)
            parts = measure.label(active, connectivity=1, background=0)
            for prop in measure.regionprops(parts):
                if prop.area >= self.config.min_area:
                    masks.append(parts == prop.label)
                    classes.append(c)
        return masks, classes


class SuperpixelDiscovery(_Baseline):
    """B2: colour-merged Felzenszwalb superpixels classified by their mean activation.

    scale, sigma, min_size: :func:`skimage.segmentation.felzenszwalb`'s parameters;
    merge_threshold: mean-colour distance below which adjacent regions merge; a region joins
    class c (the present class with the highest mean normalised activation over it) when more
    than ``min_activated_fraction`` of it lies in c's activated region.
    """

    def __init__(self, activator: SemanticActivator, segmenter: PromptableSegmenter,
                 config: ZipConfig | None = None, *, scale: float = 50.0, sigma: float = 0.5,
                 min_size: int = 10, merge_threshold: float = 0.08,
                 min_activated_fraction: float = 0.5) -> None:
        super().__init__(activator, segmenter, config)
        self.scale, self.sigma, self.min_size = scale, sigma, min_size
        self.merge_threshold = merge_threshold
        self.min_activated_fraction = min_activated_fraction

    def _proposals(self, image: np.ndarray, activation: np.ndarray, present: list[int]
                   ) -> tuple[list[np.ndarray], list[int]]:
        from skimage import graph, segmentation

        segments = segmentation.felzenszwalb(image.astype(np.float64), scale=self.scale,
                                             sigma=self.sigma, min_size=self.min_size)
        rag = graph.rag_mean_color(image.astype(np.float64), segments)
        regions = graph.cut_threshold(segments, rag, self.merge_threshold)
        actives = {c: activated_region(activation[c], image.shape[:2], self.config.act_ratio)
                   for c in present}
        masks, classes = [], []
        for r in np.unique(regions):
            region = regions == r
            if region.sum() < self.config.min_area:
                continue
            best = max(present, key=lambda c: activation[c][region].mean())
            if actives[best][region].mean() > self.min_activated_fraction:
                masks.append(region)
                classes.append(best)
        return masks, classes
