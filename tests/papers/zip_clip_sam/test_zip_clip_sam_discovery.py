"""kmeans_grid_init and the fragment rules of discover_instances on hand-built label maps."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from iclr24.papers.zip_clip_sam import (
    activated_region,
    discover_instances,
    kmeans_grid_init,
    nearest_resize,
)


def test_grid_init_hand_case():
    # 1x6 grid, k = 2: the centroids start at flattened pixels round(linspace(0, 5, 2)) = 0, 5
    feats = np.array([0.0, 0.1, 0.2, 5.0, 5.1, 5.2])[None, None, :]
    assert kmeans_grid_init(feats, k=2).tolist() == [[0, 0, 0, 1, 1, 1]]
    # with one iteration the labels are the nearest of the two start pixels, not k-means++'s
    feats = np.array([0.0, 3.0, 3.1, 3.2, 3.3, 10.0])[None, None, :]
    assert kmeans_grid_init(feats, k=2, iters=1).tolist() == [[0, 0, 0, 0, 0, 1]]


def test_grid_init_is_deterministic_and_accepts_torch():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(8, 20, 24))
    a = kmeans_grid_init(feats)
    b = kmeans_grid_init(feats.copy())
    c = kmeans_grid_init(torch.from_numpy(feats))
    assert a.shape == (20, 24) and a.dtype.kind == "i"
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert set(np.unique(a)) <= set(range(20))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grid_init_matches_sklearn_lloyd_from_the_same_start(seed):
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (5, 3))
    feats = (centres[rng.integers(0, 5, 300)] + rng.normal(0, 0.5, (300, 3))).T.reshape(3, 15, 20)
    k = 6
    flat = feats.reshape(3, -1).T
    start = np.unique(np.round(np.linspace(0, 299, k)).astype(int))
    ref = KMeans(n_clusters=k, init=flat[start], n_init=1, max_iter=100, tol=0.0,
                 algorithm="lloyd").fit(flat)
    ours = kmeans_grid_init(feats, k=k).ravel()
    # same partition (labels equal: both keep the initial order of the centroids)
    np.testing.assert_array_equal(ours, ref.labels_)


@settings(max_examples=30)
@given(h=st.integers(1, 17), w=st.integers(1, 17), oh=st.integers(1, 40), ow=st.integers(1, 40))
def test_nearest_resize_matches_torch(h, w, oh, ow):
    x = np.arange(h * w, dtype=np.float64).reshape(h, w)
    ref = F.interpolate(torch.from_numpy(x)[None, None], size=(oh, ow), mode="nearest")[0, 0]
    np.testing.assert_array_equal(nearest_resize(x, (oh, ow)), ref.numpy())


def test_activation_threshold_is_relative_to_the_mean():
    a = np.zeros((4, 4))
    a[0, 0] = 14.6  # sum 16, mean 1.0 -> threshold 0.7
    a[1, 1] = 0.71
    a[2, 2] = 0.69
    act = activated_region(a, (4, 4))
    assert act[0, 0] and act[1, 1] and not act[2, 2]
    np.testing.assert_array_equal(activated_region(10 * a, (4, 4)), act)  # scale-free


def _square(shape, r0, c0, size):
    m = np.zeros(shape, dtype=bool)
    m[r0:r0 + size, c0:c0 + size] = True
    return m


def test_activated_fraction_rule_is_strict_above_0_3():
    labels = np.zeros((20, 20), dtype=int)
    labels[0:10, 0:10] = 1  # fragment A (100 px)
    labels[10:20, 10:20] = 2  # fragment B (100 px)
    act = np.zeros((20, 20))
    act[0:3, 0:10] = 1.0  # A: 30 % activated -> rejected (needs > 0.3)
    act[10:14, 10:20] = 1.0  # B: 40 % activated -> kept, whole fragment
    found = discover_instances(labels, act, min_area=1)
    assert len(found) == 1
    np.testing.assert_array_equal(found[0], labels == 2)  # includes its non-activated pixels


def test_box_fill_rule_rejects_thin_fragments():
    labels = np.zeros((20, 20), dtype=int)
    frag = np.zeros((20, 20), dtype=bool)
    frag[2, 2:8] = True
    frag[3:8, 2] = True  # an L: 11 px in a 6x6 box
    frag[3, 3] = True  # 12 px: box fill 36 / 12 = 3.0 -> rejected (needs < 3)
    labels[frag] = 1
    act = np.zeros((20, 20))
    act[2:8, 2:8] = 1.0  # the background cluster (label 0) stays under 30 % activated
    assert discover_instances(labels, act, min_area=1) == []
    labels[4, 3] = 1  # 13 px: 36 / 13 < 3 -> kept
    found = discover_instances(labels, act, min_area=1)
    assert len(found) == 1
    np.testing.assert_array_equal(found[0], labels == 1)


def test_four_connectivity_splits_diagonal_neighbours():
    labels = np.zeros((12, 12), dtype=int)
    labels[0:4, 0:4] = 1
    labels[4:8, 4:8] = 1  # touches the first square at one corner only
    act = (labels == 1).astype(float)
    found = discover_instances(labels, act, min_area=1)
    assert len(found) == 2  # 8-connectivity would give one
    assert sorted(int(m.sum()) for m in found) == [16, 16]


def test_rejected_boundary_cluster_separates_touching_instances():
    # two touching 12x12 interiors of one cluster, each inside a one-pixel ring of another:
    # the joined rings are boundary-shaped (box fill 392 / 104 >= 3) and dropped, so the
    # interiors come out as two instances
    labels = np.zeros((20, 34), dtype=int)
    for c0 in (2, 16):
        labels[2:16, c0:c0 + 14] = 2  # ring (its inside overwritten next)
        labels[3:15, c0 + 1:c0 + 13] = 1
    act = np.zeros((20, 34))
    act[2:16, 2:30] = 1.0  # one activated blob covering both objects
    found = discover_instances(labels, act, min_area=10)
    assert len(found) == 2
    assert sorted(int(m.sum()) for m in found) == [144, 144]
    # a CAM-style connected-component split of the activated blob would give one instance
    from skimage import measure
    assert measure.label(act > 0.7 * act.mean(), connectivity=1).max() == 1


def test_min_area_and_top_clusters():
    labels = np.zeros((20, 20), dtype=int)
    labels[0:10, 0:10] = 1  # 100 px
    labels[12:15, 12:15] = 2  # 9 px
    act = (labels > 0).astype(float)
    big_only = discover_instances(labels, act, min_area=10)
    assert [int(m.sum()) for m in big_only] == [100]
    both = discover_instances(labels, act, min_area=9)
    assert sorted(int(m.sum()) for m in both) == [9, 100]
    # top_clusters=1 keeps only the most frequent activated label (label 0 here, skipped)
    assert discover_instances(labels, act, min_area=1, top_clusters=1) == []


def test_activation_at_another_resolution_is_resized_nearest():
    labels = np.zeros((16, 16), dtype=int)
    labels[0:8, 0:8] = 1
    act_small = np.zeros((4, 4))
    act_small[0:2, 0:2] = 1.0
    found = discover_instances(labels, act_small, min_area=1)
    assert any(np.array_equal(m, labels == 1) for m in found)


def test_bad_inputs():
    with pytest.raises(ValueError, match="features"):
        kmeans_grid_init(np.zeros((4, 4)))
    with pytest.raises(TypeError, match="features"):
        kmeans_grid_init([[1.0]])
    with pytest.raises(ValueError, match="fewer than k"):
        kmeans_grid_init(np.zeros((2, 3, 3)), k=20)
    with pytest.raises(ValueError, match="k must"):
        kmeans_grid_init(np.zeros((2, 5, 5)), k=0)
    with pytest.raises(ValueError, match="finite"):
        kmeans_grid_init(np.full((2, 5, 5), np.nan))
    with pytest.raises(ValueError, match="labels"):
        discover_instances(np.zeros((4, 4, 1), dtype=int), np.ones((4, 4)))
    with pytest.raises(ValueError, match="labels"):
        discover_instances(np.zeros((4, 4)), np.ones((4, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        discover_instances(-np.ones((4, 4), dtype=int), np.ones((4, 4)))
    with pytest.raises(ValueError, match="activation"):
        discover_instances(np.zeros((4, 4), dtype=int), np.ones(4))
    with pytest.raises(ValueError, match="max_box_fill"):
        discover_instances(np.zeros((4, 4), dtype=int), np.ones((4, 4)), max_box_fill=0)
