"""Tiny judges for the laptop-scale reproduction (Li et al., ICLR 2024, Sec. 3.3: Auto-J is
LLaMA-2-13B-chat fine-tuned by next-token NLL on the judgment text, prompt tokens masked).

Scaled down: the 13B backbone becomes a ~0.5M-parameter LLaMA-architecture model
(``transformers.LlamaForCausalLM``, random init, 2 layers, width 128) behind the kit's
:class:`~iclr24.kits.language_models.HFCausalLM`, so the kit's :func:`finetune` (prompt
masked) and :class:`LocalTextModel` (left-padded batched greedy decoding) serve it unchanged.
It is "pretrained" for a few seconds on the synthetic queries and their answers, then
fine-tuned on rule-written judgments (:mod:`.judgments`). Its tokenizer is a byte-level BPE
learnt on the judge corpus without splitting at spaces (:func:`judge_tokenizer`), so the
fixed template text collapses into a few dozen tokens and a 300-token prompt trains in
milliseconds; the data fields stay short tokens. The paper's hyper-parameters (AdamW, lr 1e-5,
cosine, 3 epochs on 4,396 judgments) were not confirmed and do not transfer to a random-init
0.5M model: :class:`TinyJudgeConfig` keeps them configurable (defaults: AdamW, lr 3e-3,
warm-up then cosine, a few hundred steps).

:class:`RewardModel` is the pointwise baseline of the paper's Table (Moss-/Ziya-/Beaver-/
OASST-RM): the same backbone with a scalar head on the last token, trained with the
Bradley-Terry loss -log sigma(r(x, y_w) - r(x, y_l)) on the non-tie training pairs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr24.kits.language_models import (
    FinetuneConfig,
    HFCausalLM,
    TrainHistory,
    cosine_learning_rate,
    finetune,
)

__all__ = ["RewardModel", "TinyJudgeConfig", "clone_lm", "judge_tokenizer", "new_tiny_lm",
           "pretrain_lm", "reward_model_input", "sft_judge", "train_reward_model"]

EOS = "<eos>"


@dataclass(frozen=True)
class TinyJudgeConfig:
    """Backbone size and the training budget of every tiny judge (and the reward model)."""

    hidden_size: int = 128
    n_layers: int = 2
    n_heads: int = 4
    intermediate_size: int = 256
    context_length: int = 384
    vocab_size: int = 640
    pretrain_steps: int = 60
    sft_steps: int = 150
    batch_size: int = 16
    lr: float = 3e-3
    warmup_steps: int = 10

    def __post_init__(self) -> None:
        for name in ("hidden_size", "n_layers", "n_heads", "intermediate_size",
                     "context_length", "vocab_size", "sft_steps", "batch_size",
                     "warmup_steps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if isinstance(self.pretrain_steps, bool) or not isinstance(self.pretrain_steps, int) \
                or self.pretrain_steps < 0:
            raise ValueError(f"pretrain_steps must be an int >= 0, got {self.pretrain_steps!r}")
        if self.hidden_size % self.n_heads:
            raise ValueError("hidden_size must be divisible by n_heads")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")

    def finetune_config(self, steps: int, seed: int) -> FinetuneConfig:
        return FinetuneConfig(steps=steps, batch_size=self.batch_size, lr=self.lr,
                              warmup_steps=min(self.warmup_steps, max(steps - 1, 0)),
                              seed=int(seed))


def judge_tokenizer(texts: Sequence[str], vocab_size: int = 640):
    """A byte-level BPE ``PreTrainedTokenizerFast`` learnt on ``texts`` with no pre-split at
    spaces (merges may span words: the judge template becomes few tokens). ``<eos>`` is its
    BOS, EOS and padding token. Deterministic for a given corpus."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = list(texts) if not isinstance(texts, str) else None
    if not corpus or not all(isinstance(t, str) for t in corpus):
        raise TypeError("texts must be a non-empty sequence of str")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 257:
        raise ValueError(f"vocab_size must be an int >= 257, got {vocab_size!r}")
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=[EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=EOS, eos_token=EOS,
                                   pad_token=EOS)


def new_tiny_lm(tokenizer, config: TinyJudgeConfig = TinyJudgeConfig(), seed: int = 0,
                name: str = "tiny-judge") -> HFCausalLM:
    """A randomly initialised LLaMA-architecture causal LM (seeded) over ``tokenizer``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if not isinstance(config, TinyJudgeConfig):
        raise TypeError(f"config must be a TinyJudgeConfig, got {type(config).__name__}")
    cfg = LlamaConfig(vocab_size=len(tokenizer), hidden_size=config.hidden_size,
                      intermediate_size=config.intermediate_size,
                      num_hidden_layers=config.n_layers, num_attention_heads=config.n_heads,
                      num_key_value_heads=config.n_heads,
                      max_position_embeddings=config.context_length + 1,
                      bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                      pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    torch.manual_seed(int(seed))
    return HFCausalLM(LlamaForCausalLM(cfg), tokenizer, name=name)


def clone_lm(lm: HFCausalLM, name: str | None = None) -> HFCausalLM:
    """An independent copy of ``lm`` (weights deep-copied, tokenizer shared)."""
    if not isinstance(lm, HFCausalLM):
        raise TypeError(f"lm must be an HFCausalLM, got {type(lm).__name__}")
    return HFCausalLM(copy.deepcopy(lm.model), lm.tokenizer.hf, name=name or lm.name)


def pretrain_lm(lm: HFCausalLM, texts: Sequence[str], config: TinyJudgeConfig,
                seed: int = 0) -> TrainHistory:
    """Language-model ``lm`` on plain ``texts`` (every token in the loss) for
    ``config.pretrain_steps`` steps: the stand-in for LLaMA-2's pretraining."""
    examples = [("", t) for t in texts if t]
    if not examples:
        raise ValueError("texts must hold some non-empty text")
    if config.pretrain_steps == 0:
        return TrainHistory()
    return finetune(lm, examples, config.finetune_config(config.pretrain_steps, seed))


