"""Stand-ins for CLIP (a multi-label CNN with CAM) and SAM (box-prompted GrabCut).

CLIP, CLIP Surgery's CS-ViT-B/16 and SAM weights cannot be downloaded here (and ``open_clip``/
``segment-anything`` need torchvision, which does not load on this CPU torch). The spec's
honest analogue, used by the claims:

- :class:`MultiLabelCNN`: four conv stages (16-32-64-96 channels; stages 2-4 halve the
  resolution) trained for multi-label classification with global average pooling on the
  scenes' image-level labels only (:func:`train_multilabel_cnn`). Its class activation maps
  (CAM: the classifier weights applied to the last stage's features, min-max normalised per
  class as CLIP Surgery's similarity maps are) play CLIP Surgery's activation maps, and its
  sigmoid outputs the image-level CLIP score. :func:`trained_cnn` trains it once per machine
  and freezes it (:func:`iclr24.kits.frozen_standins.cached_standin`).
- :class:`CNNFeatureExtractor`: one stage's features on a 2x upsampled input (the official
  demo clusters a high-resolution pass: 2048 px vs 512 px for classification), resized
  bilinearly to a common grid; :class:`RGBFeatures` is the raw-pixel control.
- :class:`GrabCutSegmenter`: ``cv2.grabCut`` initialised with each box prompt (OpenCV's
  iterative graph cut on colour GMMs) instead of SAM.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .protocols import check_class_names, check_image

__all__ = ["CNNActivator", "CNNFeatureExtractor", "CNNTraining", "GrabCutSegmenter",
           "MultiLabelCNN", "RGBFeatures", "train_multilabel_cnn", "trained_cnn", "untrained_cnn"]


class MultiLabelCNN(nn.Module):
    """Four conv stages, global average pooling, one logit per class.

    forward: x (B, 3, H, W) -> logits (B, C). ``stages(x)`` returns the four feature maps:
    (B, 16, H, W), (B, 32, H/2, W/2), (B, 64, H/4, W/4), (B, 96, H/4, W/4) (the last stage
    keeps stage 3's resolution so that the CAM is 16x16 on a 64x64 scene, not 8x8).
    """

    def __init__(self, n_classes: int = 3, channels: Sequence[int] = (16, 32, 64, 96)) -> None:
        super().__init__()
        if n_classes < 1 or len(channels) != 4:
            raise ValueError("need n_classes >= 1 and four stage widths")
        blocks, c_in = [], 3
        for i, c in enumerate(channels):
            layers: list[nn.Module] = [nn.MaxPool2d(2)] if i in (1, 2) else []
            layers += [nn.Conv2d(c_in, c, 3, padding=1), nn.ReLU()]
            blocks.append(nn.Sequential(*layers))
            c_in = c
        self.blocks = nn.ModuleList(blocks)
        self.head = nn.Linear(c_in, n_classes)

    def stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        for block in self.blocks:
            x = block(x)
            outs.append(x)
        return outs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(x)[-1].mean(dim=(2, 3)))  # GAP then linear

    def cam(self, x: torch.Tensor) -> torch.Tensor:
        """Class activation maps (B, C, h, w) on the last stage: M_c = sum_k w_ck f_k(x, y)."""
        f = self.stages(x)[-1]
        return torch.einsum("ck,bkhw->bchw", self.head.weight, f)


def _to_tensor(image: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))[None].float()


def _class_indices(known: Sequence[str], class_names: Sequence[str]) -> list[int]:
    names = check_class_names(class_names)
    missing = [c for c in names if c not in known]
    if missing:
        raise ValueError(f"class_names {missing!r} unknown to this stand-in; it knows "
                         f"{tuple(known)!r}")
    return [list(known).index(c) for c in names]


class CNNActivator:
    """:class:`~.protocols.SemanticActivator` from a trained :class:`MultiLabelCNN`.

    ``activation`` gives CAMs bilinearly upsampled to the image size and min-max normalised per
    class to [0, 1]; ``scores`` the sigmoid of the logits.
    """

    def __init__(self, model: MultiLabelCNN, class_names: Sequence[str]) -> None:
        self.model = model
        self.class_names = check_class_names(class_names)

    @torch.no_grad()
    def scores(self, image: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
        idx = _class_indices(self.class_names, class_names)
        x = _to_tensor(check_image(image))
        return torch.sigmoid(self.model(x))[0, idx].numpy().astype(np.float64)

    @torch.no_grad()
    def activation(self, image: np.ndarray, class_names: Sequence[str]) -> np.ndarray:
        idx = _class_indices(self.class_names, class_names)
        image = check_image(image)
        cam = self.model.cam(_to_tensor(image))[:, idx]
        cam = F.interpolate(cam, size=image.shape[:2], mode="bilinear", align_corners=False)[0]
        lo = cam.amin(dim=(1, 2), keepdim=True)
        hi = cam.amax(dim=(1, 2), keepdim=True)
        return ((cam - lo) / (hi - lo).clamp_min(1e-12)).numpy().astype(np.float64)


class CNNFeatureExtractor:
    """:class:`~.protocols.DenseFeatureExtractor`: stage ``stage`` (1-4) of a
    :class:`MultiLabelCNN` run on the image upsampled ``upsample`` times (bilinear), resized
    bilinearly to ``grid`` (h, w); ``grid=None`` keeps the image's size."""

    def __init__(self, model: MultiLabelCNN, stage: int = 2, upsample: int = 2,
                 grid: tuple[int, int] | None = None) -> None:
        if stage not in (1, 2, 3, 4):
            raise ValueError(f"stage must be 1, 2, 3 or 4, got {stage!r}")
        if isinstance(upsample, bool) or not isinstance(upsample, int) or upsample < 1:
            raise ValueError(f"upsample must be a positive int, got {upsample!r}")
        self.model, self.stage, self.upsample, self.grid = model, stage, upsample, grid

    @torch.no_grad()
    def features(self, image: np.ndarray) -> np.ndarray:
        image = check_image(image)
        x = _to_tensor(image)
        if self.upsample > 1:
            x = F.interpolate(x, scale_factor=self.upsample, mode="bilinear",
                              align_corners=False)
        f = self.model.stages(x)[self.stage - 1]
        grid = self.grid or image.shape[:2]
        if tuple(f.shape[-2:]) != tuple(grid):
            f = F.interpolate(f, size=grid, mode="bilinear", align_corners=False)
        return f[0].numpy().astype(np.float64)


class RGBFeatures:
    """:class:`~.protocols.DenseFeatureExtractor` returning the raw pixels (3, H, W): the
    control arm of the layer comparison."""

    def features(self, image: np.ndarray) -> np.ndarray:
        return check_image(image).transpose(2, 0, 1).astype(np.float64)


class GrabCutSegmenter:
    """:class:`~.protocols.PromptableSegmenter` with ``cv2.grabCut`` in rectangle mode.

    Each box is widened by ``margin`` pixels (GrabCut treats everything outside the rectangle as
    sure background) and clipped to the image; the mask is the (probable) foreground after
    ``iterations`` rounds. OpenCV's RNG (used by GrabCut's GMM initialisation) is reseeded with
    ``seed`` before every box, so the same prompt gives the same mask.
    """

    def __init__(self, iterations: int = 5, margin: int = 2, seed: int = 0) -> None:
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be a positive int, got {iterations!r}")
        if isinstance(margin, bool) or not isinstance(margin, int) or margin < 0:
            raise ValueError(f"margin must be a non-negative int, got {margin!r}")
        self.iterations, self.margin, self.seed = iterations, margin, seed

    def segment(self, image: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        import cv2

        image = check_image(image)
        boxes = np.asarray(boxes, dtype=np.float64)
        if boxes.ndim != 2 or boxes.shape[1] != 4 or not np.all(np.isfinite(boxes)):
            raise ValueError(f"boxes must be a finite (N, 4) array of (x0, y0, x1, y1), got "
                             f"shape {boxes.shape}")
        h, w = image.shape[:2]
        img8 = np.ascontiguousarray((image * 255.0 + 0.5).astype(np.uint8)[..., ::-1])  # BGR
        masks = np.zeros((len(boxes), h, w), dtype=bool)
        for i, (x0, y0, x1, y1) in enumerate(boxes):
            if not (x1 > x0 and y1 > y0):
                raise ValueError(f"box {i} must have x1 > x0 and y1 > y0, got {boxes[i]}")
            ix0 = max(int(np.floor(x0)) - self.margin, 0)
            iy0 = max(int(np.floor(y0)) - self.margin, 0)
            ix1 = min(int(np.ceil(x1)) + self.margin, w)
            iy1 = min(int(np.ceil(y1)) + self.margin, h)
            if ix1 - ix0 < 2 or iy1 - iy0 < 2:
                continue
            cv2.setRNGSeed(self.seed)
            gc = np.zeros((h, w), dtype=np.uint8)
            bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
            try:
                cv2.grabCut(img8, gc, (ix0, iy0, ix1 - ix0, iy1 - iy0), bgd, fgd,
                            self.iterations, cv2.GC_INIT_WITH_RECT)
            except cv2.error:  # a degenerate colour model (e.g. a flat box): no mask
                continue
            masks[i] = (gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)
        return masks


@dataclass(frozen=True)
class CNNTraining:
    """How the CAM stand-in is trained (the config is the cache key)."""

    n_train: int = 2000
    steps: int = 2000
    batch_size: int = 32
    lr: float = 3e-3
    scene_seed_offset: int = 1000  # training scenes come from seed + offset (test scenes differ)


def train_multilabel_cnn(model: MultiLabelCNN, training: CNNTraining, seed: int) -> list[float]:
    """Adam on binary cross-entropy with the scenes' multi-hot labels (image level only),
    random horizontal/vertical flips; returns the loss per step."""
    from .scenes import make_scenes

    scenes = make_scenes(training.n_train, seed + training.scene_seed_offset)
    x_all = torch.from_numpy(scenes.images.transpose(0, 3, 1, 2).copy())
    y_all = torch.from_numpy(scenes.labels)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=training.lr)
    losses = []
    model.train()
    for step in range(training.steps):
        idx = torch.randint(len(x_all), (training.batch_size,), generator=gen)
        x, y = x_all[idx], y_all[idx]
        flips = torch.randint(2, (2,), generator=gen)
        if flips[0]:
            x = x.flip(3)
        if flips[1]:
            x = x.flip(2)
        loss = F.binary_cross_entropy_with_logits(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


def untrained_cnn(seed: int) -> MultiLabelCNN:
    """The CAM stand-in's architecture with the seeded initial weights :func:`trained_cnn`
    starts from, frozen without training: the random-features null of the layer claim."""
    from iclr24.kits.frozen_standins import freeze

    from .scenes import CLASS_NAMES

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    with torch.random.fork_rng():  # seeded initial weights, global RNG left as it was
        torch.manual_seed(int(seed))
        model = MultiLabelCNN(len(CLASS_NAMES))
    freeze(model)
    return model


def trained_cnn(training: CNNTraining, seed: int,
                root: str | os.PathLike[str] | None = None) -> MultiLabelCNN:
    """The frozen CAM stand-in for ``seed``: trained once per machine, loaded afterwards."""
    from iclr24.kits.frozen_standins import cached_standin
    from iclr24.kits.threads import torch_threads

    def make() -> MultiLabelCNN:
        return untrained_cnn(seed).requires_grad_(True).train()

    def train(model: nn.Module) -> None:
        with torch_threads(1):
            train_multilabel_cnn(model, training, seed)

    model = cached_standin("zip-cam-cnn", asdict(training), seed, make, train, root=root)
    assert isinstance(model, MultiLabelCNN)
    return model
