"""Instruction tuning as in "Safety-Tuned LLaMAs" (Bianchi et al., ICLR 2024; Sec. 3 and App. A,
official ``training/finetuning.py``, an alpaca-lora derivative).

Official recipe (:class:`SafetyTuneConfig` defaults): LoRA r = 8, alpha = 16, dropout 0.05 on
``q_proj`` and ``v_proj``; lr 3e-4; effective batch 128; 3 epochs; 10 warm-up steps; loss over
prompt + response (``train_on_inputs=True``); the Alpaca template. :func:`finetune` renders
examples with :func:`~.mixing.alpaca_prompt` and calls the language-model kit's trainer: LoRA
(peft, merged at the end) on Hugging Face backends, full fine-tuning on the kit's tiny
transformer.

Scaled down or left out: LLaMA-7B/13B and Falcon-7B in 8-bit (LoRA on LLaMA-7B is out of reach
on a CPU; Llama-2 7B-70B likewise), the 256-token cutoff (our examples are < 80 tokens), the
2,000-example validation split with best-checkpoint selection (a fixed step count here), LoRA
dropout (the kit's trainer uses none). The tiny base model (:func:`pretrain_base_model`) is a
small subword transformer pretrained on the world's plain general text: a base LM that has
never seen the instruction template, harmful requests or refusals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from iclr24.kits.language_models import (
    CausalTransformer,
    FinetuneConfig,
    HFCausalLM,
    SubwordTokenizer,
    TrainConfig,
    TrainHistory,
    TransformerConfig,
    TransformerLM,
    train_causal_lm,
    train_subword_tokenizer,
)
from iclr24.kits.language_models import finetune as _kit_finetune

from .mixing import alpaca_prompt
from .world import (
    BENIGN_OBJECTS,
    BENIGN_VERBS,
    EVERYDAY_WORDS,
    HARM_TARGETS,
    HARM_VERBS,
    LOOKALIKE_OBJECTS,
    Example,
    InstructionWorld,
)

__all__ = ["END_OF_RESPONSE", "SafetyTuneConfig", "finetune", "pretrain_base_model",
           "training_pairs", "world_tokenizer"]

END_OF_RESPONSE = "\n"  # appended to targets on tokenizers without an EOS the trainer knows


@dataclass(frozen=True)
class SafetyTuneConfig:
    """Fine-tuning hyper-parameters; defaults are the official ones.

    steps: optimiser steps; ``None`` means the paper's ``ceil(epochs * n_examples /
    batch_size)`` for the examples given (which grows with the safety share: pass a fixed
    ``steps`` to compare mixtures at equal compute, as :func:`~.curve.safety_curve` does).
    lora_*: used on Hugging Face backends only (the tiny kit model is fully fine-tuned).
    """

    lr: float = 3e-4
    batch_size: int = 128
    epochs: float = 3.0
    steps: int | None = None
    warmup_steps: int = 10
    train_on_inputs: bool = True
    lora_rank: int = 8
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")
    weight_decay: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        for name in ("batch_size", "lora_rank"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.epochs > 0:
            raise ValueError(f"epochs must be > 0, got {self.epochs!r}")
        if self.steps is not None and (isinstance(self.steps, bool)
                                       or not isinstance(self.steps, int) or self.steps < 1):
            raise ValueError(f"steps must be None or a positive int, got {self.steps!r}")

    def steps_for(self, n_examples: int) -> int:
        """``steps`` if set, else ceil(epochs * n_examples / batch_size)."""
        if self.steps is not None:
            return self.steps
        return max(1, math.ceil(self.epochs * n_examples / self.batch_size))

    def kit_config(self, n_examples: int, hf: bool) -> FinetuneConfig:
        """The kit's :class:`FinetuneConfig` for ``n_examples`` (LoRA when ``hf``)."""
        steps = self.steps_for(n_examples)
        return FinetuneConfig(steps=steps, batch_size=self.batch_size, lr=self.lr,
                              weight_decay=self.weight_decay,
                              warmup_steps=min(self.warmup_steps, steps - 1),
                              seed=self.seed, train_on_inputs=self.train_on_inputs,
                              lora_rank=self.lora_rank if hf else None,
                              lora_alpha=self.lora_alpha, lora_targets=self.lora_targets)


