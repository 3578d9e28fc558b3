"""Zip's boundary prior and fragment discovery (paper Sec. 3; official ``zip_utils.py``).

- :func:`kmeans_grid_init`: k-means on the per-pixel features of one intermediate layer
  (k = 20, Euclidean distance, at most 100 Lloyd iterations, stop when the centroids stop moving),
  centroids initialised at k evenly spaced flattened pixel indices (``linspace(0, h*w-1, k)``,
  rounded, de-duplicated), as in the official demo. No k-means++: the paper's clusters depend on
  this deterministic start.
- :func:`nearest_resize`: PyTorch-style nearest-neighbour resizing (``src = floor(dst*in/out)``),
  used because classification and clustering run at different resolutions.
- :func:`activated_region`: A_c > 0.7 * mean(A_c) (relative, on the activation's own grid), then
  nearest-resized to the cluster grid.
- :func:`discover_instances`: clusters labelled 1..k (0 = not activated); for each of the 20 most
  frequent labels of the activated label map, the *whole* cluster is split into 4-connected
  components; a component is kept when the fraction of its pixels inside the activated region is
  > 0.3 and its bounding-box area / area is < 3 (thin, boundary-shaped fragments are rejected);
  the union of the kept components is labelled again (4-connectivity) and components under
  ``min_area`` grid pixels are dropped.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["activated_region", "check_fragment_rules", "discover_instances", "kmeans_grid_init",
           "nearest_resize"]


def _as_feature_map(features: object) -> np.ndarray:
    try:
        import torch

        if isinstance(features, torch.Tensor):
            features = features.detach().cpu().numpy()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if not isinstance(features, np.ndarray):
        raise TypeError(f"features must be a numpy array or torch tensor of shape (D, h, w), "
                        f"got {type(features).__name__}")
    if features.ndim != 3:
        raise ValueError(f"features must have shape (D, h, w), got shape {features.shape}")
    if not np.all(np.isfinite(features)):
        raise ValueError("features must be finite")
    return features.astype(np.float32, copy=False)  # float32, as the official torch code


def kmeans_grid_init(features: object, k: int = 20, iters: int = 100,
                     rtol: float = 1e-5) -> np.ndarray:
    """Cluster the pixels of a feature map; returns labels (h, w) int in 0..k-1.

    features: (D, h, w) numpy array or torch tensor. Centroids start at the pixels with flattened
    indices round(linspace(0, h*w - 1, k)) (de-duplicated); each iteration assigns every pixel to
    its nearest centroid (Euclidean) and moves each non-empty cluster's centroid to its mean (an
    empty cluster keeps its centroid); stops after ``iters`` iterations or when the centroids
    stop moving (``allclose`` with ``rtol``, as the official code). The layout cannot be checked
    here: a channels-last (h, w, D) map would be clustered as D x w pixels of h features
    (:class:`~.pipeline.Zip` checks the grid's aspect ratio against the image's).
    """
    x = _as_feature_map(features)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
        raise ValueError(f"iters must be a positive int, got {iters!r}")
    d, h, w = x.shape
    if h * w < k:
        raise ValueError(f"features have {h * w} pixels, fewer than k={k} clusters")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # (h*w, D) x (D, k) products: BLAS threads only spin-wait
        return _lloyd(x.reshape(d, h * w).T, k, iters, rtol).reshape(h, w)


def _lloyd(flat: np.ndarray, k: int, iters: int, rtol: float) -> np.ndarray:
    n = len(flat)
    start = np.unique(np.round(np.linspace(0, n - 1, k)).astype(np.int64))
    centroids = flat[start].copy()
    sq = np.einsum("nd,nd->n", flat, flat)
    assign = np.zeros(n, dtype=np.int64)
    for _ in range(iters):
        # ||x - c||^2 = |x|^2 - 2 x.c + |c|^2; argmin over centroids (Euclidean)
        dist = sq[:, None] - 2.0 * flat @ centroids.T + np.einsum("kd,kd->k", centroids,
                                                                   centroids)[None, :]
        assign = np.argmin(dist, axis=1)
        counts = np.bincount(assign, minlength=len(centroids))
        onehot = np.zeros((len(centroids), n), dtype=np.float32)
        onehot[assign, np.arange(n)] = 1.0
        sums = onehot @ flat  # per-cluster sums of the assigned features
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centroids)
        done = np.allclose(moved, centroids, rtol=rtol)
        centroids = moved
        if done:
            break
    return assign


def nearest_resize(array: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize of the last two axes to ``shape`` (PyTorch ``mode="nearest"``:
    output index i reads input index floor(i * in / out))."""
    h, w = array.shape[-2:]
    rows = np.minimum((np.arange(shape[0]) * (h / shape[0])).astype(np.int64), h - 1)
    cols = np.minimum((np.arange(shape[1]) * (w / shape[1])).astype(np.int64), w - 1)
    return array[..., rows[:, None], cols[None, :]]


