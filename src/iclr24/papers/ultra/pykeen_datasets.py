"""The small real KGs that ship inside the pykeen wheel: Nations, Kinships, UMLS (claim U2).

pykeen keeps these three benchmarks as ``train.txt`` / ``valid.txt`` / ``test.txt`` files of
``head<TAB>relation<TAB>tail`` labels next to their loader modules (``pykeen/datasets/<name>/``),
so they load with no network. We read the files with the knowledge-graph kit's TSV reader,
locating the package with ``importlib`` *without importing pykeen* (its import costs seconds and
writes a cache under ``PYSTOW_HOME``). The tests check that the result equals what
``pykeen.datasets.Nations()`` etc. load, label for label.

Sizes (entities, relations, train/valid/test): Nations (14, 55, 1592/199/201), Kinships
(104, 25, 8544/1068/1074), UMLS (135, 46, 5216/652/661).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from iclr24.kits.knowledge_graphs import KnowledgeGraph

__all__ = ["PYKEEN_KGS", "load_pykeen_kg", "pykeen_dataset_dir"]

PYKEEN_KGS = ("nations", "kinships", "umls")


def pykeen_dataset_dir(name: str) -> Path:
    """Folder of the shipped files of pykeen dataset ``name`` (raises if pykeen is missing)."""
    key = str(name).lower()
    if key not in PYKEEN_KGS:
        raise ValueError(f"name must be one of {PYKEEN_KGS}; got {name!r}")
    spec = importlib.util.find_spec("pykeen")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pykeen is not installed; it ships the Nations/Kinships/UMLS "
                                  "files (pip install pykeen)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "datasets" / key
    if not (folder / "train.txt").is_file():
        raise FileNotFoundError(f"pykeen does not ship {key}/train.txt at {folder}")
    return folder


def load_pykeen_kg(name: str) -> KnowledgeGraph:
    """Nations, Kinships or UMLS as a :class:`KnowledgeGraph` (standard splits, labels sorted)."""
    folder = pykeen_dataset_dir(name)
    return KnowledgeGraph.from_tsv(folder / "train.txt", folder / "valid.txt",
                                   folder / "test.txt", name=str(name).lower())
