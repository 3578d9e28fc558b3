"""The elastic network: Hinsen constants, Hessian against springcraft, eigenvalues against ProDy,
differentiability, the six-zero-mode check."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.nma_protein_diffusion import (
    anm_hessian,
    backbone_dataset,
    count_zero_modes,
    hinsen_force_constant,
    mode_displacements,
    normal_modes,
)


def _chain(n, seed):
    return backbone_dataset(3, max(n, 24), seed=seed)[seed % 3][:n].astype(np.float64)


def test_hinsen_force_constant_closed_form():
    r = torch.tensor([2.0, 2.9, 3.8, 3.99, 4.0, 6.0, 13.0], dtype=torch.float64)
    expect = [860 * 2.9 - 2390, 860 * 2.9 - 2390, 860 * 3.8 - 2390, 860 * 3.99 - 2390,
              1.28e6 / 4.0 ** 6, 1.28e6 / 6.0 ** 6, 1.28e6 / 13.0 ** 6]
    assert torch.allclose(hinsen_force_constant(r), torch.tensor(expect, dtype=torch.float64))
    with pytest.raises(TypeError, match="r must be a torch.Tensor"):
        hinsen_force_constant([3.0])


def test_hinsen_hessian_matches_springcraft():
    springcraft = pytest.importorskip("springcraft")
    for seed in range(3):
        x = _chain(30, seed)
        ff = springcraft.HinsenForceField(cutoff_distance=13.0)
        ref = springcraft.ANM(x, ff, use_cell_list=False).hessian
        ours = anm_hessian(torch.from_numpy(x), cutoff=13.0, force="hinsen").numpy()
        # springcraft takes displacements through biotite in float32: ~1e-7 of the largest entry
        assert np.abs(ours - ref).max() <= 1e-6 * np.abs(ref).max()
        assert np.allclose(ours, ours.T)


def test_uniform_eigenvalues_match_prody():
    prody = pytest.importorskip("prody")
    prody.confProDy(verbosity="none")
    for seed in range(3):
        x = _chain(36, seed)
        anm = prody.ANM("chain")
        anm.buildHessian(x, cutoff=13.0, gamma=1.0)
        anm.calcModes(n_modes=10, zeros=False)
        ref = anm.getEigvals()
        vals, vecs = normal_modes(torch.from_numpy(x), k=10, force="uniform")
        assert np.allclose(vals.numpy(), ref, rtol=1e-6, atol=0)
        # the same modes up to sign
        cos = np.abs((vecs.numpy() * anm.getEigvecs()).sum(0))
        assert np.all(cos[:3] > 1 - 1e-6)


def test_hessian_block_structure_and_batching():
    x = torch.from_numpy(_chain(24, 1))
    h = anm_hessian(x)
    # rows sum to zero over blocks (translations are zero modes), eigenvalues are >= 0
    assert torch.allclose(h.reshape(24, 3, 24, 3).sum(2), torch.zeros(24, 3, 3, dtype=h.dtype),
                          atol=1e-9)
    assert torch.linalg.eigvalsh(h).min() > -1e-9 * h.abs().max()
    hb = anm_hessian(torch.stack([x, x + 1.0, -x]))
    assert torch.allclose(hb[0], h) and torch.allclose(hb[1], h, atol=1e-10)
    assert torch.allclose(hb[2], h, atol=1e-10)  # inversion leaves d d^T unchanged


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_modes_invariant_to_rigid_motion(seed):
    rng = np.random.default_rng(seed)
    x = torch.from_numpy(_chain(24, seed % 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    q *= np.sign(np.linalg.det(q))
    rot = torch.from_numpy(q)
    y = x @ rot.T + torch.from_numpy(rng.normal(size=3) * 10)
    vx, ex = normal_modes(x, k=2)
    vy, ey = normal_modes(y, k=2)
    assert torch.allclose(vx, vy, rtol=1e-7)
    rotated = (ex[:, 0].reshape(-1, 3) @ rot.T).reshape(-1)
    assert abs(float(rotated @ ey[:, 0])) > 1 - 1e-6


def test_hessian_gradient_finite_differences():
    x = torch.from_numpy(_chain(12, 2)).requires_grad_(True)
    w = torch.randn(36, 36, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(lambda z: (anm_hessian(z) * w).sum(), (x,), eps=1e-6,
                                    atol=1e-5)
    # and through the eigenvector of mode 6 (sign-free quantity: its squared entries)
    assert torch.autograd.gradcheck(lambda z: (normal_modes(z)[1][:, 0] ** 2 * w[0]).sum(),
                                    (x,), eps=1e-6, atol=1e-5)


def test_six_zero_modes_required():
    x = torch.from_numpy(_chain(24, 0))
    far = torch.cat([x, x + torch.tensor([200.0, 0, 0], dtype=x.dtype)])  # two pieces
    with pytest.raises(ValueError, match="exactly 6 zero modes"):
        normal_modes(far)
    line = torch.stack([torch.tensor([3.8 * i, 0.0, 0.0]) for i in range(10)]).double()
    with pytest.raises(ValueError, match="exactly 6 zero modes"):
        normal_modes(line)  # collinear: only 5 rigid modes and free bending
    vals = torch.linalg.eigvalsh(anm_hessian(far))
    assert int(count_zero_modes(vals)) == 12


def test_bad_input():
    x = torch.from_numpy(_chain(24, 0))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., N, 3\)"):
        anm_hessian(torch.zeros(5, 2))
    with pytest.raises(TypeError, match="torch.Tensor"):
        anm_hessian(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="cutoff must be a positive"):
        anm_hessian(x, cutoff=0)
    with pytest.raises(ValueError, match="force must be one of"):
        anm_hessian(x, force="gnm")
    with pytest.raises(ValueError, match="k must be a positive int"):
        normal_modes(x, k=0)
    vec = normal_modes(x)[1][:, 0]
    with pytest.raises(ValueError, match="out of range"):
        mode_displacements(vec, [3, 24])
    with pytest.raises(ValueError, match="must not repeat"):
        mode_displacements(vec, [3, 3])
    assert mode_displacements(vec, [0, 5]).shape == (2, 3)


def test_non_finite_coordinates_are_refused():
    """issue 38: NaN coordinates gave a NaN Hessian (and NaN modes) silently."""
    x = torch.from_numpy(np.stack([_chain(24, 0), _chain(24, 1)]))
    assert torch.isfinite(anm_hessian(x)).all()
    for bad in (float("nan"), float("inf")):
        y = x.clone()
        y[1, 5, 2] = bad
        with pytest.raises(ValueError, match=r"finite coordinates.*structure\(s\) \[1\]"):
            anm_hessian(y)
        with pytest.raises(ValueError, match="finite coordinates"):
            normal_modes(y)