def activated_region(activation: np.ndarray, shape: tuple[int, int],
                     act_ratio: float = 0.7) -> np.ndarray:
    """Boolean (h, w) map of A > act_ratio * mean(A), A (H, W) resized (nearest) to ``shape``.

    The threshold is relative: 0.7 times the mean activation over the whole map (official code).
    """
    activation = np.asarray(activation, dtype=np.float64)
    if activation.ndim != 2:
        raise ValueError(f"activation must have shape (H, W), got {activation.shape}")
    threshold = act_ratio * activation.mean()  # A_c > 0.7 * mean(A_c)
    return nearest_resize(activation, shape) > threshold


def _check_labels(labels: object) -> np.ndarray:
    if not isinstance(labels, np.ndarray):
        raise TypeError(f"labels must be a numpy array (h, w) of ints, got "
                        f"{type(labels).__name__}")
    if labels.ndim != 2 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be a 2-D integer array, got shape {labels.shape} and "
                         f"dtype {labels.dtype}")
    if labels.size and labels.min() < 0:
        raise ValueError("labels must be non-negative cluster indices")
    return labels


def check_fragment_rules(act_ratio: float, min_activated: float, max_box_fill: float) -> None:
    """Validate the fragment rules' thresholds (ValueError naming the argument).

    act_ratio > 0 (a multiple of the mean activation); min_activated in [0, 1) (a fraction of
    pixels: 1 or more would reject every fragment, as ``min_activated=5`` silently did);
    max_box_fill > 1 (bbox area / area is >= 1 for every fragment, so <= 1 rejects all).
    """
    for name, value, ok, expected in (
            ("act_ratio", act_ratio, lambda v: v > 0, "a finite number > 0"),
            ("min_activated", min_activated, lambda v: 0 <= v < 1,
             "a fraction in [0, 1) of the fragment's pixels"),
            ("max_box_fill", max_box_fill, lambda v: v > 1,
             "a finite number > 1 (bbox area / area is >= 1 for every fragment)")):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not (np.isfinite(value) and ok(value)):
            raise ValueError(f"{name} must be {expected}, got {value!r}")


def discover_instances(labels: np.ndarray, activation: np.ndarray, act_ratio: float = 0.7,
                       min_activated: float = 0.3, max_box_fill: float = 3.0,
                       min_area: int = 100, top_clusters: int = 20) -> list[np.ndarray]:
    """Instance proposals of one class from cluster labels and that class's activation map.

    labels:     (h, w) int cluster indices 0..k-1 (from :func:`kmeans_grid_init`);
    activation: (H, W) float activation map A_c (any resolution; resized nearest to (h, w));
    returns a list of (h, w) bool masks, one per proposal, in label order.
    """
    labels = _check_labels(labels)
    check_fragment_rules(act_ratio, min_activated, max_box_fill)
    if isinstance(min_area, bool) or not isinstance(min_area, int) or min_area < 0:
        raise ValueError(f"min_area must be a non-negative int, got {min_area!r}")
    from scipy import ndimage
    from skimage import measure

    clusters = labels.astype(np.int64) + 1  # 0 is reserved for "not activated"
    active = activated_region(activation, labels.shape, act_ratio)
    counter = Counter((clusters * active).ravel().tolist())
    keep = np.zeros(labels.shape, dtype=bool)
    for cluster, _count in counter.most_common(top_clusters):
        if cluster == 0:
            continue
        parts = measure.label(clusters == cluster, connectivity=1, background=0)  # 4-connected
        n = int(parts.max())
        area = np.bincount(parts.ravel(), minlength=n + 1)[1:]
        activated = np.bincount(parts.ravel(), weights=active.ravel(), minlength=n + 1)[1:]
        box_area = np.array([(r.stop - r.start) * (c.stop - c.start)
                             for r, c in ndimage.find_objects(parts)])
        gain = activated / area  # fraction of the fragment's pixels that are activated
        box_fill = box_area / area  # bbox area / area: large for thin, boundary-like fragments
        ok = np.nonzero((gain > min_activated) & (box_fill < max_box_fill))[0] + 1
        keep |= np.isin(parts, ok)
    instances = measure.label(keep, connectivity=1, background=0)
    areas = np.bincount(instances.ravel())
    return [instances == i for i in range(1, int(instances.max()) + 1) if areas[i] >= min_area]
