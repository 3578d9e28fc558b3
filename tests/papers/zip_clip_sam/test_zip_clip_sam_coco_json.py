"""COCO-json input/output: RLE against pycocotools (the reference), round trips, and COCOeval
on the written files agreeing with coco_mask_ap."""

import json

import numpy as np
import pytest

from iclr24.papers.zip_clip_sam import (
    Detections,
    GroundTruth,
    coco_mask_ap,
    load_coco_ground_truth,
    load_coco_results,
    mask_to_rle,
    rle_to_mask,
    write_coco_ground_truth,
    write_coco_results,
)


def _random_masks(rng, n, shape=(13, 17)):
    return rng.random((n, *shape)) < rng.uniform(0.05, 0.95, (n, 1, 1))


def test_rle_round_trip_and_edge_cases():
    rng = np.random.default_rng(0)
    cases = list(_random_masks(rng, 20)) + [np.zeros((5, 4), bool), np.ones((5, 4), bool),
                                            np.zeros((0, 3), bool)]
    for m in cases:
        rle = mask_to_rle(m)
        assert rle["size"] == list(m.shape) and isinstance(rle["counts"], str)
        np.testing.assert_array_equal(rle_to_mask(rle), m)
    # uncompressed RLE (a list of runs down the columns, starting with zeros)
    m = np.array([[1, 0], [1, 1]], bool)  # column-major: 1 1 0 1
    np.testing.assert_array_equal(rle_to_mask({"size": [2, 2], "counts": [0, 2, 1, 1]}), m)
    with pytest.raises(ValueError, match="summing to H\\*W"):
        rle_to_mask({"size": [2, 2], "counts": [1, 1]})
    with pytest.raises(ValueError, match="polygon"):
        rle_to_mask([[0, 0, 1, 0, 1, 1]])
    with pytest.raises(TypeError, match="2-D bool"):
        mask_to_rle(m.astype(float))


def test_rle_matches_pycocotools():
    mask_utils = pytest.importorskip("pycocotools.mask")
    rng = np.random.default_rng(1)
    for m in _random_masks(rng, 30, (31, 23)):
        ref = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
        assert mask_to_rle(m)["counts"] == ref["counts"].decode("ascii")
        np.testing.assert_array_equal(rle_to_mask(ref), m)


def _case(rng):
    gts, dets = [], []
    for _ in range(3):
        gm = _random_masks(rng, 3, (16, 16))
        gl = rng.integers(0, 3, 3)
        noise = rng.random((4, 16, 16)) < 0.15
        dm = np.stack([gm[i % 3] ^ noise[i] for i in range(4)])
        gts.append(GroundTruth(gm, gl))
        dets.append(Detections(dm, rng.integers(0, 3, 4), np.round(rng.random(4), 3)))
    return gts, dets


def test_files_round_trip(tmp_path):
    gts, dets = _case(np.random.default_rng(2))
    write_coco_ground_truth(gts, tmp_path / "gt.json", class_names=["a", "b", "c"])
    write_coco_results(dets, tmp_path / "res.json")
    ids, gts2 = load_coco_ground_truth(tmp_path / "gt.json")
    assert ids == [1, 2, 3]
    dets2 = load_coco_results(tmp_path / "res.json", ids, [(16, 16)] * 3)
    for a, b in zip(gts, gts2):
        np.testing.assert_array_equal(a.masks, b.masks)
        np.testing.assert_array_equal(a.labels, b.labels)
    for a, b in zip(dets, dets2):
        np.testing.assert_array_equal(a.masks, b.masks)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_allclose(a.scores, b.scores)
    data = json.loads((tmp_path / "gt.json").read_text())
    assert [c["name"] for c in data["categories"]] == ["a", "b", "c"]
    assert {a["category_id"] for a in data["annotations"]} <= {1, 2, 3}
    assert coco_mask_ap(dets2, gts2) == coco_mask_ap(dets, gts)


def test_cocoeval_on_the_written_files_agrees_with_coco_mask_ap(tmp_path, capsys):
    coco = pytest.importorskip("pycocotools.coco")
    from pycocotools.cocoeval import COCOeval

    for seed in range(5):
        gts, dets = _case(np.random.default_rng(10 + seed))
        write_coco_ground_truth(gts, tmp_path / "gt.json")
        write_coco_results(dets, tmp_path / "res.json")
        gt = coco.COCO(str(tmp_path / "gt.json"))
        ev = COCOeval(gt, gt.loadRes(str(tmp_path / "res.json")), "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        ours = coco_mask_ap(dets, gts)
        np.testing.assert_allclose([ours["ap"], ours["ap50"], ours["ap75"]], ev.stats[:3],
                                   atol=1e-12)


def test_bad_files_and_arguments(tmp_path):
    gts, dets = _case(np.random.default_rng(3))
    write_coco_ground_truth(gts, tmp_path / "gt.json")
    data = json.loads((tmp_path / "gt.json").read_text())
    data["annotations"][0]["iscrowd"] = 1
    (tmp_path / "crowd.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="crowd"):
        load_coco_ground_truth(tmp_path / "crowd.json")
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="'images' and 'annotations'"):
        load_coco_ground_truth(tmp_path / "list.json")
    write_coco_results(dets, tmp_path / "res.json")
    with pytest.raises(ValueError, match="not in image_ids"):
        load_coco_results(tmp_path / "res.json", [1, 2], [(16, 16)] * 2)
    with pytest.raises(ValueError, match="has size"):
        load_coco_results(tmp_path / "res.json", [1, 2, 3], [(8, 8)] * 3)
    with pytest.raises(ValueError, match="image_ids has 2 ids"):
        write_coco_results(dets, tmp_path / "x.json", image_ids=[1, 2])
    with pytest.raises(ValueError, match="class_names has 1 names"):
        write_coco_ground_truth(gts, tmp_path / "x.json", class_names=["a"])
    bad = [Detections(dets[0].masks, dets[0].labels, np.full(4, np.nan))]
    with pytest.raises(ValueError, match="scores must be finite"):
        write_coco_results(bad, tmp_path / "x.json")
