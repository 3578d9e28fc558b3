"""load_crystal_csv on a small MP-20-style CSV written here (a CIF per row, no download)."""

import csv

import numpy as np
import pytest

from iclr24.papers.diffcsp_pp import Composition, CrystalTable, load_crystal_csv, make_crystal


def _cif(comp: Composition, seed: int) -> str:
    from pymatgen.io.cif import CifWriter

    return str(CifWriter(make_crystal(comp, np.random.default_rng(seed)).to_structure()))


def _write(path, rows, columns=("material_id", "pretty_formula", "cif")):
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in columns})


def test_reads_crystals_with_templates_and_lists_failures(tmp_path):
    from pymatgen.analysis.structure_matcher import StructureMatcher

    rows = [{"material_id": "mp-22862", "pretty_formula": "NaCl",
             "cif": _cif(Composition("AB", "Na", "Cl"), 0)},
            {"material_id": "mp-1265", "pretty_formula": "MgO2",
             "cif": _cif(Composition("AB2", "Mg", "O"), 1)},
            {"material_id": "mp-broken", "pretty_formula": "X", "cif": "not a cif"}]
    path = tmp_path / "train.csv"
    _write(path, rows)
    with pytest.warns(UserWarning, match="1 of 3 rows"):
        table = load_crystal_csv(path)
    assert isinstance(table, CrystalTable) and len(table) == 2
    assert table.ids == ["mp-22862", "mp-1265"]
    assert [c.template.spacegroup for c in table.crystals] == [225, 136]
    assert [f[0] for f in table.failures] == ["mp-broken"]
    # the standardised crystal is the one in the file, and its template regenerates it
    from pymatgen.core import Structure

    for row, crystal in zip(rows, table.crystals):
        original = Structure.from_str(row["cif"], fmt="cif")
        assert StructureMatcher().fit(crystal.to_structure(), original)
        np.testing.assert_allclose(crystal.template.positions(crystal.frac), crystal.frac,
                                   atol=1e-6)
    assert len(load_crystal_csv(path, limit=1)) == 1


def test_rows_without_an_id_column_are_numbered(tmp_path):
    path = tmp_path / "perov.csv"
    _write(path, [{"cif": _cif(Composition("ABX3", "Sr", "O", "Ti"), 0)}], columns=("cif",))
    table = load_crystal_csv(path)
    assert table.ids == ["0"] and table.crystals[0].template.spacegroup == 221
    assert not table.failures


def test_bad_input(tmp_path):
    path = tmp_path / "x.csv"
    _write(path, [{"material_id": "a", "structure": "?"}], columns=("material_id", "structure"))
    with pytest.raises(ValueError, match="cif_column 'cif' is not a column"):
        load_crystal_csv(path)
    with pytest.raises(FileNotFoundError, match="path must be an existing CSV file"):
        load_crystal_csv(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="symprec"):
        load_crystal_csv(path, symprec=0, cif_column="structure")
    with pytest.raises(ValueError, match="limit"):
        load_crystal_csv(path, limit=0, cif_column="structure")
