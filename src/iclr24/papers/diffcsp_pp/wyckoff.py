"""The coordinate half of DiffCSP++'s space-group constraint (paper Sec. 3.2): Wyckoff positions.

Atoms of a crystal with space group G fall into orbits (Wyckoff positions); within an orbit
every atom is an image of one *anchor* under an affine operation of G,

    f_i = R_i f_{a(i)} + t_i  (mod 1),           (R_i, t_i) the 4x4 op of atom i,

and special positions have rank-deficient R (e.g. 4f of P4_2/mnm, "x, x, 0", leaves one free
parameter). A :class:`WyckoffTemplate` stores, per atom, its species, the index of its orbit's
anchor, its op and the pseudo-inverse R_i^+ (used to project noise and scores onto the free
subspace, Eq. 12-13 of the paper). Templates come from a structure (``from_structure``: spglib's
refined cell, then pyxtal's ``from_seed`` with the official code's 0.01 -> 1e-4 tolerance
fallback), from a user's list of Wyckoff letters (``from_sites``: controllable generation, e.g.
space group 58 with 2a, 2d, 4g), or are *free* (``free``: P1, every atom its own anchor with
the identity op, which is what the unconstrained DiffCSP baseline sees).

Ops are pyxtal's (International Tables standard settings; origin choice 2 where there are two);
lattice, ops and coordinates must use that same setting, which ``standardize`` guarantees.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .lattice import check_spacegroup, lattice_degrees_of_freedom

__all__ = ["WyckoffTemplate", "normalize_composition", "standardize"]


def normalize_composition(composition: Any, name: str = "composition") -> dict[str, int]:
    """{species: count} from a mapping (dict, pymatgen ``Composition``) or a sequence of
    species symbols (one per atom)."""
    if isinstance(composition, str):
        raise TypeError(f"{name} must be a mapping species -> count or a list of species, "
                        f"got the string {composition!r}")
    if isinstance(composition, Mapping) or hasattr(composition, "items"):
        out: dict[str, int] = {}
        for sp, n in composition.items():
            cnt = float(n)
            if cnt != int(cnt) or cnt < 0:
                raise ValueError(f"{name} must hold whole non-negative atom counts, got "
                                 f"{sp}: {n}")
            if int(cnt):
                out[str(sp)] = out.get(str(sp), 0) + int(cnt)
    elif isinstance(composition, Sequence):
        out = dict(Counter(str(s) for s in composition))
    else:
        raise TypeError(f"{name} must be a mapping species -> count or a list of species, got "
                        f"{type(composition).__name__}")
    if not out:
        raise ValueError(f"{name} holds no atoms")
    return out


@dataclass(frozen=True, eq=False)
class WyckoffTemplate:
    """Space group + Wyckoff positions of a crystal's atoms (N atoms, M orbits).

    spacegroup: international number 1-230.
    species:    (N,) symbol of each atom.
    anchors:    (N,) index of the anchor atom of each atom's orbit (an anchor is its own).
    ops:        (N, 4, 4) affine op of each atom (f_i = R_i f_{a(i)} + t_i mod 1).
    wyckoff:    (M,) Wyckoff labels of the orbits (e.g. ``"4a"``), in order of first atom.
    ops_pinv:   (N, 3, 3) pseudo-inverses R_i^+ (computed).
    """

    spacegroup: int
    species: tuple[str, ...]
    anchors: np.ndarray
    ops: np.ndarray
    wyckoff: tuple[str, ...]
    ops_pinv: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        sg = check_spacegroup(self.spacegroup)
        object.__setattr__(self, "spacegroup", sg)
        species = tuple(str(s) for s in self.species)
        n = len(species)
        if n == 0:
            raise ValueError("a template needs at least one atom")
        anchors = np.asarray(self.anchors)
        if anchors.shape != (n,) or not np.issubdtype(anchors.dtype, np.integer):
            raise ValueError(f"anchors must be ({n},) integers (one per atom), got "
                             f"{anchors.shape} {anchors.dtype}")
        if anchors.min() < 0 or anchors.max() >= n or np.any(anchors[anchors] != anchors):
            raise ValueError("anchors must index atoms that are their own anchor")
        ops = np.asarray(self.ops, dtype=np.float64)
        if ops.shape != (n, 4, 4):
            raise ValueError(f"ops must have shape ({n}, 4, 4), got {ops.shape}")
        if not np.allclose(ops[:, 3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError("ops must be affine 4x4 matrices (last row 0, 0, 0, 1)")
        if any(species[i] != species[a] for i, a in enumerate(anchors)):
            raise ValueError("all atoms of an orbit must share their anchor's species")
        wyckoff = tuple(str(w) for w in self.wyckoff)
        n_orbits = len(np.unique(anchors))
        if len(wyckoff) != n_orbits:
            raise ValueError(f"wyckoff must label each of the {n_orbits} orbits, got "
                             f"{len(wyckoff)} labels")
        object.__setattr__(self, "species", species)
        object.__setattr__(self, "anchors", anchors.astype(np.int64))
        object.__setattr__(self, "ops", ops)
        object.__setattr__(self, "wyckoff", wyckoff)
        object.__setattr__(self, "ops_pinv", np.linalg.pinv(ops[:, :3, :3]))

    # -- views --------------------------------------------------------------------------
    @property
    def n_atoms(self) -> int:
        return len(self.species)

    @property
    def anchor_atoms(self) -> np.ndarray:
        """(M,) indices of the anchors, in order of first appearance."""
        _, first = np.unique(self.anchors, return_index=True)
        return self.anchors[np.sort(first)]

    @property
    def composition(self) -> dict[str, int]:
        return dict(Counter(self.species))

    @property
    def free_parameters(self) -> int:
        """Parameters the template leaves open beyond the overall scale: the free lattice log
        coefficients minus one (the volume, which StructureMatcher normalises away) plus the
        rank of each orbit's op (x, y, z of a general position, none of a fixed special
        position). 0 means the template alone determines the crystal up to its scale (e.g.
        rock-salt: Fm-3m, 4a + 4b)."""
        ranks = [int(np.linalg.matrix_rank(self.ops[a, :3, :3])) for a in self.anchor_atoms]
        return lattice_degrees_of_freedom(self.spacegroup) - 1 + sum(ranks)

    @property
    def multiplicities(self) -> tuple[int, ...]:
        """(M,) atoms per orbit."""
        return tuple(int(np.sum(self.anchors == a)) for a in self.anchor_atoms)

    # -- using it -----------------------------------------------------------------------
    def check_composition(self, composition: Any, name: str = "composition") -> None:
        """ValueError unless the template's orbits hold exactly ``composition``'s atoms."""
        want = normalize_composition(composition, name)
        have = self.composition
        if want != have:
            raise ValueError(f"the template's Wyckoff multiplicities give {have} (space group "
                             f"{self.spacegroup}, sites {list(self.wyckoff)}), which does not "
                             f"match {name} {want}")

    def place(self, orbit_coords: np.ndarray) -> np.ndarray:
        """(N, 3) positions from one generating point per orbit (M, 3):
        f_i = R_i p_{orbit(i)} + t_i mod 1."""
        p = np.asarray(orbit_coords, dtype=np.float64)
        m = len(self.anchor_atoms)
        if p.shape != (m, 3):
            raise ValueError(f"orbit_coords must have shape ({m}, 3), got {p.shape}")
        index = {int(a): j for j, a in enumerate(self.anchor_atoms)}
        per_atom = p[[index[int(a)] for a in self.anchors]]
        return self.positions_from(per_atom)

    def positions(self, frac: np.ndarray) -> np.ndarray:
        """Regenerate every atom from its anchor's coordinates in ``frac`` (N, 3)."""
        f = np.asarray(frac, dtype=np.float64)
        if f.shape != (self.n_atoms, 3):
            raise ValueError(f"frac must have shape ({self.n_atoms}, 3), got {f.shape}")
        return self.positions_from(f[self.anchors])

    def positions_from(self, anchor_coords: np.ndarray) -> np.ndarray:
        """f_i = R_i x_i + t_i mod 1 for per-atom anchor coordinates x (N, 3)."""
        R, t = self.ops[:, :3, :3], self.ops[:, :3, 3]
        return (np.einsum("nij,nj->ni", R, anchor_coords) + t) % 1.0

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def free(cls, composition: Any) -> WyckoffTemplate:
        """P1 with every atom its own orbit (op = identity): no constraint at all. A sequence
        of species keeps its atom order; a mapping lists its species in order."""
        if isinstance(composition, Sequence) and not isinstance(composition, str):
            normalize_composition(composition)  # validates
            species = tuple(str(s) for s in composition)
        else:
            comp = normalize_composition(composition)
            species = tuple(s for s, n in comp.items() for _ in range(n))
        n = len(species)
        return cls(1, species, np.arange(n), np.repeat(np.eye(4)[None], n, 0), ("1a",) * n)

    @classmethod
    def from_sites(cls, spacegroup: int, sites: Sequence[tuple[str, str]]) -> WyckoffTemplate:
        """A template from (species, Wyckoff label) pairs, e.g.
        ``from_sites(58, [("Mn", "2a"), ("Li", "2d"), ("O", "4g")])``."""
        from pyxtal.symmetry import Group

        sg = check_spacegroup(spacegroup)
        if not sites:
            raise ValueError("sites must list at least one (species, Wyckoff label) pair")
        group = Group(sg)
        labels = {wp.get_label(): wp for wp in group.Wyckoff_positions}
        species, anchors, ops, names = [], [], [], []
        for item in sites:
            if not (isinstance(item, (tuple, list)) and len(item) == 2):
                raise TypeError(f"each site must be a (species, label) pair, got {item!r}")
            sp, label = str(item[0]), str(item[1])
            if label not in labels:
                raise ValueError(f"space group {sg} has no Wyckoff position {label!r}; it has "
                                 f"{sorted(labels, key=lambda s: (int(s[:-1]), s[-1]))}")
            anchor = len(species)
            for op in labels[label].ops:
                species.append(sp)
                anchors.append(anchor)
                ops.append(op.affine_matrix)
            names.append(label)
        return cls(sg, tuple(species), np.array(anchors), np.array(ops), tuple(names))

    @classmethod
    def from_structure(cls, structure: Any, symprec: float = 0.01) -> WyckoffTemplate:
        """The template of a pymatgen ``Structure`` (see :func:`standardize`)."""
        return standardize(structure, symprec)[1]


