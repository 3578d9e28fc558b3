"""match_rate against StructureMatcher itself, validity, and spglib space groups."""

import numpy as np
import pytest

from iclr24.papers.diffcsp_pp import (
    Composition,
    make_crystal,
    match_details,
    match_rate,
    space_group_of,
    structure_valid,
)


def _rocksalt(seed=0):
    return make_crystal(Composition("AB", "Na", "Cl"), np.random.default_rng(seed)).to_structure()


def test_match_rate_known_answers():
    from pymatgen.analysis.structure_matcher import StructureMatcher

    s = _rocksalt()
    moved = s.copy()
    moved.translate_sites(list(range(len(s))), [0.13, 0.4, 0.07])
    moved.scale_lattice(s.volume * 1.3)  # the matcher normalises volume
    cscl = make_crystal(Composition("AB", "Cs", "Cl"), np.random.default_rng(0)).to_structure()
    rate, rmse = match_rate([s, moved, cscl], [s, s, s])
    assert rate == pytest.approx(2 / 3)
    assert rmse == pytest.approx(0.0, abs=1e-6)
    ref = StructureMatcher(stol=0.5, angle_tol=10, ltol=0.3).get_rms_dist(moved, s)
    assert match_details([moved], [s])[0] == pytest.approx(ref[0])


def test_small_distortion_matches_with_its_rms():
    s = _rocksalt()
    d = s.copy()
    d.perturb(0.05, min_distance=0.05)
    (rms,) = match_details([d], [s])
    assert rms is not None and 0 < rms < 0.1


def test_overlapping_atoms_are_invalid_and_never_match():
    s = _rocksalt()
    bad = s.copy()
    bad.translate_sites([0], (bad.frac_coords[1] - bad.frac_coords[0]) + 0.01)
    assert structure_valid(s) and not structure_valid(bad)
    assert match_details([bad], [s]) == [None]


def test_space_group_of_prototypes():
    assert space_group_of(_rocksalt()) == 225
    rutile = make_crystal(Composition("AB2", "Mg", "O"), np.random.default_rng(0))
    assert space_group_of(rutile) == 136


def test_bad_input():
    with pytest.raises(ValueError, match="pair up"):
        match_rate([_rocksalt()], [])
    with pytest.raises(TypeError, match="Structures or Crystals"):
        match_rate(["x"], ["y"])
    with pytest.raises(ValueError, match="symprec"):
        space_group_of(_rocksalt(), symprec=0)
