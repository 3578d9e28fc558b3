"""Aggregation strategies of Xiong et al. (ICLR 2024), Sec. 3.3: M sampled responses -> one
answer ŷ and one confidence.

- :func:`consistency`: conf(ŷ) = (1/M) Σ_i 1[a_i = ŷ], ŷ the majority answer (self-random,
  paraphrase) or the hint-free answer (misleading: pass it as ``reference``).
- :func:`avg_conf`: conf(ŷ) = Σ_i 1[a_i = ŷ] c_i / Σ_i c_i (the denominator sums over all
  samples), ŷ = argmax of the numerator (or ``reference``).
- :func:`pair_rank` (Top-K prompts): each list yields "u ranked above v" for every listed u and
  every option v listed later in it or absent from it (options are those seen in any list); a
  categorical P over the seen options maximises the paper's likelihood
  ``Σ_lists Σ_{u≻v} log P(u)/(P(u)+P(v))`` (``objective="paper"``) or, as the official
  ``vis_aggregated_conf_top_k.py`` does, ``Σ_{u,v} R_uv P(u)/(P(u)+P(v))`` without the log, R
  the event counts divided by the number of lists (``objective="official"``). Both optimise
  softmax logits with plain gradient descent (official: SGD, lr 0.01, 1000 steps, random
  normal initial logits); the paper objective is normalised by the number of lists too, so the
  two differ only in the log. Gradients are analytic (numpy), so many Pair-Rank problems of
  the same support size run as one batch (:func:`pair_rank_batch`).
- :func:`topk_top1_avg_conf` and :func:`topk_mean_probability`: the official code's Top-K
  Avg-Conf variants (Avg-Conf over first guesses; mean verbalised probability per option).

Unparsed samples are ``None`` answers: the official code drops them before aggregating, and
so do these functions (``n_dropped`` says how many). A question keeps an answer only when at
least ``min_parsed`` of its M samples parsed, by default the official ``extract_answers.py``
rule (:func:`official_min_parsed`: M − 1 samples for M >= 3, both for M = 2, the one for
M = 1); otherwise, as when every sample is unparsed, the answer is None with confidence 0 (the
official code drops such a question; count it as wrong with confidence 0, or drop it, and say
which). Without that rule a single parsed sample out of five would agree with itself: a
confidence of 1.0 from one reply.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

__all__ = [
    "Aggregate",
    "avg_conf",
    "consistency",
    "official_min_parsed",
    "pair_rank",
    "pair_rank_batch",
    "rank_matrix",
    "topk_mean_probability",
    "topk_top1_avg_conf",
]


@dataclass(frozen=True)
class Aggregate:
    """ŷ (None when nothing parsed), its confidence in [0, 1], and how many samples were
    dropped as unparsed."""

    answer: Hashable | None
    confidence: float
    n_dropped: int = 0


def _check_answers(answers: Sequence, name: str = "answers") -> list:
    if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence):
        raise TypeError(f"{name} must be a sequence of answers (None for unparsed), got "
                        f"{type(answers).__name__}")
    if len(answers) == 0:
        raise ValueError(f"{name} must not be empty")
    return list(answers)


def official_min_parsed(m: int) -> int:
    """Parsed samples a question needs out of ``m`` in the official code (``extract_answers.py``,
    ``require_min_num_hints``): m − 1 for m >= 3, else m (2 of 2, 1 of 1)."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
        raise TypeError(f"m must be an int (samples per question), got {type(m).__name__}")
    if m < 1:
        raise ValueError(f"m must be >= 1 (samples per question), got {m!r}")
    return int(m) - 1 if m >= 3 else int(m)


def _check_min_parsed(min_parsed: int | None, m: int) -> int:
    if min_parsed is None:
        return official_min_parsed(m)
    if isinstance(min_parsed, bool) or not isinstance(min_parsed, (int, np.integer)):
        raise TypeError(f"min_parsed must be an int or None, got {type(min_parsed).__name__}")
    if not 1 <= min_parsed <= m:
        raise ValueError(f"min_parsed must be in [1, {m}] (the number of samples), got "
                         f"{min_parsed!r}")
    return int(min_parsed)


def _majority(answers: list) -> Hashable:
    counts: dict = {}
    for a in answers:
        counts[a] = counts.get(a, 0) + 1
    best = max(counts.values())
    return next(a for a in answers if counts[a] == best)  # ties: the first seen