def standardize(structure: Any, symprec: float = 0.01) -> tuple[Any, WyckoffTemplate]:
    """(standard conventional Structure in template order, its WyckoffTemplate).

    spglib (via pymatgen's SpacegroupAnalyzer) refines the cell at ``symprec``; pyxtal's
    ``from_seed`` then assigns Wyckoff positions at tol 0.01, retried at 1e-4 if that fails
    (the official preprocessing). Atom i of the returned structure is op_i applied to its
    anchor's generating point, so ``template.positions(structure.frac_coords)`` reproduces it.
    A left-handed input cell is first rewritten as the same crystal in a right-handed one.
    """
    from pymatgen.core import Lattice, Structure
    from pymatgen.symmetry.analyzer import SpacegroupAnalyzer
    from pyxtal import pyxtal

    if not isinstance(structure, Structure):
        raise TypeError(f"structure must be a pymatgen Structure, got "
                        f"{type(structure).__name__}")
    if not isinstance(symprec, (int, float)) or isinstance(symprec, bool) or symprec <= 0:
        raise ValueError(f"symprec must be a positive number, got {symprec!r}")
    if np.linalg.det(structure.lattice.matrix) < 0:
        # the same crystal in a right-handed cell (r = f L = (-f)(-L)); issue 38: the cell is
        # rebuilt from lattice parameters below, which cannot tell a cell from its mirror
        # image (spglib's refined cell is right-handed already; this keeps that explicit)
        structure = Structure(Lattice(-structure.lattice.matrix), structure.species,
                              -structure.frac_coords)
    refined = SpacegroupAnalyzer(structure, symprec=symprec).get_refined_structure()
    crystal = pyxtal()
    try:
        crystal.from_seed(refined, tol=0.01)
    except Exception:  # noqa: BLE001 - pyxtal raises several types; the official code retries
        crystal.from_seed(refined, tol=0.0001)
    species, anchors, ops, coords, names = [], [], [], [], []
    for site in crystal.atom_sites:
        anchor = len(species)
        for op in site.wp.ops:
            species.append(str(site.specie))
            anchors.append(anchor)
            ops.append(op.affine_matrix)
            coords.append(op.operate(site.position))
        names.append(site.wp.get_label())
    template = WyckoffTemplate(crystal.group.number, tuple(species), np.array(anchors),
                               np.array(ops), tuple(names))
    lattice = Lattice.from_parameters(*crystal.lattice.get_para(degree=True))
    std = Structure(lattice, list(species), np.array(coords) % 1.0)
    return std, template
