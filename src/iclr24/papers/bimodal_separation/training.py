"""Training loops and batch samplers for the three arms of the reproduction.

- weak arm (W) and mix-and-separate arm (U): :func:`weak_batches` draws two different natural
  mixtures per row from a :class:`~.synthetic_sounds.MixtureCorpus` (mixtures and captions
  only: no single-source audio exists in it) and trains on their sum;
- supervised arm (S): :func:`supervised_batches` draws two single-source clips of different
  classes, captioned with their class words, and trains with the same mix-and-separate loss,
  whose targets are then the single sources.

Optimisation: Adam (paper: lr 1e-4, batch 16 x 8 GPUs, 200 epochs with step decay); here lr
1e-3 (a tiny model, ~10^3 steps), constant, batch 8, gradient norm clipped at 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from .separator import TERMS, BiModalSeparator, MixtureBatch
from .synthetic_sounds import SOUND_CLASSES, MixtureCorpus, SourceClips

__all__ = ["supervised_batches", "train_separator", "weak_batches"]

BatchSampler = Callable[[np.random.Generator], MixtureBatch]


def _check_batch_size(batch_size: int, pool: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if pool < 2:
        raise ValueError(f"need at least 2 clips to form pairs, got {pool}")


def weak_batches(corpus: MixtureCorpus, batch_size: int) -> BatchSampler:
    """A sampler of mixture-of-mixtures batches from natural mixtures only."""
    if not isinstance(corpus, MixtureCorpus):
        raise TypeError(f"corpus must be a MixtureCorpus, got {type(corpus).__name__}")
    _check_batch_size(batch_size, len(corpus.captions))
    waves = torch.as_tensor(corpus.waves)

    def sample(rng: np.random.Generator) -> MixtureBatch:
        pairs = np.stack([rng.choice(len(corpus.captions), 2, replace=False)
                          for _ in range(batch_size)])
        return MixtureBatch(waves[torch.as_tensor(pairs)],
                            tuple((corpus.captions[i], corpus.captions[j]) for i, j in pairs),
                            corpus.sample_rate)

    return sample


def supervised_batches(clips: SourceClips, batch_size: int) -> BatchSampler:
    """A sampler of pairs of single-source clips of different classes (supervised arm)."""
    if not isinstance(clips, SourceClips):
        raise TypeError(f"clips must be SourceClips, got {type(clips).__name__}")
    _check_batch_size(batch_size, len(clips.labels))
    waves = torch.as_tensor(clips.waves)
    labels = clips.labels

    def sample(rng: np.random.Generator) -> MixtureBatch:
        pairs = []
        while len(pairs) < batch_size:
            i, j = rng.choice(len(labels), 2, replace=False)
            if labels[i] != labels[j]:
                pairs.append((i, j))
        idx = torch.as_tensor(np.array(pairs))
        caps = tuple((SOUND_CLASSES[labels[i]], SOUND_CLASSES[labels[j]]) for i, j in pairs)
        return MixtureBatch(waves[idx], caps, clips.sample_rate)

    return sample


def train_separator(separator: BiModalSeparator, batches: BatchSampler, *, steps: int,
                    terms: Sequence[str] = TERMS, lr: float = 1e-3, seed: int = 0,
                    progress: Callable[[float], None] | None = None) -> list[float]:
    """Train ``separator`` in place for ``steps`` Adam steps on ``batches(rng)``; returns the
    total loss per step."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(separator.parameters(), lr=lr)
    separator.train()
    history = []
    for step in range(steps):
        loss = separator.training_losses(batches(rng), terms)["total"]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(separator.parameters(), 1.0)
        opt.step()
        history.append(float(loss.detach()))
        if progress is not None and (step + 1) % 50 == 0:
            progress((step + 1) / steps)
    separator.eval()
    return history
