"""A tiny arithmetic model with a *simulated* verbalised-confidence channel (the laptop-scale
stand-in for Xiong et al.'s GPT-3.5/Vicuna runs, Sec. 4; by construction, not a finding).

A character-level transformer (the language-model kit's :class:`CausalTransformer`) learns
synthetic arithmetic QA of graded difficulty — ``a+b``, ``a+b+c`` and ``a*b`` with 1–3-digit
operands — in the paper's vanilla output format::

    Q: 37+58=
    Answer and Confidence (0-100): 95, 85%

The stated confidence is drawn uniformly from {80, 85, 90, 95, 100} *independently of
correctness*: the "imitating humans" hypothesis of the paper (Sec. 4.2: verbalised
confidences cluster in 80–100, in multiples of 5) made true by construction. So the tiny
model's verbalised channel is simulated; its *answers*, and therefore its failures, are real
(it is trained only until it is right on part of the test set). The elicitation pipeline then
runs unchanged on it: prompts end with ``Answer and Confidence (0-100):`` (the model's reply
starts there), :func:`~.parsing.parse_answer_confidence` reads the replies, the samplers and
aggregators of :mod:`.sampling` / :mod:`.aggregation` do the rest, and the white-box baseline
scores the greedy answer's token probability through ``TextBackend.logprobs``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ANSWER_HEAD", "QAItem", "SimulatedConfig", "arithmetic_qa", "qa_prompt",
           "train_simulated_model", "training_text"]

ANSWER_HEAD = "Answer and Confidence (0-100):"
HUMAN_CONFIDENCES = (80, 85, 90, 95, 100)
_KINDS = ("a+b", "a+b+c", "a*b")


@dataclass(frozen=True)
class QAItem:
    """``expression`` (e.g. ``"37+58"``), its exact ``answer``, and the ``kind``."""

    expression: str
    answer: int
    kind: str


def arithmetic_qa(n: int, rng: np.random.Generator, max_digits: int = 3) -> list[QAItem]:
    """``n`` questions: kind uniform over a+b, a+b+c, a*b; each operand has a digit count
    uniform in 1..max_digits (graded difficulty)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if not isinstance(max_digits, int) or max_digits < 1:
        raise ValueError(f"max_digits must be a positive int, got {max_digits!r}")
    out = []
    for _ in range(n):
        kind = _KINDS[int(rng.integers(len(_KINDS)))]
        k = 3 if kind == "a+b+c" else 2
        nums = []
        for _ in range(k):
            d = int(rng.integers(1, max_digits + 1))
            nums.append(int(rng.integers(0 if d == 1 else 10 ** (d - 1), 10 ** d)))
        if kind == "a*b":
            out.append(QAItem(f"{nums[0]}*{nums[1]}", nums[0] * nums[1], kind))
        else:
            out.append(QAItem("+".join(map(str, nums)), sum(nums), kind))
    return out


def qa_prompt(item: QAItem) -> str:
    """The question as the model sees it, ending where its reply starts."""
    return f"Q: {item.expression}=\n{ANSWER_HEAD}"


def training_text(items: list[QAItem], rng: np.random.Generator) -> bytes:
    """Training examples with a human-like stated confidence, independent of the answer."""
    lines = []
    for it in items:
        c = HUMAN_CONFIDENCES[int(rng.integers(len(HUMAN_CONFIDENCES)))]
        lines.append(f"{qa_prompt(it)} {it.answer}, {c}%\n")
    return "".join(lines).encode()


@dataclass(frozen=True)
class SimulatedConfig:
    """The tiny model and its training budget. The spec planned 4 layers; 2 layers of width
    128 keep three replicates (one model each) inside the small-scale CPU budget."""

    n_layers: int = 2
    d_model: int = 128
    n_heads: int = 4
    steps: int = 1000
    batch_size: int = 32
    seq_len: int = 64
    lr: float = 3e-3


def train_simulated_model(items: list[QAItem], config: SimulatedConfig, seed: int,
                          progress=None):
    """Train the character model on ``items``; returns a kit ``TransformerLM``."""
    import torch

    from iclr24.kits.language_models import (
        CausalTransformer,
        TrainConfig,
        TransformerConfig,
        TransformerLM,
        train_causal_lm,
    )
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng([seed, 1])
    text = training_text(items, rng)
    torch.manual_seed(seed)
    model = CausalTransformer(TransformerConfig(
        vocab_size=256, d_model=config.d_model, n_layers=config.n_layers,
        n_heads=config.n_heads, context_length=max(128, config.seq_len + 1)))
    tokens = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    with torch_threads(1):
        train_causal_lm(model, tokens, TrainConfig(
            steps=config.steps, batch_size=config.batch_size, seq_len=config.seq_len,
            lr=config.lr, seed=seed), progress=progress)
    return TransformerLM(model)
