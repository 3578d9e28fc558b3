"""The generative judge: Auto-J's protocols run on any text backend (Li et al., ICLR 2024,
Sec. 3-4; official ``codes/usage/example.py``).

:class:`GenerativeJudge` wraps a :class:`~iclr24.kits.language_models.TextBackend` (a tiny local
model, SmolLM2-135M-Instruct, a user's local copy of ``GAIR/autoj-13b`` through
``load_hf_checkpoint``, or an OpenAI-compatible server): it renders the ``pairwise_tie`` /
``single`` prompt in the judge's chat format, decodes greedily (temperature 0, up to
``max_new_tokens``; the official default is 1024) in batches, and parses the verdict or
rating. Pairwise comparisons run in both orders by default and map the swapped verdict back
(0 <-> 1). Unparsable outputs are counted in :attr:`GenerativeJudge.stats`, never raised.

``answer_prefix`` primes the reply (it is appended to the prompt and counted as the start of
the judgment): an option for very small models that never write the anchor on their own (the
paper's judges need none).

Chat format. The default ``chat_format="auto"`` (:func:`model_chat_format`) uses the model's
own template where it has one: a backend whose server applies the template itself (an
:class:`~iclr24.kits.language_models.OpenAICompatibleClient` on ``/chat/completions``) gets
the bare user message; a local Hugging Face model whose tokenizer carries a chat template
(SmolLM2, a user's instruction-tuned checkpoint) gets that template, generation prompt added;
anything else (Auto-J's own LLaMA-2 tokenizer, our tiny judges) gets Auto-J's LLaMA-2
``[INST]`` wrapper. A wrong wrapper silently ruins a chat model (SmolLM2 in the LLaMA-2
wrapper ends its turn at once: empty judgments).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .parsing import UNPARSED, parse_pairwise_verdict, parse_rating, swap_verdict
from .prompts import ChatFormat, build_prompt, wrap_chat

__all__ = ["GenerativeJudge", "JudgeStats", "PairwiseJudgment", "RatingJudgment",
           "model_chat_format"]


def _hf_tokenizer(lm):
    """The Hugging Face tokenizer behind a text backend (``LocalTextModel`` and
    ``PrefixCachedTextModel`` keep the local model as ``.lm``), or None."""
    for obj in (lm, getattr(lm, "lm", None)):
        hf = getattr(getattr(obj, "tokenizer", None), "hf", None)
        if hf is not None:
            return hf
    return None


def model_chat_format(lm) -> ChatFormat:
    """The chat format a judge over the text backend ``lm`` should use: ``"none"`` when the
    backend applies the model's template itself (``lm.applies_chat_template``: a chat
    endpoint), a callable rendering the tokenizer's own chat template (one user message,
    generation prompt added) when the local model has one, else Auto-J's ``"llama2"``."""
    if getattr(lm, "applies_chat_template", False):
        return "none"
    hf = _hf_tokenizer(lm)
    if hf is not None and getattr(hf, "chat_template", None):
        def own_template(message: str) -> str:
            return hf.apply_chat_template([{"role": "user", "content": message}],
                                          tokenize=False, add_generation_prompt=True)
        return own_template
    return "llama2"


@dataclass(frozen=True)
class PairwiseJudgment:
    """verdict: 0 / 1 / 2 / -1 in the original order; verdict_swapped: the verdict on the
    exchanged pair mapped back to the original order (None when ``swap=False``)."""

    verdict: int
    text: str
    verdict_swapped: int | None = None
    text_swapped: str | None = None

    @property
    def consistent(self) -> bool | None:
        """Both orders parsed and equal (None without a swapped run)."""
        if self.verdict_swapped is None:
            return None
        return self.verdict != UNPARSED and self.verdict == self.verdict_swapped


@dataclass(frozen=True)
class RatingJudgment:
    """rating: the parsed 1-10 rating (NaN when unparsed); text: the critique."""

    rating: float
    text: str

    @property
    def parsed(self) -> bool:
        return not math.isnan(self.rating)


@dataclass
class JudgeStats:
    """Counts of judge requests and unparsable outputs (counted, never raised)."""

    pairwise_requests: int = 0
    unparsed_verdicts: int = 0
    rating_requests: int = 0
    unparsed_ratings: int = 0

    @property
    def verdict_parse_rate(self) -> float:
        return (1 - self.unparsed_verdicts / self.pairwise_requests
                if self.pairwise_requests else math.nan)

    @property
    def rating_parse_rate(self) -> float:
        return (1 - self.unparsed_ratings / self.rating_requests
                if self.rating_requests else math.nan)


