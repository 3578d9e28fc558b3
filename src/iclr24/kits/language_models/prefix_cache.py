"""Batched generation with cached prompt prefixes and scored samples, for harnesses whose
prompts share long fixed demonstrations (Chain-of-Table's operation demos, llm_confidence's
few-shot chat turns) on a local Hugging Face model (SmolLM2-135M-Instruct here).

:class:`PrefixCachedTextModel` is a :class:`~iclr24.kits.language_models.TextBackend` that gives
the same texts as :class:`~iclr24.kits.language_models.LocalTextModel` (greedy and seeded
samples; a test checks it) with less prefill: it groups a batch's prompts by their common
token prefix (at least ``min_shared`` tokens), runs each prefix once, keeps the last
``max_cached`` prefix key/value caches across calls (the same demos come back at every step
and for every question; a cached prefix that shares only its beginning with a new one is
cropped to the shared part and extended) and feeds each group's remainders in one
left-padded, masked pass with per-row positions, then samples the rows in lockstep (nucleus
sampling seeded per (seed, prompt i, sample j), stop strings, EOS).

:meth:`PrefixCachedTextModel.generate_scored` also returns each completion's summed token
log-probability under the untempered model (what Chain-of-Table's voting steps need, the
official code's ``generate_plus_with_score``), without a second pass. The scored tokens are
those generated up to the stop (the text is cut before the stop string, the score keeps the
tokens that completed it).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from .text_backend import check_generate_args, nucleus_sample

__all__ = ["PrefixCachedTextModel"]


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    k, m = 0, min(len(a), len(b))
    while k < m and a[k] == b[k]:
        k += 1
    return k


class PrefixCachedTextModel:
    """TextBackend over an :class:`~iclr24.kits.language_models.HFCausalLM` with shared-prefix
    caching and scored samples. ``max_batch``: rows per lockstep group; ``min_shared``: the
    fewest common tokens for prompts to share a prefix pass; ``max_cached``: prefix caches
    kept between calls (each ~46 kB per token for SmolLM2-135M)."""

    supports_generate = True
    supports_logprobs = True

    def __init__(self, lm, *, max_batch: int = 8, min_shared: int = 32,
                 max_cached: int = 12) -> None:
        from .text_backend import LocalTextModel

        for attr in ("model", "tokenizer", "start_id", "vocab_size", "_cache_kwarg"):
            if not hasattr(lm, attr):
                raise TypeError(f"lm must be an HFCausalLM (missing {attr!r}), got "
                                f"{type(lm).__name__}")
        for name, v in (("max_batch", max_batch), ("min_shared", min_shared),
                        ("max_cached", max_cached)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.lm = lm
        self.max_batch, self.min_shared, self.max_cached = max_batch, min_shared, max_cached
        self._local = LocalTextModel(lm)
        self.stop_ids = self._local.stop_ids
        self._memo: OrderedDict[tuple[int, ...], object] = OrderedDict()
        self.prefill_tokens = 0  # tokens run through the model (prefixes + remainders)

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        return self._local.logprobs(prompt, continuation)

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` completions per prompt: ``out[i][j]``, cut before the first stop string."""
        scored = self.generate_scored(prompts, max_new_tokens, temperature=temperature,
                                      top_p=top_p, n=n, stop=stop, seed=seed)
        return [[t for t, _ in row] for row in scored]

    def _forward(self, ids, cache, **kwargs):
        import torch

        with torch.no_grad():
            out = self.lm.model(input_ids=ids, use_cache=True,
                                **{self.lm._cache_kwarg: cache}, **kwargs)
        self.prefill_tokens += int(ids.shape[0] * ids.shape[1]) if ids.shape[1] > 1 else 0
        return out.logits[:, -1, :self.lm.vocab_size], getattr(out, self.lm._cache_kwarg)

    def _prefix(self, tokens: tuple[int, ...]):
        """The key/value cache after ``tokens``: the memoised cache sharing the longest
        prefix with them (cropped to it), extended by the rest."""
        import torch
        from transformers import DynamicCache

        best, k = (), 0
        for key in self._memo:
            m = _lcp(key, tokens)
            if m > k:
                best, k = key, m
        if k == len(tokens) == len(best):
            self._memo.move_to_end(best)
            return self._memo[best]
        if k >= self.min_shared:
            cache = copy.deepcopy(self._memo[best])
            if k < len(best):
                cache.crop(k)
        else:
            cache, k = DynamicCache(), 0
        if k == len(tokens):  # a proper prefix of a cached key: the cropped copy is it
            self._memo[tokens] = cache
        else:
            _, self._memo[tokens] = self._forward(
                torch.tensor([tokens[k:]], device=self.lm.device), cache)
        while len(self._memo) > self.max_cached:
            self._memo.popitem(last=False)
        return self._memo[tokens]

    def generate_scored(self, prompts: Sequence[str], max_new_tokens: int, *,
                        temperature: float = 0.0, top_p: float = 1.0, n: int = 1,
                        stop: Sequence[str] | None = None, seed: int | None = None
                        ) -> list[list[tuple[str, float]]]:
        """``out[i][j] = (text, sum of the generated tokens' log-probabilities)``."""
        prompts, stops = check_generate_args(prompts, max_new_tokens, temperature, top_p, n,
                                             stop)
        ids = [[self.lm.start_id] + self._local._ids(p, f"prompts[{i}]")
               for i, p in enumerate(prompts)]
        ctx = self.lm.context_length
        for i, t in enumerate(ids):
            if ctx is not None and len(t) - 1 + max_new_tokens > ctx:
                raise ValueError(f"prompts[{i}] has {len(t) - 1} tokens; with max_new_tokens="
                                 f"{max_new_tokens} it exceeds the model's context_length={ctx}")
        out: list[list[tuple[str, float]]] = [[("", 0.0)] * n for _ in prompts]
        if max_new_tokens == 0:
            return out
        groups: list[tuple[int, list[int]]] = []  # (shared length, prompt indices)
        for i in sorted(range(len(ids)), key=lambda i: ids[i]):
            if groups:
                shared, members = groups[-1]
                k = _lcp(ids[members[0]][:shared], ids[i])
                if k >= self.min_shared:
                    groups[-1] = (k, members + [i])
                    continue
            groups.append((len(ids[i]), [i]))
        base = 0 if seed is None else int(seed)
        for shared, members in groups:
            shared = min([shared] + [len(ids[i]) - 1 for i in members])
            prefix = self._prefix(tuple(ids[members[0]][:shared])) if shared else None
            rows = [(i, j) for i in members for j in range(n)]
            for g0 in range(0, len(rows), self.max_batch):
                chunk = rows[g0:g0 + self.max_batch]
                res = self._run_chunk(prefix, shared, [ids[i][shared:] for i, _ in chunk],
                                      [np.random.default_rng([base, i, j]) for i, j in chunk],
                                      max_new_tokens, temperature, top_p, stops)
                for (i, j), r in zip(chunk, res):
                    out[i][j] = r
        return out

    def _run_chunk(self, prefix, shared, rests, rngs, max_new, temperature, top_p, stops):
        import torch
        from transformers import DynamicCache

        dev = self.lm.device
        b = len(rests)
        if prefix is None:
            cache = DynamicCache()
        else:
            cache = copy.deepcopy(prefix)
            cache.batch_repeat_interleave(b)
        longest = max(len(r) for r in rests)
        pads = [longest - len(r) for r in rests]
        inp = torch.tensor([[self.lm.start_id] * k + r for k, r in zip(pads, rests)],
                           dtype=torch.long, device=dev)
        new_mask = torch.tensor([[0] * k + [1] * len(r) for k, r in zip(pads, rests)],
                                dtype=torch.long, device=dev)
        mask = torch.cat([torch.ones(b, shared, dtype=torch.long, device=dev), new_mask], 1)
        pos = (shared + new_mask.cumsum(1) - 1).clamp(min=shared)
        logits, cache = self._forward(inp, cache, attention_mask=mask, position_ids=pos)
        next_pos = torch.tensor([shared + len(r) for r in rests], dtype=torch.long, device=dev)
        new: list[list[int]] = [[] for _ in range(b)]
        scores = [0.0] * b
        done = [False] * b
        for step in range(max_new):
            lp = torch.log_softmax(logits.float(), dim=-1).double().cpu().numpy()
            toks = []
            for r in range(b):
                tok = 0 if done[r] else nucleus_sample(lp[r], temperature, top_p, rngs[r])
                toks.append(tok)
                if done[r]:
                    continue
                if tok in self.stop_ids:
                    done[r] = True
                    continue
                new[r].append(tok)
                scores[r] += float(lp[r, tok])
                if stops and any(s in self._local._text(new[r]) for s in stops):
                    done[r] = True
            if all(done) or step + 1 == max_new:
                break
            mask = torch.cat([mask, torch.ones(b, 1, dtype=torch.long, device=dev)], 1)
            logits, cache = self._forward(torch.tensor(toks, device=dev)[:, None], cache,
                                          attention_mask=mask, position_ids=next_pos[:, None])
            next_pos = next_pos + 1
        res = []
        for r in range(b):
            text = self._local._text(new[r])
            cut = min((text.find(s) for s in stops if s in text), default=-1)
            res.append((text[:cut] if cut >= 0 else text, scores[r]))
        return res
