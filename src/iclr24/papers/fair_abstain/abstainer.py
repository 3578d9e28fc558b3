"""FAN as a scikit-learn style wrapper, and the statistics it is judged by (official
``compute_stats``).

:class:`FairAbstainer` solves the abstention IP on its fit sample, then learns two surrogate
networks on inputs [x, s(x)] (official: AbstainNet A and PredictNet H, 2 hidden layers of 300 with
dropout for Adult): A predicts w (predict vs abstain), H predicts h (the label). At test time it
abstains where A says so and otherwise outputs H's label; ``predict`` returns -1 for abstain.
Abstain targets are imbalanced (at most delta abstentions), so A's decision threshold is
calibrated per group on the fit sample to reproduce the IP's abstention rate of that group. The
surrogates see [x, z, s(x)] (on the paper's data sets x holds the protected attribute).
Surrogate training follows the official schedule: a 10% validation slice, early stopping on the
validation BCE with patience 20, between 20 and 500 epochs, the best epoch's weights kept
(scikit-learn's own ``early_stopping`` scores validation *accuracy*, which on targets with <= 20%
abstentions stops after ~12 epochs at a near-constant net). Differences: scikit-learn MLPs
(64, 64) without dropout instead of 300-unit torch nets with dropout 0.5.

The wrapper passes X to the base estimator unchanged (a pandas frame into a preprocessing
``Pipeline`` works); the surrogates see the numeric features, i.e. the output of the pipeline's
preprocessing steps when the base is a ``Pipeline``. Group labels may be any two distinct values
(``groups_`` holds them, sorted; the first is group 0).

Two disparity conventions are named apart:
- :func:`disparity_full_group`: rates over the whole group, an abstention counts as "not
  positive" (the IP's and the official ``accept_rate``);
- :func:`disparity_accepted_only`: rates over the accepted samples only (fairlearn's metrics on
  the accepted subset).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .ip import FAIRNESS, IPResult, _binary, solve_abstention_ip

__all__ = ["FairAbstainer", "abstention_report", "disparity_accepted_only",
           "disparity_full_group", "fit_surrogate", "per_group_confidence_abstention"]

ABSTAIN = -1


def _check_pred(pred: np.ndarray, n: int) -> np.ndarray:
    p = np.asarray(pred)
    if p.shape != (n,) or not np.isin(p, (ABSTAIN, 0, 1)).all():
        raise ValueError("predictions must be (n,) with values in {-1 (abstain), 0, 1}")
    return p.astype(np.int64)


def _rate_gaps(y, pred, group, fairness: str, accepted_only: bool) -> float:
    if fairness not in FAIRNESS:
        raise ValueError(f"fairness must be one of {FAIRNESS}, got {fairness!r}")
    conds = {"dp": [(0, 1)], "eop": [(1,)], "eod": [(1,), (0,)]}[fairness]
    gaps = []
    for ys in conds:
        rates = []
        for g in (0, 1):
            m = (group == g) & np.isin(y, ys)
            if accepted_only:
                m &= pred != ABSTAIN
            rates.append(float(np.mean(pred[m] == 1)) if m.any() else np.nan)
        gaps.append(abs(rates[0] - rates[1]))
    return float(np.nanmax(gaps)) if not np.all(np.isnan(gaps)) else float("nan")


def disparity_full_group(y: np.ndarray, pred: np.ndarray, group: np.ndarray,
                         fairness: str = "dp") -> float:
    """|rate_0 - rate_1| with rates over whole groups (abstained = not positive); for ``eod``
    the larger of the TPR and FPR gaps. y, pred (-1/0/1), group: (n,)."""
    y = _binary(y, "y")
    return _rate_gaps(y, _check_pred(pred, y.size), _binary(group, "group", y.size), fairness,
                      accepted_only=False)


def disparity_accepted_only(y: np.ndarray, pred: np.ndarray, group: np.ndarray,
                            fairness: str = "dp") -> float:
    """The same gap with rates over the accepted (non-abstained) samples of each group."""
    y = _binary(y, "y")
    return _rate_gaps(y, _check_pred(pred, y.size), _binary(group, "group", y.size), fairness,
                      accepted_only=True)


def abstention_report(y: np.ndarray, pred: np.ndarray, group: np.ndarray):
    """A pandas DataFrame, one row per group and one overall: n, abstention rate (overall /
    positives / negatives), accuracy on accepted, positive rate over the whole group
    (``positive_rate_full``) and over accepted (``positive_rate_accepted``), TPR/TNR full and
    accepted."""
    import pandas as pd

    y = _binary(y, "y")
    pred = _check_pred(pred, y.size)
    group = _binary(group, "group", y.size)
    rows = []
    for name, m in (("group_0", group == 0), ("group_1", group == 1),
                    ("overall", np.ones_like(y, bool))):
        acc = m & (pred != ABSTAIN)

        def mean(x):
            return float(np.mean(x)) if x.size else float("nan")

        rows.append({
            "group": name, "n": int(m.sum()),
            "abstention_rate": mean(pred[m] == ABSTAIN),
            "abstention_rate_pos": mean(pred[m & (y == 1)] == ABSTAIN),
            "abstention_rate_neg": mean(pred[m & (y == 0)] == ABSTAIN),
            "accuracy_accepted": mean(pred[acc] == y[acc]),
            "positive_rate_full": mean(pred[m] == 1),
            "positive_rate_accepted": mean(pred[acc] == 1),
            "tpr_full": mean(pred[m & (y == 1)] == 1),
            "tpr_accepted": mean(pred[acc & (y == 1)] == 1),
            "tnr_full": mean(pred[m & (y == 0)] == 0),
            "tnr_accepted": mean(pred[acc & (y == 0)] == 0),
        })
    return pd.DataFrame(rows).set_index("group")


def per_group_confidence_abstention(score: np.ndarray, group: np.ndarray,
                                    rates: Sequence[float]) -> np.ndarray:
    """Baseline: abstain on the ``rates[g]`` fraction of group g closest to the decision
    boundary (|s - 0.5| smallest), predict 1[s >= 0.5] elsewhere. score: (n,) in [0, 1];
    rates: (rate of group 0, rate of group 1). Returns (n,) in {-1, 0, 1}."""
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 1 or not np.all((s >= 0) & (s <= 1)):
        raise ValueError(f"score must be 1-D base scores in [0, 1] (no NaN), got shape {s.shape}")
    group = _binary(group, "group", s.size)
    if np.ndim(rates) != 1 or len(rates) != 2:
        raise ValueError(f"rates must be a pair (rate of group 0, rate of group 1), got {rates!r}")
    pred = (s >= 0.5).astype(np.int64)
    for g in (0, 1):
        r = float(rates[g])
        if not 0 <= r <= 1:
            raise ValueError(f"rates must lie in [0, 1], got {rates!r}")
        rows = np.flatnonzero(group == g)
        k = round(r * rows.size)
        pred[rows[np.argsort(np.abs(s[rows] - 0.5), kind="stable")[:k]]] = ABSTAIN
    return pred


class FairAbstainer:
    """Fair abstention without harm around a fitted binary classifier (FAN).

    base_estimator: a *fitted* classifier with ``predict_proba`` (its column 1 is s(x)).
    fairness "dp" | "eop" | "eod", epsilon >= 0, delta / eta in [0, 1] (per group or one number),
    sigma: abstention-parity bounds (1 = inactive); solver "counts" (default) | "per_sample";
    allow_flip: let the IP change base labels (the official program) or only abstain;
    hidden, max_iter, random_state: the surrogate MLPs (:func:`fit_surrogate`: early stopping
    on the BCE of a 10% validation slice, patience 20, at most ``max_iter`` = 500 epochs, as the
    official surrogates).

    After ``fit``: ``ip_result_`` (:class:`IPResult`), ``thresholds_`` (per-group thresholds of A),
    ``groups_`` (the two group labels, sorted; the first is group 0).
    If the IP is infeasible, ``fit`` raises ``ValueError`` naming the status (check with
    :func:`solve_abstention_ip` or :func:`min_feasible_abstention` first).
    """

    def __init__(self, base_estimator, fairness: str = "dp", epsilon: float = 0.03,
                 delta: float | Sequence[float] = (0.2, 0.2),
                 eta: float | Sequence[float] = (0.0, 0.0),
                 sigma: Sequence[float] = (1.0, 1.0, 1.0), solver: str = "counts",
                 allow_flip: bool = True, hidden: tuple[int, ...] = (64, 64),
                 max_iter: int = 500, random_state: int = 0) -> None:
        self.base_estimator = base_estimator
        self.fairness = fairness
        self.epsilon = epsilon
        self.delta = delta
        self.eta = eta
        self.sigma = sigma
        self.solver = solver
        self.allow_flip = allow_flip
        self.hidden = hidden
        self.max_iter = max_iter
        self.random_state = random_state

    def _score(self, X) -> np.ndarray:
        s = np.asarray(self.base_estimator.predict_proba(X), dtype=np.float64)[:, 1]
        if not np.all((s >= 0) & (s <= 1)):
            raise ValueError("base_estimator.predict_proba returned scores outside [0, 1] or NaN "
                             "(check X for missing values)")
        return s

    def _features(self, X) -> np.ndarray:
        """The numeric features the surrogates see: the output of the preprocessing steps when
        the base is a scikit-learn ``Pipeline``, else X itself as float. (n, d)."""
        steps = getattr(self.base_estimator, "steps", None)
        if steps is not None and len(steps) > 1:
            F = self.base_estimator[:-1].transform(X)
            F = F.toarray() if hasattr(F, "toarray") else F
        else:
            try:
                F = np.asarray(X, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError("X must be numeric (n, d), or base_estimator a Pipeline whose "
                                "preprocessing makes it numeric") from None
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d), got shape {F.shape}")
        return F

    def _encode_group(self, group, n: int) -> np.ndarray:
        g = np.asarray(group)
        if g.ndim != 1 or g.size != n:
            raise ValueError(f"group must be 1-D of length {n} (one label per row of X), "
                             f"got shape {g.shape}")
        codes = np.searchsorted(self.groups_, g)
        if np.any(codes >= 2) or np.any(self.groups_[np.minimum(codes, 1)] != g):
            raise ValueError(f"group has labels outside the two seen in fit "
                             f"{self.groups_.tolist()}")
        return codes.astype(np.int64)

    def _inputs(self, X, group: np.ndarray) -> np.ndarray:
        """[x, z, s(x)]: the official surrogates see x and s(x), and on Adult/COMPAS/Law x holds
        the protected attribute; here the group column is appended explicitly."""
        return np.column_stack([self._features(X), group, self._score(X)])

    def fit(self, X, y: np.ndarray, group) -> FairAbstainer:
        """X: (n, d) anything the base estimator accepts (array or pandas frame); y: (n,) 0/1;
        group: (n,) with exactly two distinct labels."""
        y = _binary(y, "y")
        if getattr(X, "shape", (len(X),))[0] != y.size:
            raise ValueError(f"X must have n = len(y) = {y.size} rows, got {len(X)}")
        g = np.asarray(group)
        classes = np.unique(g) if g.ndim == 1 else g
        if g.ndim != 1 or classes.size != 2:
            raise ValueError(f"group must be 1-D with exactly two distinct labels, got "
                             f"{classes.size if g.ndim == 1 else g.shape} labels/shape")
        self.groups_ = classes
        group = self._encode_group(g, y.size)
        s = self._score(X)
        yhat = (s >= 0.5).astype(np.int64)
        res = solve_abstention_ip(y, yhat, group, s, fairness=self.fairness,
                                  epsilon=self.epsilon, delta=self.delta, eta=self.eta,
                                  sigma=self.sigma, allow_flip=self.allow_flip,
                                  solver=self.solver)
        self.ip_result_: IPResult = res
        if not res.feasible:
            raise ValueError(f"the abstention IP is {res.status} for epsilon={self.epsilon}, "
                             f"delta={self.delta}, eta={self.eta}; relax them")
        Z = np.column_stack([self._features(X), group, s])

        def net(target):
            if np.unique(target).size < 2:
                return int(target[0])  # a constant decision
            return fit_surrogate(Z, target, hidden=self.hidden, max_epochs=self.max_iter,
                                 min_epochs=min(20, self.max_iter),
                                 random_state=self.random_state)

        self.abstain_net_, self.predict_net_ = net(res.w), net(res.h)
        p_keep = self._keep_probability(Z)
        self.thresholds_ = np.zeros(2)
        for g in (0, 1):
            m = group == g
            rate = 1.0 - res.w[m].mean()  # the IP's abstention rate of group g
            self.thresholds_[g] = np.quantile(p_keep[m], rate) if rate > 0 else -np.inf
        return self

    def _keep_probability(self, Z: np.ndarray) -> np.ndarray:
        a = self.abstain_net_
        return np.full(len(Z), float(a)) if isinstance(a, int) else a.predict_proba(Z)[:, 1]

    def keep_probability(self, X, group) -> np.ndarray:
        """(n,) the abstain net A's probability of predicting (w = 1) on X, group."""
        return self._keep_probability(self._inputs(X, self._encode_group(group, len(X))))

    def abstain_mask(self, X, group) -> np.ndarray:
        """(n,) bool, True where the wrapper abstains (A's keep probability below the group's
        calibrated threshold)."""
        group = self._encode_group(group, len(X))
        return self._keep_probability(self._inputs(X, group)) < self.thresholds_[group]

    def predict(self, X, group) -> np.ndarray:
        """(n,) in {-1 (abstain), 0, 1}; X (n, d), group (n,) with the labels seen in fit."""
        group = self._encode_group(group, len(X))
        Z = self._inputs(X, group)
        h = self.predict_net_
        labels = np.full(len(Z), h) if isinstance(h, int) else h.predict(Z)
        out = labels.astype(np.int64)
        out[self._keep_probability(Z) < self.thresholds_[group]] = ABSTAIN
        return out


