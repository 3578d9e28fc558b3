"""Auto-J's verdict and rating parsers and the order-swap mapping (official code:
GAIR-NLP/auto-j ``codes/usage/example.py``, ``extract_pariwise_result`` /
``extract_single_rating``; ``codes/leaderboard/pairwise_eval.py``, ``exchange_to_ori_label``).

- Pairwise: the text after the LAST ``"final decision is "``, lower-cased; it starts with
  ``response 1`` -> 0, ``response 2`` -> 1, ``tie`` -> 2, anything else (or no anchor) -> -1.
- Rating: the number between the LAST ``"Rating: [["`` and the next ``"]]"``. The official
  snippet returns 0.0 when the anchor is missing; we return NaN (``official_compat=True`` gives
  the official 0.0) so that unparsable ratings are counted, not silently scored as 0.
- Swap: a verdict on the swapped pair (Response 1 and 2 exchanged) maps back by 0 <-> 1; a tie
  stays a tie and an unparsed verdict stays unparsed.
"""

from __future__ import annotations

import math

__all__ = ["PAIRWISE_ANCHOR", "RATING_ANCHOR", "TIE", "UNPARSED", "parse_pairwise_verdict",
           "parse_rating", "swap_verdict"]

PAIRWISE_ANCHOR = "final decision is "
RATING_ANCHOR = "Rating: [["
TIE = 2
UNPARSED = -1


def parse_pairwise_verdict(text: str) -> int:
    """0 (Response 1 better), 1 (Response 2 better), 2 (tie) or -1 (unparsed)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    pos = text.rfind(PAIRWISE_ANCHOR)
    if pos < 0:
        return UNPARSED
    rest = text[pos + len(PAIRWISE_ANCHOR):].lower()
    if rest.startswith("response 1"):
        return 0
    if rest.startswith("response 2"):
        return 1
    if rest.startswith("tie"):
        return TIE
    return UNPARSED


def parse_rating(text: str, official_compat: bool = False) -> float:
    """The float inside the last ``Rating: [[...]]``; NaN when absent or not a number (0.0
    with ``official_compat=True``, the official behaviour)."""
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
    return value if math.isfinite(value) else missing


def swap_verdict(verdict: int) -> int:
    """Map a verdict on the swapped pair back to the original order: 0 <-> 1, 2 and -1 stay."""
    if isinstance(verdict, bool) or not isinstance(verdict, (int,)) and not hasattr(
            verdict, "__index__"):
        raise TypeError(f"verdict must be an int in {{-1, 0, 1, 2}}, got {verdict!r}")
    v = int(verdict)
    if v not in (UNPARSED, 0, 1, TIE):
        raise ValueError(f"verdict must be one of -1, 0, 1, 2, got {v}")
    return {0: 1, 1: 0}.get(v, v)
