"""Supervised fine-tuning on (prompt, target) pairs, the prompt's tokens masked out of the loss.

The recipe of instruction tuning (Alpaca, Auto-J's judge, the safety-tuning papers): each example
is the prompt's tokens followed by the target's (and the end-of-sequence token where the
tokenizer has one); the loss is the mean next-token NLL over the target tokens only, unless
``train_on_inputs=True`` puts the prompt's tokens in the loss too. One :func:`finetune` serves
both backends:

- :class:`~.backends.TransformerLM` (our tiny models): full fine-tuning of every parameter.
- :class:`~.backends.HFCausalLM` (SmolLM2, a local checkpoint): full fine-tuning, or LoRA
  adapters through ``peft`` with ``lora_rank`` set (the base weights stay frozen; the adapters
  are merged into the weights at the end, so the backend keeps its type and speed).

Batches of ``batch_size`` examples are drawn with replacement by a ``torch.Generator`` seeded
from ``FinetuneConfig.seed`` and right-padded (padding is masked from attention and loss), so a
run is deterministic at a fixed thread count. The learning rate warms up and decays by a cosine
as in :func:`~.training.cosine_learning_rate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .backends import HFCausalLM, TransformerLM
from .training import TrainHistory, check_schedule, cosine_learning_rate

__all__ = ["IGNORE_INDEX", "FinetuneConfig", "SFTBatch", "finetune", "sft_batch"]

IGNORE_INDEX = -100  # a label the loss skips (prompt tokens, padding)


@dataclass(frozen=True)
class FinetuneConfig:
    """``steps`` AdamW updates on batches of ``batch_size`` (prompt, target) examples.

    train_on_inputs: put the prompt's tokens in the loss too (default: targets only).
    append_eos: end each target with the tokenizer's end-of-sequence token (Hugging Face
        tokenizers; the byte tokenizer has none), so the tuned model learns to stop.
    lora_rank: Hugging Face backends only: train rank-``lora_rank`` LoRA adapters (scale
        ``lora_alpha / lora_rank``) on ``lora_targets`` instead of every weight.
    """

    steps: int = 100
    batch_size: int = 8
    lr: float = 1e-3
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = 10
    min_lr_ratio: float = 0.1
    grad_clip: float | None = 1.0
    seed: int = 0
    train_on_inputs: bool = False
    append_eos: bool = True
    lora_rank: int | None = None
    lora_alpha: float = 16.0
    lora_targets: tuple[str, ...] = ("q_proj", "v_proj")

    def __post_init__(self) -> None:
        check_schedule(self, ("steps", "batch_size"))
        if self.lora_rank is not None and (isinstance(self.lora_rank, bool)
                                           or not isinstance(self.lora_rank, int)
                                           or self.lora_rank < 1):
            raise ValueError(f"lora_rank must be None or a positive int, got {self.lora_rank!r}")


@dataclass(frozen=True)
class SFTBatch:
    """Model inputs (B, T), labels (B, T) with :data:`IGNORE_INDEX` where the loss skips, and
    the attention mask (B, T) (1 = real token, 0 = right padding)."""

    inputs: torch.Tensor
    labels: torch.Tensor
    attention_mask: torch.Tensor


def _check_examples(examples: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    pairs = list(examples)
    if not pairs:
        raise ValueError("examples must be a non-empty sequence of (prompt, target) pairs")
    for i, ex in enumerate(pairs):
        if (not isinstance(ex, (tuple, list)) or len(ex) != 2
                or not all(isinstance(x, str) for x in ex)):
            raise TypeError(f"examples[{i}] must be a (prompt, target) pair of str, got {ex!r}")
        if not ex[1]:
            raise ValueError(f"examples[{i}] has an empty target: nothing to learn from")
    return [(p, t) for p, t in pairs]


def _encode(lm: TransformerLM | HFCausalLM, prompt: str, target: str,
            append_eos: bool) -> tuple[list[int], list[int]]:
    """Prompt ids and target ids; the target is the tail of the concatenation's tokens where
    the tokenizer keeps the prompt's tokens as a prefix (else encoded on its own)."""
    enc = lm.tokenizer.encode
    p = list(enc(prompt.encode("utf-8"))) if prompt else []
    full = list(enc((prompt + target).encode("utf-8")))
    t = full[len(p):] if full[:len(p)] == p and len(full) > len(p) else \
        list(enc(target.encode("utf-8")))
    eos = getattr(getattr(lm.tokenizer, "hf", None), "eos_token_id", None)
    if append_eos and eos is not None:
        t.append(int(eos))
    return p, t


