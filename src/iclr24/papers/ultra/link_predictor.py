"""User-facing ULTRA: pre-train or load, then score, evaluate and fine-tune on any KG by label.

    from iclr24.papers.ultra import KnowledgeGraph, UltraLinkPredictor, TrainConfig
    kg = KnowledgeGraph.from_tsv("train.tsv", test="test.tsv")          # or from_dataframe(df)
    ultra = UltraLinkPredictor.pretrain([g1, g2], TrainConfig(steps=500))  # or .load("ultra.pt")
    ultra = UltraLinkPredictor.from_official("ultra_3g.pth")  # the released weights, local file
    ultra.predict_tails(kg, "alice", "knows", top_k=5)   # DataFrame: entity, score (zero-shot;
                                                          # known answers filtered out)
    ultra.evaluate(kg)                                    # filtered MRR / Hits@k, both directions
    ultra.fine_tune(kg, TrainConfig(steps=200)).save("ultra_ft.pt")

Prepared graphs (inverse edges + relation graph) are cached per :class:`KnowledgeGraph` object.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

import torch
from torch_geometric.data import Data

from iclr24.kits.knowledge_graphs import KnowledgeGraph, KnownAnswers

from .evaluation import check_triples, evaluate
from .foundation_model import Ultra, load_checkpoint, prepare_graph, save_checkpoint
from .training import TrainConfig, fine_tune, pretrain

__all__ = ["UltraLinkPredictor"]


class UltraLinkPredictor:
    """An :class:`Ultra` model with label-level scoring on any :class:`KnowledgeGraph`."""

    def __init__(self, model: Ultra | None = None, *, dim: int = 64, num_layers: int = 6,
                 seed: int = 0) -> None:
        if model is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                model = Ultra(dim, num_layers)
        if not isinstance(model, Ultra):
            raise TypeError(f"model must be an Ultra, got {type(model).__name__}")
        self.model = model.eval()
        self.history: list[float] = []
        self._graphs: weakref.WeakKeyDictionary[KnowledgeGraph, Data] = (
            weakref.WeakKeyDictionary())

    # ------------------------------------------------------------------ build / persist
    @classmethod
    def pretrain(cls, graphs: Sequence[KnowledgeGraph], config: TrainConfig | None = None, *,
                 dim: int = 64, num_layers: int = 6, seed: int = 0,
                 progress: Callable[..., None] | None = None) -> UltraLinkPredictor:
        """Pre-train a fresh model on a mixture of graphs (default config: ``TrainConfig()``)."""
        model, losses = pretrain(graphs, config or TrainConfig(), dim=dim,
                                 num_layers=num_layers, seed=seed, progress=progress)
        out = cls(model)
        out.history = losses
        return out

    @classmethod
    def load(cls, path: str | PathLike) -> UltraLinkPredictor:
        """Load a checkpoint written by :meth:`save`."""
        return cls(load_checkpoint(path))

    @classmethod
    def from_official(cls, path: str | PathLike) -> UltraLinkPredictor:
        """The official released weights (e.g. ``ckpts/ultra_3g.pth`` of DeepGraphLearning/ULTRA,
        a local file; see :meth:`Ultra.from_official`)."""
        return cls(Ultra.from_official(path))

    def save(self, path: str | PathLike) -> Path:
        """Write the model to a local checkpoint file."""
        return save_checkpoint(self.model, path)

    def fine_tune(self, graph: KnowledgeGraph, config: TrainConfig | None = None, *,
                  seed: int = 0, progress: Callable[..., None] | None = None
                  ) -> UltraLinkPredictor:
        """A new predictor fine-tuned on ``graph``'s training facts (this one is unchanged);
        default config: ``TrainConfig(steps=200)``."""
        model, losses = fine_tune(self.model, graph, config or TrainConfig(steps=200), seed=seed,
                                  progress=progress)
        out = type(self)(model)
        out.history = losses
        return out

    # ------------------------------------------------------------------ inference
    def _data(self, graph: KnowledgeGraph) -> Data:
        if not isinstance(graph, KnowledgeGraph):
            raise TypeError(f"graph must be a KnowledgeGraph, got {type(graph).__name__}")
        if graph not in self._graphs:
            self._graphs[graph] = prepare_graph(graph)
        return self._graphs[graph]

    def score_ids(self, graph: KnowledgeGraph, anchors: torch.Tensor,
                  relations: torch.Tensor) -> torch.Tensor:
        """Logits (B, |V|) for id queries (anchor, relation, ?); relations >= |R| are inverse."""
        data = self._data(graph)
        self.model.eval()
        with torch.no_grad():
            return self.model.score_all_tails(data, torch.as_tensor(anchors),
                                              torch.as_tensor(relations))

    def predict_tails(self, graph: KnowledgeGraph, head: str, relation: str, *,
                      top_k: int | None = None, inverse: bool = False, filtered: bool = True,
                      known_triples: torch.Tensor | None = None) -> Any:
        """Ranked answers of (head, relation, ?) as a DataFrame (entity, score), best first.

        ``inverse=True`` answers (?, relation, head) instead. Unknown labels raise
        ``ValueError`` naming them.

        filtered: drop the answers already known to be true (the standard filtered setting),
        i.e. every ``t`` with (head, relation, t) in ``known_triples`` (for ``inverse=True``
        every ``h`` with (h, relation, head)). known_triples: (N, 3) integer id triples of
        ``graph``; default ``graph.all_triples()`` (train + valid + test). As in the official
        filtered ranking, the query entity itself stays a candidate unless a known fact makes it
        an answer (then it is filtered like any other known answer).
        """
        import pandas as pd

        h = graph.entity_id(head)
        r = graph.relation_id(relation) + (graph.num_relations if inverse else 0)
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int)
                                  or top_k < 1):
            raise ValueError(f"top_k must be a positive int or None; got {top_k!r}")
        if not isinstance(filtered, bool):
            raise TypeError(f"filtered must be a bool, got {filtered!r}")
        if known_triples is not None and not filtered:
            raise ValueError("known_triples is only used with filtered=True")
        scores = self.score_ids(graph, torch.tensor([h]), torch.tensor([r]))[0]
        keep = torch.ones(graph.num_entities, dtype=torch.bool)
        if filtered:
            known = check_triples(graph.all_triples() if known_triples is None
                                  else known_triples, "known_triples", graph.num_entities,
                                  graph.num_relations)
            index = KnownAnswers(known, graph.num_entities, graph.num_relations)
            keep = ~index.mask(torch.tensor([h]), torch.tensor([r]))[0]  # filtered setting
        candidates = keep.nonzero().squeeze(1)
        order = candidates[torch.argsort(scores[candidates], descending=True, stable=True)]
        if top_k is not None:
            order = order[:top_k]
        return pd.DataFrame({"entity": [graph.entities[i] for i in order.tolist()],
                             "score": scores[order].tolist()})

    def predict_heads(self, graph: KnowledgeGraph, relation: str, tail: str, *,
                      top_k: int | None = None, filtered: bool = True,
                      known_triples: torch.Tensor | None = None) -> Any:
        """Ranked answers of (?, relation, tail), best first (filtering as in
        :meth:`predict_tails`)."""
        return self.predict_tails(graph, tail, relation, top_k=top_k, inverse=True,
                                  filtered=filtered, known_triples=known_triples)

    def evaluate(self, graph: KnowledgeGraph, split: str = "test", *,
                 triples: torch.Tensor | None = None, batch_size: int = 32,
                 strict: bool = False) -> dict[str, float]:
        """Filtered MRR / Hits@1,3,10 (both directions) on ``graph``'s ``split``, plus
        ``n_unseen`` (facts with an entity/relation absent from the training facts: a warning,
        or ``ValueError`` with ``strict=True``)."""
        return evaluate(self.model, graph, split, triples=triples, batch_size=batch_size,
                        data=self._data(graph), strict=strict)
