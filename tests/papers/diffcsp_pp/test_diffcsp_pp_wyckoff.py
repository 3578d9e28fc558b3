"""Wyckoff templates (pyxtal) and the prototype generator: anchors regenerate each prototype."""

import numpy as np
import pytest

from iclr24.papers.diffcsp_pp import (
    PROTOTYPES,
    Composition,
    Crystal,
    WyckoffTemplate,
    all_compositions,
    make_crystal,
    prototype_of,
    retrieve_template,
    space_group_of,
    split_compositions,
    standardize,
)

EXAMPLES = {"rocksalt": Composition("AB", "Na", "Cl"), "cscl": Composition("AB", "Cs", "Cl"),
            "zincblende": Composition("AB", "Be", "Te"), "wurtzite": Composition("AB", "Mg", "S"),
            "nias": Composition("AB", "Sr", "Cl"), "rutile": Composition("AB2", "Mg", "O"),
            "fluorite": Composition("AB2", "Ca", "F"), "cdi2": Composition("AB2", "Si", "I"),
            "anatase": Composition("AB2", "Mg", "Cl"),
            "perovskite": Composition("ABX3", "Sr", "O", "Ti")}


def test_examples_cover_every_prototype():
    assert {prototype_of(c).name for c in EXAMPLES.values()} == set(PROTOTYPES)
    assert all(prototype_of(c).name == n for n, c in EXAMPLES.items())


@pytest.mark.parametrize("name", list(PROTOTYPES))
def test_anchors_regenerate_each_prototype(name):
    from pymatgen.analysis.structure_matcher import StructureMatcher

    crystal = make_crystal(EXAMPLES[name], np.random.default_rng(1))
    tpl = crystal.template
    assert tpl.spacegroup == PROTOTYPES[name].spacegroup
    np.testing.assert_allclose(tpl.positions(crystal.frac), crystal.frac, atol=1e-12)
    structure = crystal.to_structure()
    assert space_group_of(structure, 0.01) == tpl.spacegroup
    # pyxtal's own analysis of the structure: same group and orbits, and its anchors
    # regenerate its standardised structure, which matches the prototype
    std, found = standardize(structure)
    assert found.spacegroup == tpl.spacegroup
    assert sorted(zip(found.multiplicities, [found.species[a] for a in found.anchor_atoms])) == \
        sorted(zip(tpl.multiplicities, [tpl.species[a] for a in tpl.anchor_atoms]))
    np.testing.assert_allclose(found.positions(std.frac_coords), std.frac_coords % 1, atol=1e-6)
    assert StructureMatcher().fit(std, structure)
    assert WyckoffTemplate.from_structure(structure).wyckoff == found.wyckoff


def test_special_position_pseudo_inverse_projects_onto_free_subspace():
    tpl = make_crystal(EXAMPLES["rutile"], np.random.default_rng(0)).template
    i = tpl.wyckoff.index("4f")
    anchor = tpl.anchor_atoms[i]
    R, Rp = tpl.ops[anchor, :3, :3], tpl.ops_pinv[anchor]
    np.testing.assert_allclose(R @ Rp @ R, R, atol=1e-12)  # Moore-Penrose
    np.testing.assert_allclose(R @ Rp @ np.array([1.0, 0.0, 0.0]), [0.5, 0.5, 0.0], atol=1e-12)


def test_from_sites_controllable_generation_example():
    tpl = WyckoffTemplate.from_sites(58, [("Mn", "2a"), ("Li", "2d"), ("O", "4g")])
    assert tpl.composition == {"Mn": 2, "Li": 2, "O": 4}
    assert tpl.multiplicities == (2, 2, 4) and tpl.spacegroup == 58
    tpl.check_composition({"Mn": 2, "Li": 2, "O": 4})


def test_free_template_keeps_order_and_is_unconstrained():
    tpl = WyckoffTemplate.free(["Na", "Cl", "Na"])
    assert tpl.species == ("Na", "Cl", "Na") and tpl.spacegroup == 1
    np.testing.assert_array_equal(tpl.anchors, [0, 1, 2])
    x = np.random.default_rng(0).random((3, 3))
    np.testing.assert_allclose(tpl.positions(x), x)


def test_bad_templates_get_clear_errors():
    with pytest.raises(ValueError, match="1..230"):
        WyckoffTemplate.from_sites(0, [("Na", "1a")])
    with pytest.raises(ValueError, match="1..230"):
        WyckoffTemplate.from_sites(231, [("Na", "1a")])
    with pytest.raises(ValueError, match="no Wyckoff position '9z'"):
        WyckoffTemplate.from_sites(225, [("Na", "9z")])
    tpl = WyckoffTemplate.from_sites(225, [("Na", "4a"), ("Cl", "4b")])
    with pytest.raises(ValueError, match="does not match composition"):
        tpl.check_composition({"Na": 1, "Cl": 1})
    with pytest.raises(ValueError, match="does not match composition"):
        tpl.check_composition(["Na"] * 4 + ["Cl"] * 3)
    with pytest.raises(TypeError, match="composition"):
        tpl.check_composition("NaCl")
    with pytest.raises(ValueError, match="anchors"):
        WyckoffTemplate(1, ("Na", "Cl"), np.array([1, 0]), np.repeat(np.eye(4)[None], 2, 0),
                        ("1a", "1a"))
    with pytest.raises(ValueError, match="share their anchor's species"):
        WyckoffTemplate(1, ("Na", "Cl"), np.array([0, 0]), np.repeat(np.eye(4)[None], 2, 0),
                        ("2a",))
    with pytest.raises(TypeError, match="pymatgen Structure"):
        standardize("NaCl")
    with pytest.raises(ValueError, match=r"\(8, 3\)"):
        Crystal(tpl, np.zeros((3, 3)), np.eye(3))


