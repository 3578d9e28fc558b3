"""Parsers for the output formats of :mod:`.prompts` (Xiong et al., ICLR 2024; the official
``utils/extract_result_lib.py`` tries a cascade of regular expressions, these are one pattern
per format, tolerant in the same places: optional "Final"/"Overall", any "(a-100)" range,
thousands separators and "$" in numbers, "(B)"/"Option B" for letters, an optional "%").

Every parser returns None for what it cannot read (never raises on model text): the caller
counts unparsed responses. Confidences are the stated 0-100 numbers divided by 100; a number
above 100 is unparsable (the official check). Numbers are normalised to canonical strings
("1,945" -> "1945", "3.50" -> "3.5", "-0" -> "0") so that answers compare as values; letters are
upper-cased. When the format line occurs more than once (a model echoing the instructions),
the last complete one wins.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = [
    "MultiStepParse",
    "normalize_answer",
    "parse_answer_confidence",
    "parse_confidence",
    "parse_multistep",
    "parse_topk",
]

_NUMBER = r"[-−]?\$?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_LETTER = r"(?:[Oo]ption\s*)?\(?[A-Za-z]\)?(?![A-Za-z])"
# a confidence ends in "%" or at the end of its line (a reply cut at a stop string)
_CONF = r"(\d{1,3}(?:\.\d+)?)\s*(?:%|(?=[ \t]*(?:\n|$)))"
_HEAD = (r"(?:Final\s+)?Answer\s+and\s+(?:Overall\s+)?Confidence\s*(?:\(\s*\d+\s*-\s*100\s*\))?"
         r"\s*:\s*")


def _answer_pattern(answer_type: str) -> str:
    if answer_type == "number":
        return _NUMBER
    if answer_type == "option letter":
        return _LETTER
    raise ValueError(f"answer_type must be 'number' or 'option letter', got {answer_type!r}")


def normalize_answer(text: str, answer_type: str) -> str | None:
    """A canonical answer string, or None when ``text`` is not one (see module docstring)."""
    if not isinstance(text, str):
        return None
    t = text.strip()
    if answer_type == "number":
        t = t.replace("−", "-").replace("$", "").replace(",", "").replace(" ", "")
        if not re.fullmatch(r"-?\d+(?:\.\d+)?", t):
            return None
        v = float(t)
        if not math.isfinite(v):
            return None
        return str(int(v)) if v == int(v) else repr(v)
    if answer_type == "option letter":
        m = re.fullmatch(r"(?:[Oo]ption\s*)?\(?([A-Za-z])\)?\.?", t)
        return m.group(1).upper() if m else None
    raise ValueError(f"answer_type must be 'number' or 'option letter', got {answer_type!r}")


def _confidence(text: str) -> float | None:
    v = float(text)
    return v / 100.0 if 0.0 <= v <= 100.0 else None  # 0-100 -> [0, 1]


def parse_answer_confidence(text: str, answer_type: str = "number"
                            ) -> tuple[str | None, float | None]:
    """(answer, confidence in [0, 1]) from ``Answer and Confidence (0-100): <a>, <c>%`` (also the
    multi-step ``Final Answer and Overall Confidence`` line); (None, None) when absent. An
    answer that parses with an unreadable confidence gives (answer, None)."""
    pattern = _HEAD + r"(" + _answer_pattern(answer_type) + r")(?:\s*[,;]\s*|\s+)" + _CONF
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    matches = list(re.finditer(pattern, text))
    for m in reversed(matches):
        answer = normalize_answer(m.group(1), answer_type)
        if answer is not None:
            return answer, _confidence(m.group(2))
    loose = list(re.finditer(_HEAD + r"(" + _answer_pattern(answer_type) + r")", text))
    for m in reversed(loose):
        answer = normalize_answer(m.group(1), answer_type)
        if answer is not None:
            return answer, None
    return None, None


def parse_confidence(text: str) -> float | None:
    """The self-probing reply's ``Confidence: <c>%`` (the last one), in [0, 1]; None if absent."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found = re.findall(r"[Cc]onfidence\s*(?:\(\s*\d+\s*-\s*100\s*\))?\s*:\s*(\d{1,3}(?:\.\d+)?)"
                       r"\s*%", text)
    return _confidence(found[-1]) if found else None


def parse_topk(text: str, answer_type: str = "number", k: int | None = None
               ) -> tuple[list[str | None], list[float | None]]:
    """Guesses ``G1..Gk`` and probabilities ``P1..Pk`` (in [0, 1]) in rank order; an unreadable
    guess or probability is None, a missing index ends the list. ``k`` caps the length."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    guesses = {int(i): g for i, g in re.findall(r"G(\d+)\s*:\s*([^\n]*)", text)}
    probs = {int(i): p for i, p in re.findall(r"P(\d+)\s*:\s*[^\d\n]*?(\d+(?:\.\d+)?)\s*%?",
                                              text)}
    out_g: list[str | None] = []
    out_p: list[float | None] = []
    i = 1
    while i in guesses and (k is None or i <= k):
        raw = guesses[i].strip()
        m = re.match(_answer_pattern(answer_type), raw)
        out_g.append(normalize_answer(m.group(0), answer_type) if m else None)
        p = probs.get(i)
        out_p.append(_confidence(p) if p is not None else None)
        i += 1
    return out_g, out_p


@dataclass(frozen=True)
class MultiStepParse:
    """answer; confidence = Π_i step confidence (the paper's multi-step rule; None without
    steps); stated = the final line's overall confidence; steps = each step's, in [0, 1]."""

    answer: str | None
    confidence: float | None
    stated: float | None
    steps: tuple[float, ...]


def parse_multistep(text: str, answer_type: str = "number") -> MultiStepParse:
    """``Step i: ..., Confidence: c_i%`` lines and the final answer line."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    steps = []
    for c in re.findall(r"Step\s*\d+\s*:[^\n]*?[Cc]onfidence\s*:\s*(\d{1,3}(?:\.\d+)?)\s*%?",
                        text):
        v = _confidence(c)
        if v is not None:
            steps.append(v)
    answer, stated = parse_answer_confidence(text, answer_type)
    # conf = Π_i c_i over the steps
    conf = math.prod(steps) if steps else None
    return MultiStepParse(answer, conf, stated, tuple(steps))
