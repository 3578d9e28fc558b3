"""Auto-J's meta-evaluation metrics (Li et al., ICLR 2024, Sec. 4 / App.; official
``codes/leaderboard/pairwise_eval.py``).

- :func:`pairwise_agreement`: a generative judge sees every pair in both orders; the swapped
  verdict is mapped back (0 <-> 1). *Agreement* = share of pairs where BOTH orders equal the
  human label (the leaderboard's ``correct_both``); *consistency* = share where the two mapped
  verdicts are equal. An unparsed verdict (-1) counts as wrong and as inconsistent, even when
  both orders are unparsed (the official script asserts parsed labels; we decide and say so).
  Overall numbers are micro-averages over pairs; per-group rows as in the paper's tables.
- :func:`rating_agreement`: judges that score responses independently (reward models, the
  single-rating protocol) predict a tie when ``|s1 - s2| <= tau``; tau is searched over
  0...2 in steps of 0.01 and agreement is on one order only (consistency "n/a"). The
  leaderboard tunes tau on the test set (optimistic); :func:`rating_predictions` applies a tau
  chosen elsewhere (a dev split).
- :func:`best_of_n`: among the first N of M candidates keep the top-rated one; report its
  true quality, averaged over queries, for each N.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["DEFAULT_TAUS", "best_of_n", "pairwise_agreement", "rating_agreement", "rating_predictions"]

DEFAULT_TAUS = np.arange(0, 2.001, 0.01)  # the leaderboard's grid 0, 0.01, ..., 2
_TAU_EPS = 1e-9  # taus come from np.arange: 0.3 is 0.30000000000000004


def _int_array(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one entry per pair), got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold ints in {{-1, 0, 1, 2}}, got dtype {a.dtype}")
    return a.astype(np.int64)


def pairwise_agreement(labels: Sequence[int], pred: Sequence[int],
                       pred_swapped_mapped: Sequence[int] | None = None,
                       groups: Sequence[str] | None = None) -> dict:
    """Agreement and consistency of pairwise verdicts with human labels.

    labels: (n,) in {0, 1, 2}; pred: (n,) verdicts in the original order, in {-1, 0, 1, 2};
    pred_swapped_mapped: (n,) verdicts on the swapped pairs already mapped back
    (:func:`~.parsing.swap_verdict`), or None for a one-order judge (agreement = single-order
    accuracy, consistency NaN); groups: (n,) group or scenario names for a per-group table.

    Returns ``{"agreement", "agreement_first", "agreement_swapped", "consistency",
    "parse_rate", "n", "per_group": {name: {"agreement", "consistency", "n"}}}``.
    """
    y, p = _int_array(labels, "labels"), _int_array(pred, "pred")
    if y.size == 0:
        raise ValueError("labels must be non-empty")
    if p.shape != y.shape:
        raise ValueError(f"pred must have the labels' shape {y.shape}, got {p.shape}")
    if not np.isin(y, (0, 1, 2)).all():
        raise ValueError("labels must be 0 (Response 1), 1 (Response 2) or 2 (tie)")
    if not np.isin(p, (-1, 0, 1, 2)).all():
        raise ValueError("pred must hold verdicts in {-1, 0, 1, 2}")
    if pred_swapped_mapped is not None:
        s = _int_array(pred_swapped_mapped, "pred_swapped_mapped")
        if s.shape != y.shape:
            raise ValueError(f"pred_swapped_mapped must have shape {y.shape}, got {s.shape}")
        if not np.isin(s, (-1, 0, 1, 2)).all():
            raise ValueError("pred_swapped_mapped must hold verdicts in {-1, 0, 1, 2}")
    if groups is not None:
        g = np.asarray(list(groups), dtype=object)
        if g.shape != y.shape:
            raise ValueError(f"groups must have one name per pair ({y.size}), got {g.size}")

    def block(idx: np.ndarray) -> dict:
        first = p[idx] == y[idx]
        if pred_swapped_mapped is None:
            return {"agreement": float(first.mean()), "agreement_first": float(first.mean()),
                    "agreement_swapped": float("nan"), "consistency": float("nan"),
                    "parse_rate": float((p[idx] >= 0).mean()), "n": int(idx.size)}
        sw = s[idx]
        both = first & (sw == y[idx])  # correct_both in the official script
        consistent = (p[idx] == sw) & (p[idx] >= 0)  # unparsed never counts as consistent
        return {"agreement": float(both.mean()), "agreement_first": float(first.mean()),
                "agreement_swapped": float((sw == y[idx]).mean()),
                "consistency": float(consistent.mean()),
                "parse_rate": float((np.concatenate([p[idx], sw]) >= 0).mean()),
                "n": int(idx.size)}

    out = block(np.arange(y.size))
    out["per_group"] = {}
    if groups is not None:
        for name in dict.fromkeys(g.tolist()):
            out["per_group"][name] = block(np.flatnonzero(g == name))
    return out


def rating_predictions(s1: Sequence[float], s2: Sequence[float], tau: float) -> np.ndarray:
    """Verdicts from independent scores: 2 (tie) where ``|s1 - s2| <= tau``, else 0 where
    s1 > s2 and 1 where s2 > s1; -1 where a score is NaN (an unparsed rating)."""
    a, b = np.asarray(s1, dtype=np.float64), np.asarray(s2, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"s1 and s2 must be 1-D of equal length, got {a.shape} and {b.shape}")
    if isinstance(tau, bool) or not isinstance(tau, (int, float, np.floating)) or not tau >= 0:
        raise ValueError(f"tau must be a number >= 0, got {tau!r}")
    with np.errstate(invalid="ignore"):
        pred = np.where(np.abs(a - b) <= tau + _TAU_EPS, 2, np.where(a > b, 0, 1))
    pred[np.isnan(a) | np.isnan(b)] = -1
    return pred.astype(np.int64)


def rating_agreement(s1: Sequence[float], s2: Sequence[float], labels: Sequence[int],
                     taus: Sequence[float] | np.ndarray = DEFAULT_TAUS
                     ) -> tuple[float, float]:
    """``(best_tau, agreement)``: the tie threshold in ``taus`` with the highest one-order
    agreement of :func:`rating_predictions` with ``labels`` (the first such tau on ties), as
    in the leaderboard for reward models. s1, s2: (n,) scores of Response 1 and 2."""
    y = _int_array(labels, "labels")
    if y.size == 0 or not np.isin(y, (0, 1, 2)).all():
        raise ValueError("labels must be a non-empty sequence of 0, 1, 2")
    if np.asarray(s1).shape != y.shape:
        raise ValueError(f"s1 must have the labels' shape {y.shape}, got {np.asarray(s1).shape}")
    grid = np.asarray(taus, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or (grid < 0).any():
        raise ValueError("taus must be a non-empty 1-D sequence of numbers >= 0")
    accs = [float((rating_predictions(s1, s2, float(t)) == y).mean()) for t in grid]
    best = int(np.argmax(accs))
    return float(grid[best]), accs[best]


def best_of_n(ratings, quality, ns: Sequence[int]) -> dict[int, float]:
    """Mean true quality of the top-rated candidate among the first n, for each n in ``ns``.

    ratings, quality: (q, M) arrays (query x candidate). A NaN rating (unparsed) ranks below
    every number; ties go to the earliest candidate. n = 1 is a random pick (the candidates
    are i.i.d. samples).
    """
    r = np.asarray(ratings, dtype=np.float64)
    q = np.asarray(quality, dtype=np.float64)
    if r.ndim != 2 or r.shape != q.shape or r.size == 0:
        raise ValueError(f"ratings and quality must be non-empty (q, M) arrays of one shape, "
                         f"got {r.shape} and {q.shape}")
    if np.isnan(q).any():
        raise ValueError("quality must not hold NaN")
    out = {}
    for n in ns:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= r.shape[1]:
            raise ValueError(f"every n in ns must be an int in [1, {r.shape[1]}], got {n!r}")
        head = np.where(np.isnan(r[:, :n]), -np.inf, r[:, :n])
        pick = np.argmax(head, axis=1)  # first maximum
        out[int(n)] = float(q[np.arange(q.shape[0]), pick].mean())
    return out
