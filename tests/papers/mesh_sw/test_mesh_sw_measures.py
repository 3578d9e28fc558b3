"""Mesh -> measure: geometry against trimesh, weights, sampling, errors."""

import numpy as np
import pytest
import torch
import trimesh

from iclr24.papers.mesh_sw import (
    box_target,
    face_geometry,
    icosphere,
    mesh_to_measure,
    normalize_to_box,
    sample_surface,
    target_meshes,
)


@pytest.mark.parametrize("mesh", [icosphere(1), box_target(1)])
def test_face_geometry_matches_trimesh(mesh):
    v, f = mesh
    area, cen, nrm = face_geometry(torch.tensor(v), torch.tensor(f))
    tm = trimesh.Trimesh(v, f, process=False)
    assert np.allclose(area.numpy(), tm.area_faces)
    assert np.allclose(cen.numpy(), tm.triangles_center)
    assert np.allclose(nrm.numpy(), tm.face_normals)


def test_varifold_and_centroid_measures():
    v, f = icosphere(1)
    verts = torch.tensor(v)
    x, w = mesh_to_measure(verts, torch.tensor(f), "varifold", normal_scale=0.5)
    assert x.shape == (len(f), 6) and w.shape == (len(f),)
    assert float(w.sum()) == pytest.approx(1.0)
    assert torch.allclose(x[:, 3:].norm(dim=1), torch.full((len(f),), 0.5, dtype=x.dtype))
    c, w2 = mesh_to_measure(verts, torch.tensor(f), "centroid")
    assert c.shape == (len(f), 3) and torch.equal(w, w2) and torch.equal(c, x[:, :3])
    # outward winding on the sphere: normals point away from the origin
    assert bool(((x[:, :3] * x[:, 3:]).sum(1) > 0).all())


def test_area_weights_follow_face_areas():
    # two triangles with areas 1/2 and 3/2 -> weights 1/4 and 3/4
    verts = torch.tensor([[0., 0, 0], [1, 0, 0], [0, 1, 0], [5, 0, 0], [8, 0, 0], [5, 1, 0]])
    faces = torch.tensor([[0, 1, 2], [3, 4, 5]])
    _, w = mesh_to_measure(verts, faces, "centroid")
    assert torch.allclose(w, torch.tensor([0.25, 0.75]))
    pts, idx = sample_surface(verts, faces, 4000, torch.Generator().manual_seed(0))
    assert abs(float((idx == 1).float().mean()) - 0.75) < 0.03
    first = pts[idx == 0]  # uniform on the unit right triangle: inside it, mean (1/3, 1/3)
    assert bool((first[:, 0] >= 0).all() and (first[:, 1] >= 0).all()
                and (first[:, :2].sum(1) <= 1 + 1e-6).all())
    assert torch.allclose(first[:, :2].mean(0), torch.tensor([1 / 3, 1 / 3]), atol=0.03)


def test_samples_are_on_the_surface_and_differentiable():
    v, f = icosphere(2)
    verts = torch.tensor(v, requires_grad=True)
    x, w = mesh_to_measure(verts, torch.tensor(f), "samples", n_samples=500,
                           generator=torch.Generator().manual_seed(1))
    r = x.detach().norm(dim=1)
    assert bool((r <= 1 + 1e-9).all() and (r > 0.95).all())  # flat faces of a unit icosphere
    assert torch.allclose(w, torch.full((500,), 1 / 500, dtype=w.dtype))
    x.sum().backward()
    assert verts.grad is not None and float(verts.grad.abs().sum()) > 0
    a = mesh_to_measure(verts, torch.tensor(f), "samples", n_samples=50,
                        generator=torch.Generator().manual_seed(1))[0]
    b = mesh_to_measure(verts, torch.tensor(f), "samples", n_samples=50,
                        generator=torch.Generator().manual_seed(1))[0]
    assert torch.equal(a, b)


def test_area_weights_are_differentiable():
    v, f = icosphere(1)
    verts = torch.tensor(v, requires_grad=True)
    _, w = mesh_to_measure(verts, torch.tensor(f), "varifold")
    w[0].backward()
    assert float(verts.grad.abs().sum()) > 0


def test_targets_are_normalised_to_the_box():
    for _, v, f in target_meshes(3, 0, subdivisions=2):
        assert np.allclose(np.abs(v).max(), 1.0) and np.allclose(v.max(0) + v.min(0), 0.0)
        assert f.min() >= 0 and f.max() < len(v)
    assert np.allclose(normalize_to_box(np.array([[0., 0, 0], [4, 2, 2]])),
                       [[-1, -0.5, -0.5], [1, 0.5, 0.5]])


def test_bad_meshes_are_refused():
    v, f = icosphere(1)
    verts, faces = torch.tensor(v), torch.tensor(f)
    with pytest.raises(ValueError, match="faces index vertices"):
        mesh_to_measure(verts[:10], faces)
    with pytest.raises(ValueError, match="zero total area"):
        mesh_to_measure(torch.zeros(3, 3), torch.tensor([[0, 1, 2]]))
    with pytest.raises(ValueError, match="kind must be one of"):
        mesh_to_measure(verts, faces, "normals")
    with pytest.raises(ValueError, match="needs n_samples"):
        mesh_to_measure(verts, faces, "samples")
    with pytest.raises(ValueError, match=r"faces must have shape \(f, 3\)"):
        mesh_to_measure(verts, faces[:, :2])
    with pytest.raises(TypeError, match="integer vertex indices"):
        mesh_to_measure(verts, faces.double())
    with pytest.raises(TypeError, match="verts must be a torch.Tensor"):
        mesh_to_measure(v, faces)
