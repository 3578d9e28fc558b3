"""Reading and writing the files of real multi-exposure HDR data: Radiance ``.hdr`` images and
Kalantari's scene folders (the SIG17 set SelfHDR trains and tests on), so that a network trained
here can be run on, and scored against, real captures.

- :func:`read_radiance_hdr` / :func:`write_radiance_hdr`: the Radiance RGBE format (Ward),
  ``-Y H +X W`` orientation, flat or "new" run-length-encoded scanlines. A pixel is three
  mantissas and a shared exponent, ``c = m * 2^(e - 136)`` (0 when e = 0), the decoding of
  Walter's ``rgbe.c`` that OpenCV and FreeImage (the official code's reader) use. The old 1991
  run-length scheme is not read; files written here use the new one (literal packets).
- :func:`load_kalantari_scene`: one scene folder: three 8- or 16-bit ``.tif`` LDR frames (sorted
  by name: short, reference, long), ``exposure.txt`` (EV of each frame) and, for labelled
  scenes, ``HDRImg.hdr``. Exposure times are ``2^(EV - EV_short)``, relative to the short frame
  as everywhere in this package (:mod:`.hdr_imaging`); the official loader reads ``2^EV``,
  identical on Kalantari's files, whose short frame is at 0 EV. 16-bit frames are divided by
  65535 (the official loader divides by 2^16: white reads 0.99998 there, 1 here).

Nothing here downloads data: Kalantari's set must be fetched by hand.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .hdr_imaging import validate_times

__all__ = ["KalantariScene", "load_kalantari_scene", "read_radiance_hdr", "write_radiance_hdr"]

_RLE_MIN_WIDTH, _RLE_MAX_WIDTH = 8, 0x7FFF  # widths the new run-length scheme can encode


def _path(path, name: str = "path") -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


def _read_header(data: bytes, path: Path) -> tuple[int, int, int, float]:
    """(height, width, offset of the pixel data, exposure factor) of a Radiance file."""
    if not data.startswith((b"#?RADIANCE", b"#?RGBE")):
        raise ValueError(f"{path} is not a Radiance .hdr file (no '#?RADIANCE' magic line)")
    pos, exposure = 0, 1.0
    while True:
        end = data.find(b"\n", pos)
        if end < 0:
            raise ValueError(f"{path}: the header has no blank line before the resolution")
        line = data[pos:end].strip()
        pos = end + 1
        if not line:
            break
        if line.startswith(b"FORMAT=") and line != b"FORMAT=32-bit_rle_rgbe":
            raise ValueError(f"{path}: only FORMAT=32-bit_rle_rgbe is read, got "
                             f"{line.decode(errors='replace')}")
        if line.startswith(b"EXPOSURE="):
            exposure *= float(line[len(b"EXPOSURE="):])
    end = data.find(b"\n", pos)
    match = re.fullmatch(rb"-Y (\d+) \+X (\d+)", data[pos:end].strip() if end >= 0 else b"")
    if match is None:
        raise ValueError(f"{path}: only the standard '-Y H +X W' orientation is read, got "
                         f"{data[pos:end][:40]!r}")
    return int(match[1]), int(match[2]), end + 1, exposure


def _decode_rle_scanline(data: bytes, pos: int, width: int, path: Path
                         ) -> tuple[np.ndarray, int]:
    """One new-style run-length-encoded scanline (after its 4-byte marker): (width, 4) bytes."""
    line = np.empty((4, width), np.uint8)
    for component in range(4):
        x = 0
        while x < width:
            if pos >= len(data):
                raise ValueError(f"{path}: the pixel data ends inside a scanline")
            count = data[pos]
            pos += 1
            if count > 128:  # a run: one byte repeated count - 128 times
                count -= 128
                if x + count > width or pos >= len(data):
                    raise ValueError(f"{path}: a run overruns its scanline")
                line[component, x:x + count] = data[pos]
                pos += 1
            else:  # a literal: count bytes
                if count == 0 or x + count > width or pos + count > len(data):
                    raise ValueError(f"{path}: a bad literal packet in a scanline")
                line[component, x:x + count] = np.frombuffer(data, np.uint8, count, pos)
                pos += count
            x += count
    return line.T, pos


def read_radiance_hdr(path: str | os.PathLike) -> np.ndarray:
    """A Radiance ``.hdr`` image as float32 (H, W, 3) linear RGB (divided by the header's
    EXPOSURE, if any). Raises ValueError naming the file for anything it cannot read."""
    path = _path(path)
    data = path.read_bytes()
    h, w, pos, exposure = _read_header(data, path)
    rgbe = np.empty((h, w, 4), np.uint8)
    for y in range(h):
        marker = data[pos:pos + 4]
        if (_RLE_MIN_WIDTH <= w <= _RLE_MAX_WIDTH and len(marker) == 4 and marker[0] == 2
                and marker[1] == 2 and marker[2] < 128):
            if (marker[2] << 8 | marker[3]) != w:
                raise ValueError(f"{path}: scanline {y} declares width "
                                 f"{marker[2] << 8 | marker[3]}, expected {w}")
            rgbe[y], pos = _decode_rle_scanline(data, pos + 4, w, path)
        else:  # flat: w pixels of 4 bytes
            if pos + 4 * w > len(data):
                raise ValueError(f"{path}: the pixel data ends at scanline {y} of {h}")
            rgbe[y] = np.frombuffer(data, np.uint8, 4 * w, pos).reshape(w, 4)
            pos += 4 * w
    e = rgbe[..., 3].astype(np.int32)
    scale = np.where(e > 0, np.ldexp(1.0, e - 136), 0.0)  # c = m * 2^(e - 128 - 8)
    return (rgbe[..., :3] * scale[..., None] / exposure).astype(np.float32)


def write_radiance_hdr(path: str | os.PathLike, image) -> None:
    """Write a linear (H, W, 3) image (numpy or torch, finite, >= 0) as a Radiance ``.hdr`` file
    (RGBE, new run-length scanlines made of literal packets for widths 8..32767, flat
    otherwise). Values below 1e-32 are stored as 0; the largest channel of a pixel keeps 8
    significant bits."""
    path = _path(path)
    try:
        x = np.asarray(image.detach().cpu() if hasattr(image, "detach") else image,
                       dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"image must be an array of numbers, got {type(image).__name__}") from None
    if x.ndim != 3 or x.shape[2] != 3 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"image must have shape (H, W, 3), got {x.shape}")
    if not np.isfinite(x).all() or x.min() < 0 or x.max() >= 2.0 ** 127:
        raise ValueError("image must hold finite linear values >= 0 and < 2^127 (RGBE range)")
    h, w = x.shape[:2]
    brightest = x.max(axis=2)
    _, exponent = np.frexp(brightest)  # brightest = mantissa * 2^exponent, mantissa in [0.5, 1)
    keep = brightest >= 1e-32
    safe_exponent = np.where(keep, exponent, 0)
    rgbe = np.zeros((h, w, 4), np.uint8)
    rgbe[..., :3] = np.where(keep[..., None],
                             np.floor(x * np.ldexp(256.0, -safe_exponent)[..., None]), 0)
    rgbe[..., 3] = np.where(keep, safe_exponent + 128, 0)
    out = [b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n", f"-Y {h} +X {w}\n".encode()]
    rle = _RLE_MIN_WIDTH <= w <= _RLE_MAX_WIDTH
    for y in range(h):
        if not rle:
            out.append(rgbe[y].tobytes())
            continue
        out.append(bytes([2, 2, w >> 8, w & 0xFF]))
        for component in range(4):
            row = rgbe[y, :, component]
            for start in range(0, w, 128):
                chunk = row[start:start + 128]
                out.append(bytes([len(chunk)]) + chunk.tobytes())
    path.write_bytes(b"".join(out))


@dataclass(frozen=True)
class KalantariScene:
    """One scene of Kalantari's dataset.

    ldrs: (3, 3, H, W) float32 LDR frames (short, reference, long; RGB) in [0, 1];
    times: exposure times relative to the short frame (times[0] == 1);
    gt: (3, H, W) float32 HDR label (RGB) or None where the folder has no ``HDRImg.hdr``."""

    ldrs: np.ndarray
    times: tuple[float, float, float]
    gt: np.ndarray | None


def _read_ldr(path: Path) -> np.ndarray:
    from skimage.io import imread

    img = np.asarray(imread(path))
    if img.ndim != 3 or img.shape[2] not in (3, 4):
        raise ValueError(f"{path}: expected an RGB image, got shape {img.shape}")
    if img.dtype not in (np.uint8, np.uint16):
        raise ValueError(f"{path}: expected 8- or 16-bit integer pixels, got {img.dtype}")
    return img[..., :3].transpose(2, 0, 1).astype(np.float32) / np.iinfo(img.dtype).max


def load_kalantari_scene(folder: str | os.PathLike) -> KalantariScene:
    """Read one scene folder of Kalantari's SIG17 set (see the module docstring for the layout)."""
    folder = _path(folder, "folder")
    if not folder.is_dir():
        raise ValueError(f"folder {folder} is not a directory")
    tifs = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".tif", ".tiff"))
    if len(tifs) != 3:
        raise ValueError(f"folder {folder} must hold 3 .tif LDR frames (short, reference, long), "
                         f"found {len(tifs)}")
    try:
        ev = np.loadtxt(folder / "exposure.txt", dtype=np.float64).reshape(-1)
    except OSError:
        raise ValueError(f"folder {folder} has no readable exposure.txt") from None
    if ev.shape != (3,):
        raise ValueError(f"{folder / 'exposure.txt'} must hold 3 EV values, got {ev.size}")
    times = validate_times(tuple(2.0 ** (ev - ev[0])))  # t_i = 2^(EV_i - EV_short)
    frames = [_read_ldr(p) for p in tifs]
    if len({f.shape for f in frames}) != 1:
        raise ValueError(f"the .tif frames in {folder} differ in size: "
                         f"{[f.shape for f in frames]}")
    label = folder / "HDRImg.hdr"
    gt = read_radiance_hdr(label).transpose(2, 0, 1).copy() if label.exists() else None
    if gt is not None and gt.shape != frames[0].shape:
        raise ValueError(f"{label} has shape {gt.shape}, the frames {frames[0].shape}")
    return KalantariScene(ldrs=np.stack(frames), times=times, gt=gt)