def test_split_holds_out_compositions_and_keeps_every_element_and_prototype():
    train, test = split_compositions(0)
    assert not set(train) & set(test)
    assert set(train) | set(test) == set(all_compositions())
    elems = lambda cs: {e for c in cs for e in c.roles().values()}
    assert elems(test) <= elems(train)
    assert {prototype_of(c).name for c in test} == set(PROTOTYPES)


def test_retrieval_substitutes_the_query_elements():
    lib = [(c, make_crystal(c, np.random.default_rng(0)).template)
           for c in (EXAMPLES["rocksalt"], EXAMPLES["cscl"], EXAMPLES["fluorite"])]
    query = Composition("AB", "K", "Cl")  # radii closest to NaCl's among AB entries? check rule
    tpl = retrieve_template(query, lib)
    assert set(tpl.species) == {"K", "Cl"}
    assert tpl.spacegroup in (221, 225)
    assert retrieve_template(Composition("AB2", "Sr", "F"), lib).spacegroup == 225
    with pytest.raises(ValueError, match="formula type ABX3"):
        retrieve_template(EXAMPLES["perovskite"], lib)


# free parameters beyond the scale: lattice shape (c/a) + free Wyckoff coordinates
FREE = {"rocksalt": 0, "cscl": 0, "zincblende": 0, "fluorite": 0, "perovskite": 0,
        "nias": 1, "wurtzite": 3, "rutile": 2, "cdi2": 2, "anatase": 2}


@pytest.mark.parametrize("name", list(PROTOTYPES))
def test_free_parameters_of_each_prototype(name):
    tpl = make_crystal(EXAMPLES[name], np.random.default_rng(0)).template
    assert tpl.free_parameters == FREE[name]


def test_free_parameters_of_general_and_free_templates():
    # P1 with two atoms: 5 lattice shape coefficients + 3 coordinates each
    assert WyckoffTemplate.free(["Na", "Cl"]).free_parameters == 5 + 6
    # Pnnm (58) 4g is (x, y, 0): 2 free coordinates; orthorhombic lattice: 2 beyond the scale
    tpl = WyckoffTemplate.from_sites(58, [("Mn", "2a"), ("Li", "2d"), ("O", "4g")])
    assert tpl.free_parameters == 2 + 2


def _handedness(structure) -> float:
    """Sign of the triple product of the nearest-image vectors from the Li atom to the Na, K
    and Rb atoms: +1 for one enantiomer, -1 for its mirror image."""
    li = structure.indices_from_symbol("Li")[0]
    vecs = []
    for sym in ("Na", "K", "Rb"):
        j = structure.indices_from_symbol(sym)[0]
        _, image = structure[li].distance_and_image(structure[j])
        vecs.append(structure.lattice.get_cartesian_coords(
            structure[j].frac_coords + image - structure[li].frac_coords))
    return float(np.sign(np.linalg.det(np.array(vecs))))


def test_left_handed_structure_keeps_its_handedness():
    """issue 38: a chiral (P1) crystal given in a left-handed cell is standardised as itself,
    not as its mirror image; a Crystal refuses a left-handed cell outright."""
    from pymatgen.core import Lattice, Structure

    L = np.array([[4.1, 0.0, 0.0], [0.7, 4.6, 0.0], [0.5, 0.9, 5.3]])
    species = ["Li", "Na", "K", "Rb"]
    frac = np.array([[0.1, 0.1, 0.1], [0.45, 0.12, 0.08], [0.1, 0.5, 0.15],
                     [0.2, 0.15, 0.55]])
    right = Structure(Lattice(L), species, frac)
    left = Structure(Lattice(-L), species, -frac)  # the same crystal, left-handed basis
    np.testing.assert_allclose(left.cart_coords, right.cart_coords, atol=1e-12)
    assert np.linalg.det(left.lattice.matrix) < 0
    assert _handedness(left) == _handedness(right)
    for s in (right, left):
        crystal = Crystal.from_structure(s)
        assert crystal.template.spacegroup == 1
        assert np.linalg.det(crystal.lattice) > 0
        assert _handedness(crystal.to_structure()) == _handedness(right)
    tpl = WyckoffTemplate.free(species)
    with pytest.raises(ValueError, match="right-handed"):
        Crystal(tpl, -frac, -L)
    with pytest.raises(ValueError, match="right-handed"):
        Crystal(tpl, frac, np.zeros((3, 3)))
