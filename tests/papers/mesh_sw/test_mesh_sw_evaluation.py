"""Evaluation metrics: known answers on spheres, self-intersections on hand-built meshes."""

import numpy as np
import pytest

from iclr24.papers.mesh_sw import icosphere, self_intersecting_faces, surface_metrics


def test_metrics_of_concentric_spheres():
    v, f = icosphere(3)
    same = surface_metrics(v, f, v, f, n_points=4000, seed=0)
    far = surface_metrics(1.3 * v, f, v, f, n_points=4000, seed=0)
    assert same["normal_consistency"] > 0.99
    assert same["cd"] < 0.02 * far["cd"]  # sampling noise only
    assert far["hd90"] == pytest.approx(0.3, abs=0.02)  # every point is ~0.3 from the other
    assert far["assd"] == pytest.approx(0.3, abs=0.02)
    assert far["cd"] == pytest.approx(2 * 0.09, rel=0.1)


def test_self_intersections():
    v, f = icosphere(2)
    assert not self_intersecting_faces(v, f).any()
    # two triangles that pierce each other
    verts = np.array([[0., 0, 0], [2, 0, 0], [0, 2, 0], [0.5, 0.5, -1], [0.5, 0.5, 1], [3, 3, 0]])
    faces = np.array([[0, 1, 2], [3, 4, 5]])
    assert self_intersecting_faces(verts, faces).tolist() == [True, True]
    # push one vertex of the sphere through the opposite side
    folded = v.copy()
    folded[0] = -1.5 * v[0]
    mask = self_intersecting_faces(folded, f)
    assert 0 < mask.sum() < len(f)
    with pytest.raises(ValueError, match="faces index vertices"):
        self_intersecting_faces(v[:5], f)


def test_surface_metrics_name_nan_vertices_and_bad_faces():
    v, f = icosphere(1)
    bad = v.copy()
    bad[3, 0] = np.nan
    with pytest.raises(ValueError, match="pred_verts contains NaN or inf"):
        surface_metrics(bad, f, v, f, n_points=100)
    with pytest.raises(ValueError, match="target_verts contains NaN or inf"):
        surface_metrics(v, f, bad, f, n_points=100)
    with pytest.raises(ValueError, match="target_faces index vertices"):
        surface_metrics(v, f, v[:5], f, n_points=100)
    with pytest.raises(TypeError, match="pred_faces must hold integer"):
        surface_metrics(v, f.astype(float), v, f, n_points=100)
    with pytest.raises(ValueError, match="verts contains NaN"):
        self_intersecting_faces(bad, f)
