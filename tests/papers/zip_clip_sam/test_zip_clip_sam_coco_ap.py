"""COCO-protocol mask AP against hand-computed cases (and pycocotools where it is installed)."""

import numpy as np
import pytest

from iclr24.papers.zip_clip_sam import Detections, GroundTruth, coco_mask_ap, mask_iou


def _box(r0, c0, h, w, shape=(20, 20)):
    m = np.zeros(shape, dtype=bool)
    m[r0:r0 + h, c0:c0 + w] = True
    return m


def test_mask_iou_hand_case():
    a = np.stack([_box(0, 0, 4, 4), _box(0, 0, 2, 2)])
    b = np.stack([_box(0, 0, 4, 2), np.zeros((20, 20), bool)])
    np.testing.assert_allclose(mask_iou(a, b), [[0.5, 0.0], [0.5, 0.0]])


def test_hand_computed_ap():
    # two ground truths; detections: 0.9 exact on g1, 0.8 a false positive, 0.7 on g2 with
    # IoU 5/8 (a match at IoU 0.50, 0.55, 0.60; a miss from 0.65 on)
    g1, g2 = _box(0, 0, 4, 4), _box(10, 10, 2, 4)  # g2: 8 px
    d3 = np.zeros((20, 20), bool)
    d3[10:12, 10:12] = True
    d3[10, 12] = True  # 5 px inside g2: IoU 5 / 8
    assert mask_iou(d3[None], g2[None])[0, 0] == pytest.approx(5 / 8)
    dets = [Detections(np.stack([g1, _box(5, 15, 3, 3), d3]), np.array([0, 0, 0]),
                       np.array([0.9, 0.8, 0.7]))]
    gts = [GroundTruth(np.stack([g1, g2]), np.array([0, 0]))]
    res = coco_mask_ap(dets, gts)
    # IoU 0.5: precision 1 up to recall 0.5 (51 recall points), then 2/3 up to recall 1 (50)
    ap_low = (51 * 1.0 + 50 * 2 / 3) / 101
    ap_high = 51 / 101  # thresholds 0.65..0.95: recall stops at 0.5
    assert res["ap50"] == pytest.approx(ap_low)
    assert res["ap75"] == pytest.approx(ap_high)
    assert res["ap"] == pytest.approx((3 * ap_low + 7 * ap_high) / 10)


def test_perfect_empty_and_ordering():
    g = [GroundTruth(np.stack([_box(0, 0, 4, 4), _box(10, 10, 4, 4)]), np.array([0, 1]))]
    perfect = [Detections(g[0].masks, np.array([0, 1]), np.array([0.5, 0.6]))]
    assert coco_mask_ap(perfect, g) == pytest.approx({"ap": 1.0, "ap50": 1.0, "ap75": 1.0})
    none = [Detections(np.zeros((0, 20, 20), bool), np.zeros(0, int), np.zeros(0))]
    assert coco_mask_ap(none, g)["ap"] == 0.0
    # a wrong-class detection ranked above the right one costs precision; below it costs none
    fp = _box(5, 5, 2, 2)
    above = [Detections(np.stack([fp, g[0].masks[0]]), np.array([0, 0]), np.array([0.9, 0.1]))]
    below = [Detections(np.stack([fp, g[0].masks[0]]), np.array([0, 0]), np.array([0.1, 0.9]))]
    g0 = [GroundTruth(g[0].masks[:1], np.array([0]))]
    assert coco_mask_ap(below, g0)["ap50"] == pytest.approx(1.0)
    assert coco_mask_ap(above, g0)["ap50"] == pytest.approx(0.5)


def test_category_without_ground_truth_is_excluded_and_empty_image_dets_are_fps():
    g = [GroundTruth(_box(0, 0, 4, 4)[None], np.array([0])),
         GroundTruth(np.zeros((0, 20, 20), bool), np.zeros(0, int))]
    d = [Detections(_box(0, 0, 4, 4)[None], np.array([0]), np.array([0.5])),
         Detections(np.stack([_box(3, 3, 3, 3), _box(8, 8, 3, 3)]), np.array([0, 2]),
                    np.array([0.9, 0.9]))]
    res = coco_mask_ap(d, g)  # category 2 has no ground truth: ignored; the class-0 FP counts
    assert res["ap50"] == pytest.approx(0.5)  # the FP (0.9) ranks first: precision 1/2


def test_max_dets_truncates_per_image():
    g = [GroundTruth(_box(0, 0, 4, 4)[None], np.array([0]))]
    masks = np.stack([_box(10, 10, 2, 2)] * 3 + [_box(0, 0, 4, 4)])
    d = [Detections(masks, np.zeros(4, int), np.array([0.9, 0.8, 0.7, 0.1]))]
    assert coco_mask_ap(d, g, max_dets=3)["ap50"] == 0.0
    assert coco_mask_ap(d, g, max_dets=4)["ap50"] == pytest.approx(0.25)


