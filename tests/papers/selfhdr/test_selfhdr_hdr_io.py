"""Radiance .hdr reading (known bytes, flat and run-length scanlines, EXPOSURE) and writing
(round trip), Kalantari scene folders (tif frames, exposure.txt, HDRImg.hdr), bad input."""

import numpy as np
import pytest
import torch

from iclr24.papers.selfhdr import (
    KalantariScene,
    load_kalantari_scene,
    read_radiance_hdr,
    write_radiance_hdr,
)

HEADER = b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n"


def test_read_flat_pixels_known_answer(tmp_path):
    path = tmp_path / "flat.hdr"
    # c = m * 2^(e - 136): (128, 64, 0, 129) -> (1, 0.5, 0); e = 0 -> black
    path.write_bytes(HEADER + b"-Y 1 +X 2\n" + bytes([128, 64, 0, 129, 7, 7, 7, 0]))
    img = read_radiance_hdr(path)
    assert img.dtype == np.float32 and img.shape == (1, 2, 3)
    assert np.array_equal(img, [[[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]]])


def test_read_run_length_scanline_known_answer(tmp_path):
    path = tmp_path / "rle.hdr"
    red = bytes([128 + 10, 200])  # a run of 10
    green = bytes([10, *range(10)])  # a literal of 10
    blue = bytes([128 + 2, 5, 8, *range(20, 28)])  # a run of 2, then a literal of 8
    exponent = bytes([128 + 10, 130])  # 2^(130 - 136) = 1/64
    path.write_bytes(HEADER + b"-Y 1 +X 10\n" + bytes([2, 2, 0, 10]) + red + green + blue
                     + exponent)
    img = read_radiance_hdr(path)[0]
    assert np.allclose(img[:, 0], 200 / 64)
    assert np.allclose(img[:, 1], np.arange(10) / 64)
    assert np.allclose(img[:, 2], np.array([5, 5, *range(20, 28)]) / 64)


def test_read_divides_by_exposure(tmp_path):
    path = tmp_path / "exposed.hdr"
    path.write_bytes(b"#?RADIANCE\nEXPOSURE=2.0\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 1\n"
                     + bytes([128, 128, 128, 129]))
    assert np.allclose(read_radiance_hdr(path), 0.5)


@pytest.mark.parametrize("shape", [(5, 12, 3), (3, 3, 3), (2, 300, 3)])
def test_write_read_round_trip(tmp_path, shape):
    rng = np.random.default_rng(0)
    img = rng.uniform(0, 1, shape) * 10.0 ** rng.uniform(-4, 2, shape[:2])[..., None]
    img[0, 0] = 0.0
    path = tmp_path / "round.hdr"
    write_radiance_hdr(path, img)
    back = read_radiance_hdr(path)
    assert back.shape == shape and np.all(back[0, 0] == 0)
    # the largest channel of a pixel keeps 8 bits: error below 1/128 of it
    assert np.all(np.abs(back - img) <= img.max(axis=2, keepdims=True) / 128 + 1e-30)
    write_radiance_hdr(path, torch.as_tensor(img))  # torch tensors are accepted
    assert np.array_equal(read_radiance_hdr(path), back)


def test_radiance_bad_input(tmp_path):
    path = tmp_path / "x.hdr"
    with pytest.raises(ValueError, match=r"\(H, W, 3\)"):
        write_radiance_hdr(path, np.zeros((4, 4)))
    with pytest.raises(ValueError, match=">= 0"):
        write_radiance_hdr(path, -np.ones((2, 2, 3)))
    with pytest.raises(ValueError, match="finite"):
        write_radiance_hdr(path, np.full((2, 2, 3), np.nan))
    with pytest.raises(TypeError, match="path"):
        write_radiance_hdr(3, np.zeros((2, 2, 3)))
    path.write_bytes(b"P6\n2 2\n255\n")
    with pytest.raises(ValueError, match="not a Radiance"):
        read_radiance_hdr(path)
    path.write_bytes(HEADER + b"+Y 1 +X 2\n" + bytes(8))
    with pytest.raises(ValueError, match="orientation"):
        read_radiance_hdr(path)
    path.write_bytes(HEADER + b"-Y 2 +X 2\n" + bytes(8))
    with pytest.raises(ValueError, match="ends at scanline 1"):
        read_radiance_hdr(path)
    path.write_bytes(HEADER + b"-Y 1 +X 10\n" + bytes([2, 2, 0, 9]) + bytes(40))
    with pytest.raises(ValueError, match="declares width 9"):
        read_radiance_hdr(path)


def _write_scene(folder, ev="0\n2\n4\n", dtype=np.uint16, label=True):
    from skimage.io import imsave

    folder.mkdir()
    rng = np.random.default_rng(1)
    top = np.iinfo(dtype).max
    frames = [rng.integers(0, top + 1, (6, 7, 3)).astype(dtype) for _ in range(3)]
    for name, frame in zip(("b.tif", "c.tif", "d.tif"), frames):
        imsave(str(folder / name), frame, check_contrast=False)
    (folder / "exposure.txt").write_text(ev)
    gt = rng.uniform(0, 1, (6, 7, 3))
    if label:
        write_radiance_hdr(folder / "HDRImg.hdr", gt)
    return frames, gt


def test_load_kalantari_scene(tmp_path):
    frames, gt = _write_scene(tmp_path / "001")
    scene = load_kalantari_scene(tmp_path / "001")
    assert isinstance(scene, KalantariScene) and scene.times == (1.0, 4.0, 16.0)
    assert scene.ldrs.shape == (3, 3, 6, 7) and scene.ldrs.dtype == np.float32
    for i in range(3):  # sorted by name, RGB, 16 bits -> [0, 1]
        assert np.allclose(scene.ldrs[i], frames[i].transpose(2, 0, 1) / 65535)
    assert np.allclose(scene.gt, gt.transpose(2, 0, 1), atol=1 / 128)
    # EVs relative to the short frame; 8-bit frames; an unlabelled scene
    frames8, _ = _write_scene(tmp_path / "002", ev="-2\n0\n2", dtype=np.uint8, label=False)
    scene = load_kalantari_scene(str(tmp_path / "002"))
    assert scene.times == (1.0, 4.0, 16.0) and scene.gt is None
    assert np.allclose(scene.ldrs[1], frames8[1].transpose(2, 0, 1) / 255)


def test_load_kalantari_scene_bad_input(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        load_kalantari_scene(tmp_path / "missing")
    with pytest.raises(TypeError, match="folder"):
        load_kalantari_scene(1)
    _write_scene(tmp_path / "a")
    (tmp_path / "a" / "d.tif").unlink()
    with pytest.raises(ValueError, match="3 .tif"):
        load_kalantari_scene(tmp_path / "a")
    _write_scene(tmp_path / "b")
    (tmp_path / "b" / "exposure.txt").unlink()
    with pytest.raises(ValueError, match="exposure.txt"):
        load_kalantari_scene(tmp_path / "b")
    _write_scene(tmp_path / "c", ev="0\n2\n")
    with pytest.raises(ValueError, match="3 EV"):
        load_kalantari_scene(tmp_path / "c")
    _write_scene(tmp_path / "d", ev="4\n2\n0\n")
    with pytest.raises(ValueError, match="increasing"):
        load_kalantari_scene(tmp_path / "d")