def training_pairs(examples: Sequence[Example], end: str = END_OF_RESPONSE
                   ) -> list[tuple[str, str]]:
    """(Alpaca prompt, response + ``end``) pairs, the text the trainer sees."""
    out = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, Example):
            raise TypeError(f"examples[{i}] must be an Example, got {type(ex).__name__}")
        out.append((alpaca_prompt(ex.instruction, ex.input or None), ex.output + end))
    return out


def finetune(lm: TransformerLM | HFCausalLM, examples: Sequence[Example], config: SafetyTuneConfig = SafetyTuneConfig(),
             progress: Callable[[float, str], None] | None = None) -> TrainHistory:
    """Instruction-tune ``lm`` in place on ``examples`` (Alpaca template); returns the per-step
    loss. LoRA on a Hugging Face backend (``HFCausalLM``), full fine-tuning on ``TransformerLM``.
    Targets end with the tokenizer's EOS on Hugging Face tokenizers, with
    :data:`END_OF_RESPONSE` otherwise (the kit's trainer appends no EOS for subword/byte
    tokenizers), so generation stops at a newline."""
    if not isinstance(config, SafetyTuneConfig):
        raise TypeError(f"config must be a SafetyTuneConfig, got {type(config).__name__}")
    examples = list(examples)
    if not examples:
        raise ValueError("examples must be a non-empty sequence of Example")
    hf = isinstance(lm, HFCausalLM)
    pairs = training_pairs(examples, "" if hf else END_OF_RESPONSE)
    return _kit_finetune(lm, pairs, config.kit_config(len(pairs), hf), progress=progress)


def world_tokenizer(world: InstructionWorld, vocab_size: int = 512) -> SubwordTokenizer:
    """A byte-level BPE learnt on the world's training text, the Alpaca template and its whole
    word list (as a pretrained tokenizer knows every word: no answers are learnt from it)."""
    words = (list(EVERYDAY_WORDS) + list(HARM_VERBS) + list(HARM_TARGETS) + list(BENIGN_VERBS)
             + list(BENIGN_OBJECTS) + [o for objs in LOOKALIKE_OBJECTS.values() for o in objs])
    texts = list(world.pretraining) + [a + b for a, b in training_pairs(world.general[:500])]
    texts += [a + b for a, b in training_pairs(world.safety[:200])]
    texts += [" ".join(words)] * 200
    return train_subword_tokenizer(texts, vocab_size=vocab_size, kind="bpe")


def pretrain_base_model(texts: Sequence[str], tokenizer: SubwordTokenizer,
                        model_config: TransformerConfig, train_config: TrainConfig,
                        progress: Callable[[float, str], None] | None = None) -> TransformerLM:
    """A tiny causal transformer pretrained on ``texts`` (documents joined by blank lines, as
    subword ids), the base model the mixtures are tuned from. Seeded by
    ``train_config.seed`` (initialisation and batch order)."""
    import torch

    texts = list(texts)
    if not texts:
        raise ValueError("texts must be a non-empty sequence of str")
    if model_config.vocab_size < tokenizer.vocab_size:
        raise ValueError(f"model_config.vocab_size ({model_config.vocab_size}) is below the "
                         f"tokenizer's ({tokenizer.vocab_size})")
    ids = np.asarray(tokenizer.encode("\n\n".join(texts) + "\n\n"), dtype=np.int64)
    torch.manual_seed(train_config.seed)
    model = CausalTransformer(model_config)
    cfg = replace(train_config, seq_len=min(train_config.seq_len,
                                            model_config.context_length - 1, len(ids) - 1))
    train_causal_lm(model, ids, cfg, progress=progress)
    return TransformerLM(model.eval(), tokenizer)
