"""Procedural Calpha traces (the stand-in for SCOPe) and backbone plausibility measures.

Three families of chains of length L, every consecutive Calpha-Calpha distance exactly 3.8 A:

- ``helix``: one ideal alpha-helix (radius 2.3 A, 100 degrees and 1.5 A rise per residue);
- ``hairpin``: helix - 3-residue loop - antiparallel helix, axes ~10 A apart;
- ``hinge``: two hairpin domains joined by a 4-residue zig-zag linker, the second domain turned
  about the linker by a random hinge angle (35-110 degrees) and twist: a two-domain protein whose
  lowest normal mode is the domains' hinge motion, the motion of adenylate kinase's lid the
  paper conditions on.

Each structure gets Gaussian noise (0.3 A), its bonds re-normalised to 3.8 A (walking the chain
and keeping each bond's direction), and is centred. Structures with a non-bonded contact closer
than 4 A (|i - j| > 2) are drawn again. Hinge proteins vary their domain sizes, so the linker
sits at different positions along the chain.

Plausibility (what the claims measure besides L_dyn): :func:`bond_deviation` (mean |d(i, i+1) -
3.8 A|) and :func:`clash_fraction` (pairs |i - j| > 2 closer than 3 A).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BOND", "FAMILIES", "HingeProtein", "backbone_dataset", "bond_deviation",
           "clash_fraction", "hinge_protein", "ideal_helix", "renormalise_bonds"]

BOND = 3.8  # Calpha-Calpha virtual bond (A)
FAMILIES = ("helix", "hairpin", "hinge")
_RADIUS, _TWIST, _RISE = 2.3, math.radians(100.0), 1.5
_AXIS_GAP = 10.0  # distance between the axes of packed helices (A)
_LOOP, _LINKER = 3, 4


def ideal_helix(n: int, phase: float = 0.0) -> np.ndarray:
    """(n, 3) ideal alpha-helix along +z from the origin: radius 2.3, 100 deg/res, 1.5 A rise."""
    k = np.arange(n)
    ang = phase + k * _TWIST
    return np.stack([_RADIUS * np.cos(ang), _RADIUS * np.sin(ang), _RISE * k], axis=1)


def renormalise_bonds(x: np.ndarray, bond: float = BOND) -> np.ndarray:
    """Walk the chain and set every bond to ``bond`` along its original direction: (N, 3)."""
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, len(x)):
        step = x[i] - x[i - 1]
        out[i] = out[i - 1] + bond * step / max(np.linalg.norm(step), 1e-9)
    return out


def _rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    axis = axis / np.linalg.norm(axis)
    kx = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx  # Rodrigues


def _arc(a: np.ndarray, b: np.ndarray, m: int, bulge: np.ndarray) -> np.ndarray:
    """m loop points on a half-ellipse from a to b bulging along ``bulge``."""
    s = np.arange(1, m + 1) / (m + 1)
    return a + s[:, None] * (b - a) + np.sin(np.pi * s)[:, None] * bulge


def _hairpin(n1: int, n2: int, rng: np.random.Generator) -> np.ndarray:
    """Helix up +z at x = 0, loop over the top, helix down -z at x = 10 A: (n1 + 3 + n2, 3)."""
    h1 = ideal_helix(n1, rng.uniform(0, 2 * np.pi))
    h2 = ideal_helix(n2, rng.uniform(0, 2 * np.pi))[::-1].copy()
    h2[:, 0] += _AXIS_GAP
    h2[:, 2] += h1[-1, 2] - h2[0, 2]  # tops level
    loop = _arc(h1[-1], h2[0], _LOOP, np.array([0.0, 0.0, 4.0]))
    return np.concatenate([h1, loop, h2])


def _clash_free(x: np.ndarray, min_dist: float = 4.0) -> bool:
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    far = np.abs(np.arange(len(x))[:, None] - np.arange(len(x))[None]) > 2
    return bool(d[far].min() >= min_dist) if far.any() else True


@dataclass(frozen=True)
class HingeProtein:
    """A two-domain chain: ``coords`` (L, 3) and the ``linker`` residue indices (4,)."""

    coords: np.ndarray
    linker: np.ndarray

    def motif(self, flank: int = 4) -> np.ndarray:
        """The linker plus ``flank`` residues on each side: the residues the paper conditions."""
        lo, hi = int(self.linker[0]) - flank, int(self.linker[-1]) + flank + 1
        return np.arange(max(lo, 0), min(hi, len(self.coords)))


def _hinge_raw(length: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    dom = length - _LINKER
    da = dom // 2 + int(rng.integers(-2, 3))
    db = dom - da
    na = (da - _LOOP) // 2
    nb = (db - _LOOP) // 2
    a = _hairpin(na, da - _LOOP - na, rng)  # ends at the bottom of its second helix
    b = _hairpin(nb, db - _LOOP - nb, rng)
    # extended linker continuing downwards from domain A's last residue
    start = a[-1]
    linker = start + np.outer(np.arange(1, _LINKER + 1), [0.0, 0.0, -2.6])
    linker[:, 0] += 1.4 * (-1.0) ** np.arange(_LINKER)  # zig-zag: 2.6 A down, 2.8 A across
    # domain B hangs below the linker, its first helix going down (-z) in the straight pose
    b = b[:, [0, 1, 2]] * np.array([1.0, 1.0, -1.0])
    b = b - b[0] + linker[-1] + np.array([0.0, 0.0, -BOND])
    # hinge: turn B (and the linker's far half) about a horizontal axis through the linker
    pivot = linker[_LINKER // 2]
    axis = np.array([math.cos(rng.uniform(0, np.pi)), math.sin(rng.uniform(0, np.pi)), 0.0])
    rot = _rotation(axis, math.radians(rng.uniform(35.0, 110.0))) @ \
        _rotation(np.array([0.0, 0.0, 1.0]), rng.uniform(0, 2 * np.pi))
    tail = np.concatenate([linker[_LINKER // 2:], b])
    tail = (tail - pivot) @ rot.T + pivot
    x = np.concatenate([a, linker[:_LINKER // 2], tail])
    return x, np.arange(len(a), len(a) + _LINKER)


def _finish(x: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    x = renormalise_bonds(x + noise * rng.standard_normal(x.shape))
    return x - x.mean(0)


def hinge_protein(length: int, rng: np.random.Generator, noise: float = 0.3) -> HingeProtein:
    """One clash-free two-domain hinge protein of ``length`` residues (>= 24)."""
    if isinstance(length, bool) or not isinstance(length, int) or length < 24:
        raise ValueError(f"length must be an int >= 24 (two helical domains and a linker), got "
                         f"{length!r}")
    for _ in range(1000):
        raw, linker = _hinge_raw(length, rng)
        x = _finish(raw, noise, rng)
        if _clash_free(x):
            return HingeProtein(coords=x, linker=linker)
    raise RuntimeError("no clash-free hinge protein in 1000 draws")  # pragma: no cover


def _one(family: str, length: int, rng: np.random.Generator, noise: float) -> np.ndarray:
    if family == "hinge":
        return hinge_protein(length, rng, noise).coords
    for _ in range(1000):
        if family == "helix":
            raw = ideal_helix(length, rng.uniform(0, 2 * np.pi))
        else:
            n1 = (length - _LOOP) // 2 + int(rng.integers(-2, 3))
            raw = _hairpin(n1, length - _LOOP - n1, rng)
        x = _finish(raw, noise, rng)
        if _clash_free(x):
            return x
    raise RuntimeError(f"no clash-free {family} in 1000 draws")  # pragma: no cover


def backbone_dataset(n: int, length: int = 48, seed: int = 0, noise: float = 0.3,
                     families: tuple[str, ...] = FAMILIES) -> np.ndarray:
    """(n, length, 3) centred Calpha traces, the families in equal shares (cycled), each with a
    random rotation (float32)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(length, bool) or not isinstance(length, int) or length < 24:
        raise ValueError(f"length must be an int >= 24, got {length!r}")
    if not families or any(f not in FAMILIES for f in families):
        raise ValueError(f"families must be a non-empty subset of {FAMILIES}, got {families!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    out = np.empty((n, length, 3), dtype=np.float32)
    for i in range(n):
        x = _one(families[i % len(families)], length, rng, noise)
        out[i] = x @ Rotation.random(random_state=rng).as_matrix().T
    return out


def _check_batch(x: object) -> np.ndarray:
    arr = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-1] != 3 or arr.shape[-2] < 2:
        raise ValueError(f"x must have shape (..., N, 3) with N >= 2, got {arr.shape}")
    return arr


def bond_deviation(x: object, bond: float = BOND) -> np.ndarray:
    """Mean |d(i, i+1) - 3.8 A| per chain: (..., N, 3) -> (...,)."""
    arr = _check_batch(x)
    d = np.linalg.norm(np.diff(arr, axis=-2), axis=-1)
    return np.abs(d - bond).mean(-1)


def clash_fraction(x: object, threshold: float = 3.0, min_sep: int = 3) -> np.ndarray:
    """Fraction of residue pairs with |i - j| >= min_sep closer than ``threshold`` A, per chain:
    (..., N, 3) -> (...,)."""
    arr = _check_batch(x)
    n = arr.shape[-2]
    i, j = np.triu_indices(n, min_sep)
    if i.size == 0:
        raise ValueError(f"no residue pairs with |i - j| >= {min_sep} in a chain of {n}")
    d = np.linalg.norm(arr[..., i, :] - arr[..., j, :], axis=-1)
    return (d < threshold).mean(-1)