def consistency(answers: Sequence[Hashable | None], reference: Hashable | None = None, *,
                use_reference: bool = False, min_parsed: int | None = None) -> Aggregate:
    """Agreement with ŷ: conf = (1/M) Σ_i 1[a_i = ŷ] over the M parsed answers.

    ŷ is the majority answer (ties: first seen), or ``reference`` when ``use_reference`` (the
    misleading sampler's hint-free answer; an unparsed reference gives (None, 0)). Fewer than
    ``min_parsed`` parsed answers (default :func:`official_min_parsed` of len(answers), counted
    over all samples, the reference included) gives (None, 0)."""
    answers = _check_answers(answers)
    if not use_reference and reference is not None:
        raise ValueError("reference is only used with use_reference=True")
    need = _check_min_parsed(min_parsed, len(answers))
    kept = [a for a in answers if a is not None]
    dropped = len(answers) - len(kept)
    if len(kept) < need:
        return Aggregate(None, 0.0, dropped)
    if use_reference and reference is None:
        return Aggregate(None, 0.0, dropped)
    y = reference if use_reference else _majority(kept)
    # conf(ŷ) = (1/M) Σ_i 1[a_i = ŷ]
    return Aggregate(y, sum(a == y for a in kept) / len(kept), dropped)


def avg_conf(answers: Sequence[Hashable | None], confs: Sequence[float | None],
             reference: Hashable | None = None, *, use_reference: bool = False,
             min_parsed: int | None = None) -> Aggregate:
    """Confidence-weighted agreement: conf(ŷ) = Σ_i 1[a_i = ŷ] c_i / Σ_i c_i (c_i in [0, 1]).

    ŷ = argmax_a Σ_i 1[a_i = a] c_i (ties: first seen), or ``reference`` when
    ``use_reference``. Samples whose answer or confidence did not parse are dropped; fewer than
    ``min_parsed`` left (default :func:`official_min_parsed`) gives (None, 0)."""
    answers = _check_answers(answers)
    confs = _check_answers(confs, "confs")
    if len(confs) != len(answers):
        raise ValueError(f"answers and confs must have equal length, got {len(answers)} and "
                         f"{len(confs)}")
    kept = [(a, float(c)) for a, c in zip(answers, confs) if a is not None and c is not None]
    if any(not 0 <= c <= 1 for _, c in kept):
        raise ValueError("confs must lie in [0, 1] (divide 0-100 scores by 100)")
    dropped = len(answers) - len(kept)
    if not use_reference and reference is not None:
        raise ValueError("reference is only used with use_reference=True")
    if len(kept) < _check_min_parsed(min_parsed, len(answers)):
        return Aggregate(None, 0.0, dropped)
    weight: dict = {}
    for a, c in kept:
        weight[a] = weight.get(a, 0.0) + c
    if use_reference:
        if reference is None:
            return Aggregate(None, 0.0, dropped)
        y = reference
    else:
        best = max(weight.values())
        y = next(a for a, _ in kept if weight[a] == best)
    total = sum(c for _, c in kept)
    # conf(ŷ) = Σ_i 1[a_i = ŷ] c_i / Σ_i c_i  (denominator over all samples)
    return Aggregate(y, weight.get(y, 0.0) / total if total > 0 else 0.0, dropped)


def rank_matrix(topk_lists: Sequence[Sequence[Hashable]]) -> tuple[np.ndarray, list]:
    """Event frequencies R (n, n): R[u, v] = (1/L) #{lists where u is listed and v is listed
    later or not at all}, over the n options seen in any of the L lists (in first-seen order).
    Returns (R, options)."""
    lists = _check_lists(topk_lists)
    options: list = []
    index: dict = {}
    for lst in lists:
        for a in lst:
            if a not in index:
                index[a] = len(options)
                options.append(a)
    n = len(options)
    r = np.zeros((n, n))
    for lst in lists:
        beaten = np.ones(n)  # options not yet listed in this list
        for a in lst:
            u = index[a]
            beaten[u] = 0.0
            r[u] += beaten  # u ≻ every later-listed or unlisted option
    return r / len(lists), options


def _check_lists(topk_lists: Sequence[Sequence[Hashable]]) -> list[list]:
    if isinstance(topk_lists, (str, bytes)) or not isinstance(topk_lists, Sequence):
        raise TypeError("topk_lists must be a sequence of ranked lists of answers")
    lists = []
    for lst in topk_lists:
        if isinstance(lst, (str, bytes)) or not isinstance(lst, Sequence):
            raise TypeError("each entry of topk_lists must be a ranked list of answers")
        # unparsed guesses (None) are skipped; a repeated guess counts at its first rank
        lists.append(list(dict.fromkeys(a for a in lst if a is not None)))
    if not any(lists):
        raise ValueError("topk_lists must hold at least one non-empty list")
    return [lst for lst in lists if lst]


