"""CSPNet invariances, the losses, and symmetry by construction in the sampler."""

import numpy as np
import pytest
import torch

from iclr24.papers.diffcsp_pp import (
    Composition,
    CrystalBatch,
    CSPNet,
    DiffCSP,
    DiffCSPPlusPlus,
    LatticeLogBasis,
    WyckoffTemplate,
    collate,
    fit,
    make_crystal,
    space_group_of,
)

COMPS = [Composition("AB2", "Mg", "O"), Composition("AB", "Mg", "S"),
         Composition("ABX3", "Sr", "O", "Ti"), Composition("AB2", "Ca", "F")]


def _crystals(seed=0):
    rng = np.random.default_rng(seed)
    return [make_crystal(c, rng) for c in COMPS]


def _net():
    torch.manual_seed(0)
    return CSPNet(hidden=16, layers=2, num_freqs=4, time_dim=8).double()


def test_cspnet_is_permutation_and_translation_invariant(one_torch_thread):
    net = _net()
    c = _crystals()[0]
    n = c.template.n_atoms
    b = CrystalBatch.from_templates([c.template], [c.frac], [c.lattice], dtype=torch.float64)
    k = LatticeLogBasis().to_k(b.lattice)
    t = torch.tensor([7])
    lat, coord = net(t, b.atom_types, b.frac, k, b.edges, b.node2graph)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(1))
    lat_p, coord_p = net(t, b.atom_types[perm], b.frac[perm], k, b.edges, b.node2graph)
    torch.testing.assert_close(lat_p, lat)
    torch.testing.assert_close(coord_p, coord[perm])
    shifted = (b.frac + torch.tensor([0.3, -0.2, 0.71], dtype=torch.float64)) % 1.0
    lat_s, coord_s = net(t, b.atom_types, shifted, k, b.edges, b.node2graph)
    torch.testing.assert_close(lat_s, lat)
    torch.testing.assert_close(coord_s, coord)
    assert lat.shape == (1, 6) and coord.shape == (n, 3)


def test_losses_are_finite_and_training_lowers_them(one_torch_thread):
    crystals = _crystals()
    for cls in (DiffCSPPlusPlus, DiffCSP):
        model = cls(_net(), steps=20)
        g = torch.Generator().manual_seed(0)
        batch = collate(crystals, [model.template_for(c.template) for c in crystals],
                        dtype=torch.float64)
        before = model.loss(batch, g)
        assert all(torch.isfinite(v) for v in before.values())
        losses = fit(model, crystals, 60, batch_size=4, lr=3e-3, generator=g)
        assert np.mean(losses[-10:]) < np.mean(losses[:10])


def test_constrained_noise_lives_in_the_template_subspace():
    """The lattice part of the loss ignores fixed coefficients; the coordinate target of a
    fully fixed orbit (rock-salt 4a) is exactly zero."""
    rs = make_crystal(Composition("AB", "Na", "Cl"), np.random.default_rng(0))
    batch = collate([rs], dtype=torch.float64)
    z = torch.randn(rs.template.n_atoms, 3, dtype=torch.float64)
    anchored = torch.einsum("nij,nj->ni", batch.ops_pinv[batch.anchors], z[batch.anchors])
    assert torch.count_nonzero(anchored) == 0
    mask = LatticeLogBasis().mask(225)
    assert mask.tolist() == [0, 0, 0, 0, 0, 1]


def test_samples_keep_the_space_group_by_construction(one_torch_thread):
    """Even an untrained DiffCSP++ returns crystals on the template's Wyckoff positions and in
    its crystal family; the free baseline does not."""
    crystals = _crystals()
    model = DiffCSPPlusPlus(_net(), steps=8, clip_k0=6.0)
    g = torch.Generator().manual_seed(0)
    out = model.sample([c.template for c in crystals], compositions=[c.template.composition
                                                                    for c in crystals],
                       generator=g)
    basis = LatticeLogBasis()
    for c, o in zip(crystals, out):
        np.testing.assert_allclose(o.template.positions(o.frac), o.frac, atol=1e-5)
        k = basis.to_k(o.lattice)
        torch.testing.assert_close(basis.project(k, c.template.spacegroup), k, atol=1e-6,
                                   rtol=0)
    base = DiffCSP(_net(), steps=8, clip_k0=6.0).sample(
        [list(c.template.species) for c in crystals], generator=g)
    assert all(o.template.spacegroup == 1 for o in base)
    assert not any(space_group_of(o.to_structure(), 0.1) == c.template.spacegroup
                   for o, c in zip(base, crystals))


def test_sampling_is_deterministic_given_the_generator(one_torch_thread):
    tpl = [_crystals()[1].template]
    model = DiffCSPPlusPlus(_net(), steps=5, clip_k0=6.0)
    a = model.sample(tpl, generator=torch.Generator().manual_seed(3))[0]
    b = model.sample(tpl, generator=torch.Generator().manual_seed(3))[0]
    np.testing.assert_array_equal(a.frac, b.frac)
    np.testing.assert_array_equal(a.lattice, b.lattice)


def test_bad_input_to_the_models():
    model = DiffCSPPlusPlus(_net(), steps=5)
    tpl = WyckoffTemplate.from_sites(225, [("Na", "4a"), ("Cl", "4b")])
    with pytest.raises(ValueError, match="does not match compositions\\[0\\]"):
        model.sample([tpl], compositions=[{"Na": 1, "Cl": 1}])
    with pytest.raises(ValueError, match="one entry per template"):
        model.sample([tpl], compositions=[])
    with pytest.raises(TypeError, match="WyckoffTemplate"):
        model.sample(["NaCl"])
    with pytest.raises(TypeError, match="CSPNet"):
        DiffCSPPlusPlus(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="clip_k0"):
        DiffCSPPlusPlus(_net(), steps=5, clip_k0=-1.0)
    with pytest.raises(ValueError, match="frac and lattice"):
        model.loss(CrystalBatch.from_templates([tpl]))
    with pytest.raises(TypeError, match="compositions"):
        DiffCSP(_net(), steps=5).sample("NaCl")
    with pytest.raises(ValueError, match="steps"):
        fit(model, _crystals(), 0)
