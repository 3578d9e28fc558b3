"""Stage III of Chameleon (the distinguishing test, official ``OurAttack.run_attack``), the
label-only baselines, and the evaluation of membership scores.

Scores are per (target model, challenge point); higher means "member":
- :func:`chameleon_score`: fraction of the point's membership-neighbourhood queries that the
  (poisoned) target labels y;
- :func:`gap_score`: 1[target predicts y] (Yeom et al.'s gap attack, binary);
- :func:`augmentation_score`: fraction of random augmentations labelled y, no poisoning, no
  selection (the augmentation-robustness label-only attack).

:func:`membership_metrics` reports AUC, balanced accuracy and TPR at FPR <= target; a TPR at an
FPR of f is *withheld* (None) unless there are at least 10/f non-member trials, so TPR@0.1%FPR
needs >= 10,000 non-members (one negative does not make a rate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from iclr24.kits.small_classifiers import tpr_at_fpr

from .neighbourhood import membership_neighbourhood, shift_noise_augment
from .poisoning import (
    Population,
    PredictProba,
    TrainFn,
    adaptive_poison_counts,
    draw_population,
    label_flip,
    make_poison_set,
    train_population,
)

__all__ = [
    "MIN_NEGATIVES_PER_FPR",
    "AttackReport",
    "ChameleonAttack",
    "augmentation_score",
    "chameleon_score",
    "fraction_labelled",
    "gap_score",
    "membership_metrics",
]

MIN_NEGATIVES_PER_FPR = 10  # a TPR at FPR f needs >= 10/f non-member trials


def _labels(predict_labels: Callable[[np.ndarray], np.ndarray], X: np.ndarray) -> np.ndarray:
    out = np.asarray(predict_labels(X))
    return out.argmax(axis=1) if out.ndim == 2 else out  # probabilities or labels


def chameleon_score(predict_labels: Callable[[np.ndarray], np.ndarray], queries: np.ndarray,
                    y: int) -> float:
    """Fraction of ``queries`` (q, d) that the target labels ``y``. ``predict_labels`` returns
    labels (q,) or probabilities (q, C); only the argmax label is used (label-only access)."""
    queries = np.asarray(queries)
    if queries.ndim != 2 or queries.shape[0] == 0:
        raise ValueError(f"queries must be a non-empty (q, d) array, got shape {queries.shape}")
    return float(np.mean(_labels(predict_labels, queries) == y))


def gap_score(predict_labels: Callable[[np.ndarray], np.ndarray], X: np.ndarray, y: np.ndarray
              ) -> np.ndarray:
    """1[target predicts y_j] for each point: X (k, d), y (k,) -> (k,) in {0, 1}."""
    return (_labels(predict_labels, np.asarray(X)) == np.asarray(y)).astype(np.float64)


def fraction_labelled(predict_labels: Callable[[np.ndarray], np.ndarray],
                      query_sets: Sequence[np.ndarray], y: np.ndarray) -> np.ndarray:
    """(k,): for each point j the fraction of its queries ``query_sets[j]`` (q_j, d) labelled
    y_j, with one batched call to the model for all points."""
    sizes = np.array([len(q) for q in query_sets])
    if sizes.size != len(y) or np.any(sizes == 0):
        raise ValueError("need one non-empty query set per label")
    hits = _labels(predict_labels, np.concatenate(query_sets)) == np.repeat(np.asarray(y), sizes)
    return np.add.reduceat(hits.astype(np.float64), np.r_[0, np.cumsum(sizes)[:-1]]) / sizes


def augmentation_score(predict_labels: Callable[[np.ndarray], np.ndarray],
                       augmentations: Sequence[np.ndarray], y: np.ndarray) -> np.ndarray:
    """Fraction of each point's random augmentations (a list of (R, d)) labelled y_j: (k,)."""
    return fraction_labelled(predict_labels, augmentations, y)


def membership_metrics(scores: np.ndarray, is_member: np.ndarray,
                       fprs: Sequence[float] = (0.1, 0.01, 0.001)) -> dict:
    """AUC (scikit-learn), balanced accuracy max_t 1 - (FPR + FNR)/2, and ``tpr_at_fpr``
    {f: max TPR with FPR <= f, or None when fewer than 10/f non-member trials}.
    scores, is_member: same shape (flattened)."""
    from sklearn.metrics import roc_auc_score, roc_curve

    s = np.asarray(scores, dtype=np.float64).ravel()
    m = np.asarray(is_member, dtype=bool).ravel()
    if s.shape != m.shape:
        raise ValueError(f"scores and is_member must have equal sizes, got {s.size}, {m.size}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contains NaN or infinite values")
    if m.all() or not m.any():
        raise ValueError(f"is_member must contain both members and non-members (AUC and FPR are "
                         f"undefined otherwise), got {int(m.sum())} members of {m.size}")
    fprs = tuple(fprs)
    bad = [f for f in fprs if not 0 < f < 1]
    if bad:
        raise ValueError(f"fprs must be false-positive rates in (0, 1), got {bad}")
    n_neg = int((~m).sum())
    f, t, _ = roc_curve(m, s)
    out = {"auc": float(roc_auc_score(m, s)),
           "balanced_accuracy": float(np.max(1 - (f + (1 - t)) / 2)),
           "n_members": int(m.sum()), "n_nonmembers": n_neg, "tpr_at_fpr": {}}
    for fpr in fprs:
        enough = n_neg >= MIN_NEGATIVES_PER_FPR / fpr - 1e-9
        out["tpr_at_fpr"][float(fpr)] = tpr_at_fpr(s, m, fpr) if enough else None
    return out