class GenerativeJudge:
    """A pairwise / single-rating judge over a text backend ``lm``.

    max_new_tokens: decoding budget per judgment (official: 1024); chat_format: ``"auto"``
    (the model's own template where it has one, else Auto-J's LLaMA-2 wrapper:
    :func:`model_chat_format`), ``"llama2"``, ``"none"`` or a callable
    (:func:`~.prompts.wrap_chat`); the resolved format is :attr:`chat_format`; batch_size:
    prompts per ``generate`` call; stop: optional stop strings; answer_prefix: primes the
    reply (text-completion backends only: a chat endpoint cannot continue a prefix).
    """

    def __init__(self, lm, max_new_tokens: int = 1024, *, chat_format: ChatFormat = "auto",
                 batch_size: int = 64, stop: Sequence[str] | None = None,
                 answer_prefix: str = "") -> None:
        if not callable(getattr(lm, "generate", None)) or not getattr(lm, "supports_generate",
                                                                      True):
            raise TypeError(f"lm must be a text backend with generate(), got "
                            f"{type(lm).__name__}")
        for name, value in (("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(answer_prefix, str):
            raise TypeError(f"answer_prefix must be a str, got {type(answer_prefix).__name__}")
        if answer_prefix and getattr(lm, "applies_chat_template", False):
            raise ValueError("answer_prefix needs a text-completion backend: a chat endpoint "
                             "starts the reply itself and cannot continue a prefix")
        if chat_format == "auto":
            chat_format = model_chat_format(lm)
        wrap_chat("", chat_format)  # validates chat_format
        self.lm = lm
        self.max_new_tokens = max_new_tokens
        self.chat_format = chat_format
        self.batch_size = batch_size
        self.stop = list(stop) if stop else None
        self.answer_prefix = answer_prefix
        self.stats = JudgeStats()

    def _generate(self, prompts: list[str]) -> list[str]:
        out: list[str] = []
        for lo in range(0, len(prompts), self.batch_size):
            chunk = [p + self.answer_prefix for p in prompts[lo:lo + self.batch_size]]
            texts = self.lm.generate(chunk, self.max_new_tokens, temperature=0.0, n=1,
                                     stop=self.stop)
            out.extend(self.answer_prefix + t[0] for t in texts)
        return out

    @staticmethod
    def _check_texts(values: Sequence[str], name: str, n: int | None = None) -> list[str]:
        if isinstance(values, str):
            raise TypeError(f"{name} must be a sequence of str, not one str")
        vals = list(values)
        if not all(isinstance(v, str) for v in vals):
            raise TypeError(f"{name} must hold only str")
        if n is not None and len(vals) != n:
            raise ValueError(f"{name} must have {n} entries (one per query), got {len(vals)}")
        return vals

    def compare_many(self, queries: Sequence[str], responses_1: Sequence[str],
                     responses_2: Sequence[str], swap: bool = True) -> list[PairwiseJudgment]:
        """Judge every (query, Response 1, Response 2), in both orders when ``swap``."""
        qs = self._check_texts(queries, "queries")
        if not qs:
            raise ValueError("queries must be non-empty")
        r1 = self._check_texts(responses_1, "responses_1", len(qs))
        r2 = self._check_texts(responses_2, "responses_2", len(qs))
        prompts = [build_prompt("pairwise_tie", q, a, b, self.chat_format)
                   for q, a, b in zip(qs, r1, r2)]
        if swap:
            prompts += [build_prompt("pairwise_tie", q, b, a, self.chat_format)
                        for q, a, b in zip(qs, r1, r2)]
        texts = self._generate(prompts)
        verdicts = [parse_pairwise_verdict(t) for t in texts]
        self.stats.pairwise_requests += len(texts)
        self.stats.unparsed_verdicts += sum(v == UNPARSED for v in verdicts)
        n = len(qs)
        if not swap:
            return [PairwiseJudgment(v, t) for v, t in zip(verdicts, texts)]
        return [PairwiseJudgment(verdicts[i], texts[i], swap_verdict(verdicts[n + i]),
                                 texts[n + i]) for i in range(n)]

    def compare(self, query: str, response_a: str, response_b: str,
                swap: bool = True) -> PairwiseJudgment:
        """One pairwise judgment (Response 1 = ``response_a``)."""
        return self.compare_many([query], [response_a], [response_b], swap=swap)[0]

    def rate_many(self, queries: Sequence[str], responses: Sequence[str]
                  ) -> list[RatingJudgment]:
        """Critique and rate every (query, response) with the ``single`` protocol."""
        qs = self._check_texts(queries, "queries")
        if not qs:
            raise ValueError("queries must be non-empty")
        rs = self._check_texts(responses, "responses", len(qs))
        texts = self._generate([build_prompt("single", q, r, chat_format=self.chat_format)
                                for q, r in zip(qs, rs)])
        out = [RatingJudgment(parse_rating(t), t) for t in texts]
        self.stats.rating_requests += len(out)
        self.stats.unparsed_ratings += sum(not j.parsed for j in out)
        return out

    def rate(self, query: str, response: str) -> RatingJudgment:
        """One single-response judgment."""
        return self.rate_many([query], [response])[0]
