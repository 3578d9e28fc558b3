"""Auto-J's verdict and rating parsers and the order-swap mapping (official code:
GAIR-NLP/auto-j ``codes/usage/example.py``, ``extract_pariwise_result`` /
``extract_single_rating``; ``codes/leaderboard/pairwise_eval.py``, ``exchange_to_ori_label``).

- Pairwise: the text after the LAST ``"final decision is "``, stripped of surrounding
  whitespace and lower-cased (the official ``.strip().lower()``, so "final decision is  Response
  1" is Response 1); it starts with ``response 1`` -> 0, ``response 2`` -> 1, ``tie`` -> 2,
  anything else (or no anchor) -> -1.
- Rating: the number between the LAST ``"Rating: [["`` and the next ``"]]"``, on Auto-J's
  1-10 scale. The official snippet returns 0.0 when the anchor is missing and any float it
  finds (``[[11]]`` -> 11.0); we return NaN for a missing, non-numeric or out-of-scale rating
  (outside [:data:`RATING_MIN`, :data:`RATING_MAX`]) so that it is counted as unparsed, never
  scored (``official_compat=True`` gives the official behaviour: 0.0 when missing, the number
  as written).
- Swap: a verdict on the swapped pair (Response 1 and 2 exchanged) maps back by 0 <-> 1; a tie
  stays a tie and an unparsed verdict stays unparsed.
"""

from __future__ import annotations

import math

__all__ = ["PAIRWISE_ANCHOR", "RATING_ANCHOR", "RATING_MAX", "RATING_MIN", "TIE", "UNPARSED",
           "parse_pairwise_verdict", "parse_rating", "swap_verdict"]

PAIRWISE_ANCHOR = "final decision is "
RATING_ANCHOR = "Rating: [["
RATING_MIN, RATING_MAX = 1.0, 10.0  # the single protocol's scale ("on a scale of 1 to 10")
TIE = 2
UNPARSED = -1


def parse_pairwise_verdict(text: str) -> int:
    """0 (Response 1 better), 1 (Response 2 better), 2 (tie) or -1 (unparsed)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    pos = text.rfind(PAIRWISE_ANCHOR)
    if pos < 0:
        return UNPARSED
    rest = text[pos + len(PAIRWISE_ANCHOR):].strip().lower()
    if rest.startswith("response 1"):
        return 0
    if rest.startswith("response 2"):
        return 1
    if rest.startswith("tie"):
        return TIE
    return UNPARSED


def parse_rating(text: str, official_compat: bool = False) -> float:
    """The float inside the last ``Rating: [[...]]``; NaN when absent, not a number or off
    the 1-10 scale (``official_compat=True``: the official behaviour, 0.0 when absent or not
    a number, any finite number as written)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    missing = 0.0 if official_compat else math.nan
    pos = text.rfind(RATING_ANCHOR)
    if pos < 0:
        return missing
    rest = text[pos + len(RATING_ANCHOR):]
    end = rest.find("]]")
    if end < 0:
        return missing
    try:
        value = float(rest[:end])
    except ValueError:
        return missing
    if not math.isfinite(value):
        return missing
    if not official_compat and not RATING_MIN <= value <= RATING_MAX:
        return math.nan  # e.g. "[[11]]": not a rating on the protocol's scale
    return value


def swap_verdict(verdict: int) -> int:
    """Map a verdict on the swapped pair back to the original order: 0 <-> 1, 2 and -1 stay."""
    if isinstance(verdict, bool) or not isinstance(verdict, (int,)) and not hasattr(
            verdict, "__index__"):
        raise TypeError(f"verdict must be an int in {{-1, 0, 1, 2}}, got {verdict!r}")
    v = int(verdict)
    if v not in (UNPARSED, 0, 1, TIE):
        raise ValueError(f"verdict must be one of -1, 0, 1, 2, got {v}")
    return {0: 1, 1: 0}.get(v, v)
