"""Majority voting (maj@k) as Llemma reports it on MATH/GSM8k (Sec. 3.1; the fork's
``MajorityVotingMixin.majority_vote``; Minerva's protocol).

k sampled solutions give k normalised answers. Valid answers are grouped greedily in sample
order: an answer joins the first existing group whose representative it equals or is
equivalent to, else it opens a new group. The elected answer is the representative of the
largest group (ties: the group opened first). Invalid answers (the extraction sentinel) cast no
vote but stay in the denominator:

    acc       = 1[gold ≡ elected]
    pass_rate = |group ≡ gold| / k          (k counts invalid samples too)

"maj@1" in the paper is greedy decoding, not one sample; that choice belongs to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .answers import INVALID_ANSWER
from .equivalence import is_equiv as _minerva_equiv

__all__ = ["VoteResult", "majority_vote"]


@dataclass(frozen=True)
class VoteResult:
    """acc (0/1), pass_rate (share of the k samples in the gold-equivalent group), votes
    ``[(representative, count), ...]`` sorted by descending count (ties in order of first
    appearance) and the ``elected`` answer (``None`` when no sample was valid)."""

    acc: int
    pass_rate: float
    votes: list[tuple[str, int]]
    elected: str | None


def majority_vote(answers: Sequence[str], gold: str,
                  is_equiv: Callable[[str, str], bool] = _minerva_equiv,
                  invalid: str | None = INVALID_ANSWER) -> VoteResult:
    """maj@k over ``answers`` (normalised, in sample order) against ``gold``.

    is_equiv(a, b): equivalence of two answers (default: the Minerva/SymPy check).
    invalid: the sentinel that casts no vote (None: every answer votes).
    """
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise TypeError(f"answers must be a sequence of strings, got {type(answers).__name__}")
    if not isinstance(gold, str):
        raise TypeError(f"gold must be a str, got {type(gold).__name__}")
    if not callable(is_equiv):
        raise TypeError("is_equiv must be callable (a, b) -> bool")
    k = len(answers)
    if k == 0:
        return VoteResult(0, 0.0, [], None)
    groups: dict[str, int] = {}  # representative -> votes; insertion order = first appearance
    for a in answers:
        if not isinstance(a, str):
            raise TypeError(f"answers must hold strings, got {type(a).__name__}")
        if invalid is not None and a == invalid:
            continue
        if a in groups:
            groups[a] += 1
            continue
        for rep in groups:  # join the first equivalent group
            if is_equiv(a, rep):
                groups[rep] += 1
                break
        else:
            groups[a] = 1
    votes = sorted(groups.items(), key=lambda kv: -kv[1])  # stable: ties keep first appearance
    if not votes:
        return VoteResult(0, 0.0, [], None)
    elected = votes[0][0]
    # the fork calls is_equiv(correct_answer, candidate): gold first, so the candidate is the
    # side whose failure to parse makes the pair non-equivalent (the order matters only there)
    if is_equiv(gold, elected):
        return VoteResult(1, votes[0][1] / k, votes, elected)
    pass_rate = 0.0
    for rep, count in groups.items():
        if is_equiv(gold, rep):
            pass_rate = count / k
            break
    return VoteResult(0, pass_rate, votes, elected)
