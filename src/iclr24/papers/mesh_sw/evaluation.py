"""Evaluation of a reconstructed mesh against its target (the paper's metrics, Sec. 4).

- Chamfer distance (CD, squared, mean over points, the same convention as the training loss),
- ASSD (average symmetric surface distance) and HD90 (90th percentile of the symmetric
  point-to-surface distances), on fresh area-uniform samples of both meshes
  (``trimesh.sample.sample_surface``) with ``scipy.spatial.cKDTree`` nearest neighbours,
- normal consistency (mean |n_x . n_nn(x)| both ways, pytorch3d's definition),
- SIF: the percentage of faces that intersect a non-adjacent face of the same mesh.

SIF is computed here (no pymeshlab, a 300 MB wheel): a broad phase keeps face pairs whose
bounding spheres (centroid, farthest corner) overlap, pairs sharing a vertex are skipped, and
the narrow phase tests every edge of each triangle against the other triangle (Moeller-Trumbore
segment test). Coplanar overlaps are not detected (they have measure zero for deformed meshes).
"""

from __future__ import annotations

import numpy as np

__all__ = ["self_intersecting_faces", "surface_metrics"]


def _check_arrays(verts, faces, vname: str = "verts", fname: str = "faces"
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(n, 3) finite float vertices and (f, 3) integer faces indexing them, as numpy."""
    v = np.asarray(verts.detach().cpu() if hasattr(verts, "detach") else verts)
    f = np.asarray(faces.detach().cpu() if hasattr(faces, "detach") else faces)
    if v.ndim != 2 or v.shape[1] != 3 or not np.issubdtype(v.dtype, np.number):
        raise ValueError(f"{vname} must be a numeric array of shape (n, 3), got {v.shape} {v.dtype}")
    if f.ndim != 2 or f.shape[1] != 3 or f.shape[0] == 0:
        raise ValueError(f"{fname} must have shape (f, 3) with f >= 1, got {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        raise TypeError(f"{fname} must hold integer vertex indices, got {f.dtype}")
    if f.min() < 0 or f.max() >= len(v):
        raise ValueError(f"{fname} index vertices outside 0..{len(v) - 1} "
                         f"(got {int(f.min())}..{int(f.max())})")
    if not np.isfinite(v).all():
        raise ValueError(f"{vname} contains NaN or inf ({int((~np.isfinite(v)).any(1).sum())} of "
                         f"{len(v)} vertices); a diverged fit cannot be evaluated")
    return v.astype(np.float64), f.astype(np.int64)


def _mesh(verts, faces):
    import trimesh

    return trimesh.Trimesh(np.asarray(verts, dtype=np.float64), np.asarray(faces), process=False)


def surface_metrics(pred_verts, pred_faces, target_verts, target_faces, n_points: int = 20000,
                    seed: int = 0) -> dict[str, float]:
    """CD, ASSD, HD90 and normal consistency between two meshes from ``n_points`` fresh surface
    samples of each (numpy/torch arrays ``verts`` (n, 3), ``faces`` (f, 3))."""
    import trimesh
    from scipy.spatial import cKDTree

    if not isinstance(n_points, int) or n_points < 1:
        raise ValueError(f"n_points must be a positive int, got {n_points!r}")
    for name, verts, faces in (("pred", pred_verts, pred_faces),
                               ("target", target_verts, target_faces)):
        _check_arrays(verts, faces, f"{name}_verts", f"{name}_faces")
    rng = np.random.default_rng(seed)
    meshes = [_mesh(pred_verts, pred_faces), _mesh(target_verts, target_faces)]
    pts, nrm = [], []
    for m in meshes:
        if not m.area > 0:
            raise ValueError("a mesh with zero area cannot be evaluated")
        p, fi = trimesh.sample.sample_surface(m, n_points, seed=rng)
        pts.append(p)
        nrm.append(m.face_normals[fi])
    d_pt, i_pt = cKDTree(pts[1]).query(pts[0])  # pred -> target
    d_tp, i_tp = cKDTree(pts[0]).query(pts[1])  # target -> pred
    nc = 0.5 * (np.abs((nrm[0] * nrm[1][i_pt]).sum(1)).mean()
                + np.abs((nrm[1] * nrm[0][i_tp]).sum(1)).mean())
    return {
        "cd": float((d_pt ** 2).mean() + (d_tp ** 2).mean()),
        "assd": float(0.5 * (d_pt.mean() + d_tp.mean())),
        "hd90": float(max(np.percentile(d_pt, 90), np.percentile(d_tp, 90))),
        "normal_consistency": float(nc),
    }


def _segment_hits_triangle(p0, p1, a, b, c, eps: float = 1e-12) -> np.ndarray:
    """Row-wise: does segment p0 -> p1 cross triangle (a, b, c)? (all arrays (k, 3))."""
    d = p1 - p0
    e1, e2 = b - a, c - a
    h = np.cross(d, e2)
    det = (e1 * h).sum(1)
    ok = np.abs(det) > eps
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = p0 - a
    u = inv * (s * h).sum(1)
    q = np.cross(s, e1)
    v = inv * (d * q).sum(1)
    t = inv * (e2 * q).sum(1)
    tol = 1e-9
    return ok & (u > tol) & (v > tol) & (u + v < 1 - tol) & (t > tol) & (t < 1 - tol)


def self_intersecting_faces(verts, faces) -> np.ndarray:
    """Boolean mask (f,) of faces that cross a face they share no vertex with."""
    from scipy.spatial import cKDTree

    v, f = _check_arrays(verts, faces)
    tri = v[f]  # (f, 3, 3)
    cen = tri.mean(1)
    rad = np.linalg.norm(tri - cen[:, None], axis=2).max(1)
    pairs = cKDTree(cen).query_pairs(2.0 * rad.max(), output_type="ndarray")
    mask = np.zeros(len(f), dtype=bool)
    if len(pairs) == 0:
        return mask
    i, j = pairs[:, 0], pairs[:, 1]
    keep = np.linalg.norm(cen[i] - cen[j], axis=1) <= rad[i] + rad[j]
    shared = (f[i][:, :, None] == f[j][:, None, :]).any(axis=(1, 2))
    i, j = i[keep & ~shared], j[keep & ~shared]
    if len(i) == 0:
        return mask
    hit = np.zeros(len(i), dtype=bool)
    for s, t in ((i, j), (j, i)):
        for k in range(3):
            hit |= _segment_hits_triangle(tri[s, k], tri[s, (k + 1) % 3],
                                          tri[t, 0], tri[t, 1], tri[t, 2])
    mask[i[hit]] = True
    mask[j[hit]] = True
    return mask
