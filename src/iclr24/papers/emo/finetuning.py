"""Fine-tuning a causal LM on whole sequences with any ``loss(logits, labels)`` objective.

The paper's language-modelling protocol (DRSY/EMO ``run_lm_gpt2.sh``): start from a pretrained
model, fine-tune 1 epoch with AdamW, linear learning-rate decay, no warm-up, batch 32, the same
seed for every objective. :func:`finetune` does exactly that for a
:class:`~iclr24.kits.language_models.CausalTransformer` on a (N, L) tensor of sequences, so
MLE, EMO, MixCE and TaiLr runs differ only in the objective (same data order, same init).

Pre-training uses the shared kit's :func:`~iclr24.kits.language_models.train_causal_lm`
(random windows of a token stream, AdamW + cosine schedule); the kit's trainer has a fixed MLE
loss and no epoch-over-sequences mode, which is why this module has its own small loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from iclr24.kits.language_models import CausalTransformer

__all__ = ["FinetuneConfig", "finetune", "sequence_logits"]


@dataclass(frozen=True)
class FinetuneConfig:
    """Paper defaults except the learning rate (tiny models need more than GPT-2's 5e-5).

    epochs × ceil(N / batch_size) AdamW steps; lr decays linearly to 0 (no warm-up);
    ``seed`` fixes the order. ``grad_clip`` (max global gradient norm) is off by default, as in
    the official fine-tuning loop, which never clips; set it to clip.
    """

    epochs: int = 1
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    grad_clip: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay!r}")


def sequence_logits(model: CausalTransformer, sequences: Tensor) -> tuple[Tensor, Tensor]:
    """Aligned predictions for tokens 1..L-1 of each sequence (token 0 is context).

    sequences: (B, L) -> (logits (B, L-1, V), labels (B, L-1)); works for models with and
    without a BOS input id.
    """
    if model.config.bos:
        logits = model(model.shift_right(sequences))[:, 1:]
    else:
        logits = model(sequences)[:, :-1]
    return logits, sequences[:, 1:]


def finetune(model: CausalTransformer, sequences: Tensor,
             objective: Callable[[Tensor, Tensor], Tensor],
             config: FinetuneConfig = FinetuneConfig(),
             progress: Callable[..., None] | None = None) -> list[float]:
    """Fine-tune ``model`` in place on ``sequences`` with ``objective``; returns per-step losses.

    sequences: (N, L) int token ids, L >= 2; token 0 of each row is context, tokens 1.. are
    predicted. objective: ``loss(logits (B, L-1, V), labels (B, L-1)) -> scalar`` built with
    ``shift=False`` (e.g. ``make_objective("emo", cost_embedding=E, shift=False)``).
    """
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
    if not isinstance(config, FinetuneConfig):
        raise TypeError(f"config must be a FinetuneConfig, got {type(config).__name__}")
    if not callable(objective):
        raise TypeError("objective must be a callable loss(logits, labels) -> Tensor")
    if not isinstance(sequences, Tensor) or sequences.dtype.is_floating_point \
            or sequences.dim() != 2:
        raise TypeError("sequences must be a (N, L) integer tensor")
    if sequences.shape[0] < 1 or sequences.shape[1] < 2:
        raise ValueError(f"sequences must hold >= 1 row of length >= 2, got "
                         f"{tuple(sequences.shape)}")
    device = next(model.parameters()).device
    sequences = sequences.long().to(device)
    n = sequences.shape[0]
    steps_per_epoch = -(-n // config.batch_size)
    total = steps_per_epoch * config.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas,
                                  weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(int(config.seed))
    losses: list[float] = []
    model.train()
    step = 0
    for _ in range(config.epochs):
        order = torch.randperm(n, generator=gen).to(device)
        for start in range(0, n, config.batch_size):
            # linear decay to 0, no warm-up (run_lm_gpt2.sh)
            lr = config.lr * (1.0 - step / total)
            for group in optimizer.param_groups:
                group["lr"] = lr
            batch = sequences[order[start:start + config.batch_size]]
            logits, labels = sequence_logits(model, batch)
            loss = objective(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
            step += 1
            if progress is not None:
                progress(step / total, f"step {step}/{total} loss {losses[-1]:.3f}")
    model.eval()
    return losses
