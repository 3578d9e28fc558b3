"""Zip.predict and the baselines with hand-built parts; boundary errors."""

import numpy as np
import pytest

from iclr24.papers.zip_clip_sam import (
    CAMComponents,
    DenseFeatureExtractor,
    PromptableSegmenter,
    SemanticActivator,
    SuperpixelDiscovery,
    Zip,
    ZipConfig,
    discover_instances,
    grid_boxes,
)

NAMES = ("orange", "leaf")


def _two_touching_squares():
    """A 32x32 image with two touching 10x10 orange squares, each inside a 1-px dark rim."""
    img = np.full((32, 32, 3), 0.5, dtype=np.float32)
    labels = np.zeros((32, 32), dtype=int)
    for c0 in (4, 16):
        img[8:20, c0:c0 + 12] = (0.3, 0.15, 0.0)
        labels[8:20, c0:c0 + 12] = 2
        img[9:19, c0 + 1:c0 + 11] = (1.0, 0.55, 0.1)
        labels[9:19, c0 + 1:c0 + 11] = 1
    return img, labels


class FakeActivator:
    """Orange present (p = 0.9) and activated on a blob covering both squares."""

    def scores(self, image, class_names):
        return np.array([0.9 if c == "orange" else 0.1 for c in class_names])

    def activation(self, image, class_names):
        a = np.zeros((len(class_names), *image.shape[:2]))
        a[0, 7:21, 3:29] = 1.0
        return a


class LabelFeatures:
    """Features = one-hot of a fixed label map (so k-means recovers it)."""

    def __init__(self, labels):
        self.labels = labels

    def features(self, image):
        return np.stack([(self.labels == v).astype(float) * 10 for v in range(3)])


class BoxSegmenter:
    """Returns each box's pixels as its mask; records the prompts."""

    def __init__(self):
        self.calls = []

    def segment(self, image, boxes):
        self.calls.append(np.asarray(boxes))
        masks = np.zeros((len(boxes), *image.shape[:2]), dtype=bool)
        for i, (x0, y0, x1, y1) in enumerate(np.asarray(boxes).astype(int)):
            masks[i, y0:y1, x0:x1] = True
        return masks


def test_parts_satisfy_the_protocols():
    _, labels = _two_touching_squares()
    assert isinstance(FakeActivator(), SemanticActivator)
    assert isinstance(LabelFeatures(labels), DenseFeatureExtractor)
    assert isinstance(BoxSegmenter(), PromptableSegmenter)


def test_zip_splits_touching_squares_and_cam_baseline_merges_them():
    img, labels = _two_touching_squares()
    cfg = ZipConfig(min_area=10)  # k = 20: the grid start hits background, rim and interior
    seg = BoxSegmenter()
    found = Zip(FakeActivator(), LabelFeatures(labels), seg, cfg).predict(img, NAMES)
    assert len(found) == 2 and {i.label for i in found} == {"orange"}
    boxes = sorted(i.box for i in found)
    assert boxes == [(5.0, 9.0, 15.0, 19.0), (17.0, 9.0, 27.0, 19.0)]  # the two interiors
    assert all(0 < i.score <= 0.9 for i in found)
    merged = CAMComponents(FakeActivator(), BoxSegmenter(), cfg).predict(img, NAMES)
    assert len(merged) == 1 and merged[0].box == (3.0, 7.0, 29.0, 21.0)


def test_absent_classes_are_not_searched():
    img, labels = _two_touching_squares()

    class Absent(FakeActivator):
        def scores(self, image, class_names):
            return np.zeros(len(class_names))

    seg = BoxSegmenter()
    assert Zip(Absent(), LabelFeatures(labels), seg, ZipConfig(k=3)).predict(img, NAMES) == []
    assert seg.calls == []


def test_boxes_are_rescaled_from_the_cluster_grid():
    m = np.zeros((8, 8), dtype=bool)
    m[2:4, 1:6] = True
    np.testing.assert_allclose(grid_boxes([m], (32, 64)), [[8.0, 8.0, 48.0, 16.0]])


def test_superpixel_baseline_finds_the_objects_of_a_simple_scene():
    img = np.full((32, 32, 3), 0.5, dtype=np.float32)
    img[4:14, 4:14] = (1.0, 0.55, 0.1)
    img[18:28, 18:28] = (1.0, 0.55, 0.1)

    class Act(FakeActivator):
        def activation(self, image, class_names):
            a = np.zeros((len(class_names), 32, 32))
            a[0, 3:15, 3:15] = a[0, 17:29, 17:29] = 1.0
            return a

    found = SuperpixelDiscovery(Act(), BoxSegmenter(), ZipConfig(min_area=20)).predict(img, NAMES)
    assert sorted(i.box for i in found) == [(4.0, 4.0, 14.0, 14.0), (18.0, 18.0, 28.0, 28.0)]


