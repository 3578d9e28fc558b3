"""Step 1 of FuseLLM: each source model's top-k next-token distributions over the corpus.

FuseLLM (Wan et al., ICLR 2024, Sec. 3.2-3.3; official ``FuseLLM/src/utils/forward_for_logits``)
runs every source LLM once over the fusion corpus and keeps, at every position, the top-k
(k = 10) logits with their token ids, plus the sequence-level score ``CE_s`` (the mean token
cross-entropy of the source on the text), which selects or weights the sources at fusion
time. Storing the full vocabulary distribution is infeasible at scale; the sparse top-k is
scattered into the target vocabulary per batch.

How this file maps to it.
- :class:`TopKRecord`: one text under one model: ``token_ids`` (T,), ``topk_ids`` (T, k),
  ``topk_logits`` (T, k) sorted high to low, ``seq_ce`` (nats per token).
- :func:`record_topk`: batched forward passes (right padding is harmless in a causal model);
  works on the kit's :class:`~iclr24.kits.language_models.CausalTransformer`, on
  :class:`~iclr24.kits.language_models.HFCausalLM` (SmolLM2, a local checkpoint) and on any
  backend with ``log_probs(tokens)``.

Position convention: row t is the distribution of token t given the start symbol and tokens
``[:t]`` (the kit's models read ``[BOS, x_0, ..., x_{T-2}]``), i.e. Hugging Face's "logits at
position j predict token j+1" on the BOS-prefixed sequence. The stored "logits" are
log-probabilities (log-softmax of the logits): a softmax over the kept top-k is the same
either way, since the two differ by a constant per row.

Out of reach: the paper's sources (Llama-2-7B, OpenLLaMA-7B, MPT-7B) and 2,048-token blocks of
MiniPile; here the sources are tiny transformers trained in the claims and SmolLM2-135M-Instruct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .vocabulary import TokenVocab

__all__ = ["TopKRecord", "record_topk", "sequence_log_probs"]


@dataclass(frozen=True)
class TopKRecord:
    """One text under one model.

    token_ids: (T,) the model's tokens of ``text``.
    topk_ids: (T, k) int64, row t = the k most likely ids for token t.
    topk_logits: (T, k) float32 log-probabilities of those ids, descending along k.
    seq_ce: mean cross-entropy of the model on the text (nats per token), FuseLLM's ``CE_s``.
    """

    text: str
    token_ids: np.ndarray
    topk_ids: np.ndarray
    topk_logits: np.ndarray
    seq_ce: float

    def __post_init__(self) -> None:
        ids = np.asarray(self.token_ids, dtype=np.int64)
        tid = np.asarray(self.topk_ids, dtype=np.int64)
        tlg = np.asarray(self.topk_logits, dtype=np.float32)
        if ids.ndim != 1:
            raise ValueError(f"token_ids must be 1-D, got shape {ids.shape}")
        if tid.ndim != 2 or tid.shape != tlg.shape:
            raise ValueError(f"topk_ids and topk_logits must both be (T, k), got {tid.shape} "
                             f"and {tlg.shape}")
        if tid.shape[0] != ids.shape[0]:
            raise ValueError(f"top-k record has {tid.shape[0]} rows but the text has "
                             f"{ids.shape[0]} tokens: one row per token is needed")
        object.__setattr__(self, "token_ids", ids)
        object.__setattr__(self, "topk_ids", tid)
        object.__setattr__(self, "topk_logits", tlg)
        object.__setattr__(self, "seq_ce", float(self.seq_ce))

    def __len__(self) -> int:
        return int(self.token_ids.shape[0])

    @property
    def k(self) -> int:
        return int(self.topk_ids.shape[1])


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of str, not one str (wrap it in a list)")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
        if not t:
            raise ValueError(f"texts[{i}] is empty: every text needs at least one token")
    return out


def sequence_log_probs(lm: Any, token_lists: Sequence[Sequence[int]], batch_size: int = 64
                       ) -> list[torch.Tensor]:
    """Log-probabilities (T_i, V) of every token position of every sequence under ``lm``
    (a kit ``CausalTransformer``, an ``HFCausalLM`` or any backend with ``log_probs``);
    row t = log p(· | start, tokens[:t])."""
    from iclr24.kits.language_models import CausalTransformer, HFCausalLM

    out: list[torch.Tensor] = []
    if isinstance(lm, CausalTransformer):
        device = next(lm.parameters()).device
        for b in range(0, len(token_lists), batch_size):
            chunk = token_lists[b:b + batch_size]
            t_max = max(len(s) for s in chunk)
            if t_max > lm.config.context_length:
                raise ValueError(f"a text of {t_max} tokens exceeds the model's "
                                 f"context_length={lm.config.context_length}")
            x = torch.zeros(len(chunk), t_max, dtype=torch.long, device=device)
            for r, s in enumerate(chunk):
                x[r, :len(s)] = torch.as_tensor(list(s), dtype=torch.long)
            was_training = lm.training
            lm.eval()
            with torch.no_grad():
                logp = torch.log_softmax(lm(lm.shift_right(x)).float(), dim=-1)
            lm.train(was_training)
            out.extend(logp[r, :len(s)].cpu() for r, s in enumerate(chunk))
        return out
    if isinstance(lm, HFCausalLM):
        for b in range(0, len(token_lists), batch_size):
            chunk = token_lists[b:b + batch_size]
            t_max = max(len(s) for s in chunk)
            x = torch.full((len(chunk), t_max), lm.start_id, dtype=torch.long, device=lm.device)
            for r, s in enumerate(chunk):
                x[r, 1:len(s)] = torch.as_tensor(list(s)[:-1], dtype=torch.long)
            with torch.no_grad():
                logits = lm.model(input_ids=x, use_cache=False).logits[..., :lm.vocab_size]
            logp = torch.log_softmax(logits.float(), dim=-1)
            out.extend(logp[r, :len(s)].cpu() for r, s in enumerate(chunk))
        return out
    if hasattr(lm, "log_probs"):
        return [torch.as_tensor(np.asarray(lm.log_probs(list(s))), dtype=torch.float32)
                for s in token_lists]
    raise TypeError("lm must be a CausalTransformer, an HFCausalLM or a backend with "
                    f"log_probs(tokens); got {type(lm).__name__}")


def record_topk(lm: Any, tokenizer: Any, texts: Sequence[str], k: int = 10,
                batch_size: int = 64) -> list[TopKRecord]:
    """Top-k next-token log-probabilities of ``lm`` at every token of every text.

    lm: a kit ``CausalTransformer``, an ``HFCausalLM`` or a backend with ``log_probs``.
    tokenizer: the model's tokenizer (anything :meth:`TokenVocab.of` accepts).
    k: entries kept per position (the paper's 10); k < 1 or above the vocabulary is refused.
    Returns one :class:`TopKRecord` per text, ``seq_ce`` = mean NLL (nats/token) of the text.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
    vocab = TokenVocab.of(tokenizer)
    texts = _check_texts(texts)
    token_lists = [vocab.encode(t) for t in texts]
    for i, toks in enumerate(token_lists):
        if not toks:
            raise ValueError(f"texts[{i}] encodes to no tokens")
    logps = sequence_log_probs(lm, token_lists, batch_size)
    records = []
    for text, toks, logp in zip(texts, token_lists, logps):
        if k > logp.shape[-1]:
            raise ValueError(f"k={k} exceeds the model's vocabulary of {logp.shape[-1]}")
        ids = torch.as_tensor(toks, dtype=torch.long)
        top = torch.topk(logp, k, dim=-1)  # sorted, highest first
        ce = -logp.gather(1, ids[:, None]).mean()  # CE_s = -1/T Σ_t log p(x_t | x_<t)
        records.append(TopKRecord(text, ids.numpy(), top.indices.numpy(),
                                  top.values.numpy(), float(ce)))
    return records
