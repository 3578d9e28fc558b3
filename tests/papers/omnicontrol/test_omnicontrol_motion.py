"""R (to_global), its inverse, its closed-form vector-Jacobian product, normalisation."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.omnicontrol import MotionRepresentation, generate_motions, yaw_matrix


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_to_global_matches_generated_positions(dtype):
    """The issue's check: R of the generated features recovers the generator's world-frame
    forward kinematics to 1e-5 (also through the normalisation the model sees)."""
    m = generate_motions(36, 3, dtype=dtype)
    rep = MotionRepresentation(6)
    assert torch.allclose(rep.to_global(m.features, normalised=False), m.positions,
                          atol=1e-5, rtol=0)
    norm = rep.with_statistics(m.features)
    x = norm.normalise(m.features)
    assert torch.allclose(norm.to_global(x), m.positions, atol=1e-5, rtol=0)


def test_to_global_closed_form_circle():
    """Constant yaw rate w and forward speed v per frame: the root walks a circle of radius
    v / (2 sin(w / 2)) (chords of angle w); a joint 1 unit ahead in the facing frame sits at
    root + (sin psi, 0, cos psi)."""
    n, w, v = 40, 0.1, 0.2
    raw = torch.zeros(1, n, 4 + 3 * 1, dtype=torch.float64)
    raw[0, :, 0], raw[0, :, 2], raw[0, :, 3] = w, v, 0.9
    raw[0, :, 6] = 1.0                                     # ric z of joint 1
    pos = MotionRepresentation(2).to_global(raw, normalised=False)[0]
    psi = w * torch.arange(n, dtype=torch.float64)
    # closed form: p_n = sum_{k<n} v (sin psi_k, cos psi_k)
    px = torch.tensor([v * sum(math.sin(w * k) for k in range(i)) for i in range(n)])
    pz = torch.tensor([v * sum(math.cos(w * k) for k in range(i)) for i in range(n)])
    assert torch.allclose(pos[:, 0, 0], px.double()) and torch.allclose(pos[:, 0, 2], pz.double())
    assert torch.allclose(pos[:, 0, 1], torch.full((n,), 0.9, dtype=torch.float64))
    r = v / (2 * math.sin(w / 2))
    centre = torch.tensor([r * math.cos(w / 2), r * math.sin(w / 2)], dtype=torch.float64)
    radii = (torch.stack([pos[:, 0, 0], pos[:, 0, 2]], -1) - centre).norm(dim=-1)
    assert torch.allclose(radii, torch.full((n,), r, dtype=torch.float64))
    assert torch.allclose(pos[:, 1, 0] - pos[:, 0, 0], torch.sin(psi))
    assert torch.allclose(pos[:, 1, 2] - pos[:, 0, 2], torch.cos(psi))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), joints=st.integers(1, 5), frames=st.integers(2, 12))
def test_from_global_round_trip(seed, joints, frames):
    g = torch.Generator().manual_seed(seed)
    heading = torch.cumsum(torch.rand(1, frames, generator=g, dtype=torch.float64) - 0.5, 1)
    heading = heading - heading[:, :1]
    pos = torch.randn(1, frames, joints, 3, generator=g, dtype=torch.float64)
    pos[:, :, 0, [0, 2]] -= pos[:, :1, 0, [0, 2]].clone()     # root starts at the origin
    rep = MotionRepresentation(joints)
    feats = rep.from_global(pos, heading, normalised=False)
    assert feats.shape == (1, frames, 4 + 3 * (joints - 1))
    assert torch.allclose(rep.to_global(feats, normalised=False), pos, atol=1e-10)


def test_cost_gradient_equals_autograd():
    m = generate_motions(6, 0, dtype=torch.float64)
    rep = MotionRepresentation(6).with_statistics(m.features)
    g = torch.Generator().manual_seed(1)
    x = (rep.normalise(m.features) + 0.5 * torch.randn(m.features.shape, generator=g,
                                                      dtype=torch.float64)).requires_grad_(True)
    up = torch.randn(6, 60, 6, 3, generator=g, dtype=torch.float64)
    ref, = torch.autograd.grad(rep.to_global(x), x, up)
    assert torch.allclose(rep.cost_gradient(x.detach(), up), ref, atol=1e-12)
    raw = m.features.clone().requires_grad_(True)
    ref_raw, = torch.autograd.grad(rep.to_global(raw, normalised=False), raw, up)
    assert torch.allclose(rep.cost_gradient(m.features, up, normalised=False), ref_raw,
                          atol=1e-12)


def test_yaw_matrix_is_a_rotation_about_y():
    r = yaw_matrix(torch.tensor([0.3, -2.0], dtype=torch.float64))
    assert torch.allclose(r @ r.transpose(-1, -2), torch.eye(3, dtype=torch.float64).expand(2, 3, 3))
    assert torch.allclose(r[0] @ torch.tensor([0.0, 0, 1], dtype=torch.float64),
                          torch.tensor([math.sin(0.3), 0, math.cos(0.3)], dtype=torch.float64))


def test_normalisation_round_trip_and_floor():
    m = generate_motions(12, 0, dtype=torch.float64)
    rep = MotionRepresentation(6).with_statistics(m.features, min_std=0.05)
    assert torch.all(rep.feature_std >= 0.05)
    assert torch.allclose(rep.denormalise(rep.normalise(m.features)), m.features)


def test_bad_input():
    rep = MotionRepresentation(6)
    with pytest.raises(ValueError, match=r"x must be \(batch, frames, 19\)"):
        rep.to_global(torch.zeros(2, 10, 18))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        rep.to_global([[0.0] * 19])
    with pytest.raises(ValueError, match="n_joints must be a positive int"):
        MotionRepresentation(0)
    with pytest.raises(ValueError, match="feature_mean must have D = 19"):
        MotionRepresentation(6, torch.zeros(5), torch.ones(5))
    with pytest.raises(ValueError, match="feature_std must be positive"):
        MotionRepresentation(6, torch.zeros(19), torch.zeros(19))
    with pytest.raises(ValueError, match="heading must be"):
        rep.from_global(torch.zeros(1, 4, 6, 3), torch.zeros(1, 5))
    with pytest.raises(ValueError, match="positions must be"):
        rep.from_global(torch.zeros(1, 4, 5, 3), torch.zeros(1, 4))
