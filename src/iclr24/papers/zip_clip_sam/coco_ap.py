"""COCO-protocol mask AP (the metric of the paper's tables), written out from pycocotools'
``COCOeval`` (evaluateImg / accumulate / summarize), for masks without crowd regions.

pycocotools is the reference: it is a dev dependency and the tests compare this function with
``COCOeval(..., "segm")`` on random cases (equal to 1e-12) and on files written by
:mod:`.coco_json`. It is kept out of the runtime dependencies (a C extension the package's
other papers do not need; ``COCOeval`` also prints its summary), so the protocol is written out
here, without crowd regions and area ranges:

- per image and category, detections sorted by score (stable), at most ``max_dets`` per image;
- at each IoU threshold t (0.50:0.05:0.95) each detection, in score order, is matched to the
  unmatched ground truth with the highest mask IoU >= t (ties: the later ground truth, as
  COCOeval); unmatched detections are false positives;
- per category, detections of all images are merged by score (stable), precision is made
  monotone non-increasing from the right and read at the 101 recall points 0:0.01:1
  (``searchsorted(recall, r, "left")``; past the last recall it is 0);
- AP is the mean over thresholds, recall points and the categories that have ground truth;
  AP50 / AP75 use the one threshold. Area ranges other than "all" are not computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["IOU_THRESHOLDS", "RECALL_POINTS", "Detections", "GroundTruth", "coco_mask_ap",
           "mask_iou"]

IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
RECALL_POINTS = np.linspace(0.0, 1.0, 101)


@dataclass(frozen=True)
class Detections:
    """One image's detections: masks (n, H, W) bool, labels (n,) int, scores (n,) float."""

    masks: np.ndarray
    labels: np.ndarray
    scores: np.ndarray


@dataclass(frozen=True)
class GroundTruth:
    """One image's ground truth: masks (m, H, W) bool, labels (m,) int."""

    masks: np.ndarray
    labels: np.ndarray


