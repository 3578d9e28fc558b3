"""Complexes from local PDB files: the paper's inputs are PDB complexes of 3–30 chains.

``read_ca_chains`` is a minimal fixed-column PDB reader (no third-party parser): the Cα atoms
(``ATOM`` records named ``CA``, alternate location blank or ``A``, one per residue) of each
chain of the first model, in file order. ``load_pdb_complex`` turns them into the same
``SyntheticComplex`` the synthetic benchmark produces, so ``train_gapn``, ``AssemblyEnv`` and
the metrics take real complexes unchanged: each chain is centred at its centroid (its native
pose is the translation back), native contacts are chain pairs with >= 5 Cα pairs within 8 Å,
and the dimers come from the benchmark's dimer "predictor" (``mode="gt"``: the exact native
pose for contacting pairs; ``mode="afm"``: AFM-like noise and failures; see
:mod:`.complexes`). Real AlphaFold-Multimer dimers are out of reach here (no weights), which
is why the dimers are derived from the native; nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .complexes import ComplexConfig, SyntheticComplex, complex_from_native

__all__ = ["load_pdb_complex", "read_ca_chains"]


def read_ca_chains(text: str) -> dict[str, np.ndarray]:
    """Cα coordinates per chain ID, each (n_residues, 3), from PDB-format ``text`` (first model
    only; ``HETATM`` records, hydrogens and other atoms are ignored)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be the str contents of a PDB file; got {type(text).__name__}")
    chains: dict[str, list[list[float]]] = {}
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        record = line[:6].strip()
        if record == "ENDMDL":
            break  # first model only
        if record != "ATOM" or line[12:16].strip() != "CA" or line[16:17] not in (" ", "A", ""):
            continue
        chain_id, residue = line[21:22], line[22:27]  # resSeq + insertion code
        if (chain_id, residue) in seen:
            continue
        try:
            xyz = [float(line[30:38]), float(line[38:46]), float(line[46:54])]
        except ValueError:
            raise ValueError(f"PDB line {number}: coordinates in columns 31-54 are not numbers: "
                             f"{line!r}") from None
        seen.add((chain_id, residue))
        chains.setdefault(chain_id, []).append(xyz)
    return {k: np.asarray(v, dtype=float) for k, v in chains.items()}


def load_pdb_complex(source: str | os.PathLike[str], *, mode: str = "gt", seed: int = 0,
                     chain_ids: list[str] | None = None,
                     config: ComplexConfig | None = None) -> SyntheticComplex:
    """A complex from a local PDB file of >= 2 chains (each with >= 3 Cα atoms).

    source: path to the file; chain_ids: the chains to keep, in this order (default: all, in
    file order); seed: the dimer predictor's ``numpy`` seed (wrong poses of non-contacting
    pairs, and AFM-like noise); config: the predictor's settings (default ``ComplexConfig()``)."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path to a PDB file (str or os.PathLike); got "
                        f"{type(source).__name__}")
    path = Path(source)
    if not path.is_file():
        raise ValueError(f"source must be an existing PDB file; {str(path)!r} is not a file")
    found = read_ca_chains(path.read_text())
    if chain_ids is None:
        chain_ids = list(found)
    missing = [c for c in chain_ids if c not in found]
    if missing:
        raise ValueError(f"chain_ids {missing} are not in {path.name}; it has chains "
                         f"{list(found)}")
    if len(chain_ids) < 2:
        raise ValueError(f"a complex needs >= 2 chains with Cα atoms; {path.name} gives "
                         f"{list(chain_ids)}")
    short = [c for c in chain_ids if len(found[c]) < 3]
    if short:
        raise ValueError(f"every chain needs >= 3 Cα atoms; chains {short} of {path.name} have "
                         "fewer")
    native = [found[c] for c in chain_ids]
    centres = [x.mean(axis=0) for x in native]
    chains = [x - c for x, c in zip(native, centres)]
    poses = [(np.eye(3), c) for c in centres]  # x_native = I · x_local + centroid
    return complex_from_native(chains, poses, np.random.default_rng(seed), mode=mode,
                               config=ComplexConfig() if config is None else config)