def sft_judge(lm: HFCausalLM, examples: Sequence[tuple[str, str]], config: TinyJudgeConfig,
              seed: int = 0, progress=None) -> TrainHistory:
    """Judge SFT: next-token NLL on the judgment only (prompt masked), ``config.sft_steps``."""
    return finetune(lm, examples, config.finetune_config(config.sft_steps, seed),
                    progress=progress)


def reward_model_input(query: str, response: str) -> str:
    """The text a reward model scores."""
    if not isinstance(query, str) or not isinstance(response, str):
        raise TypeError("query and response must be str")
    return f"[Query]: {query}\n[Response]: {response}"


class RewardModel(nn.Module):
    """Backbone (the causal LM's decoder) + a scalar head on the last real token's state.

    forward(input_ids (B, T), attention_mask (B, T), right-padded) -> rewards (B,).
    """

    def __init__(self, lm: HFCausalLM) -> None:
        super().__init__()
        if not isinstance(lm, HFCausalLM):
            raise TypeError(f"lm must be an HFCausalLM, got {type(lm).__name__}")
        self.backbone = copy.deepcopy(lm.model.model)
        self.head = nn.Linear(lm.model.config.hidden_size, 1)
        self.tokenizer = lm.tokenizer.hf
        self.context_length = lm.context_length

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask,
                               use_cache=False).last_hidden_state
        last = attention_mask.sum(dim=1) - 1  # index of each row's last real token
        return self.head(hidden[torch.arange(hidden.shape[0]), last]).squeeze(-1)

    def _batch(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        ids = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        ids = [[self.tokenizer.bos_token_id] + r for r in ids]
        if self.context_length is not None and max(len(r) for r in ids) > self.context_length:
            raise ValueError(f"a reward-model input exceeds the context_length="
                             f"{self.context_length}")
        width = max(len(r) for r in ids)
        dev = self.head.weight.device
        pad = self.tokenizer.pad_token_id
        x = torch.tensor([r + [pad] * (width - len(r)) for r in ids], device=dev)
        m = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ids], device=dev)
        return x, m

    def score(self, queries: Sequence[str], responses: Sequence[str],
              batch_size: int = 128) -> np.ndarray:
        """Rewards (n,) of each (query, response)."""
        qs, rs = list(queries), list(responses)
        if len(qs) != len(rs) or not qs:
            raise ValueError("queries and responses must be non-empty and of equal length")
        out = []
        self.eval()
        with torch.no_grad():
            for lo in range(0, len(qs), batch_size):
                texts = [reward_model_input(q, r) for q, r in
                         zip(qs[lo:lo + batch_size], rs[lo:lo + batch_size])]
                out.append(self(*self._batch(texts)).float().cpu().numpy())
        return np.concatenate(out).astype(np.float64)


def train_reward_model(lm: HFCausalLM, comparisons: Sequence[tuple[str, str, str]],
                       config: TinyJudgeConfig, seed: int = 0) -> tuple[RewardModel, list[float]]:
    """A Bradley-Terry reward model on ``comparisons`` (query, chosen, rejected), initialised
    from ``lm``'s weights; ``config.sft_steps`` AdamW steps of ``config.batch_size``
    comparisons (the judges' budget). Returns (model, per-step losses)."""
    data = list(comparisons)
    if not data or not all(isinstance(c, tuple) and len(c) == 3
                           and all(isinstance(x, str) for x in c) for c in data):
        raise TypeError("comparisons must be a non-empty sequence of (query, chosen, "
                        "rejected) str triples")
    rm = RewardModel(lm)
    fcfg = config.finetune_config(config.sft_steps, seed)
    opt = torch.optim.AdamW(rm.parameters(), lr=config.lr)
    gen = torch.Generator().manual_seed(int(seed))
    losses = []
    rm.train()
    for step in range(config.sft_steps):
        for group in opt.param_groups:
            group["lr"] = cosine_learning_rate(step, fcfg)
        pick = torch.randint(0, len(data), (config.batch_size,), generator=gen).tolist()
        texts = ([reward_model_input(data[i][0], data[i][1]) for i in pick]
                 + [reward_model_input(data[i][0], data[i][2]) for i in pick])
        r = rm(*rm._batch(texts))
        b = len(pick)
        loss = F.softplus(-(r[:b] - r[b:])).mean()  # -log sigma(r_w - r_l)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(rm.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    rm.eval()
    return rm, losses