def sft_batch(lm: TransformerLM | HFCausalLM, examples: Sequence[tuple[str, str]],
              config: FinetuneConfig = FinetuneConfig()) -> SFTBatch:
    """The padded batch :func:`finetune` trains on for these examples (all of them, in order).

    Row b holds the start token then prompt + target (minus its last token) as inputs, and
    prompt + target as labels, with the prompt's labels set to :data:`IGNORE_INDEX` unless
    ``config.train_on_inputs``. Raises ``ValueError`` for an example longer than the model's
    context.
    """
    if not isinstance(lm, (TransformerLM, HFCausalLM)):
        raise TypeError(f"lm must be a TransformerLM or HFCausalLM, got {type(lm).__name__}")
    pairs = _check_examples(examples)
    rows, labels = [], []
    for i, (prompt, target) in enumerate(pairs):
        p, t = _encode(lm, prompt, target, config.append_eos)
        seq = p + t
        if lm.context_length is not None and len(seq) > lm.context_length:
            raise ValueError(f"examples[{i}] is {len(seq)} tokens, longer than the model's "
                             f"context_length={lm.context_length}")
        rows.append(seq)
        labels.append(seq if config.train_on_inputs else [IGNORE_INDEX] * len(p) + t)
    start = lm.model.config.bos_id if isinstance(lm, TransformerLM) else lm.start_id
    width = max(len(r) for r in rows)
    device = (lm.model.head.weight.device if isinstance(lm, TransformerLM) else lm.device)
    inputs = torch.tensor([[start] + r[:-1] + [start] * (width - len(r)) for r in rows],
                          dtype=torch.long, device=device)
    lab = torch.tensor([lb + [IGNORE_INDEX] * (width - len(lb)) for lb in labels],
                       dtype=torch.long, device=device)
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows],
                        dtype=torch.long, device=device)
    return SFTBatch(inputs, lab, mask)


def _logits(lm: TransformerLM | HFCausalLM, model: torch.nn.Module, batch: SFTBatch
            ) -> torch.Tensor:
    if isinstance(lm, TransformerLM):  # causal: right padding never reaches a real position
        return model(batch.inputs)
    out = model(input_ids=batch.inputs, attention_mask=batch.attention_mask, use_cache=False)
    return out.logits[..., :lm.vocab_size]


def finetune(lm: TransformerLM | HFCausalLM, examples: Sequence[tuple[str, str]],
             config: FinetuneConfig = FinetuneConfig(),
             progress: Callable[[float, str], None] | None = None) -> TrainHistory:
    """Fine-tune ``lm`` in place on (prompt, target) string pairs; returns the per-step loss
    (mean NLL in nats over the batch's trained tokens) and learning rate.

    LoRA (``config.lora_rank``) needs an :class:`HFCausalLM` with float weights; its adapters
    are merged into ``lm.model`` before returning.
    """
    if not isinstance(config, FinetuneConfig):
        raise TypeError(f"config must be a FinetuneConfig, got {type(config).__name__}")
    if not isinstance(lm, (TransformerLM, HFCausalLM)):
        raise TypeError(f"lm must be a TransformerLM or HFCausalLM, got {type(lm).__name__}")
    pairs = _check_examples(examples)
    if not any(True for _ in lm.model.parameters()):
        raise ValueError("lm has no trainable float weights (a quantised copy?): fine-tune "
                         "the float model, then quantise it")
    model = lm.model
    if config.lora_rank is not None:
        if not isinstance(lm, HFCausalLM):
            raise ValueError("lora_rank needs a Hugging Face backend (HFCausalLM); tiny "
                             "TransformerLM models are fully fine-tuned")
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(
            r=config.lora_rank, lora_alpha=config.lora_alpha, lora_dropout=0.0,
            target_modules=list(config.lora_targets), bias="none", task_type="CAUSAL_LM"))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, betas=config.betas,
                                  weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(int(config.seed))
    history = TrainHistory()
    report_every = max(1, config.steps // 20)
    model.train()
    try:
        for step in range(config.steps):
            lr = cosine_learning_rate(step, config)  # same schedule fields as TrainConfig
            for group in optimizer.param_groups:
                group["lr"] = lr
            pick = torch.randint(0, len(pairs), (config.batch_size,), generator=gen).tolist()
            batch = sft_batch(lm, [pairs[i] for i in pick], config)
            logits = _logits(lm, model, batch)
            # mean NLL over trained tokens: -1/|S| Σ_{t∈S} log p(y_t | y_<t)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                   batch.labels.reshape(-1), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if config.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            optimizer.step()
            history.losses.append(float(loss.detach()))
            history.learning_rates.append(lr)
            history.tokens_seen += int((batch.labels != IGNORE_INDEX).sum())
            if progress is not None and ((step + 1) % report_every == 0
                                         or step + 1 == config.steps):
                progress((step + 1) / config.steps,
                         f"step {step + 1}/{config.steps} loss {history.losses[-1]:.3f}")
    finally:
        if config.lora_rank is not None:
            lm.model = model.merge_and_unload()
        lm.model.eval()
    return history
