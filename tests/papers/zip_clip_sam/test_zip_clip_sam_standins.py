"""The CAM CNN, the GrabCut segmenter, the cached stand-in and the scene generator."""

import numpy as np
import pytest
import torch

from iclr24.kits.frozen_standins import is_frozen
from iclr24.papers.zip_clip_sam import (
    CLASS_NAMES,
    CNNActivator,
    CNNFeatureExtractor,
    CNNTraining,
    GrabCutSegmenter,
    MultiLabelCNN,
    RGBFeatures,
    make_scenes,
    touching_pairs,
    trained_cnn,
    untrained_cnn,
)


def test_cam_averages_to_the_logits(one_torch_thread):
    torch.manual_seed(0)
    model = MultiLabelCNN(3).eval()
    x = torch.rand(2, 3, 32, 32)
    shapes = [tuple(f.shape) for f in model.stages(x)]
    assert shapes == [(2, 16, 32, 32), (2, 32, 16, 16), (2, 64, 8, 8), (2, 96, 8, 8)]
    # GAP is linear: mean over (x, y) of M_c + b_c = logit_c
    cam = model.cam(x)
    torch.testing.assert_close(cam.mean(dim=(2, 3)) + model.head.bias, model(x))


def test_activator_and_extractors(one_torch_thread):
    torch.manual_seed(0)
    model = MultiLabelCNN(3).eval()
    img = make_scenes(1, 0).images[0]
    act = CNNActivator(model, CLASS_NAMES)
    a = act.activation(img, ["leaf", "orange"])
    assert a.shape == (2, 64, 64) and a.min() == 0.0 and a.max() == pytest.approx(1.0)
    np.testing.assert_allclose(a[1], act.activation(img, ["orange"])[0])
    assert act.scores(img, CLASS_NAMES).shape == (3,)
    assert CNNFeatureExtractor(model, 2).features(img).shape == (32, 64, 64)  # 2x pass, stage 2
    assert CNNFeatureExtractor(model, 4, grid=(64, 64)).features(img).shape == (96, 64, 64)
    np.testing.assert_array_equal(RGBFeatures().features(img), img.transpose(2, 0, 1))
    with pytest.raises(ValueError, match="unknown"):
        act.scores(img, ["cat"])
    with pytest.raises(ValueError, match="empty"):
        act.activation(img, [])
    with pytest.raises(ValueError, match="stage"):
        CNNFeatureExtractor(model, 5)


def test_grabcut_recovers_a_boxed_object_deterministically():
    rng = np.random.default_rng(0)
    img = np.clip(0.5 + rng.normal(0, 0.03, (48, 48, 3)), 0, 1).astype(np.float32)
    yy, xx = np.mgrid[0:48, 0:48]
    disc = (yy - 24) ** 2 + (xx - 20) ** 2 <= 64
    img[disc] = (0.9, 0.5, 0.1)
    seg = GrabCutSegmenter()
    masks = seg.segment(img, np.array([[12.0, 16.0, 29.0, 33.0]]))
    iou = (masks[0] & disc).sum() / (masks[0] | disc).sum()
    assert masks.shape == (1, 48, 48) and iou > 0.9
    np.testing.assert_array_equal(masks, seg.segment(img, np.array([[12.0, 16.0, 29.0, 33.0]])))
    with pytest.raises(ValueError, match="boxes"):
        seg.segment(img, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="x1 > x0"):
        seg.segment(img, np.array([[10.0, 10.0, 5.0, 20.0]]))


def test_trained_cnn_is_cached_and_frozen(tmp_path, one_torch_thread):
    cfg = CNNTraining(n_train=16, steps=2, batch_size=4)
    a = trained_cnn(cfg, 0, root=tmp_path)
    b = trained_cnn(cfg, 0, root=tmp_path)
    assert is_frozen(a) and is_frozen(b)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb)
    fresh = MultiLabelCNN(3)
    assert any(not torch.equal(p, q) for p, q in zip(a.parameters(), fresh.parameters()))


def test_untrained_cnn_is_the_trained_one_before_training(tmp_path, one_torch_thread):
    """The null of layer_matters: the seeded initial weights trained_cnn starts from, frozen."""
    u = untrained_cnn(0)
    assert is_frozen(u)
    torch.manual_seed(0)
    for p, q in zip(u.parameters(), MultiLabelCNN(3).parameters()):
        torch.testing.assert_close(p, q)
    torch.manual_seed(123)  # the global RNG state does not matter
    for p, q in zip(u.parameters(), untrained_cnn(0).parameters()):
        torch.testing.assert_close(p, q)
    assert any(not torch.equal(p, q) for p, q in zip(u.parameters(), untrained_cnn(1).parameters()))
    trained = trained_cnn(CNNTraining(n_train=16, steps=2, batch_size=4), 0, root=tmp_path)
    assert any(not torch.equal(p, q) for p, q in zip(u.parameters(), trained.parameters()))
    with pytest.raises(TypeError, match="seed"):
        untrained_cnn(0.5)


def test_scenes_are_deterministic_and_consistent():
    s1, s2 = make_scenes(6, 3), make_scenes(6, 3)
    np.testing.assert_array_equal(s1.images, s2.images)
    assert s1.images.shape == (6, 64, 64, 3) and 0 <= s1.images.min() <= s1.images.max() <= 1
    for masks, classes, label in zip(s1.masks, s1.classes, s1.labels):
        assert masks.sum(axis=0).max() <= 1  # visible masks do not overlap
        assert all(m.any() for m in masks)
        np.testing.assert_array_equal(np.nonzero(label)[0], np.unique(classes))
    assert not np.array_equal(make_scenes(1, 4).images, s1.images[:1])
    with pytest.raises(ValueError, match="n must"):
        make_scenes(0, 0)


def test_touching_pairs_hand_case():
    m = np.zeros((3, 8, 8), dtype=bool)
    m[0, 0:3, 0:3] = True
    m[1, 0:3, 3:6] = True  # 4-adjacent to 0, same class
    m[2, 4:6, 4:6] = True  # diagonal to 1 only
    assert touching_pairs(m, np.array([0, 0, 0])) == 1
    assert touching_pairs(m, np.array([0, 1, 1])) == 0
