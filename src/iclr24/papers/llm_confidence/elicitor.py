"""The whole black-box pipeline of Xiong et al. (ICLR 2024), Fig. 1: prompting strategy ×
sampling strategy × aggregation strategy -> (answer, confidence) per question, plus the
white-box baseline (the token probability of the produced answer, Sec. 4.3 / Table 5).

:class:`ConfidenceElicitor` runs against any :class:`~iclr24.kits.language_models.TextBackend`
(our tiny models, SmolLM2, a local checkpoint, an OpenAI-compatible server). The white-box
baseline needs ``logprobs`` (local backends; a served model only if it returns them) and is
refused early otherwise. :func:`chat_formatter` wraps each user message in a Hugging Face chat
template, optionally after few-shot demonstrations (a scaled-down aid for small models; the
paper's prompts are zero-shot).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .aggregation import (
    Aggregate,
    avg_conf,
    consistency,
    pair_rank,
    topk_mean_probability,
    topk_top1_avg_conf,
)
from .sampling import Response, sample_batch

__all__ = ["AGGREGATORS", "ConfidenceElicitor", "ElicitationStats", "answer_token_probability",
           "chat_formatter"]

AGGREGATORS: tuple[str, ...] = ("verbalized", "consistency", "avg_conf", "pair_rank",
                                "topk_top1", "topk_mean")


def chat_formatter(hf_tokenizer, shots: Sequence[tuple[str, str]] = (),
                   system: str | None = None) -> Callable[[str], str]:
    """``user message -> chat text`` through ``hf_tokenizer.apply_chat_template`` with the
    generation prompt added; ``shots`` are (user, assistant) demonstration turns before it."""
    if not hasattr(hf_tokenizer, "apply_chat_template"):
        raise TypeError("hf_tokenizer must be a Hugging Face tokenizer with a chat template")
    head = [] if system is None else [{"role": "system", "content": system}]
    for user, assistant in shots:
        head += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]

    def fmt(message: str) -> str:
        return hf_tokenizer.apply_chat_template(head + [{"role": "user", "content": message}],
                                                tokenize=False, add_generation_prompt=True)

    return fmt


def answer_token_probability(lm, prompt: str, answer_text: str) -> float:
    """White-box confidence: p(answer tokens | prompt) = Π_t p(x_t | x_<t) over the tokens of
    ``answer_text`` as the model's continuation of ``prompt``."""
    if not getattr(lm, "supports_logprobs", False):
        raise ValueError("the white-box baseline needs token log-probabilities: this backend "
                         f"({type(lm).__name__}) does not return them (supports_logprobs is "
                         "False)")
    # conf = exp Σ_t log p(x_t | x_<t)
    return float(math.exp(sum(lm.logprobs(prompt, answer_text))))


@dataclass
class ElicitationStats:
    """Counts of the last :meth:`ConfidenceElicitor.predict`: responses, how many parsed fully
    (answer and confidence), how many had an answer, questions left without an answer, and of
    those (consistency/avg_conf), the ones with some parsed samples, but fewer than
    ``min_parsed`` or not the misleading sampler's hint-free one (the official code drops
    them)."""

    responses: int = 0
    parsed: int = 0
    answered: int = 0
    unanswered_questions: int = 0
    too_few_parsed: int = 0

    @property
    def parse_rate(self) -> float:
        return self.parsed / self.responses if self.responses else math.nan


