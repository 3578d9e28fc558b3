"""Procedural crystal prototypes: a stand-in for MP-20 / Perov-5 that keeps real space groups
and Wyckoff sets and lets the composition determine the answer (as CSP assumes).

Ten prototypes (space group: Wyckoff sites):
    rock-salt (225: 4a, 4b), CsCl (221: 1a, 1b), zinc-blende (216: 4a, 4c),
    wurtzite (186: 2b, 2b; free z), NiAs (194: 2a, 2c), rutile (136: 2a, 4f; free x),
    fluorite (225: 4a, 8c), CdI2 (164: 1a, 2d; free z), anatase (141: 4a, 8e; free z),
    cubic perovskite (221: 1a, 1b, 3c).
A pool of 16 cations and 8 anions has assigned radii (Shannon-like, chosen to spread the radius
ratio rho = r_cation / r_anion over 0.16 - 1.26). A composition is a formula type (AB, AB2,
ABX3) with elements; its prototype follows a synthetic radius-ratio rule (AB: zinc-blende <
0.30 <= wurtzite < 0.414 <= rock-salt < 0.58 <= NiAs < 0.732 <= CsCl; AB2: CdI2 < 0.35 <=
anatase < 0.50 <= rutile < 0.73 <= fluorite; ABX3: perovskite). Lattice constants follow from
the cation-anion distance d = r_c + r_a (1 % Gaussian jitter on d and on c/a), free Wyckoff
parameters from rho. Structures are built by applying pyxtal's Wyckoff ops to one generating
point per orbit, so the template and the coordinates share pyxtal's setting.

Materials Project / MP-20 (and Perov-5, MPTS-52) are out of reach offline; the real datasets
have ~45k structures of up to 20 atoms in hundreds of space groups, not ten prototypes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .crystal_batch import Crystal
from .wyckoff import WyckoffTemplate

__all__ = [
    "ANIONS",
    "CATIONS",
    "PROTOTYPES",
    "Composition",
    "Prototype",
    "all_compositions",
    "make_crystal",
    "prototype_dataset",
    "prototype_of",
    "retrieve_template",
    "split_compositions",
]

CATIONS = {"Be": 0.35, "Si": 0.40, "Al": 0.50, "Ga": 0.58, "Ti": 0.61, "Sn": 0.69,
           "Mg": 0.72, "Zn": 0.74, "Li": 0.76, "Cd": 0.95, "Ca": 1.00, "Na": 1.02,
           "Sr": 1.18, "Ba": 1.35, "K": 1.38, "Cs": 1.67}
ANIONS = {"F": 1.33, "O": 1.40, "Cl": 1.81, "S": 1.84, "Br": 1.96, "Se": 1.98, "I": 2.20,
          "Te": 2.21}
RADII = {**CATIONS, **ANIONS}


@dataclass(frozen=True)
class Prototype:
    """A structure type: space group, (role, Wyckoff label) sites, and a builder
    ``build(d, rho, rng) -> ((a, b, c, alpha, beta, gamma), generating points (M, 3))``."""

    name: str
    formula: str
    spacegroup: int
    sites: tuple[tuple[str, str], ...]
    build: Callable[[float, float, np.random.Generator], tuple[tuple[float, ...], np.ndarray]]


def _cubic(factor: float, points: list[list[float]]):
    def build(d, rho, rng):
        a = factor * d
        return (a, a, a, 90.0, 90.0, 90.0), np.array(points, dtype=float)
    return build


def _jit(rng: np.random.Generator) -> float:
    return 1.0 + 0.01 * rng.standard_normal()


def _wurtzite(d, rho, rng):
    u = 0.375 + 0.05 * (rho - 0.35)  # free z of the anion
    c = d / u * _jit(rng)
    a = c / math.sqrt(8 / 3) * _jit(rng)
    return (a, a, c, 90.0, 90.0, 120.0), np.array([[1 / 3, 2 / 3, 0.0], [1 / 3, 2 / 3, u]])


def _nias(d, rho, rng):
    a = math.sqrt(2) * d
    c = a * (1.55 + 0.3 * (rho - 0.65)) * _jit(rng)
    return (a, a, c, 90.0, 90.0, 120.0), np.array([[0.0, 0.0, 0.0], [1 / 3, 2 / 3, 0.25]])


def _rutile(d, rho, rng):
    x = 0.305 + 0.05 * (rho - 0.6)
    a = d / (x * math.sqrt(2))
    c = a * 0.64 * _jit(rng)
    return (a, a, c, 90.0, 90.0, 90.0), np.array([[0.0, 0.0, 0.0], [x, x, 0.0]])


def _cdi2(d, rho, rng):
    z = 0.25 + 0.05 * (rho - 0.3)
    ca = 1.6 * _jit(rng)
    a = d / math.sqrt(1 / 3 + (z * ca) ** 2)
    return (a, a, a * ca, 90.0, 90.0, 120.0), np.array([[0.0, 0.0, 0.0], [1 / 3, 2 / 3, z]])


def _anatase(d, rho, rng):
    z = 0.083 + 0.02 * (rho - 0.42)  # 8e (0, 1/4, z), origin choice 2
    c = d / (z + 0.125)
    a = c / 2.51 * _jit(rng)
    return (a, a, c, 90.0, 90.0, 90.0), np.array([[0.0, 0.75, 0.125], [0.0, 0.25, z]])


PROTOTYPES: dict[str, Prototype] = {p.name: p for p in [
    Prototype("rocksalt", "AB", 225, (("A", "4a"), ("X", "4b")),
              _cubic(2.0, [[0, 0, 0], [0.5, 0.5, 0.5]])),
    Prototype("cscl", "AB", 221, (("A", "1a"), ("X", "1b")),
              _cubic(2.0 / math.sqrt(3), [[0, 0, 0], [0.5, 0.5, 0.5]])),
    Prototype("zincblende", "AB", 216, (("A", "4a"), ("X", "4c")),
              _cubic(4.0 / math.sqrt(3), [[0, 0, 0], [0.25, 0.25, 0.25]])),
    Prototype("wurtzite", "AB", 186, (("A", "2b"), ("X", "2b")), _wurtzite),
    Prototype("nias", "AB", 194, (("A", "2a"), ("X", "2c")), _nias),
    Prototype("rutile", "AB2", 136, (("A", "2a"), ("X", "4f")), _rutile),
    Prototype("fluorite", "AB2", 225, (("A", "4a"), ("X", "8c")),
              _cubic(4.0 / math.sqrt(3), [[0, 0, 0], [0.25, 0.25, 0.25]])),
    Prototype("cdi2", "AB2", 164, (("A", "1a"), ("X", "2d")), _cdi2),
    Prototype("anatase", "AB2", 141, (("A", "4a"), ("X", "8e")), _anatase),
    Prototype("perovskite", "ABX3", 221, (("A", "1a"), ("B", "1b"), ("X", "3c")),
              _cubic(1.0, [[0, 0, 0], [0.5, 0.5, 0.5], [0, 0.5, 0.5]])),
]}


@dataclass(frozen=True, order=True)
class Composition:
    """A formula type with its elements by role: A (cation), B (second cation, ABX3 only),
    X (anion)."""

    formula: str
    A: str
    X: str
    B: str | None = None

    def roles(self) -> dict[str, str]:
        out = {"A": self.A, "X": self.X}
        if self.B is not None:
            out["B"] = self.B
        return out


def prototype_of(comp: Composition) -> Prototype:
    """The radius-ratio rule."""
    if comp.formula == "ABX3":
        return PROTOTYPES["perovskite"]
    rho = RADII[comp.A] / RADII[comp.X]
    if comp.formula == "AB":
        cuts = [(0.30, "zincblende"), (0.414, "wurtzite"), (0.58, "rocksalt"), (0.732, "nias")]
        last = "cscl"
    elif comp.formula == "AB2":
        cuts = [(0.35, "cdi2"), (0.50, "anatase"), (0.73, "rutile")]
        last = "fluorite"
    else:
        raise ValueError(f"unknown formula type {comp.formula!r}")
    return PROTOTYPES[next((name for cut, name in cuts if rho < cut), last)]


def all_compositions() -> list[Composition]:
    """Every AB and AB2 cation-anion pair, and ABX3 with A >= 1 A and B <= 0.76 A."""
    out = [Composition(f, a, x) for f in ("AB", "AB2") for a in CATIONS for x in ANIONS]
    big = [c for c, r in CATIONS.items() if r >= 0.95]
    small = [c for c, r in CATIONS.items() if r <= 0.76]
    out += [Composition("ABX3", a, x, b) for a in big for b in small for x in ANIONS]
    return sorted(out)


@functools.cache
def _role_template(name: str) -> WyckoffTemplate:
    p = PROTOTYPES[name]
    return WyckoffTemplate.from_sites(p.spacegroup, list(p.sites))


@functools.lru_cache(maxsize=4096)
def _template_of(name: str, roles: tuple[tuple[str, str], ...]) -> WyckoffTemplate:
    return _substitute(_role_template(name), dict(roles))


def _substitute(template: WyckoffTemplate, roles: dict[str, str]) -> WyckoffTemplate:
    return WyckoffTemplate(template.spacegroup, tuple(roles[r] for r in template.species),
                           template.anchors, template.ops, template.wyckoff)


def make_crystal(comp: Composition, rng: np.random.Generator,
                 prototype: Prototype | None = None) -> Crystal:
    """One jittered crystal of ``comp`` (in its rule's prototype unless ``prototype`` given)."""
    from pymatgen.core import Lattice

    proto = prototype or prototype_of(comp)
    cation = comp.B if comp.formula == "ABX3" else comp.A  # the cation bonded to X
    d = (RADII[cation] + RADII[comp.X]) * _jit(rng)
    rho = RADII[cation] / RADII[comp.X]
    params, points = proto.build(d, rho, rng)
    template = _template_of(proto.name, tuple(sorted(comp.roles().items())))
    lattice = Lattice.from_parameters(*params).matrix
    return Crystal(template, template.place(points), lattice)


def split_compositions(seed: int, test_fraction: float = 0.15
                       ) -> tuple[list[Composition], list[Composition]]:
    """Held-out element combinations: (train, test) compositions, the test share drawn per
    prototype so that every prototype appears in both."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    train, test = [], []
    by_proto: dict[str, list[Composition]] = {}
    for c in all_compositions():
        by_proto.setdefault(prototype_of(c).name, []).append(c)
    for name in PROTOTYPES:
        comps = by_proto[name]
        perm = rng.permutation(len(comps))
        n_test = max(1, round(test_fraction * len(comps)))
        test += [comps[i] for i in perm[:n_test]]
        train += [comps[i] for i in perm[n_test:]]
    return train, test


def prototype_dataset(comps: list[Composition], n: int, rng: np.random.Generator
                      ) -> list[tuple[Composition, Crystal]]:
    """n crystals, prototype drawn uniformly, then a composition of it, then the jitter."""
    by_proto: dict[str, list[Composition]] = {}
    for c in comps:
        by_proto.setdefault(prototype_of(c).name, []).append(c)
    names = sorted(by_proto)
    out = []
    for _ in range(n):
        name = names[rng.integers(len(names))]
        comp = by_proto[name][rng.integers(len(by_proto[name]))]
        out.append((comp, make_crystal(comp, rng)))
    return out


def retrieve_template(comp: Composition,
                      library: list[tuple[Composition, WyckoffTemplate]]) -> WyckoffTemplate:
    """CSPML analogue: the template of the nearest library composition of the same formula
    type (Euclidean distance of the role radii), with its elements substituted."""
    same = [(c, t) for c, t in library if c.formula == comp.formula]
    if not same:
        raise ValueError(f"no library entry of formula type {comp.formula}")

    def feats(c: Composition) -> np.ndarray:
        return np.array([RADII[e] for _, e in sorted(c.roles().items())])

    target = feats(comp)
    best_c, best_t = min(same, key=lambda ct: float(np.sum((feats(ct[0]) - target) ** 2)))
    inverse = {e: r for r, e in best_c.roles().items()}
    roles = {e: comp.roles()[r] for e, r in inverse.items()}
    return _substitute(best_t, roles)
