"""SAT Probe, its baselines and metrics (Yuksekgonul et al., ICLR 2024, arXiv 2309.15098,
Sec. 4 "Predicting factual errors", as in microsoft/mechanistic-error-probe).

- :class:`SATProbe`: StandardScaler -> L1 logistic regression (liblinear, C = 0.05,
  max_iter = 1000) on the attention features; score = P(correct). ``layers`` (with ``n_heads``)
  keeps only those layers' columns: the paper's early-error probe on layers 1..ℓ*.
  (scikit-learn >= 1.8 spells penalty="l1" as ``l1_ratio=1``; the same model.)
- :func:`risk_at`: Risk@Top20% = error rate among the 20% highest-scored items (lower is
  better), Risk@Bottom20% = among the 20% lowest (higher is better); ties at the cut are
  shared out as under a random tie-break, so a constant score gets exactly the base error rate.
- :func:`evaluate_predictors`: the official 50/50 stratified split (``random_state=seed``) and,
  on the same test half, AUROC and both risks of SAT Probe, Confidence (log-prob of the
  completion truncated to |gt| tokens, used directly), Popularity (used directly), Constant
  (the training half's majority class), Combined ([attention, confidence] -> the same
  LR), and any further probe given in ``extra_probes`` (a control span, early layers).
- :func:`cross_fitted_scores` (not in the paper): out-of-fold scores of the same predictors on
  every item (stratified K-fold), for a model that is deterministic, where the official single
  50/50 split would leave half the items unscored and repeated splits of the same items are
  not independent replicates; :func:`bootstrap_aurocs` then resamples the items (stratified
  by class, the same items for every predictor) for intervals on AUROCs and their differences.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

__all__ = ["SATProbe", "bootstrap_aurocs", "cross_fitted_scores", "evaluate_predictors",
           "risk_at"]


class SATProbe(ClassifierMixin, BaseEstimator):
    """Sparse logistic regression on attention features (n, L·H), column ℓ·H + h.

    C: inverse L1 strength (paper: 0.05; features are standardised first, as the paper);
    layers: indices of the layers to keep (``None``: every column), which needs ``n_heads``.
    """

    def __init__(self, C: float = 0.05, layers: Sequence[int] | None = None,
                 n_heads: int | None = None, max_iter: int = 1000) -> None:
        self.C = C
        self.layers = layers
        self.n_heads = n_heads
        self.max_iter = max_iter

    def _columns(self, n_features: int) -> np.ndarray:
        if self.layers is None:
            return np.arange(n_features)
        h = self.n_heads
        if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 1 \
                or n_features % h:
            raise ValueError(f"n_heads must be a positive int dividing the {n_features} "
                             f"feature columns when layers are given, got {h!r}")
        n_layers = n_features // h
        layers = list(self.layers)
        if not layers or any(isinstance(ly, bool) or not isinstance(ly, (int, np.integer))
                             or not 0 <= ly < n_layers for ly in layers):
            raise ValueError(f"layers must be a non-empty list of layer indices in "
                             f"[0, {n_layers}), got {self.layers!r}")
        return np.concatenate([np.arange(ly * h, (ly + 1) * h) for ly in layers])

    @staticmethod
    def _matrix(X: object) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array (n, features), got shape "
                             f"{X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X must hold finite numbers")
        return X

    def fit(self, X: object, y: object) -> SATProbe:
        """Fit on features X (n, L·H) and labels y (n,) in {0, 1} (1 = correct)."""
        if not (isinstance(self.C, (int, float)) and not isinstance(self.C, bool)
                and self.C > 0):
            raise ValueError(f"C must be a number > 0, got {self.C!r}")
        X = self._matrix(X)
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(f"y must hold both classes to fit a probe, got {classes.tolist()}")
        self.columns_ = self._columns(X.shape[1])
        self.n_features_in_ = X.shape[1]
        self.pipeline_ = make_pipeline(
            StandardScaler(),
            LogisticRegression(l1_ratio=1.0, solver="liblinear", C=float(self.C),
                               max_iter=int(self.max_iter), random_state=0))  # penalty="l1"
        self.pipeline_.fit(X[:, self.columns_], y)
        self.classes_ = self.pipeline_.classes_
        return self

    def _checked(self, X: object) -> np.ndarray:
        check_is_fitted(self, "pipeline_")
        X = self._matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} columns, the probe was fitted on "
                             f"{self.n_features_in_}")
        return X[:, self.columns_]

    def predict_proba(self, X: object) -> np.ndarray:
        """(n, 2): P(class) in the order of ``classes_``; column 1 = P(correct) for 0/1 y."""
        return self.pipeline_.predict_proba(self._checked(X))

    def decision_function(self, X: object) -> np.ndarray:
        return self.pipeline_.decision_function(self._checked(X))

    def predict(self, X: object) -> np.ndarray:
        return self.pipeline_.predict(self._checked(X))

    @property
    def coef_(self) -> np.ndarray:
        """The L1-sparse weights over the kept columns (standardised units)."""
        check_is_fitted(self, "pipeline_")
        return self.pipeline_[-1].coef_[0]


def _labels_scores(y: object, score: object) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y)
    s = np.asarray(score, dtype=np.float64)
    if y.ndim != 1 or s.shape != y.shape or y.size == 0:
        raise ValueError(f"y and score must be 1-D of equal, non-zero length, got shapes "
                         f"{y.shape} and {s.shape}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("y must hold 0/1 (or bool) labels, 1 = correct")
    if np.isnan(s).any():
        raise ValueError("score must not hold NaN")
    return y.astype(np.float64), s


def risk_at(y: object, score: object, frac: float = 0.2, side: str = "top") -> float:
    """Error rate (share of y == 0) among the ``frac`` of items with the highest (``side=
    "top"``) or lowest (``"bottom"``) scores; k = max(1, round(frac · n)) items, ties at the
    cut shared out as under a uniformly random tie-break (the expected error rate)."""
    y, s = _labels_scores(y, score)
    if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= 1:
        raise ValueError(f"frac must be a number in (0, 1], got {frac!r}")
    if side not in ("top", "bottom"):
        raise ValueError(f"side must be 'top' or 'bottom', got {side!r}")
    if side == "bottom":
        s = -s
    k = max(1, round(frac * y.size))
    cut = np.sort(s)[::-1][k - 1]  # the k-th highest score
    above = s > cut
    tied = s == cut
    errors = 1.0 - y
    # the slots left after the items strictly above the cut go to the tied ones at random
    share = (k - above.sum()) / tied.sum()
    return float((errors[above].sum() + share * errors[tied].sum()) / k)


def _metrics(y: np.ndarray, score: np.ndarray) -> dict[str, float]:
    auroc = float(roc_auc_score(y, score)) if np.unique(y).size == 2 else math.nan
    return {"auroc": auroc, "risk_top20": risk_at(y, score, 0.2, "top"),
            "risk_bottom20": risk_at(y, score, 0.2, "bottom")}


def _probe_score(X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray,
                 C: float) -> np.ndarray:
    probe = SATProbe(C=C).fit(X[train], y[train])
    return probe.predict_proba(X[test])[:, list(probe.classes_).index(1)]


def _predictor_inputs(features: object, confidence: object, popularity: object | None,
                      y: object, extra_probes: Mapping[str, object] | None):
    """Checked arrays: X (n, k), y (n,) ints, confidence (n,), popularity (n,) or None, extras."""
    X = SATProbe._matrix(features)
    y_arr = np.asarray(y)
    n = X.shape[0]
    if y_arr.shape != (n,) or not np.isin(y_arr, (0, 1)).all():
        raise ValueError(f"y must be a 0/1 array of shape ({n},), got shape {y_arr.shape}")
    conf = np.asarray(confidence, dtype=np.float64)
    if conf.shape != (n,) or not np.isfinite(conf).all():
        raise ValueError(f"confidence must be a finite array of shape ({n},)")
    pop = None if popularity is None else np.asarray(popularity, dtype=np.float64)
    if pop is not None and (pop.shape != (n,) or not np.isfinite(pop).all()):
        raise ValueError(f"popularity must be None or a finite array of shape ({n},)")
    extras = {name: SATProbe._matrix(v) for name, v in (extra_probes or {}).items()}
    for name, v in extras.items():
        if v.shape[0] != n:
            raise ValueError(f"extra_probes[{name!r}] must have {n} rows, got {v.shape[0]}")
    return X, y_arr.astype(int), conf, pop, extras


def evaluate_predictors(features: object, confidence: object, popularity: object | None,
                        y: object, seed: int = 0, *,
                        extra_probes: Mapping[str, object] | None = None,
                        test_size: float = 0.5, C: float = 0.05) -> pd.DataFrame:
    """AUROC, Risk@Top20% and Risk@Bottom20% of every predictor on one stratified split.

    features: (n, L·H) attention features; confidence: (n,) log-prob of the completion
    truncated to |gt|; popularity: (n,) or ``None``; y: (n,) 1 = correct; extra_probes: name ->
    (n, k) features, each fitted as another SATProbe on the same split (e.g. attention to a
    control span, early layers only). Rows: sat_probe, confidence, popularity, constant,
    combined, then the extra probes; ``df.attrs`` holds base_rate (share correct in the test
    half), n_train, n_test. With fewer than 2 items of either class no stratified split exists:
    every metric is NaN then (a model that is always wrong gives no error predictor).
    """
    X, y_arr, conf, pop, extras = _predictor_inputs(features, confidence, popularity, y,
                                                    extra_probes)
    n = X.shape[0]
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1), got {test_size!r}")
    names = (["sat_probe", "confidence"] + (["popularity"] if pop is not None else [])
             + ["constant", "combined"] + list(extras))
    counts = np.bincount(y_arr, minlength=2)
    if counts.min() < 2:
        nan = {"auroc": math.nan, "risk_top20": math.nan, "risk_bottom20": math.nan}
        df = pd.DataFrame([nan for _ in names], index=pd.Index(names, name="predictor"))
        df.attrs.update(base_rate=float(y_arr.mean()), n_train=0, n_test=0)
        return df
    train, test = train_test_split(np.arange(n), test_size=test_size, stratify=y_arr,
                                   random_state=seed)
    yt = y_arr[test]
    scores = {"sat_probe": _probe_score(X, y_arr, train, test, C), "confidence": conf[test]}
    if pop is not None:
        scores["popularity"] = pop[test]
    majority = float(np.bincount(y_arr[train], minlength=2).argmax())
    scores["constant"] = np.full(test.size, majority)
    scores["combined"] = _probe_score(np.column_stack([X, conf]), y_arr, train, test, C)
    for name, v in extras.items():
        scores[name] = _probe_score(v, y_arr, train, test, C)
    df = pd.DataFrame([_metrics(yt, scores[k]) for k in names],
                      index=pd.Index(names, name="predictor"))
    df.attrs.update(base_rate=float(yt.mean()), n_train=int(train.size), n_test=int(test.size))
    return df


def cross_fitted_scores(features: object, confidence: object, popularity: object | None,
                        y: object, *, n_folds: int = 5, seed: int = 0,
                        extra_probes: Mapping[str, object] | None = None, C: float = 0.05
                        ) -> dict[str, np.ndarray]:
    """Out-of-fold scores (n,) of every predictor of :func:`evaluate_predictors`, each item
    scored by probes fitted on the other folds (``StratifiedKFold(n_folds, shuffle=True,
    random_state=seed)``). Confidence and popularity are used directly; the constant predictor
    scores every item alike (its AUROC is 0.5 and its risks the base error rate, whatever the
    constant). With fewer than ``n_folds`` items of a class the folds drop to that count; with
    fewer than 2, every score is NaN (no probe can be fitted)."""
    X, y_arr, conf, pop, extras = _predictor_inputs(features, confidence, popularity, y,
                                                    extra_probes)
    if isinstance(n_folds, bool) or not isinstance(n_folds, (int, np.integer)) or n_folds < 2:
        raise ValueError(f"n_folds must be an int >= 2, got {n_folds!r}")
    n = X.shape[0]
    probes = {"sat_probe": X, "combined": np.column_stack([X, conf]), **extras}
    names = (["sat_probe", "confidence"] + (["popularity"] if pop is not None else [])
             + ["constant", "combined"] + list(extras))
    out = {name: np.full(n, np.nan) for name in names}
    folds = min(int(n_folds), int(np.bincount(y_arr, minlength=2).min()))
    if folds < 2:
        return out
    out.update(confidence=conf.copy(), constant=np.zeros(n))
    if pop is not None:
        out["popularity"] = pop.copy()
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train, test in splitter.split(X, y_arr):
        for name, feats in probes.items():
            out[name][test] = _probe_score(feats, y_arr, train, test, C)
    return out


def bootstrap_aurocs(y: object, scores: Mapping[str, object], *, n_resamples: int = 1000,
                     seed: int = 0) -> dict[str, np.ndarray]:
    """AUROC of each score over ``n_resamples`` stratified bootstrap resamples of the items:
    the correct and the wrong items are each resampled with replacement at their own count
    (every resample keeps both classes), and every predictor sees the same resampled items,
    so differences between predictors are paired. Returns name -> (n_resamples,) AUROCs (NaN
    throughout for a score holding NaN)."""
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or not np.isin(y_arr, (0, 1)).all():
        raise ValueError("y must be a 1-D array of 0/1 labels (1 = correct)")
    pos, neg = np.flatnonzero(y_arr == 1), np.flatnonzero(y_arr == 0)
    if pos.size == 0 or neg.size == 0:
        raise ValueError("y must hold both classes: AUROC is undefined with one")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    arrays = {}
    for name, score in scores.items():
        a = np.asarray(score, dtype=np.float64)
        if a.shape != y_arr.shape:
            raise ValueError(f"scores[{name!r}] must have shape {y_arr.shape}, got {a.shape}")
        arrays[name] = a
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(pos.size), np.zeros(neg.size)]
    out = {name: np.full(int(n_resamples), np.nan) for name in arrays}
    for b in range(int(n_resamples)):
        idx = np.r_[rng.choice(pos, pos.size), rng.choice(neg, neg.size)]
        for name, a in arrays.items():
            if not np.isnan(a).any():
                out[name][b] = roc_auc_score(labels, a[idx])
    return out