def _rank_gradient(w: np.ndarray, r: np.ndarray, mask: np.ndarray, paper: bool
                   ) -> np.ndarray:
    """∂(−objective)/∂w for logits w (B, n), R (B, n, n), support mask (B, n)."""
    z = np.where(mask, w, -np.inf)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    s = p[:, :, None] + p[:, None, :]  # s_uv = P(u) + P(v)
    s = np.where(s > 0, s, 1.0)
    if paper:
        # L = −Σ R_uv [log P(u) − log(P(u) + P(v))]
        inv_p = np.where(p > 0, 1.0 / np.where(p > 0, p, 1.0), 0.0)
        g = -(r.sum(axis=2) * inv_p) + (r / s).sum(axis=2) + (r / s).sum(axis=1)
    else:
        # L = −Σ R_uv P(u) / (P(u) + P(v))
        g = -(r * p[:, None, :] / s ** 2).sum(axis=2) + (r * p[:, :, None] / s ** 2).sum(axis=1)
    # through the softmax: ∂L/∂w = P ⊙ (g − <P, g>)
    return p * (g - (p * g).sum(axis=1, keepdims=True))


def pair_rank_batch(r: np.ndarray, mask: np.ndarray | None = None, *,
                    objective: Literal["paper", "official"] = "paper", steps: int = 1000,
                    lr: float = 0.01, rng: np.random.Generator | int | None = None,
                    init: np.ndarray | None = None) -> np.ndarray:
    """Fit P for B Pair-Rank problems at once. r: (B, n, n) event frequencies (zero-padded for
    smaller supports), mask: (B, n) bools of each problem's support. Returns P (B, n), zero off
    the support. ``init`` (B, n) overrides the standard-normal initial logits."""
    if objective not in ("paper", "official"):
        raise ValueError(f"objective must be 'paper' or 'official', got {objective!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be an int >= 0, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    r = np.asarray(r, dtype=np.float64)
    if r.ndim != 3 or r.shape[1] != r.shape[2]:
        raise ValueError(f"r must have shape (B, n, n), got {r.shape}")
    mask = np.ones(r.shape[:2], bool) if mask is None else np.asarray(mask, bool)
    if mask.shape != r.shape[:2] or not mask.any(axis=1).all():
        raise ValueError("mask must be (B, n) with at least one option per problem")
    if init is None:
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        w = gen.standard_normal(r.shape[:2])
    else:
        w = np.array(init, dtype=np.float64)
        if w.shape != r.shape[:2]:
            raise ValueError(f"init must have shape {r.shape[:2]}, got {w.shape}")
    for _ in range(steps):
        w -= lr * _rank_gradient(w, r, mask, objective == "paper")  # plain SGD on the logits
    z = np.where(mask, w, -np.inf)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    return p / p.sum(axis=1, keepdims=True)


def pair_rank(topk_lists: Sequence[Sequence[Hashable]], objective: Literal["paper", "official"]
              = "paper", steps: int = 1000, lr: float = 0.01,
              rng: np.random.Generator | int | None = None) -> tuple[Aggregate, dict]:
    """Pair-Rank over ranked Top-K lists (best first; None entries are unparsed guesses and
    skipped, a repeated guess counts at its first rank; empty lists are ignored). Returns (Aggregate(ŷ = argmax P, conf = P(ŷ)), {option: P(option)})."""
    r, options = rank_matrix(topk_lists)
    p = pair_rank_batch(r[None], objective=objective, steps=steps, lr=lr, rng=rng)[0]
    best = int(np.argmax(p))
    return Aggregate(options[best], float(p[best])), dict(zip(options, p.tolist()))


def topk_top1_avg_conf(topk_lists: Sequence[Sequence[Hashable]],
                       topk_probs: Sequence[Sequence[float | None]]) -> Aggregate:
    """Avg-Conf on each list's first guess and its verbalised probability (in [0, 1])."""
    if len(topk_lists) != len(topk_probs):
        raise ValueError("topk_lists and topk_probs must have equal length")
    answers = [lst[0] if len(lst) else None for lst in topk_lists]
    confs = [ps[0] if len(ps) else None for ps in topk_probs]
    return avg_conf(answers, confs)


def topk_mean_probability(topk_lists: Sequence[Sequence[Hashable]],
                          topk_probs: Sequence[Sequence[float | None]]) -> Aggregate:
    """Each option's verbalised probability averaged over the lists (0 where a list does not
    name it); ŷ = argmax, conf = that mean."""
    if len(topk_lists) != len(topk_probs) or not len(topk_lists):
        raise ValueError("topk_lists and topk_probs must be non-empty and of equal length")
    total: dict = {}
    for lst, ps in zip(topk_lists, topk_probs):
        if len(lst) != len(ps):
            raise ValueError("each list needs one probability per guess")
        for a, p in zip(lst, ps):
            if a is None or p is None:
                continue
            if not 0 <= p <= 1:
                raise ValueError("topk_probs must lie in [0, 1]")
            total[a] = total.get(a, 0.0) + p
    if not total:
        return Aggregate(None, 0.0)
    y = max(total, key=lambda a: total[a])
    return Aggregate(y, total[y] / len(topk_lists))
