"""Training judgments for the judge's supervised fine-tuning (Li et al., ICLR 2024, Sec. 3.2-3.3).

In the paper GPT-4 writes the judgments: pairwise comparisons (3,436 kept, only those whose
verdict agrees with the human label) and single-response critiques with a 1-10 rating (960);
for exam-type scenarios GPT-4 first solves the problem, then judges. Here the teacher is a rule
that knows the synthetic truth (:mod:`.testbed`): it first states the correct answer (as GPT-4
solves exam questions first), then describes each response by its kind, then concludes in the
protocol's exact form (``So, the final decision is Response k`` / ``Tie``; ``Rating: [[k]]``
with k = round(1 + 9 q)). :func:`make_judge_sft_examples` renders (prompt, target) pairs with
the ``pairwise_tie`` or ``single`` template and, with ``swap=True``, also every pair in the
exchanged order; judgments supplied from elsewhere (another teacher) are filtered to those
that agree with the label, as the paper filters GPT-4's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .parsing import parse_pairwise_verdict, parse_rating
from .prompts import ChatFormat, build_prompt
from .testbed import KIND_QUALITY, JudgePair

__all__ = ["KIND_DESCRIPTIONS", "make_judge_sft_examples", "pairwise_judgment",
           "rating_for_quality", "single_judgment"]

KIND_DESCRIPTIONS = {"correct": "gives the correct answer",
                     "truncated": "is incomplete",
                     "wrong_format": "is right but in the wrong format",
                     "near_miss": "gives a wrong answer",
                     "empty": "is empty"}
_DECISION = {0: "Response 1", 1: "Response 2", 2: "Tie"}


def rating_for_quality(quality: float) -> int:
    """The 1-10 rating of a response of true quality q in [0, 1]: round(1 + 9 q), halves up."""
    if not isinstance(quality, (int, float)) or not 0 <= quality <= 1:
        raise ValueError(f"quality must be a number in [0, 1], got {quality!r}")
    return math.floor(1 + 9 * quality + 0.5)


def pairwise_judgment(pair: JudgePair) -> str:
    """The teacher's comparison of ``pair``: solve, describe both, decide by the label."""
    if not isinstance(pair, JudgePair):
        raise TypeError(f"pair must be a JudgePair, got {type(pair).__name__}")
    return (f"The correct answer is {pair.reference}. Response 1 "
            f"{KIND_DESCRIPTIONS[pair.kind_1]}. Response 2 {KIND_DESCRIPTIONS[pair.kind_2]}. "
            f"So, the final decision is {_DECISION[pair.label]}")


def single_judgment(query_reference: str, kind: str) -> str:
    """The teacher's critique of one response of ``kind`` with its rating."""
    if kind not in KIND_QUALITY:
        raise ValueError(f"kind must be one of {tuple(KIND_QUALITY)}, got {kind!r}")
    return (f"The correct answer is {query_reference}. The response {KIND_DESCRIPTIONS[kind]}. "
            f"Rating: [[{rating_for_quality(KIND_QUALITY[kind])}]]")


def make_judge_sft_examples(records: Sequence[JudgePair], protocol: str = "pairwise_tie", *,
                            swap: bool = True, judgments: Sequence[str] | None = None,
                            chat_format: ChatFormat = "llama2") -> list[tuple[str, str]]:
    """(prompt, target) pairs for :func:`~iclr24.kits.language_models.finetune`.

    protocol ``"pairwise_tie"``: one example per pair (and per swapped pair with ``swap``);
    ``"single"``: one example per response (both responses of every pair).
    judgments: optional teacher texts, one per record (pairwise: for the original order;
    single: for ``response_1``), used instead of the rule's and kept only when their verdict
    (rating) agrees with the label (quality), the paper's filter; ``swap`` then is not
    available (a teacher's text names the responses by position).
    """
    pairs = list(records)
    if not pairs or not all(isinstance(p, JudgePair) for p in pairs):
        raise TypeError("records must be a non-empty sequence of JudgePair")
    if protocol not in ("pairwise_tie", "single"):
        raise ValueError(f"protocol must be 'pairwise_tie' or 'single', got {protocol!r}")
    if judgments is not None:
        texts = list(judgments)
        if len(texts) != len(pairs) or not all(isinstance(t, str) for t in texts):
            raise ValueError(f"judgments must be {len(pairs)} strings, one per record")
        if swap and protocol == "pairwise_tie":
            raise ValueError("swap=True needs rule-written judgments (judgments=None)")
        out = []
        for p, text in zip(pairs, texts):
            if protocol == "pairwise_tie" and parse_pairwise_verdict(text) == p.label:
                out.append((build_prompt(protocol, p.query, p.response_1, p.response_2,
                                         chat_format), " " + text))
            elif protocol == "single" and parse_rating(text) == rating_for_quality(p.quality_1):
                out.append((build_prompt(protocol, p.query, p.response_1,
                                         chat_format=chat_format), " " + text))
        return out
    out = []
    for p in pairs:
        if protocol == "pairwise_tie":
            for q in ((p, p.swapped()) if swap else (p,)):
                out.append((build_prompt(protocol, q.query, q.response_1, q.response_2,
                                         chat_format), " " + pairwise_judgment(q)))
        else:
            for resp, kind in ((p.response_1, p.kind_1), (p.response_2, p.kind_2)):
                out.append((build_prompt(protocol, p.query, resp, chat_format=chat_format),
                            " " + single_judgment(p.reference, kind)))
    return out
