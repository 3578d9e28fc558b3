"""Knowledge-graph container: id triples plus the label vocabularies they index.

A knowledge graph (KG) is a set of facts ``(head, relation, tail)`` over a vocabulary of
entities ``V`` and relations ``R``. :class:`KnowledgeGraph` stores each split (train / valid /
test) as a ``LongTensor`` of shape ``(num_triples, 3)`` whose columns are ``(head, relation,
tail)`` ids, plus the two label tuples that map an id back to its name. Link-prediction models
run message passing on the *training* split with inverse edges added (``r + |R|`` is the
inverse of ``r``), see :meth:`KnowledgeGraph.message_passing_graph`.

Construction goes through labels (``from_labeled_triples``, ``from_dataframe``, ``from_tsv``)
or through ids (``from_id_triples``, used by generators). Looking up a label that the graph does
not know raises ``ValueError`` naming the label, so a typo at query time is an error, not a
silent wrong answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import Any

import torch

__all__ = ["SPLITS", "KnowledgeGraph", "add_inverse_edges"]

SPLITS = ("train", "valid", "test")


def _as_triple_tensor(triples: Any, name: str) -> torch.Tensor:
    t = torch.as_tensor(triples if triples is not None else [], dtype=torch.long)
    if t.numel() == 0:
        return torch.empty(0, 3, dtype=torch.long)
    if t.dim() != 2 or t.shape[1] != 3:
        raise ValueError(f"{name} must have shape (num_triples, 3) of (head, relation, tail) ids; "
                         f"got shape {tuple(t.shape)}")
    return t


def add_inverse_edges(triples: torch.Tensor, num_relations: int
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Edges of the message-passing graph with inverses: ``(h, r, t) -> h->t (r), t->h (r+|R|)``.

    triples: (N, 3) ids. Returns ``edge_index`` (2, 2N) and ``edge_type`` (2N,), originals first.
    """
    h, r, t = triples.t()
    edge_index = torch.stack([torch.cat([h, t]), torch.cat([t, h])])
    edge_type = torch.cat([r, r + num_relations])
    return edge_index, edge_type


