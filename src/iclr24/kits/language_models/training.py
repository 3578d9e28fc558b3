"""Training a causal language model on a token stream: AdamW, warm-up + cosine decay.

Loss is the mean next-token negative log-likelihood (nats) over all positions of a batch of
windows, as in "Language Modeling Is Compression" (Sec. 3: Adam, mean NLL with gradients
divided by the sequence length). Windows are drawn at random offsets from the training stream by
a ``torch.Generator`` seeded from ``TrainConfig.seed``, so the data order — and with a fixed
thread count the whole run — is deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .transformer import CausalTransformer

__all__ = [
    "TrainConfig",
    "TrainHistory",
    "as_token_tensor",
    "cosine_learning_rate",
    "train_causal_lm",
]


@dataclass(frozen=True)
class TrainConfig:
    """steps × batch_size windows of seq_len tokens; AdamW(lr, betas, weight_decay).

    The learning rate warms up linearly for ``warmup_steps`` and then decays by a cosine to
    ``min_lr_ratio · lr`` at the last step. ``grad_clip`` clips the global gradient norm.
    """

    steps: int = 200
    batch_size: int = 16
    seq_len: int = 512
    lr: float = 1e-3
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    warmup_steps: int = 20
    min_lr_ratio: float = 0.1
    grad_clip: float | None = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_schedule(self, ("steps", "batch_size", "seq_len"))


def check_schedule(config, positive: tuple[str, ...]) -> None:
    """Validate a training config's ``positive`` int fields and its learning-rate schedule
    (``lr``, ``warmup_steps``, ``min_lr_ratio``): a ``ValueError`` naming the bad field."""
    for name in positive:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not config.lr > 0:
        raise ValueError(f"lr must be > 0, got {config.lr!r}")
    if config.warmup_steps < 0:
        raise ValueError(f"warmup_steps must be >= 0, got {config.warmup_steps!r}")
    if not 0.0 <= config.min_lr_ratio <= 1.0:
        raise ValueError(f"min_lr_ratio must be in [0, 1], got {config.min_lr_ratio!r}")


@dataclass
class TrainHistory:
    """Per-step training loss (nats/token) and learning rate."""

    losses: list[float] = field(default_factory=list)
    learning_rates: list[float] = field(default_factory=list)
    tokens_seen: int = 0

    @property
    def final_loss(self) -> float:
        return self.losses[-1] if self.losses else float("nan")


def cosine_learning_rate(step: int, config: TrainConfig) -> float:
    """lr(s) = lr·s/warmup during warm-up, then lr·(r + (1−r)·½(1+cos(π·progress)))."""
    if config.warmup_steps and step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    r = config.min_lr_ratio
    return config.lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * progress)))


def as_token_tensor(data: bytes | bytearray | np.ndarray | torch.Tensor | list[int],
                    name: str = "data") -> torch.Tensor:
    """bytes / int array / list -> 1-D int64 tensor (bytes become their values 0..255)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int64) \
            if len(data) else torch.zeros(0, dtype=torch.int64)
    if isinstance(data, torch.Tensor):
        tensor = data
    elif isinstance(data, (np.ndarray, list, tuple)):
        tensor = torch.as_tensor(np.asarray(data))
    else:
        raise TypeError(f"{name} must be bytes, a list/array of token ids or a tensor, got "
                        f"{type(data).__name__}")
    if tensor.dtype.is_floating_point or tensor.dtype == torch.bool or tensor.dim() != 1:
        raise TypeError(f"{name} must be a 1-D sequence of integer token ids")
    return tensor.to(torch.int64)


def train_causal_lm(model: CausalTransformer,
                    data: bytes | np.ndarray | torch.Tensor | list[int],
                    config: TrainConfig = TrainConfig(),
                    progress: Callable[..., None] | None = None,
                    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                    ) -> TrainHistory:
    """Train ``model`` in place on random windows of the token stream ``data``.

    data: 1-D token ids (bytes for a byte model), at least ``seq_len + 1`` long... or shorter,
    in which case the window shrinks to ``len(data) - 1`` (must be ≥ 1).
    progress: optional ``progress(fraction, message)`` called about every 5% of the steps.
    loss_fn: optional ``loss_fn(logits: (B, T, V), targets: (B, T)) -> scalar`` replacing the
    mean NLL (e.g. a paper's own training objective); the history then records its values.
    Returns the per-step losses (mean NLL in nats per token unless ``loss_fn`` is given).
    """
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    tokens = as_token_tensor(data)
    if tokens.numel() < 2:
        raise ValueError(f"data must hold at least 2 tokens to train on, got {tokens.numel()} "
                         "(empty corpus?)")
    if int(tokens.min()) < 0 or int(tokens.max()) >= model.config.vocab_size:
        raise ValueError(f"data token ids must lie in [0, {model.config.vocab_size})")
    # with BOS the model reads seq_len inputs for seq_len targets; without it, one fewer target
    seq_len = min(config.seq_len, model.config.context_length, tokens.numel() - 1)
    device = next(model.parameters()).device
    tokens = tokens.to(device)
    gen = torch.Generator().manual_seed(int(config.seed))
    decay, no_decay = [], []
    for pname, p in model.named_parameters():
        (decay if p.dim() >= 2 and "tok" not in pname and "pos" not in pname
         else no_decay).append(p)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr, betas=config.betas)
    history = TrainHistory()
    model.train()
    n_windows = tokens.numel() - seq_len
    report_every = max(1, config.steps // 20)
    for step in range(config.steps):
        lr = cosine_learning_rate(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, n_windows, (config.batch_size,), generator=gen)
        idx = starts[:, None] + torch.arange(seq_len + 1)[None, :]
        window = tokens[idx.to(device)]
        if model.config.bos:
            targets = window[:, 1:]
            inputs = model.shift_right(targets)
        else:
            inputs, targets = window[:, :-1], window[:, 1:]
        logits = model(inputs)
        if loss_fn is None:
            # mean NLL: -1/(B·T) Σ log p(x_t | x_<t)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        else:
            loss = loss_fn(logits, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        history.losses.append(float(loss.detach()))
        history.learning_rates.append(lr)
        history.tokens_seen += targets.numel()
        if progress is not None and ((step + 1) % report_every == 0 or step + 1 == config.steps):
            progress((step + 1) / config.steps, f"step {step + 1}/{config.steps} "
                                                f"loss {history.losses[-1]:.3f}")
    model.eval()
    return history
