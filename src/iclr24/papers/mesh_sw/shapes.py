"""Synthetic genus-0 meshes standing in for cortical surfaces.

The paper deforms a segmentation-derived initial surface into FreeSurfer white-matter and pial
surfaces of ADNI/OASIS MRI scans; that data (and the image-conditioned network) is out of reach
here. Instead a template sphere is deformed into procedural targets: star-shaped "bumpy spheres"
r(u) = max(0.4, 1 + sum_k a_k exp(kappa_k (u . d_k - 1))) (folds and bulges), an ellipsoid and a
subdivided box (sharp features). Every target is normalised into [-1, 1]^3 (bounding box centred,
largest half-extent 1) so that the varifold's normal scale lambda = 1 is meaningful.
Meshes are ``(verts (n, 3) float64 numpy, faces (f, 3) int64 numpy)``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "box_target",
    "bumpy_sphere",
    "ellipsoid",
    "icosphere",
    "normalize_to_box",
    "target_meshes",
]


def normalize_to_box(verts: np.ndarray) -> np.ndarray:
    """Centre the bounding box at 0 and scale its largest half-extent to 1."""
    v = np.asarray(verts, dtype=np.float64)
    lo, hi = v.min(0), v.max(0)
    return (v - 0.5 * (lo + hi)) / (0.5 * (hi - lo).max())


def icosphere(subdivisions: int = 3, radius: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The template: trimesh's icosphere (subdivisions=3: 642 vertices, 1 280 faces)."""
    import trimesh

    m = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return np.asarray(m.vertices, dtype=np.float64), np.asarray(m.faces, dtype=np.int64)


def bumpy_sphere(rng: np.random.Generator, n_bumps: int = 6, subdivisions: int = 5
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A star-shaped target: unit-sphere directions u scaled by
    r(u) = max(0.4, 1 + sum_k a_k exp(kappa_k (u . d_k - 1))), a_k ~ U[-0.3, 0.5],
    kappa_k ~ U[4, 12], d_k uniform on S^2; normalised into [-1, 1]^3."""
    u, faces = icosphere(subdivisions)
    d = rng.normal(size=(n_bumps, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    amp = rng.uniform(-0.3, 0.5, size=n_bumps)
    kappa = rng.uniform(4.0, 12.0, size=n_bumps)
    r = np.maximum(0.4, 1.0 + (amp * np.exp(kappa * (u @ d.T - 1.0))).sum(1))
    return normalize_to_box(u * r[:, None]), faces


def ellipsoid(axes: tuple[float, float, float] = (1.0, 0.6, 0.4), subdivisions: int = 5
              ) -> tuple[np.ndarray, np.ndarray]:
    """An ellipsoid with the given semi-axes (an icosphere scaled per axis), normalised."""
    u, faces = icosphere(subdivisions)
    return normalize_to_box(u * np.asarray(axes, dtype=np.float64)), faces


def box_target(subdivisions: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """An axis-aligned cube (``trimesh.creation.box``) subdivided ``subdivisions`` times."""
    import trimesh

    m = trimesh.creation.box(extents=(2.0, 2.0, 2.0))
    for _ in range(subdivisions):
        m = m.subdivide()
    return normalize_to_box(m.vertices), np.asarray(m.faces, dtype=np.int64)


def target_meshes(n_targets: int, seed: int, subdivisions: int = 5
                  ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``n_targets`` named targets: bumpy spheres first (seeded), then the ellipsoid, then the box
    (from 3 targets on, the last two slots are the ellipsoid and the box)."""
    if not isinstance(n_targets, int) or n_targets < 1:
        raise ValueError(f"n_targets must be a positive int, got {n_targets!r}")
    rng = np.random.default_rng(seed)
    n_fixed = 2 if n_targets >= 3 else 0
    out = [(f"bumpy_{k}", *bumpy_sphere(rng, subdivisions=subdivisions))
           for k in range(n_targets - n_fixed)]
    if n_fixed:
        out.append(("ellipsoid", *ellipsoid(subdivisions=subdivisions)))
        out.append(("box", *box_target()))
    return out