@pytest.mark.parametrize("image, err, match", [
    (np.zeros((32, 32)), ValueError, "shape"),
    (np.zeros((3, 32, 32)), ValueError, "shape"),
    (np.full((32, 32, 3), 2.0), ValueError, r"\[0, 1\]"),
    (np.full((32, 32, 3), -0.1), ValueError, r"\[0, 1\]"),
    (np.zeros((32, 32, 3), dtype=np.uint8), TypeError, "float"),
    ([[0.0]], TypeError, "numpy"),
])
def test_bad_images(image, err, match):
    _, labels = _two_touching_squares()
    zip_ = Zip(FakeActivator(), LabelFeatures(labels), BoxSegmenter(), ZipConfig(k=3))
    with pytest.raises(err, match=match):
        zip_.predict(image, NAMES)


def test_bad_class_lists_and_parts():
    img, labels = _two_touching_squares()
    zip_ = Zip(FakeActivator(), LabelFeatures(labels), BoxSegmenter(), ZipConfig(k=3))
    with pytest.raises(ValueError, match="empty"):
        zip_.predict(img, [])
    with pytest.raises(TypeError, match="sequence"):
        zip_.predict(img, "orange")
    with pytest.raises(ValueError, match="distinct"):
        zip_.predict(img, ["orange", "orange"])
    with pytest.raises(ValueError, match="empty"):
        CAMComponents(FakeActivator(), BoxSegmenter()).predict(img, ())
    with pytest.raises(TypeError, match="segmenter"):
        Zip(FakeActivator(), LabelFeatures(labels), object())
    with pytest.raises(TypeError, match="activator"):
        CAMComponents(object(), BoxSegmenter())
    with pytest.raises(ValueError, match="min_area"):
        ZipConfig(min_area=-1)
    with pytest.raises(ValueError, match="nms_iou"):
        ZipConfig(nms_iou=1.5)


class ChannelsLast(LabelFeatures):
    """The same one-hot features, but (h, w, D): the layout a user gets from many encoders."""

    def features(self, image):
        return super().features(image).transpose(1, 2, 0)


def test_channels_last_features_are_refused():
    """Issue 38: a (h, w, D) map used to be clustered as (D, h, w) without a word."""
    img, labels = _two_touching_squares()
    ok = Zip(FakeActivator(), LabelFeatures(labels), BoxSegmenter(), ZipConfig(min_area=10))
    assert len(ok.predict(img, NAMES)) == 2
    bad = Zip(FakeActivator(), ChannelsLast(labels), BoxSegmenter(), ZipConfig(min_area=10))
    with pytest.raises(ValueError, match="channels first"):
        bad.predict(img, NAMES)


class FlatFeatures(LabelFeatures):
    def features(self, image):
        return super().features(image)[0]


def test_feature_maps_of_the_wrong_rank_are_refused():
    img, labels = _two_touching_squares()
    bad = Zip(FakeActivator(), FlatFeatures(labels), BoxSegmenter(), ZipConfig(min_area=10))
    with pytest.raises(ValueError, match=r"\(D, h, w\)"):
        bad.predict(img, NAMES)


@pytest.mark.parametrize("kwargs, match", [
    ({"min_activated": 5.0}, "min_activated must be a fraction"),
    ({"min_activated": 1.0}, "min_activated must be a fraction"),
    ({"min_activated": -0.1}, "min_activated must be a fraction"),
    ({"min_activated": float("nan")}, "min_activated"),
    ({"max_box_fill": 1.0}, "max_box_fill must be a finite number > 1"),
    ({"act_ratio": 0.0}, "act_ratio must be a finite number > 0"),
])
def test_fragment_thresholds_out_of_range_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ZipConfig(**kwargs)
    with pytest.raises(ValueError, match=match):
        discover_instances(np.zeros((4, 4), dtype=int), np.ones((4, 4)), **kwargs)
    with pytest.raises(TypeError, match="must be a number"):
        ZipConfig(min_activated="0.3")
    ZipConfig(min_activated=0.0)  # the edge of the range is allowed
