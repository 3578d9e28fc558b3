"""CSP evaluation as in DiffCSP / DiffCSP++: match rate and RMSE with pymatgen's
StructureMatcher (stol 0.5, angle_tol 10, ltol 0.3), and space-group recovery with spglib.

A prediction counts only if it is structurally valid (every interatomic distance >= 0.5 A and
volume >= 0.1 A^3, DiffCSP's ``structure_validity``; here an atom's distance to its own periodic
images counts too, and a cell with an LLL-reduced lattice vector longer than 50 A is rejected as
unrealistically large, after CDVAE's evaluation, and so is a nearly flat cell, whose reduced
basis has V / (a·b·c) < 0.2 (any real cell's reduced basis is far from flat: 0.87 for a
hexagonal one): StructureMatcher's Niggli reduction and lattice search, and spglib, can exhaust
memory or never return on such degenerate cells, which under-trained samplers produce). The
official
pipeline also requires
SMACT charge neutrality, which our synthetic formula types (e.g. NaCl2) do not satisfy by
design, so that check is not applied. RMSE is the matcher's normalised RMS displacement
(divided by (V / n)^(1/3)), averaged over the matched pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["match_details", "match_rate", "space_group_of", "structure_valid"]

_MAX_LENGTH = 50.0  # A; longer reduced lattice vectors: "unrealistically large lattice"
_MIN_ORTHOGONALITY = 0.2  # V / (a b c) of the LLL-reduced basis; below: a nearly flat cell


def _structure(x: Any, name: str):
    from pymatgen.core import Structure

    if isinstance(x, Structure):
        return x
    if hasattr(x, "to_structure"):
        return x.to_structure()
    raise TypeError(f"{name} must hold pymatgen Structures or Crystals, got {type(x).__name__}")


def structure_valid(structure: Any, cutoff: float = 0.5) -> bool:
    """Every pairwise (periodic) distance >= ``cutoff`` A, volume >= 0.1 A^3, and a reduced
    cell neither unrealistically large nor nearly flat (see the module docstring)."""
    s = _structure(structure, "structure")
    if not np.isfinite(s.lattice.matrix).all() or s.volume < 0.1:
        return False
    reduced = s.lattice.get_lll_reduced_lattice()
    lengths = reduced.abc
    if min(lengths) < cutoff or max(lengths) > _MAX_LENGTH:
        return False
    if reduced.volume / float(np.prod(lengths)) < _MIN_ORTHOGONALITY:
        return False
    if len(s) < 2:
        return True
    d = s.distance_matrix + np.eye(len(s)) * (cutoff + 10.0)
    return bool(d.min() >= cutoff)


def match_details(pred: Sequence[Any], target: Sequence[Any], stol: float = 0.5,
                  angle_tol: float = 10.0, ltol: float = 0.3) -> list[float | None]:
    """Per pair: the matcher's normalised RMS distance, or None (invalid or no match)."""
    from pymatgen.analysis.structure_matcher import StructureMatcher

    if len(pred) != len(target):
        raise ValueError(f"pred and target must pair up, got {len(pred)} and {len(target)}")
    if not pred:
        raise ValueError("pred is empty")
    matcher = StructureMatcher(stol=stol, angle_tol=angle_tol, ltol=ltol)
    out: list[float | None] = []
    for p, t in zip(pred, target):
        ps, ts = _structure(p, "pred"), _structure(t, "target")
        if not structure_valid(ps):
            out.append(None)
            continue
        try:
            # the same crystal in its LLL-reduced cell: pymatgen's Niggli reduction, which the
            # matcher runs first, does not return on some raw sampled cells (lengths ~1000 A
            # around a ~5 A reduced basis)
            rms = matcher.get_rms_dist(ps.get_reduced_structure("LLL"), ts)
        except Exception:  # noqa: BLE001 - the official evaluation counts matcher errors as misses
            rms = None
        out.append(None if rms is None else float(rms[0]))
    return out


def match_rate(pred: Sequence[Any], target: Sequence[Any], stol: float = 0.5,
               angle_tol: float = 10.0, ltol: float = 0.3) -> tuple[float, float]:
    """(fraction of pairs matched, mean RMSE over matched pairs; nan if none matched)."""
    rms = match_details(pred, target, stol, angle_tol, ltol)
    hits = [r for r in rms if r is not None]
    return len(hits) / len(rms), (float(np.mean(hits)) if hits else float("nan"))


def space_group_of(structure: Any, symprec: float = 0.1) -> int | None:
    """spglib's space-group number (via pymatgen's SpacegroupAnalyzer); None if it fails or
    the structure is not valid (:func:`structure_valid`)."""
    from pymatgen.symmetry.analyzer import SpacegroupAnalyzer

    s = _structure(structure, "structure")
    if not isinstance(symprec, (int, float)) or symprec <= 0:
        raise ValueError(f"symprec must be a positive number, got {symprec!r}")
    if not structure_valid(s):
        return None
    try:
        return int(SpacegroupAnalyzer(s.get_reduced_structure("LLL"), symprec=symprec)
                   .get_space_group_number())
    except Exception:  # noqa: BLE001 - spglib fails on some degenerate cells; callers count it
        return None
