"""Meshes as probability measures (Le et al., ICLR 2024, Sec. 3.1-3.2).

A triangle mesh M = (V, F) becomes a measure on which the sliced Wasserstein loss acts:

- ``"varifold"``: the discrete measure of the mesh's (oriented) varifold,
  mu_M = sum_f (a_f / sum_g a_g) delta_{(c_f, lambda n_f)} in R^6
  (face centroid, scaled unit normal);
- ``"centroid"``: the same weights on the centroids alone, in R^3;
- ``"samples"``: n i.i.d. points of the uniform measure on the surface (faces drawn proportional
  to area, then uniform barycentric coordinates), equal weights (the set-based representation).

Everything is torch and differentiable with respect to the vertices (areas, centroids, normals,
and the sampled points through their barycentric combination; only the face *choice* of a
sample is discrete). The surface sampler is written here rather than taken from trimesh because
trimesh's sampler is numpy and would cut the gradient of the loss to the vertices.
"""

from __future__ import annotations

import torch

__all__ = ["check_mesh", "face_geometry", "mesh_to_measure", "sample_surface"]

_KINDS = ("varifold", "centroid", "samples")


def check_mesh(verts: torch.Tensor, faces: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a triangle mesh. ``verts``: (n, 3) float; ``faces``: (f, 3) integer indices into
    ``verts``. Returns ``(verts, faces)`` as tensors (faces as long, on the vertices' device)."""
    if not isinstance(verts, torch.Tensor):
        raise TypeError(f"verts must be a torch.Tensor of shape (n, 3), got {type(verts).__name__}")
    faces = torch.as_tensor(faces, device=verts.device)
    if verts.ndim != 2 or verts.shape[1] != 3 or not verts.is_floating_point():
        raise ValueError(f"verts must be a float tensor of shape (n, 3), got {tuple(verts.shape)} "
                         f"{verts.dtype}")
    if faces.ndim != 2 or faces.shape[1] != 3 or faces.shape[0] == 0:
        raise ValueError(f"faces must have shape (f, 3) with f >= 1, got {tuple(faces.shape)}")
    if faces.is_floating_point() or faces.dtype == torch.bool:
        raise TypeError(f"faces must hold integer vertex indices, got {faces.dtype}")
    faces = faces.long()
    lo, hi = int(faces.min()), int(faces.max())
    if lo < 0 or hi >= verts.shape[0]:
        raise ValueError(f"faces index vertices in [{lo}, {hi}] but verts has only "
                         f"{verts.shape[0]} vertices (valid indices 0..{verts.shape[0] - 1})")
    if not torch.isfinite(verts).all():
        raise ValueError("verts contains NaN or inf")
    return verts, faces


def face_geometry(verts: torch.Tensor, faces: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-face area (f,), centroid (f, 3) and unit normal (f, 3) (right-hand rule on the
    winding v1 -> v2 -> v3). Raises if the total area is zero."""
    verts, faces = check_mesh(verts, faces)
    v1, v2, v3 = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    cross = torch.linalg.cross(v2 - v1, v3 - v1)
    twice_area = torch.linalg.vector_norm(cross, dim=1)
    area = 0.5 * twice_area  # a_f = 1/2 ||(v2 - v1) x (v3 - v1)||
    if not float(area.detach().sum()) > 0.0:
        raise ValueError("the mesh has zero total area (all faces degenerate); a measure needs "
                         "positive area")
    normal = cross / twice_area.clamp_min(torch.finfo(verts.dtype).tiny).unsqueeze(1)
    centroid = (v1 + v2 + v3) / 3.0  # c_f
    return area, centroid, normal


def sample_surface(verts: torch.Tensor, faces: torch.Tensor, n_samples: int,
                   generator: torch.Generator | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """``n_samples`` i.i.d. points of the uniform (area) measure on the surface.

    Returns ``(points (n, 3), face_index (n,))``; points are differentiable in ``verts``."""
    if not isinstance(n_samples, int) or isinstance(n_samples, bool) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive int, got {n_samples!r}")
    area, _, _ = face_geometry(verts, faces)
    faces = torch.as_tensor(faces, device=verts.device).long()
    gen_device = generator.device if generator is not None else verts.device
    probs = (area.detach() / area.detach().sum()).to(gen_device)
    idx = torch.multinomial(probs, n_samples, replacement=True, generator=generator)
    u = torch.rand(n_samples, 2, generator=generator, device=gen_device, dtype=verts.dtype)
    # uniform on a triangle: fold the unit square (u1 + u2 > 1 -> 1 - u)
    flip = u.sum(dim=1) > 1.0
    u = torch.where(flip.unsqueeze(1), 1.0 - u, u)
    idx, u = idx.to(verts.device), u.to(verts.device)
    tri = verts[faces[idx]]  # (n, 3 corners, 3)
    pts = tri[:, 0] + u[:, :1] * (tri[:, 1] - tri[:, 0]) + u[:, 1:] * (tri[:, 2] - tri[:, 0])
    return pts, idx


def mesh_to_measure(verts: torch.Tensor, faces: torch.Tensor, kind: str = "varifold",
                    n_samples: int | None = None, normal_scale: float = 1.0,
                    generator: torch.Generator | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """A mesh as a discrete probability measure: ``(support (n, d), weights (n,))``.

    ``kind="varifold"``: d = 6, support (c_f, normal_scale * n_f), weights a_f / sum a;
    ``kind="centroid"``: d = 3, support c_f, the same weights;
    ``kind="samples"``: d = 3, ``n_samples`` surface samples with weights 1/n.
    ``normal_scale`` is lambda, the length that trades positions against normals (meaningful for
    meshes normalised to a fixed box, as the claims do: [-1, 1]^3)."""
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    if kind == "samples":
        if n_samples is None:
            raise ValueError("kind='samples' needs n_samples (a positive int)")
        pts, _ = sample_surface(verts, faces, n_samples, generator)
        weights = torch.full((n_samples,), 1.0 / n_samples, dtype=verts.dtype, device=verts.device)
        return pts, weights
    if n_samples is not None:
        raise ValueError(f"n_samples is only used by kind='samples', got n_samples={n_samples} "
                         f"with kind={kind!r}")
    if not normal_scale >= 0.0:
        raise ValueError(f"normal_scale must be >= 0, got {normal_scale!r}")
    area, centroid, normal = face_geometry(verts, faces)
    weights = area / area.sum()  # mu_M = sum_f a_f / sum_g a_g delta_{x_f}
    if kind == "centroid":
        return centroid, weights
    return torch.cat([centroid, normal_scale * normal], dim=1), weights  # x_f = (c_f, lambda n_f)
