"""Procedural Calpha traces, plausibility measures, superposition."""

import numpy as np
import pytest
import torch

from iclr24.papers.nma_protein_diffusion import (
    BOND,
    backbone_dataset,
    bond_deviation,
    clash_fraction,
    hinge_protein,
    ideal_helix,
    kabsch_rotation,
    motif_rmsd,
    normal_modes,
    random_rotations,
    superpose,
)


def test_ideal_helix_geometry():
    h = ideal_helix(12)
    d1 = np.linalg.norm(np.diff(h, axis=0), axis=1)
    assert np.allclose(d1, np.sqrt((2 * 2.3 * np.sin(np.radians(50))) ** 2 + 1.5 ** 2))
    assert np.allclose(np.hypot(h[:, 0], h[:, 1]), 2.3)
    assert np.allclose(np.diff(h[:, 2]), 1.5)


def test_dataset_bonds_centred_clash_free_deterministic():
    x = backbone_dataset(9, 30, seed=3)
    assert x.shape == (9, 30, 3) and x.dtype == np.float32
    d = np.linalg.norm(np.diff(x, axis=1), axis=-1)
    assert np.allclose(d, BOND, atol=1e-4)
    assert np.allclose(x.mean(1), 0, atol=1e-4)
    assert clash_fraction(x).max() == 0
    assert np.array_equal(x, backbone_dataset(9, 30, seed=3))
    assert not np.array_equal(x, backbone_dataset(9, 30, seed=4))
    # every family gives a rigid network with exactly six zero modes at 13 A
    normal_modes(torch.from_numpy(x).double())


def test_hinge_protein_motif_and_softest_motion():
    p = hinge_protein(48, np.random.default_rng(0))
    assert p.linker.size == 4 and np.all(np.diff(p.linker) == 1)
    m = p.motif()
    assert m[0] == p.linker[0] - 4 and m[-1] == p.linker[-1] + 4 and m.size == 12
    # mode 6 is a domain motion: both domains move, the residues of each domain together
    _, v = normal_modes(torch.from_numpy(p.coords), k=1)
    amp = v[:, 0].reshape(48, 3).norm(dim=1).numpy()
    a, b = amp[: p.linker[0]], amp[p.linker[-1] + 1:]
    assert a.mean() > 0.05 and b.mean() > 0.05
    with pytest.raises(ValueError, match="length must be an int >= 24"):
        hinge_protein(10, np.random.default_rng(0))


def test_plausibility_measures_closed_form():
    x = np.array([[0.0, 0, 0], [3.8, 0, 0], [7.6, 0, 0], [7.6, 4.0, 0], [1.0, 0, 0]])
    assert bond_deviation(x) == pytest.approx((0 + 0 + 0.2 + abs(np.hypot(6.6, 4.0) - 3.8)) / 4)
    # pairs with |i - j| >= 3: (0, 3) 8.6 A, (0, 4) 1.0 A, (1, 4) 2.8 A -> 2 of 3 clash
    assert clash_fraction(x) == pytest.approx(2 / 3)
    assert bond_deviation(np.stack([x, x])).shape == (2,)
    with pytest.raises(ValueError, match="shape"):
        bond_deviation(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="n must be a positive int"):
        backbone_dataset(0)
    with pytest.raises(ValueError, match="families"):
        backbone_dataset(3, families=("sheet",))


def test_superposition_recovers_rigid_motion():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 10, 3, generator=g, dtype=torch.float64)
    rot = random_rotations(4, g, dtype=torch.float64)
    assert torch.allclose(torch.linalg.det(rot), torch.ones(4, dtype=torch.float64))
    y = x @ rot.transpose(1, 2) + torch.randn(4, 1, 3, generator=g, dtype=torch.float64)
    assert torch.allclose(superpose(x, y), y, atol=1e-9)
    assert torch.allclose(motif_rmsd(x, y), torch.zeros(4, dtype=torch.float64), atol=1e-7)
    assert torch.allclose(kabsch_rotation(x, y), rot, atol=1e-9)
    mirrored = y * torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
    r = kabsch_rotation(x, mirrored)  # never a reflection
    assert torch.allclose(torch.linalg.det(r), torch.ones(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="same number of points"):
        superpose(x, y[:, :5])