@dataclass
class ConfidenceElicitor:
    """Black-box confidence elicitation: ``predict(questions) -> (answers, confidences)``.

    lm: a TextBackend. strategy: prompting strategy (:data:`.STRATEGIES`). sampler:
    ``self_random | paraphrase | misleading``. aggregator: one of :data:`AGGREGATORS`
    (``verbalized`` = the first response's stated confidence, M = 1 in the paper's vanilla
    setting; ``pair_rank``/``topk_*`` need ``strategy="topk"``). m: responses per question.
    Misleading sampling takes ŷ from the hint-free response (``consistency``/``avg_conf``).
    ``consistency``/``avg_conf`` count a sample only when both its answer and its confidence
    parsed (as the official code) and need ``min_parsed`` such samples per question (default:
    the official M − 1 for M >= 3, :func:`~.aggregation.official_min_parsed`). Unanswered
    questions get answer None and confidence 0: count them as wrong, or drop them as the
    official code does (``answer is None``), and say which.
    """

    lm: object
    strategy: str = "vanilla"
    sampler: str = "self_random"
    aggregator: str = "consistency"
    m: int = 5
    temperature: float = 0.7
    answer_type: str = "number"
    format_prompt: Callable[[str], str] | None = None
    answer_prefix: str = ""
    max_new_tokens: int | None = None
    stop: Sequence[str] | None = None
    pair_rank_objective: str = "paper"
    min_parsed: int | None = None
    stats: ElicitationStats = field(default_factory=ElicitationStats)
    responses: list[list[Response]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.aggregator not in AGGREGATORS:
            raise ValueError(f"aggregator must be one of {AGGREGATORS}, got "
                             f"{self.aggregator!r}")
        if self.aggregator in ("pair_rank", "topk_top1", "topk_mean") \
                and self.strategy != "topk":
            raise ValueError(f"aggregator={self.aggregator!r} needs strategy='topk'")
        if self.pair_rank_objective not in ("paper", "official"):
            raise ValueError("pair_rank_objective must be 'paper' or 'official'")
        if isinstance(self.m, bool) or not isinstance(self.m, int) or self.m < 1:
            raise ValueError(f"m must be an int >= 1 (responses per question), got {self.m!r}")
        if self.min_parsed is not None:
            if isinstance(self.min_parsed, bool) or not isinstance(self.min_parsed, int):
                raise TypeError(f"min_parsed must be an int or None, got "
                                f"{type(self.min_parsed).__name__}")
            if not 1 <= self.min_parsed <= self.m:
                raise ValueError(f"min_parsed must be in [1, m={self.m}], got "
                                 f"{self.min_parsed!r}")

    def _aggregate(self, rs: list[Response], seed: int) -> Aggregate:
        # a sample counts only when its answer and its confidence both parsed (official)
        answers = [r.answer if r.parsed else None for r in rs]
        confs = [r.confidence for r in rs]
        ref = self.sampler == "misleading"
        need = min(self.min_parsed, len(rs)) if self.min_parsed is not None else None
        if self.aggregator == "verbalized":
            return Aggregate(rs[0].answer, rs[0].confidence or 0.0)
        if self.aggregator == "consistency":
            return consistency(answers, answers[0] if ref else None, use_reference=ref,
                               min_parsed=need)
        if self.aggregator == "avg_conf":
            return avg_conf(answers, confs, answers[0] if ref else None, use_reference=ref,
                            min_parsed=need)
        lists = [list(r.guesses) for r in rs]
        probs = [list(r.probs) for r in rs]
        if self.aggregator == "topk_top1":
            return topk_top1_avg_conf(lists, probs)
        if self.aggregator == "topk_mean":
            return topk_mean_probability(lists, probs)
        if not any(g is not None for lst in lists for g in lst):
            return Aggregate(None, 0.0, len(rs))
        agg, _ = pair_rank(lists, self.pair_rank_objective, rng=seed)
        return agg

    def predict(self, questions: Sequence[str], references: Sequence | None = None,
                seed: int = 0) -> tuple[list[str | None], list[float]]:
        """Answers (None where nothing parsed) and confidences in [0, 1], one per question.
        references: true answers, used only by the misleading sampler to draw its hints."""
        m = 1 if self.aggregator == "verbalized" and self.sampler == "self_random" else self.m
        temperature = self.temperature
        self.responses = sample_batch(
            self.lm, questions, strategy=self.strategy, sampler=self.sampler, m=m,
            temperature=temperature, answer_type=self.answer_type, references=references,
            seed=seed, max_new_tokens=self.max_new_tokens, format_prompt=self.format_prompt,
            answer_prefix=self.answer_prefix, stop=self.stop)
        answers, confs = [], []
        stats = ElicitationStats()
        for rs in self.responses:
            stats.responses += len(rs)
            stats.parsed += sum(r.parsed for r in rs)
            stats.answered += sum(r.answer is not None for r in rs)
            agg = self._aggregate(rs, seed)
            stats.unanswered_questions += agg.answer is None
            stats.too_few_parsed += agg.answer is None and any(r.parsed for r in rs) \
                and self.aggregator in ("consistency", "avg_conf")
            answers.append(agg.answer)
            confs.append(agg.confidence if agg.answer is not None else 0.0)
        self.stats = stats
        return answers, confs
