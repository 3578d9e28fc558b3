"""Generation that computes a shared prompt prefix once (for Hugging Face models).

The elicitation prompts are long and alike: the chat template, the strategy's instructions
and any demonstrations come before the question (the official ``{description}\\n{note}\\n
Question: {q}`` layout), so every prompt of a batch starts with the same ~250 tokens and only
~15 differ. :class:`SharedPrefixTextModel` runs the longest common token prefix of a batch
once, copies its key/value cache to each group of rows whose remainders have equal length,
feeds the remainders in one pass and samples the rows in lockstep. It satisfies the kit's
:class:`~iclr24.kits.language_models.TextBackend` protocol with the sampling of
:class:`~iclr24.kits.language_models.LocalTextModel` (nucleus sampling, a generator per
(seed, prompt i, sample j), stop strings and EOS); ``logprobs`` is LocalTextModel's. On a
2-core CPU it cuts SmolLM2-135M's prefill of such a batch ~15x. (A candidate for the kit.)
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from iclr24.kits.language_models.text_backend import check_generate_args, nucleus_sample

__all__ = ["SharedPrefixTextModel"]


class SharedPrefixTextModel:
    """TextBackend over an :class:`~iclr24.kits.language_models.HFCausalLM` (``lm.model`` a
    transformers causal LM, ``lm.tokenizer`` the kit's HFTokenizer). ``max_batch`` bounds the
    rows of one lockstep group."""

    supports_generate = True
    supports_logprobs = True

    def __init__(self, lm, *, max_batch: int = 32) -> None:
        from iclr24.kits.language_models import LocalTextModel

        for attr in ("model", "tokenizer", "start_id", "vocab_size"):
            if not hasattr(lm, attr):
                raise TypeError(f"lm must be an HFCausalLM (missing {attr!r}), got "
                                f"{type(lm).__name__}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
        self.lm = lm
        self.max_batch = max_batch
        self._local = LocalTextModel(lm)
        self.stop_ids = self._local.stop_ids

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        return self._local.logprobs(prompt, continuation)

    def _forward(self, ids, cache):
        import torch

        kwargs = {self.lm._cache_kwarg: cache}
        with torch.no_grad():
            out = self.lm.model(input_ids=ids, use_cache=True, **kwargs)
        return out.logits[:, -1, :self.lm.vocab_size], getattr(out, self.lm._cache_kwarg)

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` completions per prompt: ``out[i][j]``, cut before the first stop string."""
        import torch
        from transformers import DynamicCache

        prompts, stops = check_generate_args(prompts, max_new_tokens, temperature, top_p, n,
                                             stop)
        ids = [[self.lm.start_id] + self._local._ids(p, f"prompts[{i}]")
               for i, p in enumerate(prompts)]
        ctx = self.lm.context_length
        for i, t in enumerate(ids):
            if ctx is not None and len(t) - 1 + max_new_tokens > ctx:
                raise ValueError(f"prompts[{i}] has {len(t) - 1} tokens; with max_new_tokens="
                                 f"{max_new_tokens} it exceeds the model's context_length={ctx}")
        out: list[list[str]] = [[""] * n for _ in prompts]
        if max_new_tokens == 0:
            return out
        # longest common prefix, leaving every prompt at least one token of its own
        shared = min(len(t) for t in ids) - 1
        for t in ids[1:]:
            k = 0
            while k < shared and t[k] == ids[0][k]:
                k += 1
            shared = k
        device = self.lm.device
        prefix_cache = None
        if shared:
            _, prefix_cache = self._forward(torch.tensor([ids[0][:shared]], device=device),
                                            DynamicCache())
        base = 0 if seed is None else int(seed)
        rows = [(i, j) for i in range(len(prompts)) for j in range(n)]
        by_len: dict[int, list[tuple[int, int]]] = {}
        for i, j in rows:
            by_len.setdefault(len(ids[i]) - shared, []).append((i, j))
        for group_all in by_len.values():
            for g0 in range(0, len(group_all), self.max_batch):
                group = group_all[g0:g0 + self.max_batch]
                if prefix_cache is None:
                    cache = DynamicCache()
                else:
                    cache = copy.deepcopy(prefix_cache)
                    cache.batch_repeat_interleave(len(group))
                rest = torch.tensor([ids[i][shared:] for i, _ in group], device=device)
                logits, cache = self._forward(rest, cache)
                rngs = [np.random.default_rng([base, i, j]) for i, j in group]
                texts = self._decode(logits, cache, rngs, max_new_tokens, temperature, top_p,
                                     stops)
                for (i, j), text in zip(group, texts):
                    out[i][j] = text
        return out

    def _decode(self, logits, cache, rngs, max_new, temperature, top_p, stops) -> list[str]:
        import torch

        b = len(rngs)
        new: list[list[int]] = [[] for _ in range(b)]
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
                if stops and any(s in self._local._text(new[r]) for s in stops):
                    done[r] = True
            if all(done) or step + 1 == max_new:
                break
            logits, cache = self._forward(torch.tensor(toks, device=self.lm.device)[:, None],
                                          cache)
        texts = [self._local._text(t) for t in new]
        for k, text in enumerate(texts):
            cut = min((text.find(s) for s in stops if s in text), default=-1)
            texts[k] = text[:cut] if cut >= 0 else text
        return texts
