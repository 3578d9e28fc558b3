"""LatticeLogBasis: round trips, rotation invariance, per-family projection, bad input."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.diffcsp_pp import (
    LatticeLogBasis,
    check_spacegroup,
    crystal_family,
    lattice_degrees_of_freedom,
)

BASIS = LatticeLogBasis()
FAMILY_GROUPS = {"triclinic": 2, "monoclinic": 14, "orthorhombic": 62, "tetragonal": 136,
                 "hexagonal": 194, "cubic": 225}


def test_pyxtal_tables_load_offline():
    from pyxtal.symmetry import Group

    labels = [wp.get_label() for wp in Group(225).Wyckoff_positions]
    assert labels[-2:] == ["4b", "4a"] and "8c" in labels and len(labels) == 12


def test_basis_is_orthonormal_and_symmetric():
    B = BASIS.basis
    gram = torch.einsum("aij,bij->ab", B, B)
    assert torch.allclose(gram, torch.eye(6, dtype=B.dtype), atol=1e-12)
    assert torch.allclose(B, B.transpose(-1, -2))


@settings(max_examples=40)
@given(st.lists(st.floats(-1.5, 1.5), min_size=6, max_size=6))
def test_to_matrix_to_k_round_trip(k):
    kk = torch.tensor(k, dtype=torch.float64)
    L = BASIS.to_matrix(kk)
    assert torch.allclose(L, L.T, atol=1e-12)
    assert torch.allclose(BASIS.to_k(L), kk, atol=1e-9)


def test_to_k_ignores_rotation_and_keeps_the_metric():
    rng = np.random.default_rng(0)
    L = rng.normal(size=(5, 3, 3)) + 3 * np.eye(3)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.linalg.det(Q))  # a proper rotation (an improper one mirrors the cell)
    k = BASIS.to_k(L)
    assert torch.allclose(BASIS.to_k(L @ Q), k, atol=1e-9)  # rows rotated in Cartesian space
    S = BASIS.to_matrix(k).numpy()
    np.testing.assert_allclose(S @ S.transpose(0, 2, 1), L @ L.transpose(0, 2, 1), atol=1e-8)


def test_hexagonal_bias_is_gamma_120():
    from pymatgen.core import Lattice

    k = BASIS.to_k(Lattice.hexagonal(3.1, 5.0).matrix)
    assert k[0].item() == pytest.approx(-0.25 * math.log(3) * math.sqrt(2), abs=1e-9)
    assert BASIS.bias(194)[0].item() == pytest.approx(k[0].item())


def _params(L: np.ndarray):
    from pymatgen.core import Lattice

    return Lattice(L).parameters


@pytest.mark.parametrize("family", list(FAMILY_GROUPS))
def test_projection_keeps_each_crystal_family(family):
    sg = FAMILY_GROUPS[family]
    assert crystal_family(sg) == family
    rng = np.random.default_rng(sg)
    for _ in range(5):
        k = BASIS.project(torch.as_tensor(rng.normal(scale=0.5, size=6)), sg)
        a, b, c, al, be, ga = _params(BASIS.to_matrix(k).numpy())
        if family == "cubic":
            assert np.allclose([a, b], c) and np.allclose([al, be, ga], 90)
        elif family == "hexagonal":
            assert np.isclose(a, b) and np.allclose([al, be], 90) and np.isclose(ga, 120)
        elif family == "tetragonal":
            assert np.isclose(a, b) and not np.isclose(a, c) and np.allclose([al, be, ga], 90)
        elif family == "orthorhombic":
            assert np.allclose([al, be, ga], 90) and not np.isclose(a, b)
        elif family == "monoclinic":
            assert np.allclose([al, ga], 90) and not np.isclose(be, 90)
        else:
            assert not np.isclose(al, 90) and not np.isclose(ga, 90)


@pytest.mark.parametrize("lattice,sg", [
    (lambda L: L.cubic(4.2), 225), (lambda L: L.hexagonal(3.0, 5.1), 186),
    (lambda L: L.tetragonal(4.6, 2.9), 136), (lambda L: L.orthorhombic(3, 4, 5), 62),
    (lambda L: L.monoclinic(3, 4, 5, 100), 14)])
def test_symmetric_lattices_are_fixed_points(lattice, sg):
    from pymatgen.core import Lattice

    k = BASIS.to_k(lattice(Lattice).matrix)
    assert torch.allclose(BASIS.project(k, sg), k, atol=1e-9)
    assert not torch.allclose(BASIS.project(k + 0.3, sg), k + 0.3)


def test_batched_projection_uses_one_group_per_row():
    k = torch.randn(3, 6, dtype=torch.float64)
    out = BASIS.project(k, torch.tensor([1, 221, 186]))
    assert torch.equal(out[0], k[0])
    assert torch.allclose(out[1, :5], torch.zeros(5, dtype=torch.float64))
    assert torch.equal(BASIS.project_noise(k, torch.tensor([1, 221, 186]))[2, 0],
                       torch.tensor(0.0, dtype=torch.float64))


@pytest.mark.parametrize("bad", [0, 231, -5])
def test_space_group_out_of_range(bad):
    with pytest.raises(ValueError, match="1..230"):
        BASIS.project(torch.zeros(6), bad)
    with pytest.raises(ValueError, match="1..230"):
        check_spacegroup(bad)
    with pytest.raises(ValueError, match="1..230"):
        BASIS.mask(torch.tensor([5, bad]))


def test_space_group_wrong_type_and_length():
    with pytest.raises(TypeError, match="spacegroup"):
        check_spacegroup(3.5)
    with pytest.raises(ValueError, match="one space group per batch row"):
        BASIS.project(torch.zeros(2, 6), torch.tensor([1, 2, 3]))


def test_lattice_not_positive_definite():
    flat = np.array([[1.0, 0, 0], [0, 1.0, 0], [1.0, 1.0, 0]])
    with pytest.raises(ValueError, match="not positive definite"):
        BASIS.to_k(flat)
    with pytest.raises(ValueError, match="not positive definite"):
        BASIS.to_k(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"\(\.\.\., 3, 3\)"):
        BASIS.to_k(np.eye(2))
    with pytest.raises(ValueError, match=r"\(\.\.\., 6\)"):
        BASIS.to_matrix(torch.zeros(5))


def test_left_handed_lattice_is_refused_not_mirrored():
    """issue 38: L_sym is right-handed whatever L is, so a left-handed L would be mirrored."""
    L = np.diag([3.0, 4.0, 5.0]) + 0.3
    assert np.linalg.det(L) > 0
    BASIS.to_k(L)  # right-handed: fine
    with pytest.raises(ValueError, match="right-handed"):
        BASIS.to_k(-L)  # the same lattice points, a left-handed basis
    with pytest.raises(ValueError, match="right-handed"):
        BASIS.to_k(np.stack([L, L[[1, 0, 2]]]))  # swapping two vectors flips handedness
    # the returned matrix is always right-handed: a left-handed cell cannot come back
    assert torch.all(torch.linalg.det(BASIS.to_matrix(torch.randn(4, 6))) > 0)


@pytest.mark.parametrize("family,free", [("cubic", 1), ("hexagonal", 2), ("tetragonal", 2),
                                         ("orthorhombic", 3), ("monoclinic", 4),
                                         ("triclinic", 6)])
def test_lattice_degrees_of_freedom_are_the_free_coefficients(family, free):
    sg = FAMILY_GROUPS[family]
    assert lattice_degrees_of_freedom(sg) == free
    assert int(BASIS.mask(sg).sum()) == free
    with pytest.raises(ValueError, match="1..230"):
        lattice_degrees_of_freedom(0)
