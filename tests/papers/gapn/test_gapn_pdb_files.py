"""The PDB loader (a tiny PDB text written here) and the errors for bad inputs."""

import numpy as np
import pytest

from iclr24.papers.gapn import (
    AssemblyEnv,
    GAPNConfig,
    SyntheticComplex,
    assemble_tree,
    generate_complexes,
    load_pdb_complex,
    read_ca_chains,
    tm_score,
    train_gapn,
)


def _atom(serial, name, res, chain, resseq, xyz, alt=" ", record="ATOM"):
    x, y, z = xyz
    return (f"{record:<6}{serial:>5} {name:<4}{alt}{res:>3} {chain}{resseq:>4}    "
            f"{x:8.3f}{y:8.3f}{z:8.3f}  1.00  0.00           {name[0]}")


def _pdb_text(n_chains=3, per_chain=6, extra_model=False):
    """Chains of CA atoms on short helices 9 Å apart along x (neighbours in contact), with N
    atoms, an alternate location, a HETATM and a second model that must all be ignored."""
    lines, serial = ["HEADER    TEST COMPLEX"], 1
    if extra_model:
        lines.append("MODEL        1")
    for c in range(n_chains):
        chain = "ABCDEFG"[c]
        for r in range(per_chain):
            t = 1.7 * r
            ca = (9.0 * c + 2.3 * np.cos(t), 2.3 * np.sin(t), 1.5 * r)
            lines.append(_atom(serial, "N", "ALA", chain, r + 1, (ca[0] + 1, ca[1], ca[2])))
            lines.append(_atom(serial + 1, "CA", "ALA", chain, r + 1, ca))
            if r == 0:  # an alternate location B of the same CA: skipped
                lines.append(_atom(serial + 2, "CA", "ALA", chain, r + 1, (99, 99, 99), alt="B"))
            serial += 3
        lines.append(f"TER   {serial:>5}      ALA {chain}{per_chain:>4}")
    lines.append(_atom(serial, "CA", "CA", "A", 900, (50, 50, 50), record="HETATM"))
    if extra_model:
        lines += ["ENDMDL", "MODEL        2", _atom(1, "CA", "ALA", "Z", 1, (0, 0, 0)),
                  "ENDMDL"]
    lines.append("END")
    return "\n".join(lines) + "\n"


def test_read_ca_chains_keeps_first_model_ca_only():
    chains = read_ca_chains(_pdb_text(3, 6, extra_model=True))
    assert list(chains) == ["A", "B", "C"]
    assert all(x.shape == (6, 3) for x in chains.values())
    assert np.allclose(chains["B"][0], [9.0 + 2.3, 0.0, 0.0], atol=1e-3)
    assert not np.any(np.isclose(chains["A"], 99.0))  # alt loc B and HETATM skipped
    with pytest.raises(TypeError, match="text"):
        read_ca_chains(b"ATOM")
    bad = _atom(1, "CA", "ALA", "A", 1, (0, 0, 0))[:30] + "    x.xxx" + " " * 16
    with pytest.raises(ValueError, match="line 1"):
        read_ca_chains(bad)


def test_load_pdb_complex_gives_the_benchmark_type(tmp_path):
    path = tmp_path / "tiny.pdb"
    path.write_text(_pdb_text(3, 6))
    c = load_pdb_complex(path, mode="gt", seed=0)
    assert isinstance(c, SyntheticComplex) and c.n_chains == 3
    native = c.native_coordinates()
    expected = read_ca_chains(path.read_text())
    for k, chain in enumerate("ABC"):
        assert np.allclose(native[k], expected[chain])
        assert np.allclose(c.problem.chains[k].mean(0), 0)
    assert {(0, 1), (1, 2)} <= set(c.native_contacts)
    # GT dimers along the native contacts rebuild the native exactly (TM = 1)
    res = assemble_tree(AssemblyEnv(c.problem), [(0, 1), (1, 2)])
    assert tm_score(res.coordinates, native) == pytest.approx(1.0)
    # same file, same seed: the same complex; the chain subset and order are honoured
    again = load_pdb_complex(str(path), mode="gt", seed=0)
    assert all(np.allclose(a.translation, b.translation) for a, b in
               zip(c.problem.dimers.values(), again.problem.dimers.values()))
    sub = load_pdb_complex(path, chain_ids=["C", "B"], mode="afm", seed=1)
    assert sub.n_chains == 2 and np.allclose(sub.native_coordinates()[0], expected["C"])
    # a loaded complex trains GAPN like a synthetic one
    model = train_gapn([c, *generate_complexes(2, (3, 4), 5)],
                       GAPNConfig(iterations=1, episodes_per_batch=4, hidden=8, layers=1),
                       seed=0)
    assert len(model.history) == 1


def test_load_pdb_complex_bad_inputs(tmp_path):
    path = tmp_path / "tiny.pdb"
    path.write_text(_pdb_text(2, 6))
    with pytest.raises(TypeError, match="source"):
        load_pdb_complex(123)
    with pytest.raises(ValueError, match="source"):
        load_pdb_complex(tmp_path / "absent.pdb")
    with pytest.raises(ValueError, match="chain_ids"):
        load_pdb_complex(path, chain_ids=["A", "Q"])
    with pytest.raises(ValueError, match=">= 2 chains"):
        load_pdb_complex(path, chain_ids=["A"])
    with pytest.raises(ValueError, match="mode"):
        load_pdb_complex(path, mode="esm")
    short = tmp_path / "short.pdb"
    short.write_text(_pdb_text(2, 2))
    with pytest.raises(ValueError, match=">= 3 Cα"):
        load_pdb_complex(short)
    empty = tmp_path / "empty.pdb"
    empty.write_text("HEADER\nEND\n")
    with pytest.raises(ValueError, match=">= 2 chains"):
        load_pdb_complex(empty)


def test_train_gapn_names_what_it_accepts():
    c = generate_complexes(1, (3, 3), 0)[0]
    cfg = GAPNConfig(iterations=1, episodes_per_batch=2, hidden=8, layers=1)
    with pytest.raises(TypeError, match="SyntheticComplex.*load_pdb_complex"):
        train_gapn([c.problem], cfg, seed=0)
    with pytest.raises(TypeError, match="AssemblyProblem has no native"):
        train_gapn([c.problem], cfg, seed=0)
    with pytest.raises(TypeError, match="sequence of SyntheticComplex"):
        train_gapn(c, cfg, seed=0)
    with pytest.raises(TypeError, match="sequence of SyntheticComplex"):
        train_gapn("complexes.pdb", cfg, seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        train_gapn([], cfg, seed=0)
    with pytest.raises(TypeError, match="config"):
        train_gapn([c], {"iterations": 1}, seed=0)
    with pytest.raises(TypeError, match="reward"):
        train_gapn([c], cfg, seed=0, reward=0.5)
