"""Text in, text out: the interface the evaluation harnesses program against.

A harness (a judge, a confidence elicitor, an agent loop) needs two things from a model:
sampled completions of prompts and, where a method reads them, log-probabilities of a given
continuation. :class:`TextBackend` names them, with capability flags so a harness can refuse
early (``supports_logprobs``). Two implementations:

- :class:`LocalTextModel` over any local :class:`~.backends.NextTokenBackend` (our tiny models,
  SmolLM2, a user's checkpoint): up to ``max_batch`` rows (prompt × sample) run in lockstep
  through one KV-cached session, prefilled in one forward pass where the session can. Hugging
  Face sessions take prompts of unequal length (left-padded and masked, rows sorted by length
  so batches waste little padding); other backends batch prompts of equal token length;
  nucleus (top-p) sampling at a temperature, or greedy at 0; stop strings cut the text (the
  row stops once one appears).
- :class:`~.openai_client.OpenAICompatibleClient` for a served model.

Samples are reproducible: row (prompt i, sample j) draws from its own generator seeded with
(seed, i, j), whatever the grouping (a padded batch can change a logit in its last float bits,
so a near-tie may resolve differently in a different batch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["LocalTextModel", "TextBackend", "check_generate_args", "nucleus_sample"]


@runtime_checkable
class TextBackend(Protocol):
    supports_generate: bool
    supports_logprobs: bool

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]: ...

    def logprobs(self, prompt: str, continuation: str) -> list[float]: ...


def check_generate_args(prompts: Sequence[str], max_new_tokens: int, temperature: float,
                        top_p: float, n: int, stop: Sequence[str] | None
                        ) -> tuple[list[str], list[str]]:
    """Validate :meth:`TextBackend.generate`'s arguments (a clear ``ValueError`` naming the
    bad one) and return ``(prompts as a list, the non-empty stop strings)``."""
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts must be a non-empty sequence of strings")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got "
                         f"{temperature}, {top_p}")
    return prompts, [s for s in (stop or []) if s]


def nucleus_sample(log_probs: np.ndarray, temperature: float, top_p: float,
                   rng: np.random.Generator) -> int:
    """One id from log-probabilities (V,): greedy at temperature 0, else the smallest set of
    most likely ids whose tempered probability reaches ``top_p``, renormalised."""
    if temperature < 0 or not 0 < top_p <= 1:
        raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {temperature}, "
                         f"{top_p}")
    if temperature == 0:
        return int(np.argmax(log_probs))
    z = log_probs / temperature
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1:
        order = np.argsort(-p, kind="stable")
        keep = order[:int(np.searchsorted(np.cumsum(p[order]), top_p)) + 1]
        q = np.zeros_like(p)
        q[keep] = p[keep]
        p = q / q.sum()
    return int(rng.choice(p.size, p=p))


class LocalTextModel:
    """:class:`TextBackend` over a local next-token backend ``lm`` (its tokenizer maps UTF-8
    bytes to ids). ``stop_ids`` (default: the tokenizer's EOS where it has one) end a row too.
    """

    supports_generate = True
    supports_logprobs = True

    def __init__(self, lm, *, stop_ids: Sequence[int] | None = None, max_batch: int = 16) -> None:
        for attr in ("session", "log_probs", "tokenizer", "vocab_size"):
            if not hasattr(lm, attr):
                raise TypeError(f"lm must be a next-token backend (missing {attr!r}), got "
                                f"{type(lm).__name__}")
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
        self.lm = lm
        self.max_batch = max_batch
        if stop_ids is None:
            eos = getattr(getattr(lm.tokenizer, "hf", None), "eos_token_id", None)
            stop_ids = () if eos is None else (int(eos),)
        self.stop_ids = frozenset(int(t) for t in stop_ids)

    def _ids(self, text: str, name: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
        return list(self.lm.tokenizer.encode(text.encode("utf-8")))

    def _text(self, ids: Sequence[int]) -> str:
        return self.lm.tokenizer.decode(list(ids)).decode("utf-8", errors="replace")

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` completions per prompt: ``out[i][j]``, cut before the first stop string."""
        prompts, stops = check_generate_args(prompts, max_new_tokens, temperature, top_p, n,
                                             stop)
        ids = [self._ids(p, f"prompts[{i}]") for i, p in enumerate(prompts)]
        ctx = getattr(self.lm, "context_length", None)
        for i, t in enumerate(ids):
            if ctx is not None and len(t) + max_new_tokens > ctx:
                raise ValueError(f"prompts[{i}] has {len(t)} tokens; with max_new_tokens="
                                 f"{max_new_tokens} it exceeds the model's context_length={ctx}")
        out: list[list[str]] = [[""] * n for _ in prompts]
        padded = getattr(self.lm, "padded_prefill", False)
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        groups: dict[int, list[tuple[int, int]]] = {}  # by length, or -1: every padded prompt
        for i in order:
            key = -1 if padded and ids[i] else len(ids[i])
            groups.setdefault(key, []).extend((i, j) for j in range(n))
        base = 0 if seed is None else int(seed)
        for members in groups.values():
            for lo in range(0, len(members), self.max_batch):
                rows = members[lo:lo + self.max_batch]
                texts = self._lockstep([ids[i] for i, _ in rows], max_new_tokens, temperature,
                                       top_p, stops,
                                       [np.random.default_rng([base, i, j]) for i, j in rows])
                for (i, j), text in zip(rows, texts):
                    out[i][j] = text
        return out

    def _lockstep(self, rows: list[list[int]], max_new: int, temperature: float, top_p: float,
                  stops: list[str], rngs: list[np.random.Generator]) -> list[str]:
        sess = self.lm.session(len(rows))
        if all(rows) and hasattr(sess, "prefill"):
            sess.prefill(rows)
        else:  # equal lengths here (backends without padded prefill are grouped by length)
            for t in range(len(rows[0])):
                sess.next_log_probs()
                sess.feed([r[t] for r in rows])
        new: list[list[int]] = [[] for _ in rows]
        done = [False] * len(rows)
        for step in range(max_new):
            lp = sess.next_log_probs()
            toks = []
            for b in range(len(rows)):
                tok = nucleus_sample(lp[b], temperature, top_p, rngs[b]) if not done[b] else 0
                toks.append(tok)
                if done[b]:
                    continue
                if tok in self.stop_ids:
                    done[b] = True
                    continue
                new[b].append(tok)
                if stops and any(s in self._text(new[b]) for s in stops):
                    done[b] = True
            if all(done) or step + 1 == max_new:
                break
            sess.feed(toks)
        texts = [self._text(t) for t in new]
        for k, text in enumerate(texts):
            cut = min((text.find(s) for s in stops if s in text), default=-1)
            texts[k] = text[:cut] if cut >= 0 else text
        return texts

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        """log p of each continuation token after the prompt. Tokens are the prompt's followed
        by the continuation's where tokenising the concatenation would merge across the
        boundary (so the continuation is always scored as its own tokens)."""
        p = self._ids(prompt, "prompt")
        c = self._ids(continuation, "continuation")
        if not c:
            raise ValueError("continuation must be a non-empty string")
        full = self._ids(prompt + continuation, "prompt")
        if full[:len(p)] == p and len(full) > len(p):
            c = full[len(p):]
        toks = p + c
        ctx = getattr(self.lm, "context_length", None)
        if ctx is not None and len(toks) > ctx:
            raise ValueError(f"prompt + continuation is {len(toks)} tokens, longer than the "
                             f"model's context_length={ctx}")
        lp = self.lm.log_probs(toks)
        return [float(lp[len(p) + k, t]) for k, t in enumerate(c)]
