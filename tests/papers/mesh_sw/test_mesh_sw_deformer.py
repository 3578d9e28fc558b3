"""Neural-ODE deformer: identity at init, known flows, fitting reduces the error."""

import numpy as np
import pytest
import torch

from iclr24.papers.mesh_sw import (
    NeuralODEDeformer,
    VelocityField,
    fit_deformation,
    icosphere,
    surface_metrics,
)


@pytest.mark.parametrize("method", ["euler", "rk4"])
def test_initial_flow_is_the_identity(method):
    verts = torch.randn(50, 3, generator=torch.Generator().manual_seed(0))
    model = NeuralODEDeformer(VelocityField(32, generator=torch.Generator().manual_seed(1)), method)
    assert torch.equal(model(verts), verts)


def test_constant_field_translates_and_linear_field_is_exponential():
    field = VelocityField(8)
    with torch.no_grad():
        field.out.bias.copy_(torch.tensor([0.5, -1.0, 2.0]))
    verts = torch.randn(10, 3, dtype=torch.float32)
    out = NeuralODEDeformer(field, "euler", 0.1)(verts)
    assert torch.allclose(out, verts + torch.tensor([0.5, -1.0, 2.0]), atol=1e-5)

    class Linear(VelocityField):  # dx/dt = x  ->  x(1) = e x(0) (RK4, step 0.1: ~1e-6 error)
        def forward(self, x, t):
            return x

    out = NeuralODEDeformer(Linear(4), "rk4", 0.1)(verts.double())
    assert torch.allclose(out, torch.e * verts.double(), rtol=1e-5)
    euler = NeuralODEDeformer(Linear(4), "euler", 0.1)(verts.double())
    assert torch.allclose(euler, 1.1 ** 10 * verts.double(), rtol=1e-9)  # 10 Euler steps


def test_field_init_is_seeded():
    a = VelocityField(16, generator=torch.Generator().manual_seed(3))
    b = VelocityField(16, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("loss", ["sw_varifold", "sw_centroid", "sw_samples", "chamfer"])
def test_fit_moves_the_template_towards_the_target(loss, one_torch_thread):
    template = icosphere(1)
    target = (0.7 * template[0] + np.array([0.4, 0.0, 0.0]), template[1])  # shrink + shift
    (v, f), hist = fit_deformation(template, target, loss, steps=40, lr=3e-3, seed=0,
                                   n_samples=1000, n_projections=100, hidden=32)
    before = surface_metrics(*template, *target, n_points=3000, seed=0)["cd"]
    after = surface_metrics(v.numpy(), f.numpy(), *target, n_points=3000, seed=0)["cd"]
    assert after < 0.7 * before
    assert len(hist.loss) == 40 and hist.model is not None
    (v2, _), hist2 = fit_deformation(template, target, loss, steps=3, lr=1e-2, seed=0,
                                     n_samples=300, n_projections=20, hidden=32)
    (v3, _), hist3 = fit_deformation(template, target, loss, steps=3, lr=1e-2, seed=0,
                                     n_samples=300, n_projections=20, hidden=32)
    assert torch.equal(v2, v3) and hist2.loss == hist3.loss


def test_fit_bad_arguments():
    with pytest.raises(ValueError, match="loss must be one of"):
        fit_deformation(icosphere(1), icosphere(1), "emd", steps=1)
    with pytest.raises(TypeError, match="template must be"):
        fit_deformation(icosphere(1)[0], icosphere(1), steps=1)
    with pytest.raises(ValueError, match="method must be"):
        NeuralODEDeformer(method="dopri5")
    with pytest.raises(ValueError, match=r"verts must be a tensor of shape \(n, 3\)"):
        NeuralODEDeformer()(torch.zeros(4, 2))


def test_checkpoints_do_not_change_the_fit_and_are_validated(one_torch_thread):
    template = icosphere(1)
    target = (0.8 * template[0], template[1])
    seen = []
    (v1, _), h1 = fit_deformation(template, target, "sw_varifold", steps=4, seed=0, hidden=16,
                                  checkpoints=(1, 3), on_checkpoint=lambda k, v: seen.append(k))
    (v2, _), h2 = fit_deformation(template, target, "sw_varifold", steps=4, seed=0, hidden=16)
    assert seen == [1, 3] and torch.equal(v1, v2) and h1.loss == h2.loss
    with pytest.raises(ValueError, match="checkpoints must lie in"):
        fit_deformation(template, target, steps=4, checkpoints=(4,), on_checkpoint=print)
    with pytest.raises(ValueError, match="on_checkpoint is None"):
        fit_deformation(template, target, steps=4, checkpoints=(2,))
