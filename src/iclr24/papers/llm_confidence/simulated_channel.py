"""A tiny arithmetic model with a *simulated* verbalised-confidence channel (the laptop-scale
stand-in for Xiong et al.'s GPT-3.5/Vicuna runs, Sec. 4; by construction, not a finding).

A character-level transformer (the language-model kit's :class:`CausalTransformer`) learns
synthetic arithmetic QA of graded difficulty — ``a+b``, ``a*b`` and ``a+b+c`` — in the paper's
vanilla output format::

    Q: 37+58=
    Answer and Confidence (0-100): 95, 85%

The stated confidence is drawn uniformly from {80, 85, 90, 95, 100} *independently of
correctness*: the "imitating humans" hypothesis of the paper (Sec. 4.2: verbalised
confidences cluster in 80–100, in multiples of 5) made true by construction. So the tiny
model's verbalised channel is simulated; its *answers*, and therefore its failures, are real
(it is trained only until it is right on part of the test set). The claims use one-digit
operands: a two-layer model trained for 600 steps on aligned question-answer lines gets
~96% of the sums, ~89% of the products and ~79% of the three-term sums right (seed 0); with
1-3-digit operands it learns none of them in a CPU budget (0.5% right after 1,000 steps on
random windows of the text), which would leave failure prediction nothing to predict.
The elicitation pipeline then
runs unchanged on it: prompts end with ``Answer and Confidence (0-100):`` (the model's reply
starts there), :func:`~.parsing.parse_answer_confidence` reads the replies, the samplers and
aggregators of :mod:`.sampling` / :mod:`.aggregation` do the rest, and the white-box baseline
scores the greedy answer's token probability through ``TextBackend.logprobs``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ANSWER_HEAD", "QAItem", "SimulatedConfig", "arithmetic_qa", "qa_prompt",
           "train_simulated_model", "training_examples"]

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


def training_examples(items: list[QAItem], rng: np.random.Generator) -> list[tuple[str, str]]:
    """(question, reply) training pairs; the reply states a human-like confidence drawn
    independently of the answer."""
    out = []
    for it in items:
        c = HUMAN_CONFIDENCES[int(rng.integers(len(HUMAN_CONFIDENCES)))]
        out.append((qa_prompt(it), f" {it.answer}, {c}%\n"))
    return out


@dataclass(frozen=True)
class SimulatedConfig:
    """The tiny model and its training budget. The spec planned 4 layers; 2 layers of width
    128 keep three replicates (one model each) inside the small-scale CPU budget."""

    n_layers: int = 2
    d_model: int = 128
    n_heads: int = 4
    steps: int = 600
    batch_size: int = 32
    lr: float = 3e-3


def train_simulated_model(items: list[QAItem], config: SimulatedConfig, seed: int,
                          progress=None):
    """Train the character model on ``items`` (one aligned question-answer line per example,
    every character in the loss); returns a kit ``TransformerLM``."""
    import torch

    from iclr24.kits.language_models import (
        CausalTransformer,
        FinetuneConfig,
        TransformerConfig,
        TransformerLM,
        finetune,
    )
    from iclr24.kits.threads import torch_threads

    examples = training_examples(items, np.random.default_rng([seed, 1]))
    torch.manual_seed(seed)
    model = CausalTransformer(TransformerConfig(
        vocab_size=256, d_model=config.d_model, n_layers=config.n_layers,
        n_heads=config.n_heads, context_length=128))
    lm = TransformerLM(model)
    with torch_threads(1):
        finetune(lm, examples, FinetuneConfig(steps=config.steps, batch_size=config.batch_size,
                                              lr=config.lr, seed=seed, train_on_inputs=True),
                 progress=progress)
    return lm