def test_bad_input():
    g = [GroundTruth(_box(0, 0, 4, 4)[None], np.array([0]))]
    with pytest.raises(ValueError, match="one Detections per"):
        coco_mask_ap([], g)
    with pytest.raises(ValueError, match="differ in length"):
        coco_mask_ap([Detections(_box(0, 0, 4, 4)[None], np.array([0, 1]), np.array([0.5]))], g)
    with pytest.raises(ValueError, match="differ in size"):
        coco_mask_ap([Detections(np.ones((1, 5, 5), bool), np.array([0]), np.array([0.5]))], g)


@pytest.mark.parametrize("bad, exc, match", [
    # a NaN score used to rank last and give AP 1.0 (issue 38)
    ({"scores": np.array([np.nan])}, ValueError, "scores must be finite"),
    ({"scores": np.array([np.inf])}, ValueError, "scores must be finite"),
    ({"masks": _box(0, 0, 4, 4)[None].astype(float)}, TypeError, "bool numpy array"),
    ({"masks": _box(0, 0, 4, 4)}, ValueError, r"\(n, H, W\)"),
    ({"labels": np.array([[0]])}, ValueError, "1-D integer"),
    ({"labels": np.array([0.0])}, ValueError, "1-D integer"),
    ({"scores": np.array([[0.5]])}, ValueError, "1-D numeric"),
])
def test_bad_detections_are_refused(bad, exc, match):
    g = [GroundTruth(_box(0, 0, 4, 4)[None], np.array([0]))]
    good = {"masks": _box(0, 0, 4, 4)[None], "labels": np.array([0]),
            "scores": np.array([0.5])}
    assert coco_mask_ap([Detections(**good)], g)["ap"] == pytest.approx(1.0)
    with pytest.raises(exc, match=match):
        coco_mask_ap([Detections(**{**good, **bad})], g)


def test_bad_ground_truth_and_max_dets_are_refused():
    d = [Detections(_box(0, 0, 4, 4)[None], np.array([0]), np.array([0.5]))]
    with pytest.raises(TypeError, match="ground-truth masks must be a bool"):
        coco_mask_ap(d, [GroundTruth(_box(0, 0, 4, 4)[None].astype(np.uint8), np.array([0]))])
    with pytest.raises(ValueError, match="ground-truth labels must be a 1-D"):
        coco_mask_ap(d, [GroundTruth(_box(0, 0, 4, 4)[None], np.array([[0]]))])
    g = [GroundTruth(_box(0, 0, 4, 4)[None], np.array([0]))]
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_dets must be a positive int"):
            coco_mask_ap(d, g, max_dets=bad)
    with pytest.raises(TypeError, match="need a Detections"):
        coco_mask_ap([g[0]], g)


def test_agrees_with_pycocotools_on_random_cases():
    coco = pytest.importorskip("pycocotools.coco")  # a dev dependency: the reference
    from pycocotools import mask as mask_utils
    from pycocotools.cocoeval import COCOeval

    rng = np.random.default_rng(0)
    for _ in range(20):
        images, anns, res, dets, gts = [], [], [], [], []
        for im in range(3):
            images.append({"id": im + 1, "height": 20, "width": 20})
            gm = np.stack([_box(*rng.integers(0, 14, 2), *rng.integers(3, 7, 2))
                           for _ in range(3)])
            gl = rng.integers(0, 2, 3)
            dm = np.stack([np.roll(gm[i % 3], tuple(rng.integers(-2, 3, 2)), (0, 1))
                           for i in range(4)])
            dl, ds = rng.integers(0, 2, 4), np.round(rng.random(4), 2)
            for m, c in zip(gm, gl):
                rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
                anns.append({"id": len(anns) + 1, "image_id": im + 1, "category_id": int(c) + 1,
                             "segmentation": rle, "area": float(m.sum()),
                             "bbox": list(mask_utils.toBbox(rle)), "iscrowd": 0})
            for m, c, s in zip(dm, dl, ds):
                rle = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
                res.append({"image_id": im + 1, "category_id": int(c) + 1,
                            "segmentation": rle, "score": float(s)})
            dets.append(Detections(dm, dl, ds))
            gts.append(GroundTruth(gm, gl))
        gt = coco.COCO()
        gt.dataset = {"images": images, "annotations": anns,
                      "categories": [{"id": 1}, {"id": 2}]}
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(res), "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        ours = coco_mask_ap(dets, gts)
        np.testing.assert_allclose([ours["ap"], ours["ap50"], ours["ap75"]], ev.stats[:3],
                                   atol=1e-12)