@dataclass
class AttackReport:
    """Scores (T, k) of T target models on k challenge points, their membership (T, k), the
    metrics of :func:`membership_metrics`, the poison counts and the targets' accuracy on rows
    they did not train on."""

    scores: np.ndarray
    is_member: np.ndarray
    metrics: dict
    counts: np.ndarray
    target_accuracy: float
    extra: dict = field(default_factory=dict)


def _heldout_accuracy(models: Sequence[PredictProba], X: np.ndarray, y: np.ndarray,
                      population: Population) -> float:
    """Mean accuracy of each model on the non-challenge rows outside its base set."""
    pool = np.setdiff1d(np.arange(X.shape[0]), population.challenge_idx)
    accs = []
    for i, f in enumerate(models):
        rows = np.setdiff1d(pool, population.base_sets[i])
        accs.append(np.mean(_labels(f, X[rows]) == y[rows]))
    return float(np.mean(accs))


@dataclass
class ChameleonAttack:
    """Label-only membership inference with adaptive poisoning (Chameleon).

    ``fit(X, y, challenge_idx, rng)`` runs Stage I (adaptive poison counts with ``n_shadow``
    shadow models) and Stage II (one membership neighbourhood per challenge point from the
    zero-poison shadows); ``poison_set()`` gives the poisons to inject; ``score(target)`` the
    Stage III scores of one target model; ``run(n_targets, rng)`` trains targets (random base
    sets + IN challenge points + all poisons) and evaluates them.

    Defaults are the official ones (t_p = 0.13, k_max = 8, R = 128, tau = 0.75, 8 shadows,
    label y' = (y+1) mod C). ``augment(x, n, rng)`` defaults to +-1 pixel shifts plus N(0, 0.05^2)
    noise on 8x8 images.

    Use it to audit models you own: it measures how much a poisoning adversary could learn about
    membership from labels alone. The same code is an attack on someone else's training
    pipeline; do not point it at data or models you have no right to test.
    """

    train_fn: TrainFn
    num_classes: int
    n_shadow: int = 8
    poison_threshold: float = 0.13
    k_max: int = 8
    n_aug: int = 128
    kl_threshold: float = 0.75
    base_fraction: float = 0.5
    augment: Callable[[np.ndarray, int, np.random.Generator], np.ndarray] = shift_noise_augment
    label_fn: Callable[[np.ndarray, int], np.ndarray] = label_flip

    def fit(self, X: np.ndarray, y: np.ndarray, challenge_idx: np.ndarray,
            rng: np.random.Generator) -> ChameleonAttack:
        """Stages I-II: ``counts_`` (k,), ``neighbourhoods_`` (k arrays of queries (q_j, d))."""
        if isinstance(self.n_shadow, bool) or not isinstance(self.n_shadow, int) \
                or self.n_shadow < 2 or self.n_shadow % 2:
            raise ValueError(f"n_shadow must be an even int >= 2 (each point IN in exactly half "
                             f"of the shadow models), got {self.n_shadow!r}")
        if self.n_aug < 1:
            raise ValueError(f"n_aug must be >= 1, got {self.n_aug!r}")
        self.X_, self.y_ = np.asarray(X), np.asarray(y)
        pop = draw_population(self.X_.shape[0], challenge_idx, self.n_shadow, rng,
                              self.base_fraction)
        counts, pop, shadows0 = adaptive_poison_counts(
            self.train_fn, self.X_, self.y_, pop.challenge_idx, self.num_classes,
            threshold=self.poison_threshold, k_max=self.k_max, rng=rng, population=pop)
        self.challenge_idx_, self.counts_, self.shadow_population_ = pop.challenge_idx, counts, pop
        self.neighbourhoods_ = self.find_neighbourhoods(shadows0, pop, rng)
        return self

    def find_neighbourhoods(self, shadows: Sequence[PredictProba], population: Population,
                            rng: np.random.Generator) -> list[np.ndarray]:
        """Stage II for every challenge point; an empty neighbourhood falls back to x itself."""
        out = []
        for j, row in enumerate(population.challenge_idx):
            x, c = self.X_[row], int(self.y_[row])
            kept, augs = membership_neighbourhood(
                shadows, population.masks[:, j], x, c, self.augment, rng, n_aug=self.n_aug,
                kl_threshold=self.kl_threshold)
            out.append(augs[kept] if kept.size else x[None].astype(augs.dtype))
        return out

    def poison_set(self, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The poisons (Xp, yp) for the fitted counts, or for ``counts`` (k,) instead."""
        return make_poison_set(self.X_, self.y_, self.challenge_idx_,
                               self.counts_ if counts is None else counts, self.num_classes,
                               self.label_fn)

    def score(self, target: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """(k,) Stage III scores of one target model (label-only queries)."""
        return fraction_labelled(target, self.neighbourhoods_, self.y_[self.challenge_idx_])

    def run(self, n_targets: int, rng: np.random.Generator,
            population: Population | None = None, counts: np.ndarray | None = None
            ) -> AttackReport:
        """Train ``n_targets`` poisoned targets (or use ``population``'s masks/base sets/seeds)
        and evaluate the distinguishing test. ``counts`` replaces the adaptive counts (the
        fixed-count ablation: same neighbourhoods, other poisons)."""
        pop = population or draw_population(self.X_.shape[0], self.challenge_idx_, n_targets,
                                            rng, self.base_fraction)
        counts = self.counts_ if counts is None else np.asarray(counts)
        targets = train_population(self.train_fn, self.X_, self.y_, pop,
                                   self.poison_set(counts))
        scores = np.stack([self.score(t) for t in targets])
        return AttackReport(scores, pop.masks.copy(), membership_metrics(scores, pop.masks),
                            counts.copy(), _heldout_accuracy(targets, self.X_, self.y_, pop),
                            {"neighbourhood_sizes": [len(q) for q in self.neighbourhoods_]})
