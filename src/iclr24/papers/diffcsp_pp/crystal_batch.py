"""A batch of crystals as flat tensors (PyG-style: atoms of all crystals concatenated).

Atom i belongs to crystal ``node2graph[i]``; the graph is fully connected within each cell
(self-loops included, as the official ``CSPNet.gen_edges``); ``anchors`` are global atom indices.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .wyckoff import WyckoffTemplate

__all__ = ["Crystal", "CrystalBatch", "atomic_number", "collate"]


@functools.lru_cache(maxsize=256)
def atomic_number(symbol: str) -> int:
    """Z of an element symbol (pymatgen's periodic table); ValueError if unknown."""
    from pymatgen.core.periodic_table import Element

    try:
        return int(Element(symbol).Z)
    except (ValueError, KeyError):
        raise ValueError(f"unknown element symbol {symbol!r}") from None


@dataclass
class CrystalBatch:
    """B crystals, N atoms, E = sum n_b^2 edges.

    atom_types: (N,) atomic numbers;   num_atoms: (B,);   node2graph: (N,);
    spacegroup: (B,);                  anchors: (N,) global index of each atom's anchor;
    ops: (N, 4, 4);  ops_pinv: (N, 3, 3);  edges: (2, E) (source, target) atom indices;
    frac: (N, 3) fractional coordinates and lattice: (B, 3, 3) when known (training).
    """

    atom_types: torch.Tensor
    num_atoms: torch.Tensor
    node2graph: torch.Tensor
    spacegroup: torch.Tensor
    anchors: torch.Tensor
    ops: torch.Tensor
    ops_pinv: torch.Tensor
    edges: torch.Tensor
    frac: torch.Tensor | None = None
    lattice: torch.Tensor | None = None

    @property
    def num_crystals(self) -> int:
        return int(self.num_atoms.numel())

    @classmethod
    def from_templates(cls, templates: Sequence[WyckoffTemplate],
                       frac: Sequence[np.ndarray] | None = None,
                       lattices: Sequence[np.ndarray] | None = None, *,
                       dtype: torch.dtype = torch.float32,
                       device: torch.device | str = "cpu") -> CrystalBatch:
        """Collate templates (and, for training, each crystal's (n, 3) coordinates and (3, 3)
        lattice, in template order)."""
        if not templates or not all(isinstance(t, WyckoffTemplate) for t in templates):
            raise TypeError("templates must be a non-empty sequence of WyckoffTemplate")
        counts = [t.n_atoms for t in templates]
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        src = np.concatenate([o + np.repeat(np.arange(n), n) for o, n in zip(offsets, counts)])
        dst = np.concatenate([o + np.tile(np.arange(n), n) for o, n in zip(offsets, counts)])
        types = [atomic_number(s) for t in templates for s in t.species]
        f = lat = None
        if frac is not None:
            if len(frac) != len(templates):
                raise ValueError(f"frac must hold one array per template ({len(templates)}), "
                                 f"got {len(frac)}")
            for t, x in zip(templates, frac):
                if np.shape(x) != (t.n_atoms, 3):
                    raise ValueError(f"frac arrays must be (n_atoms, 3) in template order; got "
                                     f"{np.shape(x)} for a template of {t.n_atoms} atoms")
            f = torch.as_tensor(np.concatenate(frac) % 1.0, dtype=dtype, device=device)
        if lattices is not None:
            lat_np = np.asarray(lattices, dtype=np.float64)
            if lat_np.shape != (len(templates), 3, 3):
                raise ValueError(f"lattices must be ({len(templates)}, 3, 3), got "
                                 f"{lat_np.shape}")
            lat = torch.as_tensor(lat_np, dtype=dtype, device=device)
        return cls(
            atom_types=torch.as_tensor(types, dtype=torch.long, device=device),
            num_atoms=torch.as_tensor(counts, dtype=torch.long, device=device),
            node2graph=torch.as_tensor(np.repeat(np.arange(len(counts)), counts),
                                       dtype=torch.long, device=device),
            spacegroup=torch.as_tensor([t.spacegroup for t in templates], dtype=torch.long,
                                       device=device),
            anchors=torch.as_tensor(np.concatenate([o + t.anchors for o, t in
                                                    zip(offsets, templates)]),
                                    dtype=torch.long, device=device),
            ops=torch.as_tensor(np.concatenate([t.ops for t in templates]), dtype=dtype,
                                device=device),
            ops_pinv=torch.as_tensor(np.concatenate([t.ops_pinv for t in templates]),
                                     dtype=dtype, device=device),
            edges=torch.as_tensor(np.stack([src, dst]), dtype=torch.long, device=device),
            frac=f, lattice=lat)


@dataclass(frozen=True, eq=False)
class Crystal:
    """One crystal in a template's atom order: ``frac`` (n, 3), ``lattice`` (3, 3) rows, a
    right-handed cell (det > 0; ValueError otherwise)."""

    template: WyckoffTemplate
    frac: np.ndarray
    lattice: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.template, WyckoffTemplate):
            raise TypeError("template must be a WyckoffTemplate")
        f = np.asarray(self.frac, dtype=np.float64)
        if f.shape != (self.template.n_atoms, 3):
            raise ValueError(f"frac must be ({self.template.n_atoms}, 3), got {f.shape}")
        lat = np.asarray(self.lattice, dtype=np.float64)
        if lat.shape != (3, 3):
            raise ValueError(f"lattice must be (3, 3), got {lat.shape}")
        if not np.isfinite(lat).all() or not np.linalg.det(lat) > 0:
            # issue 38: the log-lattice coordinates keep only L L^T, so a left-handed cell
            # would be learnt and returned as its mirror image
            raise ValueError(f"lattice must be a finite right-handed cell (det > 0), got det "
                             f"{np.linalg.det(lat):.4g}; for a left-handed cell negate all "
                             f"three vectors and the fractional coordinates (the same crystal), "
                             f"or build it with Crystal.from_structure")
        object.__setattr__(self, "frac", f % 1.0)
        object.__setattr__(self, "lattice", lat)

    def to_structure(self):
        """A pymatgen ``Structure``."""
        from pymatgen.core import Lattice, Structure

        return Structure(Lattice(self.lattice), list(self.template.species), self.frac)

    @classmethod
    def from_structure(cls, structure, symprec: float = 0.01) -> Crystal:
        """Standardise a pymatgen ``Structure`` (any cell, left-handed ones included) and
        attach its Wyckoff template."""
        from .wyckoff import standardize

        std, template = standardize(structure, symprec)
        return cls(template, std.frac_coords, std.lattice.matrix)


def collate(crystals: Sequence[Crystal], templates: Sequence[WyckoffTemplate] | None = None, *,
            dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
            ) -> CrystalBatch:
    """A training batch of crystals (``templates`` replaces each crystal's own, same order of
    atoms: e.g. the free template of the unconstrained baseline)."""
    tpl = [c.template for c in crystals] if templates is None else list(templates)
    return CrystalBatch.from_templates(tpl, [c.frac for c in crystals],
                                       [c.lattice for c in crystals], dtype=dtype, device=device)
