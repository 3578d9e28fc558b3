"""Sampling strategies of Xiong et al. (ICLR 2024), Sec. 3.2: M responses per question.

- ``self_random``: the same prompt M times at temperature T > 0 (T = 0.7 here by default; the
  official scripts take it as ``--temperature_for_ensemble``);
- ``paraphrase`` ("Prompting" in the paper): M rewordings of the question (:func:`.paraphrase`;
  the paper lets an LLM paraphrase, ours are fixed frames);
- ``misleading``: response 0 has no hint (its answer is ŷ), responses 1..M−1 append a hint with a
  random wrong answer in the order of :data:`.HINT_PHRASES`, with the note that the stated
  confidence must be the model's own. The random answer follows the official
  ``generate_misleading_hint``: ``|a| + U{−|a|, …, |a|}`` for a numeric truth a (it may equal a,
  as there), a uniformly random option letter for multiple choice. The truth is needed only to
  draw the hint, as in the official code.

A response is parsed by the strategy's parser (:mod:`.parsing`); what does not parse stays in
the response as None and is counted by the caller, never raised. Prompts go to any
:class:`~iclr24.kits.language_models.TextBackend` in one batched ``generate`` call;
``format_prompt`` wraps the user message (e.g. in a chat template) and ``answer_prefix`` starts
the model's reply (response priming: the reply is parsed as prefix + completion).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from .parsing import parse_answer_confidence, parse_confidence, parse_multistep, parse_topk
from .prompts import ANSWER_TYPES, HINT_PHRASES, STRATEGIES, build_prompt, paraphrase

__all__ = ["SAMPLERS", "Response", "misleading_answer", "sample", "sample_batch"]

Sampler = Literal["self_random", "paraphrase", "misleading"]
SAMPLERS: tuple[str, ...] = ("self_random", "paraphrase", "misleading")
_MAX_NEW = {"vanilla": 32, "cot": 256, "multistep": 256, "topk": 96, "self_probing": 128}
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Response:
    """One sampled reply. answer/confidence: parsed (None if unparsable; confidence in [0, 1]).
    For ``topk``, answer/confidence are the first guess and its probability and ``guesses`` /
    ``probs`` the whole list; for ``self_probing``, ``text`` is the probing reply and
    ``answer_text`` the reply that proposed the answer."""

    prompt: str
    text: str
    answer: str | None
    confidence: float | None
    hint: str | None = None
    guesses: tuple[str | None, ...] = field(default=())
    probs: tuple[float | None, ...] = field(default=())
    answer_text: str | None = None

    @property
    def parsed(self) -> bool:
        return self.answer is not None and self.confidence is not None


def misleading_answer(truth: str | float, answer_type: str, rng: np.random.Generator,
                      n_options: int = 4) -> str:
    """A random hint answer: ``|a| + U{−|a|..|a|}`` (numbers; integer part of |a|) or a random
    letter among the first ``n_options`` (multiple choice)."""
    if answer_type == "number":
        try:
            a = abs(int(float(truth)))
        except (TypeError, ValueError):
            raise ValueError(f"misleading hints on numbers need a numeric truth, got {truth!r}"
                             ) from None
        return str(a + int(rng.integers(-a, a + 1)))
    if not 1 <= n_options <= 26:
        raise ValueError(f"n_options must be in 1..26, got {n_options!r}")
    return _LETTERS[int(rng.integers(n_options))]


def _parse(strategy: str, text: str, answer_type: str, k: int
           ) -> tuple[str | None, float | None, tuple, tuple]:
    if strategy in ("vanilla", "cot"):
        a, c = parse_answer_confidence(text, answer_type)
        return a, c, (), ()
    if strategy == "multistep":
        p = parse_multistep(text, answer_type)
        return p.answer, p.confidence, (), ()
    g, p = parse_topk(text, answer_type, k)
    first = g[0] if g else None
    return first, (p[0] if first is not None else None), tuple(g), tuple(p)


def sample_batch(lm, questions: Sequence[str], *, strategy: str = "vanilla",
                 sampler: str = "self_random", m: int = 5, temperature: float = 0.7,
                 top_p: float = 1.0, answer_type: str = "number",
                 references: Sequence | None = None, seed: int = 0,
                 max_new_tokens: int | None = None,
                 format_prompt: Callable[[str], str] | None = None, answer_prefix: str = "",
                 stop: Sequence[str] | None = None, k: int = 4, n_options: int = 4
                 ) -> list[list[Response]]:
    """M responses for each question: ``out[q][i]``. ``lm`` is a TextBackend.

    references: the true answers, needed by ``misleading`` (to draw wrong hints) only.
    seed: the backend's sampling seed and the hints' generator.
    """
    if not getattr(lm, "supports_generate", False) or not hasattr(lm, "generate"):
        raise TypeError(f"lm must be a TextBackend that supports generate, got "
                        f"{type(lm).__name__}")
    questions = list(questions)
    if not questions or not all(isinstance(q, str) and q.strip() for q in questions):
        raise ValueError("questions must be a non-empty sequence of non-empty strings")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"answer_type must be one of {ANSWER_TYPES}, got {answer_type!r}")
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m must be a positive int, got {m!r}")
    if sampler == "misleading":
        if references is None or len(references) != len(questions):
            raise ValueError("sampler='misleading' needs references (one true answer per "
                             "question) to draw the wrong hints")
        if m - 1 > len(HINT_PHRASES):
            raise ValueError(f"misleading sampling has {len(HINT_PHRASES)} hint phrasings, so "
                             f"m must be <= {len(HINT_PHRASES) + 1}, got {m}")
    if strategy == "self_probing" and sampler == "misleading":
        raise ValueError("self_probing takes no hint: use self_random or paraphrase")
    fmt = format_prompt or (lambda s: s)
    max_new = _MAX_NEW[strategy] if max_new_tokens is None else max_new_tokens
    rng = np.random.default_rng([int(seed), 7])
    base = "vanilla" if strategy == "self_probing" else strategy

    # one user message per (question, sample) or per question (self_random draws n = m)
    messages: list[list[tuple[str, str | None]]] = []
    for qi, q in enumerate(questions):
        if sampler == "self_random":
            messages.append([(build_prompt(q, base, answer_type, k=k), None)])
        elif sampler == "paraphrase":
            messages.append([(build_prompt(paraphrase(q, i), base, answer_type, k=k), None)
                             for i in range(m)])
        else:
            row = [(build_prompt(q, base, answer_type, k=k), None)]
            for i in range(1, m):
                hint = HINT_PHRASES[i - 1] + misleading_answer(references[qi], answer_type,
                                                               rng, n_options)
                row.append((build_prompt(q, base, answer_type, hint=hint, k=k), hint))
            messages.append(row)
    flat = [msg for row in messages for msg in row]
    n = m if sampler == "self_random" else 1
    texts = lm.generate([fmt(p) + answer_prefix for p, _ in flat], max_new,
                        temperature=temperature, top_p=top_p, n=n, stop=stop, seed=seed)
    replies = [[answer_prefix + t for t in ts] for ts in texts]

    out: list[list[Response]] = []
    pos = 0
    for row in messages:
        responses = []
        for prompt, hint in row:
            for text in replies[pos]:
                a, c, g, p = _parse(base, text, answer_type, k)
                responses.append(Response(prompt, text, a, c, hint, g, p))
            pos += 1
        out.append(responses)
    if strategy != "self_probing":
        return out

    # self-probing: a fresh query per proposed answer asks how likely it is correct
    probes = [(qi, i) for qi, rs in enumerate(out) for i, r in enumerate(rs)
              if r.answer is not None]
    if probes:
        probe_texts = lm.generate(
            [fmt(build_prompt(questions[qi], "self_probing", answer_type,
                              proposed_answer=out[qi][i].answer)) for qi, i in probes],
            _MAX_NEW["self_probing"] if max_new_tokens is None else max_new_tokens,
            temperature=temperature, top_p=top_p, n=1, stop=None, seed=seed + 1)
        probed = {key: t[0] for key, t in zip(probes, probe_texts)}
    else:
        probed = {}
    final = []
    for qi, rs in enumerate(out):
        row = []
        for i, r in enumerate(rs):
            text = probed.get((qi, i), "")
            conf = parse_confidence(text) if (qi, i) in probed else None
            row.append(Response(r.prompt, text, r.answer, conf, None, (), (), r.text))
        final.append(row)
    return final


def sample(lm, question: str, strategy: str = "vanilla", sampler: str = "self_random",
           m: int = 5, temperature: float = 0.7, *, seed: int = 0, reference=None,
           **kwargs) -> list[Response]:
    """M responses to one question (see :func:`sample_batch` for the keyword arguments)."""
    refs = None if reference is None else [reference]
    return sample_batch(lm, [question], strategy=strategy, sampler=sampler, m=m,
                        temperature=temperature, references=refs, seed=seed, **kwargs)[0]