@dataclass(frozen=True, eq=False)
class KnowledgeGraph:
    """A knowledge graph with train/valid/test splits of id triples.

    entities: entity labels, ``entities[i]`` is the name of entity id ``i``.
    relations: relation labels (direct relations only; inverses are implicit).
    train, valid, test: (N, 3) LongTensors of (head, relation, tail) ids.
    name: a free-form name used in tables and error messages.
    """

    entities: tuple[str, ...]
    relations: tuple[str, ...]
    train: torch.Tensor
    valid: torch.Tensor = field(default_factory=lambda: torch.empty(0, 3, dtype=torch.long))
    test: torch.Tensor = field(default_factory=lambda: torch.empty(0, 3, dtype=torch.long))
    name: str = "kg"

    def __post_init__(self) -> None:
        ents = tuple(str(e) for e in self.entities)
        rels = tuple(str(r) for r in self.relations)
        if not ents:
            raise ValueError(f"knowledge graph {self.name!r}: entities must not be empty")
        if not rels:
            raise ValueError(f"knowledge graph {self.name!r}: relations must not be empty")
        if len(set(ents)) != len(ents):
            raise ValueError(f"knowledge graph {self.name!r}: entity labels must be unique")
        if len(set(rels)) != len(rels):
            raise ValueError(f"knowledge graph {self.name!r}: relation labels must be unique")
        object.__setattr__(self, "entities", ents)
        object.__setattr__(self, "relations", rels)
        for split in SPLITS:
            t = _as_triple_tensor(getattr(self, split), split)
            if t.numel():
                if int(t[:, [0, 2]].min()) < 0 or int(t[:, [0, 2]].max()) >= len(ents):
                    raise ValueError(f"{split}: entity ids must lie in [0, {len(ents)}); got "
                                     f"range [{int(t[:, [0, 2]].min())}, "
                                     f"{int(t[:, [0, 2]].max())}]")
                if int(t[:, 1].min()) < 0 or int(t[:, 1].max()) >= len(rels):
                    raise ValueError(f"{split}: relation ids must lie in [0, {len(rels)}); got "
                                     f"range [{int(t[:, 1].min())}, {int(t[:, 1].max())}]")
            object.__setattr__(self, split, t)
        if self.train.shape[0] == 0:
            raise ValueError(f"knowledge graph {self.name!r}: the train split is empty; a graph "
                             "needs at least one training triple to pass messages over")
        object.__setattr__(self, "_entity_index", {e: i for i, e in enumerate(ents)})
        object.__setattr__(self, "_relation_index", {r: i for i, r in enumerate(rels)})

    # ----------------------------------------------------------------------------- construction
    @classmethod
    def from_id_triples(cls, train: Any, valid: Any = None, test: Any = None, *,
                        num_entities: int | None = None, num_relations: int | None = None,
                        entity_labels: Sequence[str] | None = None,
                        relation_labels: Sequence[str] | None = None,
                        name: str = "kg") -> KnowledgeGraph:
        """Build from id triples; labels default to ``"e{i}"`` / ``"r{i}"``."""
        splits = [_as_triple_tensor(x, n) for x, n in zip((train, valid, test), SPLITS)]
        allt = torch.cat(splits)
        if num_entities is None:
            num_entities = (len(entity_labels) if entity_labels is not None
                            else int(allt[:, [0, 2]].max()) + 1 if allt.numel() else 0)
        if num_relations is None:
            num_relations = (len(relation_labels) if relation_labels is not None
                             else int(allt[:, 1].max()) + 1 if allt.numel() else 0)
        ents = entity_labels if entity_labels is not None else [f"e{i}" for i in range(num_entities)]
        rels = (relation_labels if relation_labels is not None
                else [f"r{i}" for i in range(num_relations)])
        if len(ents) != num_entities:
            raise ValueError(f"entity_labels has {len(ents)} labels, num_entities={num_entities}")
        if len(rels) != num_relations:
            raise ValueError(f"relation_labels has {len(rels)} labels, "
                             f"num_relations={num_relations}")
        return cls(tuple(ents), tuple(rels), *splits, name=name)

    @classmethod
    def from_labeled_triples(cls, train: Iterable[Sequence[str]],
                             valid: Iterable[Sequence[str]] | None = None,
                             test: Iterable[Sequence[str]] | None = None, *,
                             name: str = "kg") -> KnowledgeGraph:
        """Build from label triples ``[(head, relation, tail), ...]`` per split.

        The vocabularies are the sorted union of labels over all splits (sorted so that the same
        facts always give the same ids).
        """
        lists = {}
        for split, rows in zip(SPLITS, (train, valid, test)):
            rows = [] if rows is None else [tuple(row) for row in rows]
            for i, row in enumerate(rows):
                if len(row) != 3:
                    raise ValueError(f"{split} triple {i} must be (head, relation, tail); "
                                     f"got {row!r}")
                if any(not isinstance(x, str) or not x for x in row):
                    raise ValueError(f"{split} triple {i} must hold three non-empty strings; "
                                     f"got {row!r}")
            lists[split] = rows
        if not lists["train"]:
            raise ValueError(f"knowledge graph {name!r}: the train split is empty; a graph needs "
                             "at least one training triple")
        ents = sorted({x for rows in lists.values() for (h, _, t) in rows for x in (h, t)})
        rels = sorted({r for rows in lists.values() for (_, r, _) in rows})
        e_idx = {e: i for i, e in enumerate(ents)}
        r_idx = {r: i for i, r in enumerate(rels)}
        tensors = [torch.tensor([[e_idx[h], r_idx[r], e_idx[t]] for h, r, t in lists[s]],
                                dtype=torch.long).reshape(-1, 3) for s in SPLITS]
        return cls(tuple(ents), tuple(rels), *tensors, name=name)

    @classmethod
    def from_dataframe(cls, train: Any, valid: Any = None, test: Any = None, *,
                       columns: Sequence[str] = ("head", "relation", "tail"),
                       name: str = "kg") -> KnowledgeGraph:
        """Build from pandas DataFrames with head/relation/tail label columns (one per split)."""
        from .tsv_loading import triples_from_dataframe

        return cls.from_labeled_triples(
            triples_from_dataframe(train, columns=columns, what="train"),
            None if valid is None else triples_from_dataframe(valid, columns=columns,
                                                              what="valid"),
            None if test is None else triples_from_dataframe(test, columns=columns, what="test"),
            name=name)

    @classmethod
    def from_tsv(cls, train: str | PathLike, valid: str | PathLike | None = None,
                 test: str | PathLike | None = None, *, name: str | None = None
                 ) -> KnowledgeGraph:
        """Build from TSV files of ``head<TAB>relation<TAB>tail`` label lines (one per split)."""
        from .tsv_loading import read_triples_tsv

        return cls.from_labeled_triples(
            read_triples_tsv(train),
            None if valid is None else read_triples_tsv(valid),
            None if test is None else read_triples_tsv(test),
            name=name if name is not None else str(train))

    # ----------------------------------------------------------------------------- properties
    @property
    def num_entities(self) -> int:
        return len(self.entities)

    @property
    def num_relations(self) -> int:
        """Number of direct relations ``|R|`` (the message graph has ``2|R|`` edge types)."""
        return len(self.relations)

    def split(self, name: str) -> torch.Tensor:
        """The (N, 3) id triples of split ``name`` ('train', 'valid' or 'test')."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}; got {name!r}")
        return getattr(self, name)

    def all_triples(self) -> torch.Tensor:
        """Every known fact (train + valid + test), (N, 3): the filter of filtered ranking."""
        return torch.cat([self.train, self.valid, self.test])

    def message_passing_graph(self, split: str = "train") -> tuple[torch.Tensor, torch.Tensor]:
        """``(edge_index (2, 2N), edge_type (2N,))`` of ``split`` with inverse edges added."""
        return add_inverse_edges(self.split(split), self.num_relations)

    def __repr__(self) -> str:
        return (f"KnowledgeGraph(name={self.name!r}, entities={self.num_entities}, "
                f"relations={self.num_relations}, train={len(self.train)}, "
                f"valid={len(self.valid)}, test={len(self.test)})")

    # ----------------------------------------------------------------------------- lookups
    def entity_id(self, label: str) -> int:
        """Id of entity ``label``; ``ValueError`` naming the label when it is unknown."""
        try:
            return self._entity_index[label]  # type: ignore[attr-defined]
        except (KeyError, TypeError):
            raise ValueError(f"unknown entity {label!r}: not among the {self.num_entities} "
                             f"entities of knowledge graph {self.name!r}") from None

    def relation_id(self, label: str) -> int:
        """Id of relation ``label``; ``ValueError`` naming the label when it is unknown."""
        try:
            return self._relation_index[label]  # type: ignore[attr-defined]
        except (KeyError, TypeError):
            raise ValueError(f"unknown relation {label!r}: not among the {self.num_relations} "
                             f"relations of knowledge graph {self.name!r}") from None

    def encode(self, triples: Iterable[Sequence[str]]) -> torch.Tensor:
        """Label triples -> (N, 3) id tensor; unknown labels raise ``ValueError`` naming them."""
        rows = []
        for i, row in enumerate(triples):
            row = tuple(row)
            if len(row) != 3:
                raise ValueError(f"triple {i} must be (head, relation, tail); got {row!r}")
            h, r, t = row
            rows.append([self.entity_id(h), self.relation_id(r), self.entity_id(t)])
        return torch.tensor(rows, dtype=torch.long).reshape(-1, 3)

    def decode(self, triples: torch.Tensor) -> list[tuple[str, str, str]]:
        """(N, 3) ids -> label triples (inverse of :meth:`encode`)."""
        return [(self.entities[h], self.relations[r], self.entities[t])
                for h, r, t in _as_triple_tensor(triples, "triples").tolist()]

    def relabel(self, entity_perm: torch.Tensor | None = None,
                relation_perm: torch.Tensor | None = None) -> KnowledgeGraph:
        """The same graph under new ids: old entity ``i`` becomes ``entity_perm[i]`` (likewise
        relations). Labels travel with their facts, so ``decode`` of each split is unchanged."""
        ep = (torch.arange(self.num_entities) if entity_perm is None
              else torch.as_tensor(entity_perm, dtype=torch.long))
        rp = (torch.arange(self.num_relations) if relation_perm is None
              else torch.as_tensor(relation_perm, dtype=torch.long))
        for perm, n, what in ((ep, self.num_entities, "entity_perm"),
                              (rp, self.num_relations, "relation_perm")):
            if perm.shape != (n,) or not torch.equal(perm.sort().values, torch.arange(n)):
                raise ValueError(f"{what} must be a permutation of range({n})")

        def move(t: torch.Tensor) -> torch.Tensor:
            return torch.stack([ep[t[:, 0]], rp[t[:, 1]], ep[t[:, 2]]], dim=1)

        ents = [""] * self.num_entities
        for i, e in enumerate(self.entities):
            ents[int(ep[i])] = e
        rels = [""] * self.num_relations
        for i, r in enumerate(self.relations):
            rels[int(rp[i])] = r
        return KnowledgeGraph(tuple(ents), tuple(rels), move(self.train), move(self.valid),
                              move(self.test), name=self.name)

    def to_dataframes(self) -> Mapping[str, Any]:
        """Each split as a pandas DataFrame of labels (columns head, relation, tail)."""
        import pandas as pd

        return {s: pd.DataFrame(self.decode(self.split(s)), columns=["head", "relation", "tail"])
                for s in SPLITS}