def fit_surrogate(Z: np.ndarray, target: np.ndarray, *, hidden: tuple[int, ...] = (64, 64),
                  min_epochs: int = 20, max_epochs: int = 500, patience: int = 20,
                  validation_fraction: float = 0.1, random_state: int = 0):
    """A surrogate net (scikit-learn ``MLPClassifier``, Adam) on Z (n, d) -> target (n,) 0/1,
    trained epoch by epoch with early stopping on the validation BCE (official schedule:
    patience 20, 20 to 500 epochs); the weights of the best validation epoch are restored.
    The fitted model has ``n_epochs_`` (epochs run) and ``best_val_bce_``."""
    from sklearn.metrics import log_loss
    from sklearn.neural_network import MLPClassifier

    if not 1 <= min_epochs <= max_epochs or patience < 1:
        raise ValueError(f"need 1 <= min_epochs <= max_epochs and patience >= 1, got "
                         f"{min_epochs}, {max_epochs}, {patience}")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"validation_fraction must lie in (0, 1), got {validation_fraction!r}")
    target = _binary(target, "target", len(Z))
    rng = np.random.default_rng(random_state)
    order = rng.permutation(len(Z))
    n_val = max(1, round(validation_fraction * len(Z)))
    val, tr = order[:n_val], order[n_val:]
    model = MLPClassifier(hidden, random_state=random_state)
    best, best_params, since = np.inf, None, 0
    for epoch in range(1, max_epochs + 1):
        model.partial_fit(Z[tr], target[tr], classes=[0, 1])  # one epoch of Adam
        bce = log_loss(target[val], model.predict_proba(Z[val])[:, 1], labels=[0, 1])
        if bce < best:
            best, since = bce, 0
            best_params = ([c.copy() for c in model.coefs_],
                           [b.copy() for b in model.intercepts_])
        else:
            since += 1
        if epoch >= min_epochs and since >= patience:
            break
    model.coefs_, model.intercepts_ = best_params
    model.n_epochs_, model.best_val_bce_ = epoch, float(best)
    return model