def mask_iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix (n, m) between masks a (n, H, W) and b (m, H, W) (0 where the union is
    empty)."""
    a = np.asarray(a, dtype=bool).reshape(len(a), -1).astype(np.float64)
    b = np.asarray(b, dtype=bool).reshape(len(b), -1).astype(np.float64)
    inter = a @ b.T
    union = a.sum(1)[:, None] + b.sum(1)[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def _check_masks(masks: object, what: str) -> None:
    if not isinstance(masks, np.ndarray) or masks.dtype != bool:
        raise TypeError(f"{what} masks must be a bool numpy array (n, H, W), got "
                        f"{getattr(masks, 'dtype', type(masks).__name__)} (threshold "
                        "soft masks yourself, e.g. masks > 0.5)")
    if masks.ndim != 3:
        raise ValueError(f"{what} masks must have shape (n, H, W), got {masks.shape}")


def _check_labels(labels: object, what: str) -> None:
    labels = np.asarray(labels)
    if labels.ndim != 1 or not (labels.size == 0 or np.issubdtype(labels.dtype, np.integer)):
        raise ValueError(f"{what} labels must be a 1-D integer array (n,), got shape "
                         f"{labels.shape} and dtype {labels.dtype}")


def _check(dets: Sequence[Detections], gts: Sequence[GroundTruth]) -> None:
    if len(dets) != len(gts):
        raise ValueError(f"need one Detections per GroundTruth image, got {len(dets)} and "
                         f"{len(gts)}")
    for i, (d, g) in enumerate(zip(dets, gts)):
        if not isinstance(d, Detections) or not isinstance(g, GroundTruth):
            raise TypeError(f"image {i}: need a Detections and a GroundTruth, got "
                            f"{type(d).__name__} and {type(g).__name__}")
        _check_masks(d.masks, f"image {i}: detection")
        _check_masks(g.masks, f"image {i}: ground-truth")
        _check_labels(d.labels, f"image {i}: detection")
        _check_labels(g.labels, f"image {i}: ground-truth")
        scores = np.asarray(d.scores)
        if scores.ndim != 1 or not (scores.size == 0 or np.issubdtype(scores.dtype, np.number)):
            raise ValueError(f"image {i}: scores must be a 1-D numeric array (n,), got shape "
                             f"{scores.shape} and dtype {scores.dtype}")
        if not np.all(np.isfinite(scores)):
            # a NaN sorts last and used to rank a wrong detection as if it had no score
            raise ValueError(f"image {i}: scores must be finite, got {scores[~np.isfinite(scores)]}")
        if not (len(d.masks) == len(d.labels) == len(d.scores)):
            raise ValueError(f"image {i}: detections' masks, labels and scores differ in length")
        if len(g.masks) != len(g.labels):
            raise ValueError(f"image {i}: ground-truth masks and labels differ in length")
        if len(d.masks) and len(g.masks) and d.masks.shape[1:] != g.masks.shape[1:]:
            raise ValueError(f"image {i}: detection masks {d.masks.shape[1:]} and ground-truth "
                             f"masks {g.masks.shape[1:]} differ in size")


def coco_mask_ap(dets: Sequence[Detections], gts: Sequence[GroundTruth], *,
                 max_dets: int = 100) -> dict[str, float]:
    """COCO mask AP over images; returns {"ap", "ap50", "ap75"} (NaN when no category has
    ground truth).

    dets / gts: one :class:`Detections` and one :class:`GroundTruth` per image (bool masks,
    1-D integer labels, finite scores); max_dets: a positive int (COCO's 100)."""
    if isinstance(max_dets, bool) or not isinstance(max_dets, (int, np.integer)) or max_dets < 1:
        raise ValueError(f"max_dets must be a positive int, got {max_dets!r}")
    _check(dets, gts)
    n_t = len(IOU_THRESHOLDS)
    categories = sorted({int(c) for g in gts for c in g.labels})
    precision = np.full((n_t, len(RECALL_POINTS), len(categories)), -1.0)
    for k, cat in enumerate(categories):
        scores_all, matched_all = [], []
        n_gt = 0
        for d, g in zip(dets, gts):
            gmask = g.masks[np.asarray(g.labels) == cat]
            sel = np.nonzero(np.asarray(d.labels) == cat)[0]
            order = sel[np.argsort(-np.asarray(d.scores)[sel], kind="mergesort")][:max_dets]
            n_gt += len(gmask)
            if len(order) == 0:
                continue
            matched = np.zeros((n_t, len(order)), dtype=bool)
            if len(gmask):
                ious = mask_iou(d.masks[order], gmask)
                for t, thr in enumerate(IOU_THRESHOLDS):
                    taken = np.zeros(len(gmask), dtype=bool)
                    for i in range(len(order)):
                        best, m = min(thr, 1 - 1e-10), -1
                        for j in range(len(gmask)):
                            if taken[j] or ious[i, j] < best:
                                continue
                            best, m = ious[i, j], j
                        if m >= 0:
                            taken[m] = True
                            matched[t, i] = True
            scores_all.append(np.asarray(d.scores)[order])
            matched_all.append(matched)
        if n_gt == 0:
            continue
        if not scores_all:
            precision[:, :, k] = 0.0
            continue
        scores = np.concatenate(scores_all)
        matched = np.concatenate(matched_all, axis=1)
        by_score = np.argsort(-scores, kind="mergesort")
        matched = matched[:, by_score]
        for t in range(n_t):
            tp = np.cumsum(matched[t]).astype(np.float64)
            fp = np.cumsum(~matched[t]).astype(np.float64)
            recall = tp / n_gt
            prec = tp / (tp + fp + np.spacing(1))
            prec = np.maximum.accumulate(prec[::-1])[::-1]  # monotone from the right
            idx = np.searchsorted(recall, RECALL_POINTS, side="left")
            q = np.zeros(len(RECALL_POINTS))
            ok = idx < len(prec)
            q[ok] = prec[idx[ok]]
            precision[t, :, k] = q

    def summarise(p: np.ndarray) -> float:
        valid = p[p > -1]
        return float(valid.mean()) if valid.size else float("nan")

    return {"ap": summarise(precision), "ap50": summarise(precision[0]),
            "ap75": summarise(precision[5])}
