"""Shallow knowledge-graph embedding baselines (PyG ``torch_geometric.nn.kge``) with a seeded loop.

Transductive baselines such as DistMult own one vector per entity and per relation of *one*
graph; they are the supervised reference that inductive models are compared with. The models
themselves are PyG's (``DistMult``, ``TransE``, ``ComplEx``, ``RotatE``) with their own losses
(DistMult: margin ranking loss with PyG's random corruption); this module adds

- :func:`train_kge`: a deterministic mini-batch Adam loop (PyG's corruption draws from torch's
  global RNG, so the loop forks and seeds it; the caller's global RNG state is left untouched);
- :func:`kge_score_fn`: the ``score_fn(anchors, relations) -> (B, |V|)`` that filtered ranking
  expects, answering head queries ``(t, r + |R|, ?)`` by scoring ``(?, r, t)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .filtered_ranking import ScoreFn

__all__ = ["KGETrainConfig", "kge_score_fn", "train_kge"]


@dataclass(frozen=True)
class KGETrainConfig:
    """Hyper-parameters of :func:`train_kge` (model = a ``torch_geometric.nn.kge`` class name)."""

    model: str = "DistMult"
    dim: int = 64
    epochs: int = 100
    batch_size: int = 256
    lr: float = 0.01


def train_kge(triples: torch.Tensor, num_entities: int, num_relations: int,
              config: KGETrainConfig = KGETrainConfig(), *, seed: int = 0
              ) -> torch.nn.Module:
    """Train a PyG KGE model on (N, 3) (head, relation, tail) ids; returns it in eval mode."""
    from torch_geometric.nn import kge

    triples = torch.as_tensor(triples, dtype=torch.long).reshape(-1, 3)
    if len(triples) == 0:
        raise ValueError("triples is empty: nothing to train on")
    if config.epochs < 0 or config.batch_size < 1 or config.dim < 1:
        raise ValueError(f"bad KGETrainConfig: {config}")
    cls = getattr(kge, config.model, None)
    if cls is None or not isinstance(cls, type):
        raise ValueError(f"config.model must name a torch_geometric.nn.kge model (DistMult, "
                         f"TransE, ComplEx, RotatE); got {config.model!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(num_entities, num_relations, config.dim)
        opt = torch.optim.Adam(model.parameters(), lr=config.lr)
        gen = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(config.epochs):
            order = torch.randperm(len(triples), generator=gen)
            for lo in range(0, len(order), config.batch_size):
                h, r, t = triples[order[lo:lo + config.batch_size]].t()
                opt.zero_grad()
                loss = model.loss(h, r, t)
                loss.backward()
                opt.step()
    return model.eval()


def kge_score_fn(model: torch.nn.Module, num_entities: int, num_relations: int) -> ScoreFn:
    """Wrap a PyG KGE model as ``score_fn(anchors (B,), relations (B,)) -> (B, num_entities)``."""

    @torch.no_grad()
    def score(anchors: torch.Tensor, relations: torch.Tensor) -> torch.Tensor:
        b = len(anchors)
        cand = torch.arange(num_entities).repeat(b)
        anc = anchors.repeat_interleave(num_entities)
        rel = relations.repeat_interleave(num_entities)
        inverse = rel >= num_relations
        base = torch.where(inverse, rel - num_relations, rel)
        head = torch.where(inverse, cand, anc)
        tail = torch.where(inverse, anc, cand)
        return model(head, base, tail).view(b, num_entities)

    return score
