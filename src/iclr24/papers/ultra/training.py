"""Training ULTRA: self-adversarial BCE, strict negatives, multi-graph pre-training, fine-tuning.

Paper Sec. 5 / official ``run.py`` & ``pretrain.py``: per query one positive and K negatives
(strict: known facts excluded; half the batch corrupts tails, half heads), binary cross-entropy
with self-adversarial weights on the negatives

    L = [-log σ(s⁺) - Σ_i w_i log(1 - σ(s_i⁻))] / (1 + Σ_i w_i),  w = softmax(s⁻ / τ) (detached)

(the official weighted mean, weight 1 on the positive), AdamW with lr 5e-4. Pre-training draws
each batch from one graph of the mixture (with probability proportional to its number of
training facts, walking a per-graph shuffled epoch). Fine-tuning is the same loop on one graph
starting from pre-trained weights.

Scaled down: the paper trains 800k steps with batch 64 and K = 512 on FB15k-237 + WN18RR +
CoDEx-M; our claims use tens to ~1.5k steps, batch 4-8 and K <= 32.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from iclr24.kits.knowledge_graphs import KnowledgeGraph, KnownAnswers, sample_negatives

from .foundation_model import Ultra, prepare_graph

__all__ = ["TrainConfig", "fine_tune", "pretrain", "self_adversarial_bce", "train_ultra"]


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (paper defaults where they fit a CPU: lr, τ, strict)."""

    steps: int = 1000
    batch_size: int = 16  # paper: 64
    num_negatives: int = 32  # paper: 512
    lr: float = 5e-4  # paper
    adversarial_temperature: float = 1.0  # paper τ
    strict_negatives: bool = True  # paper

    def __post_init__(self) -> None:
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0; got {self.steps}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {self.batch_size}")
        if self.num_negatives < 1:
            raise ValueError(f"num_negatives must be >= 1; got {self.num_negatives}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0; got {self.lr}")
        if not self.adversarial_temperature > 0:
            raise ValueError("adversarial_temperature must be > 0; got "
                             f"{self.adversarial_temperature}")


def self_adversarial_bce(scores: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Self-adversarial binary cross-entropy; scores (B, 1+K) logits, column 0 positive."""
    if scores.dim() != 2 or scores.shape[1] < 2:
        raise ValueError(f"scores must have shape (B, 1+K) with K >= 1; got {tuple(scores.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature}")
    target = torch.zeros_like(scores)
    target[:, 0] = 1.0
    bce = F.binary_cross_entropy_with_logits(scores, target, reduction="none")
    weight = torch.ones_like(scores)
    with torch.no_grad():  # w = softmax(s⁻/τ), detached
        weight[:, 1:] = torch.softmax(scores[:, 1:] / temperature, dim=-1)
    return ((bce * weight).sum(dim=-1) / weight.sum(dim=-1)).mean()


class _GraphStream:
    """A graph's training facts walked in shuffled epochs (per-graph cursor)."""

    def __init__(self, kg: KnowledgeGraph, generator: torch.Generator) -> None:
        self.kg = kg
        self.data = prepare_graph(kg)
        self.known = KnownAnswers(kg.train, kg.num_entities, kg.num_relations)
        self.gen = generator
        self.order = torch.randperm(len(kg.train), generator=generator)
        self.pos = 0

    def next_batch(self, size: int) -> torch.Tensor:
        if self.pos + size > len(self.order):
            self.order = torch.randperm(len(self.kg.train), generator=self.gen)
            self.pos = 0
        idx = self.order[self.pos:self.pos + size]
        self.pos += size
        return self.kg.train[idx]


def train_ultra(model: Ultra, graphs: Sequence[KnowledgeGraph], config: TrainConfig, *,
                seed: int = 0, progress: Callable[..., None] | None = None) -> list[float]:
    """Train ``model`` in place on a mixture of graphs; returns the loss of every step.

    A non-finite loss raises ``FloatingPointError`` naming the step (0-based) and the graph,
    before the optimizer step, so the weights stay those of the previous step.
    """
    if not isinstance(model, Ultra):
        raise TypeError(f"model must be an Ultra, got {type(model).__name__}")
    if isinstance(graphs, KnowledgeGraph):
        graphs = [graphs]
    graphs = list(graphs)
    if not graphs:
        raise ValueError("graphs must contain at least one KnowledgeGraph")
    for g in graphs:
        if not isinstance(g, KnowledgeGraph):
            raise TypeError(f"graphs must hold KnowledgeGraph objects, got {type(g).__name__}")
        if g.num_entities < 2:
            raise ValueError(f"graph {g.name!r} needs >= 2 entities to sample negatives")
    gen = torch.Generator().manual_seed(seed)
    streams = [_GraphStream(g, gen) for g in graphs]
    sizes = torch.tensor([float(len(g.train)) for g in graphs])
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr)
    losses: list[float] = []
    model.train()
    for step in range(config.steps):
        s = streams[int(torch.multinomial(sizes, 1, generator=gen))]  # graph chosen per batch
        pos = s.next_batch(min(config.batch_size, len(s.kg.train)))
        batch = sample_negatives(pos, s.kg.num_entities, config.num_negatives,
                                 known=s.known if config.strict_negatives else None,
                                 generator=gen)
        loss = self_adversarial_bce(model(s.data, batch), config.adversarial_temperature)
        if not torch.isfinite(loss):  # refuse before the step corrupts the weights
            raise FloatingPointError(
                f"training loss is {loss.item()} at step {step} (graph {s.kg.name!r}); check "
                "the model's weights and the learning rate; the model keeps the weights it had "
                "before this step")
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if progress is not None and (step % 25 == 0 or step == config.steps - 1):
            progress((step + 1) / max(config.steps, 1), f"step {step + 1}/{config.steps}")
    model.eval()
    return losses


def pretrain(graphs: Sequence[KnowledgeGraph], config: TrainConfig | None = None, *,
             dim: int = 64, num_layers: int = 6, num_entity_layers: int | None = None,
             seed: int = 0, progress: Callable[..., None] | None = None
             ) -> tuple[Ultra, list[float]]:
    """A fresh :class:`Ultra` (initialised from ``seed``) pre-trained on ``graphs``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Ultra(dim, num_layers, num_entity_layers)
    return model, train_ultra(model, graphs, config or TrainConfig(), seed=seed,
                              progress=progress)


def fine_tune(model: Ultra, graph: KnowledgeGraph, config: TrainConfig, *, seed: int = 0,
              progress: Callable[..., None] | None = None) -> tuple[Ultra, list[float]]:
    """A fine-tuned *copy* of ``model`` on ``graph`` (the input model is left unchanged)."""
    tuned = copy.deepcopy(model)
    return tuned, train_ultra(tuned, [graph], config, seed=seed, progress=progress)
