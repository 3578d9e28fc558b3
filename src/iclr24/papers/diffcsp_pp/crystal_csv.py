"""Reading the paper's datasets: MP-20, MPTS-52, Perov-5 and Carbon-24 as distributed with
CDVAE / DiffCSP / DiffCSP++ (``data/<name>/{train,val,test}.csv``: one crystal per row, its CIF
text in the ``cif`` column, its Materials Project id in ``material_id``).

Each CIF is parsed by pymatgen and standardised with :meth:`Crystal.from_structure` (spglib's
refined cell, pyxtal's Wyckoff positions at tolerance 0.01, retried at 1e-4, as the official
preprocessing does), so every crystal comes with its space group and Wyckoff template, ready for
:func:`~.diffusion.fit` and for template-conditioned sampling. A row that cannot be parsed or
standardised is not dropped silently: it is listed in ``failures`` with the reason, and a
warning says how many rows failed. The files themselves are not shipped (no download here);
the claims use the procedural prototypes of :mod:`.prototypes` instead.
"""

from __future__ import annotations

import csv
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .crystal_batch import Crystal

__all__ = ["CrystalTable", "load_crystal_csv"]


@dataclass
class CrystalTable:
    """Crystals read from a CSV: ``ids[i]`` names ``crystals[i]``; ``failures`` lists
    ``(id, reason)`` for the rows that could not be read."""

    ids: list[str] = field(default_factory=list)
    crystals: list[Crystal] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.crystals)


def load_crystal_csv(path: str | Path, *, symprec: float = 0.01, cif_column: str = "cif",
                     id_column: str = "material_id", limit: int | None = None
                     ) -> CrystalTable:
    """Read an MP-20-style CSV (e.g. ``mp_20/train.csv``) into standardised crystals.

    path:       the CSV file; ``cif_column`` holds each crystal's CIF text, ``id_column`` its
                name (the row number is used when the file has no such column).
    symprec:    spglib's tolerance for the standardisation (the official code's 0.01).
    limit:      read at most this many rows (None: all).
    Returns a :class:`CrystalTable`; rows that fail are in its ``failures`` (with a warning).
    """
    from pymatgen.core import Structure

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be an existing CSV file, got {str(path)!r}")
    if isinstance(symprec, bool) or not isinstance(symprec, (int, float)) or not symprec > 0:
        raise ValueError(f"symprec must be a positive number, got {symprec!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    table = CrystalTable()
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        if cif_column not in columns:
            raise ValueError(f"cif_column {cif_column!r} is not a column of {path.name}; its "
                             f"columns are {columns}")
        for row_number, row in enumerate(reader):
            if limit is not None and row_number >= limit:
                break
            name = str(row.get(id_column) or row_number)
            try:
                structure = Structure.from_str(row[cif_column], fmt="cif")
                crystal = Crystal.from_structure(structure, symprec)
            except Exception as exc:  # noqa: BLE001 - pymatgen/spglib/pyxtal raise many types
                table.failures.append((name, f"{type(exc).__name__}: {exc}"))
                continue
            table.ids.append(name)
            table.crystals.append(crystal)
    if table.failures:
        warnings.warn(f"{len(table.failures)} of {len(table.failures) + len(table)} rows of "
                      f"{path.name} could not be read (see CrystalTable.failures), e.g. "
                      f"{table.failures[0][0]}: {table.failures[0][1]}", stacklevel=2)
    return table
