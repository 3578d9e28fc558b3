"""Continual training of the target with FuseLLM's objective, and tokenizer-free evaluation.

FuseLLM (Wan et al., ICLR 2024, Sec. 4.1 "Training details"): the target (Llama-2-7B) is
trained for one epoch on MiniPile with L = λ L_CLM + (1 − λ) L_Fusion, λ = 0.9, AdamW (β 0.9 /
0.95, weight decay 0.1), lr 1e-5 with a cosine schedule and 0.008 warm-up ratio, gradient
clipping 1.0, 2,048-token blocks, 128 sequences per step. The fair control ("Llama-2 CLM") is
the same run with λ = 1.

How this file maps to it.
- :class:`FuseConfig`: those hyper-parameters (defaults from the paper; the claims set steps,
  batch and a learning rate fit for tiny models).
- :class:`FuseLLMTrainer` ``(model, tokenizer, cfg).fit(texts, fused)``: batches of whole texts
  (right-padded, pads masked out of both terms), fused targets scattered sparsely per batch,
  a seeded data order (the same seed gives every arm the same batches).
- :func:`bits_per_char`: total code length of the texts in bits divided by their characters,
  comparable across tokenizers (the paper compares on benchmarks; we compare held-out BPC).

The target may be a real LM: :class:`FuseLLMTrainer` trains the kit's ``CausalTransformer``
(the claims' tiny targets), the kit's ``HFCausalLM`` (SmolLM2 via ``load_smollm2()``, a local
checkpoint via ``load_hf_checkpoint``) or a ``transformers`` causal LM with its tokenizer, which
is what the method is for. A Hugging Face target reads ``[start, x_0, ..., x_{T-2}]`` (its BOS,
else its EOS, as the records of :mod:`.records` do) and its weight decay follows the Hugging
Face Trainer the official code uses (matrices decayed, biases and norm weights not).

Scaled down: the claims' targets are kit ``CausalTransformer`` models (a few hundred thousand
parameters) instead of Llama-2-7B; DeepSpeed ZeRO-2, bf16 and 8 GPUs are out of reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .alignment import SparseDist
from .losses import check_lambda, fusellm_loss
from .records import _check_texts, sequence_log_probs
from .vocabulary import TokenVocab

__all__ = ["FuseConfig", "FuseHistory", "FuseLLMTrainer", "bits_per_char"]


@dataclass(frozen=True)
class FuseConfig:
    """Continual-training hyper-parameters (defaults: the paper's run, Sec. 4.1).

    lam: λ, the CLM weight (1.0 = the CLM-only control). steps: optimizer steps (the paper
    trains one epoch). warmup_ratio: share of steps of linear warm-up before the cosine decay
    to ``min_lr_ratio · lr``.
    """

    lam: float = 0.9
    steps: int = 100
    batch_size: int = 128
    lr: float = 1e-5
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.1
    warmup_ratio: float = 0.008
    min_lr_ratio: float = 0.0
    grad_clip: float | None = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_lambda(self.lam)
        for name in ("steps", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ValueError(f"lr must be a number > 0, got {self.lr!r}")
        if not 0.0 <= self.warmup_ratio < 1.0:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if not 0.0 <= self.min_lr_ratio <= 1.0:
            raise ValueError(f"min_lr_ratio must be in [0, 1], got {self.min_lr_ratio!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be None or > 0, got {self.grad_clip!r}")

    def learning_rate(self, step: int) -> float:
        """Linear warm-up, then cosine decay: lr·(r + (1−r)·½(1 + cos(π·progress)))."""
        warm = math.ceil(self.warmup_ratio * self.steps)
        if warm and step < warm:
            return self.lr * (step + 1) / warm
        progress = min(1.0, (step - warm) / max(1, self.steps - warm))
        r = self.min_lr_ratio
        return self.lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class FuseHistory:
    """Per-step total loss and its CLM part (nats per token)."""

    losses: list[float] = field(default_factory=list)
    clm_losses: list[float] = field(default_factory=list)


def _pad_batch(token_lists: Sequence[Sequence[int]], fused: Sequence[SparseDist] | None
               ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    t_max = max(len(s) for s in token_lists)
    b = len(token_lists)
    labels = torch.full((b, t_max), -100, dtype=torch.long)
    mask = torch.zeros(b, t_max)
    for r, s in enumerate(token_lists):
        labels[r, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[r, :len(s)] = 1.0
    if fused is None:
        return labels, mask, None
    k = max(d.ids.shape[1] for d in fused)
    ids = torch.zeros(b, t_max, k, dtype=torch.long)
    probs = torch.zeros(b, t_max, k)
    for r, d in enumerate(fused):
        ids[r, :len(d), :d.ids.shape[1]] = torch.from_numpy(d.ids)
        probs[r, :len(d), :d.ids.shape[1]] = torch.from_numpy(d.probs)
    return labels, mask, (ids, probs)


class FuseLLMTrainer:
    """Continual training of a target LM with λ·L_CLM + (1−λ)·L_Fusion.

    model: the target, trained in place: a kit ``CausalTransformer`` (with a BOS input id),
    the kit's ``HFCausalLM`` (e.g. ``load_smollm2()``; its ``.model`` is trained) or a
    ``transformers`` causal LM (``tokenizer`` must then be its Hugging Face tokenizer, for the
    start token). tokenizer: the target's tokenizer (anything :meth:`TokenVocab.of`
    accepts). cfg: :class:`FuseConfig`.
    """

    def __init__(self, model: Any, tokenizer: Any, cfg: FuseConfig = FuseConfig()) -> None:
        from iclr24.kits.language_models import CausalTransformer, HFCausalLM

        if not isinstance(cfg, FuseConfig):
            raise TypeError(f"cfg must be a FuseConfig, got {type(cfg).__name__}")
        self.vocab = TokenVocab.of(tokenizer)
        if isinstance(model, CausalTransformer):
            if not model.config.bos:
                raise ValueError("the target model needs a BOS input id (config.bos=True)")
            self.net, self.start_id = model, None
            outputs, context = model.config.vocab_size, model.config.context_length
        elif isinstance(model, HFCausalLM) or (isinstance(model, torch.nn.Module)
                                               and hasattr(model, "get_output_embeddings")):
            if not isinstance(model, HFCausalLM):
                hf = getattr(tokenizer, "hf", tokenizer)
                if not hasattr(hf, "eos_token_id"):
                    raise TypeError("a transformers model needs its Hugging Face tokenizer "
                                    "(for the start token), or pass the kit's HFCausalLM")
                model = HFCausalLM(model, hf)
            if not any(True for _ in model.model.parameters()):
                raise ValueError("the Hugging Face target has no trainable parameters (a "
                                 "quantised copy?)")
            self.net, self.start_id = model.model, model.start_id
            outputs, context = model.vocab_size, model.context_length
        else:
            raise TypeError(f"model must be a kit CausalTransformer, an HFCausalLM or a "
                            f"transformers causal LM, got {type(model).__name__}")
        if self.vocab.size > outputs:
            raise ValueError(f"the tokenizer has {self.vocab.size} ids but the model only "
                             f"{outputs} outputs")
        self.model = model
        self.outputs, self.context_length = outputs, context
        self.cfg = cfg

    def _logits(self, labels: torch.Tensor) -> torch.Tensor:
        """(B, T, V) logits of the target tokens ``labels`` (B, T) (-100 = padding): row t
        reads [start, x_0 .. x_{t-1}] and predicts x_t."""
        tokens = labels.clamp_min(0)
        if self.start_id is None:
            return self.net(self.net.shift_right(tokens))
        start = torch.full_like(tokens[:, :1], self.start_id)
        inputs = torch.cat([start, tokens[:, :-1]], dim=1)  # right padding: never attended
        return self.net(input_ids=inputs, use_cache=False).logits[..., :self.outputs]

    def _param_groups(self) -> list[dict]:
        decay, no_decay = [], []
        for name, p in self.net.named_parameters():
            if self.start_id is None:  # kit model: no decay on embeddings, biases, norms
                wanted = p.dim() >= 2 and "tok" not in name and "pos" not in name
            else:  # Hugging Face Trainer: every matrix, not biases or norm weights
                wanted = p.dim() >= 2
            (decay if wanted else no_decay).append(p)
        return [{"params": decay, "weight_decay": self.cfg.weight_decay},
                {"params": no_decay, "weight_decay": 0.0}]

    def fit(self, texts: Sequence[str], fused: Sequence[SparseDist] | None = None,
            progress: Callable[..., None] | None = None) -> FuseHistory:
        """Train on ``texts`` (each a training sequence) with the fused targets ``fused[i]``
        of text i (one row per target token); ``fused`` may be None only when λ = 1."""
        cfg = self.cfg
        texts = _check_texts(texts)
        token_lists = [self.vocab.encode(t) for t in texts]
        ctx = self.context_length
        for i, toks in enumerate(token_lists):
            if not toks:
                raise ValueError(f"texts[{i}] encodes to no tokens")
            if ctx is not None and len(toks) > ctx:
                raise ValueError(f"texts[{i}] has {len(toks)} tokens, beyond the model's "
                                 f"context_length={ctx}")
        if fused is None:
            if cfg.lam < 1.0:
                raise ValueError(f"fused targets are needed when lam < 1 (lam={cfg.lam})")
        else:
            fused = list(fused)
            if len(fused) != len(texts):
                raise ValueError(f"fused has {len(fused)} entries for {len(texts)} texts")
            for i, (d, toks) in enumerate(zip(fused, token_lists)):
                if not isinstance(d, SparseDist):
                    raise TypeError(f"fused[{i}] must be a SparseDist, got {type(d).__name__}")
                if len(d) != len(toks):
                    raise ValueError(f"fused[{i}] has {len(d)} rows but text {i} has "
                                     f"{len(toks)} target tokens (distributions of another "
                                     "tokenisation?)")
                if int(d.ids.max(initial=0)) >= self.outputs:
                    raise ValueError(f"fused[{i}] holds ids beyond the model's vocabulary")
        model = self.net
        device = next(model.parameters()).device
        opt = torch.optim.AdamW(self._param_groups(), lr=cfg.lr, betas=cfg.betas)
        gen = torch.Generator().manual_seed(int(cfg.seed))
        order: list[int] = []
        history = FuseHistory()
        model.train()
        report_every = max(1, cfg.steps // 20)
        for step in range(cfg.steps):
            while len(order) < cfg.batch_size:  # epochs of a seeded permutation
                order.extend(torch.randperm(len(texts), generator=gen).tolist())
            idx, order = order[:cfg.batch_size], order[cfg.batch_size:]
            labels, mask, target = _pad_batch([token_lists[i] for i in idx],
                                              None if fused is None else [fused[i] for i in idx])
            labels, mask = labels.to(device), mask.to(device)
            if target is not None:
                target = (target[0].to(device), target[1].to(device))
            lr = cfg.learning_rate(step)
            for group in opt.param_groups:
                group["lr"] = lr
            logits = self._logits(labels)
            loss = fusellm_loss(logits, labels, target, cfg.lam, mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
            opt.step()
            history.losses.append(float(loss.detach()))
            if cfg.lam < 1.0:
                with torch.no_grad():
                    history.clm_losses.append(float(fusellm_loss(logits, labels, None, 1.0,
                                                                 mask)))
            else:
                history.clm_losses.append(history.losses[-1])
            if progress is not None and ((step + 1) % report_every == 0
                                         or step + 1 == cfg.steps):
                progress((step + 1) / cfg.steps, f"step {step + 1}/{cfg.steps} "
                                                 f"loss {history.losses[-1]:.3f}")
        model.eval()
        return history


def bits_per_char(lm: Any, tokenizer: Any, texts: Sequence[str], batch_size: int = 64) -> float:
    """Σ_texts code length in bits / Σ_texts characters: -Σ log2 p(tokens) / Σ len(text).

    lm: a kit ``CausalTransformer``, an ``HFCausalLM`` or a backend with ``log_probs``;
    tokenizer: its tokenizer. Independent of the tokenisation, so models with different
    tokenizers compare directly.
    """
    vocab = TokenVocab.of(tokenizer)
    texts = _check_texts(texts)
    token_lists = [vocab.encode(t) for t in texts]
    logps = sequence_log_probs(lm, token_lists, batch_size)
    nats = 0.0
    for toks, logp in zip(token_lists, logps):
        ids = torch.as_tensor(toks, dtype=torch.long)
        nats -= float(logp.gather(1, ids[:, None]).sum())
    chars = sum(len(t) for t in texts)
    return nats / math.log(2) / chars
