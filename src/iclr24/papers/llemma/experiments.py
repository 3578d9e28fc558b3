"""Shared pieces of the llemma claims: the tiny byte-level solver, its training streams and the
reading of maj@k tables (kept out of ``claims.py``, which holds only the claims)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from iclr24.kits.language_models import ArithmeticProblem, arithmetic_problems

from .synthetic_math import latex_derivation, python_solution, worked_solution

__all__ = ["TinySolverConfig", "arithmetic_task", "held_out_bits_per_byte", "math_sources",
           "new_tiny_model", "solutions_stream", "train_tiny_solver"]


@dataclass(frozen=True)
class TinySolverConfig:
    """A byte-level causal transformer trained on Minerva-format worked solutions."""

    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    steps: int = 600
    batch_size: int = 32
    seq_len: int = 128
    lr: float = 3e-3
    warmup_steps: int = 50
    n_train: int = 4000


def arithmetic_task(n: int, seed: int) -> list[ArithmeticProblem]:
    """The task of the tiny-model claims: two one-digit terms and + - * (300 distinct facts, so
    held-out problems repeat training facts: the claims test voting over an uncertain model,
    not arithmetic generalisation; two-digit operands stayed at ~0% greedy accuracy after 500
    CPU steps)."""
    return arithmetic_problems(n, seed=seed, digits=(1, 1), n_terms=(2, 2))


def solutions_stream(problems: Sequence[ArithmeticProblem]) -> bytes:
    return "\n\n".join(worked_solution(p) for p in problems).encode("utf-8")


def new_tiny_model(config: TinySolverConfig, seed: int, context_length: int = 256):
    import torch

    from iclr24.kits.language_models import CausalTransformer, TransformerConfig

    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(d_model=config.d_model, n_layers=config.n_layers,
                                               n_heads=config.n_heads,
                                               context_length=context_length))


def train_tiny_solver(config: TinySolverConfig, seed: int, progress=None):
    """Train a fresh tiny model (seeded init and data order) on ``config.n_train`` worked
    solutions of problems drawn with ``seed``; returns (model, final training loss)."""
    from iclr24.kits.language_models import TrainConfig, train_causal_lm

    model = new_tiny_model(config, seed)
    text = solutions_stream(arithmetic_task(config.n_train, seed=10_000 + seed))
    hist = train_causal_lm(model, text, TrainConfig(
        steps=config.steps, batch_size=config.batch_size, seq_len=config.seq_len, lr=config.lr,
        warmup_steps=config.warmup_steps, seed=seed), progress=progress)
    return model, hist.final_loss


def math_sources(n: int, seed: int) -> dict[str, list[str]]:
    """Proof-Pile-2 stand-ins over ``n`` problems each: arXiv-like LaTeX derivations, web-like
    worked solutions (the evaluation format) and Python code."""
    return {"arxiv": [latex_derivation(p) for p in arithmetic_task(n, seed=20_000 + seed)],
            "web": [worked_solution(p) for p in arithmetic_task(n, seed=30_000 + seed)],
            "code": [python_solution(p) for p in arithmetic_task(n, seed=40_000 + seed)]}


def held_out_bits_per_byte(model, data: bytes, seq_len: int = 128, max_windows: int = 64) -> float:
    """Mean next-byte cross-entropy (bits) of ``model`` over non-overlapping windows of
    ``data``."""
    import torch
    import torch.nn.functional as F

    tokens = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int64)
    n = min(max_windows, tokens.numel() // seq_len)
    if n < 1:
        raise ValueError("data is shorter than one window")
    windows = tokens[:n * seq_len].reshape(n, seq_len)
    inputs = model.shift_right(windows) if model.config.bos else windows[:, :-1]
    targets = windows if model.config.bos else windows[:, 1:]
    with torch.no_grad():
        logits = model(inputs)
        nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return float(nll) / float(np.log(2))
