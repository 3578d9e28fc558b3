"""COCO-json input/output for :mod:`.coco_ap`: ground truth as a COCO dataset file, detections
as a COCO results file, masks as run-length encodings (RLE).

The paper evaluates on COCO/LVIS with the official ``COCOeval``; these files let Zip's
predictions be scored by pycocotools (or other COCO tools) and COCO-format annotations be read
back into :class:`~.coco_ap.GroundTruth` / :class:`~.coco_ap.Detections` without pycocotools:

- :func:`mask_to_rle` / :func:`rle_to_mask`: COCO's compressed RLE (``counts`` as the ASCII
  string of pycocotools' ``maskApi.c``: column-major runs starting with zeros, each run after the
  second stored as the difference to the run two before, in 5-bit groups offset by 48);
  uncompressed RLE (``counts`` a list) is read too. Polygon segmentations are not rasterised
  here (ValueError; pycocotools' ``COCO.annToMask`` does it).
- :func:`write_coco_ground_truth` / :func:`load_coco_ground_truth`: images get ids 1..n,
  ``category_id = label + 1`` (COCO ids start at 1), ``iscrowd`` 0; crowd annotations are
  refused when loading, since :func:`~.coco_ap.coco_mask_ap` has no crowd regions.
- :func:`write_coco_results` / :func:`load_coco_results`: one entry per detection
  (``image_id``, ``category_id``, ``segmentation``, ``score``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .coco_ap import Detections, GroundTruth, _check

__all__ = ["load_coco_ground_truth", "load_coco_results", "mask_to_rle", "rle_to_mask",
           "write_coco_ground_truth", "write_coco_results"]


def _runs(mask: np.ndarray) -> list[int]:
    flat = mask.ravel(order="F")  # COCO runs go down the columns
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat.size and flat[0] else runs  # the first run counts zeros


def mask_to_rle(mask: np.ndarray) -> dict[str, Any]:
    """(H, W) bool mask -> ``{"size": [H, W], "counts": str}`` (compressed, as pycocotools)."""
    if not isinstance(mask, np.ndarray) or mask.dtype != bool or mask.ndim != 2:
        raise TypeError(f"mask must be a 2-D bool numpy array, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)} with shape "
                        f"{getattr(mask, 'shape', None)}")
    cnts = _runs(mask)
    out = []
    for i, c in enumerate(cnts):
        x = c - cnts[i - 2] if i > 2 else c  # maskApi.c rleToString: delta to the run 2 back
        more = True
        while more:
            ch = x & 0x1F
            x >>= 5
            more = x != -1 if ch & 0x10 else x != 0
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": "".join(out)}


def _counts_from_string(s: str) -> list[int]:
    cnts: list[int] = []
    p = 0
    while p < len(s):
        x = k = 0
        more = True
        while more:
            if p >= len(s):
                raise ValueError("RLE counts string ends inside a number")
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)  # sign-extend
        if len(cnts) > 2:
            x += cnts[-2]
        cnts.append(x)
    return cnts


def rle_to_mask(rle: dict[str, Any]) -> np.ndarray:
    """COCO RLE (compressed string or uncompressed list ``counts``) -> (H, W) bool mask."""
    if not isinstance(rle, dict) or "size" not in rle or "counts" not in rle:
        if isinstance(rle, list):
            raise ValueError("polygon segmentations are not supported: rasterise them first "
                             "(pycocotools' COCO.annToMask) or store masks as RLE")
        raise TypeError(f"rle must be a dict with 'size' and 'counts', got {rle!r:.80}")
    h, w = (int(v) for v in rle["size"])
    counts = rle["counts"]
    if isinstance(counts, bytes):
        counts = counts.decode("ascii")
    cnts = _counts_from_string(counts) if isinstance(counts, str) else [int(c) for c in counts]
    if any(c < 0 for c in cnts) or sum(cnts) != h * w:
        raise ValueError(f"RLE counts must be non-negative runs summing to H*W = {h * w}, got "
                         f"sum {sum(cnts)}")
    values = np.arange(len(cnts)) % 2 == 1  # runs alternate 0, 1, 0, ...
    return np.repeat(values, cnts).reshape((h, w), order="F")


def _bbox(mask: np.ndarray) -> list[float]:
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        return [0.0, 0.0, 0.0, 0.0]
    return [float(cols.min()), float(rows.min()), float(cols.max() - cols.min() + 1),
            float(rows.max() - rows.min() + 1)]  # COCO [x, y, width, height]


def write_coco_ground_truth(gts: Sequence[GroundTruth], path: str | Path, *,
                            class_names: Sequence[str] | None = None) -> None:
    """Write one image per GroundTruth (ids 1..n) as a COCO instances file.

    ``class_names[label]`` names category ``label + 1``; default: the labels as strings.
    """
    _check([Detections(np.zeros((0, *np.shape(g.masks)[1:]), bool), np.zeros(0, int), np.zeros(0))
            for g in gts], gts)
    labels = sorted({int(c) for g in gts for c in g.labels})
    if labels and labels[0] < 0:
        raise ValueError(f"labels must be >= 0 (category_id = label + 1), got {labels[0]}")
    if class_names is not None and labels and labels[-1] >= len(class_names):
        raise ValueError(f"class_names has {len(class_names)} names but label {labels[-1]} "
                         "occurs")
    n_cat = len(class_names) if class_names is not None else (labels[-1] + 1 if labels else 0)
    categories = [{"id": c + 1, "name": class_names[c] if class_names is not None else str(c)}
                  for c in range(n_cat)]
    images, annotations = [], []
    for i, g in enumerate(gts):
        images.append({"id": i + 1, "height": int(g.masks.shape[1]),
                       "width": int(g.masks.shape[2])})
        for m, c in zip(g.masks, g.labels):
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1,
                                "category_id": int(c) + 1, "segmentation": mask_to_rle(m),
                                "area": float(m.sum()), "bbox": _bbox(m), "iscrowd": 0})
    Path(path).write_text(json.dumps({"images": images, "annotations": annotations,
                                      "categories": categories}))


def load_coco_ground_truth(path: str | Path) -> tuple[list[int], list[GroundTruth]]:
    """Read a COCO instances file with RLE masks; returns (image ids, one GroundTruth per image
    in the file's image order, label = category_id - 1)."""
    data = json.loads(Path(path).read_text())
    if not isinstance(data, dict) or "images" not in data or "annotations" not in data:
        raise ValueError(f"{path}: a COCO instances file needs 'images' and 'annotations'")
    ids = [int(im["id"]) for im in data["images"]]
    shapes = {int(im["id"]): (int(im["height"]), int(im["width"])) for im in data["images"]}
    per_image: dict[int, list[tuple[np.ndarray, int]]] = {i: [] for i in ids}
    for ann in data["annotations"]:
        if ann.get("iscrowd", 0):
            raise ValueError(f"{path}: annotation {ann.get('id')} is a crowd region; "
                             "coco_mask_ap has no crowd handling")
        image = int(ann["image_id"])
        if image not in per_image:
            raise ValueError(f"{path}: annotation {ann.get('id')} names unknown image {image}")
        mask = rle_to_mask(ann["segmentation"])
        if mask.shape != shapes[image]:
            raise ValueError(f"{path}: annotation {ann.get('id')} has size {mask.shape}, image "
                             f"{image} is {shapes[image]}")
        per_image[image].append((mask, int(ann["category_id"]) - 1))
    gts = []
    for i in ids:
        items = per_image[i]
        masks = np.stack([m for m, _ in items]) if items else np.zeros((0, *shapes[i]), bool)
        gts.append(GroundTruth(masks, np.array([c for _, c in items], dtype=np.int64)))
    return ids, gts


def write_coco_results(dets: Sequence[Detections], path: str | Path, *,
                       image_ids: Sequence[int] | None = None) -> None:
    """Write detections as a COCO results file (``image_ids[i]`` for image i, default i + 1)."""
    ids = list(range(1, len(dets) + 1)) if image_ids is None else [int(i) for i in image_ids]
    if len(ids) != len(dets):
        raise ValueError(f"image_ids has {len(ids)} ids for {len(dets)} images")
    _check(dets, [GroundTruth(np.zeros((0, *np.shape(d.masks)[1:]), bool), np.zeros(0, int))
                  for d in dets])
    out = [{"image_id": i, "category_id": int(c) + 1, "segmentation": mask_to_rle(m),
            "score": float(s)}
           for i, d in zip(ids, dets) for m, c, s in zip(d.masks, d.labels, d.scores)]
    Path(path).write_text(json.dumps(out))


def load_coco_results(path: str | Path, image_ids: Sequence[int],
                      image_shapes: Sequence[tuple[int, int]]) -> list[Detections]:
    """Read a COCO results file into one Detections per image of ``image_ids`` (sizes
    ``image_shapes``, (H, W) each), label = category_id - 1."""
    ids = [int(i) for i in image_ids]
    if len(ids) != len(image_shapes):
        raise ValueError(f"image_shapes has {len(image_shapes)} sizes for {len(ids)} images")
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise TypeError(f"{path}: a COCO results file is a list of detections")
    shape = {i: tuple(int(v) for v in s) for i, s in zip(ids, image_shapes)}
    found: dict[int, list[tuple[np.ndarray, int, float]]] = {i: [] for i in ids}
    for k, r in enumerate(data):
        image = int(r["image_id"])
        if image not in found:
            raise ValueError(f"{path}: detection {k} names image {image}, not in image_ids")
        mask = rle_to_mask(r["segmentation"])
        if mask.shape != shape[image]:
            raise ValueError(f"{path}: detection {k} has size {mask.shape}, image {image} is "
                             f"{shape[image]}")
        found[image].append((mask, int(r["category_id"]) - 1, float(r["score"])))
    dets = []
    for i in ids:
        items = found[i]
        masks = np.stack([m for m, _, _ in items]) if items else np.zeros((0, *shape[i]), bool)
        dets.append(Detections(masks, np.array([c for _, c, _ in items], dtype=np.int64),
                               np.array([s for _, _, s in items], dtype=np.float64)))
    return dets
