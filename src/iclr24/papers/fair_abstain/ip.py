"""The abstention integer program of FAN (official ``src/IP.py``), two exact solvers.

Per sample n (label y_n, base prediction yhat_n, group z_n in {0, 1}) the decisions are
w_n (1 = predict, 0 = abstain) and h_n (the final label; h != yhat is a flip), u_n = w_n h_n.

    minimise    sum_n (1 - 2 y_n) u_n + y_n w_n        (= errors among predicted samples)
    abstention  sum_{n in g} w_n >= (1 - delta_g) N_g
    no harm     sum_{n in g} [(1 - 2y) u + y w] <= (e_g + eta_g (1 - e_g)) sum_{n in g} w
    DP          |sum_{g=0} u / N_0 - sum_{g=1} u / N_1| <= eps      (abstained = not positive)
    EOp         the same over y = 1 with N_{g,1};  EOd: EOp and the same over y = 0
    parity      |sum_{g=0,y} w / N_{0,y} - sum_{g=1,y} w / N_{1,y}| <= sigma_y (and overall)

e_g is the base error rate of group g on the same sample. Everything depends on the samples only
through their cell (g, y, yhat), so the program is exactly a 16-variable integer program over
counts (a_c = predicted and kept, f_c = predicted and flipped, a_c + f_c <= N_c, per cell c),
followed by an assignment within each cell (``solver="counts"``, the default, milliseconds for
any n). ``solver="per_sample"`` solves the 3n-variable program of the official code (a
reference for small n). Both use ``scipy.optimize.milp`` (HiGHS).

:func:`min_abstention_dp_closed_form` is a closed-form characterisation of the minimal
abstention budget for DP with abstention only (h = yhat). The paper's own feasibility theorem
(Sec. 4) was not retrievable offline; this one is derived here from the same program (the
group with the higher positive rate must abstain on enough predicted positives, false positives
first, to close the gap down to eps, then on enough remaining errors to restore no harm), and
the claim ``feasibility_frontier`` checks it against the exact program.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["FAIRNESS", "IPResult", "assign_within_cells", "min_abstention_dp_closed_form",
           "min_feasible_abstention", "solve_abstention_ip"]

FAIRNESS = ("dp", "eop", "eod")
TIME_LIMIT_S = 30.0  # HiGHS time limit per program; an exact eps = 0 with flips can be slow


@dataclass(frozen=True)
class IPResult:
    """status: "optimal" or "infeasible" (or HiGHS's message for other outcomes);
    w, h: (n,) int decisions (None unless optimal); objective: errors among predicted;
    cell_counts: {(g, y, yhat): (N_c, kept, flipped)}."""

    status: str
    w: np.ndarray | None
    h: np.ndarray | None
    objective: float | None
    cell_counts: dict | None = None

    @property
    def feasible(self) -> bool:
        return self.status == "optimal"


def _binary(a: np.ndarray, name: str, n: int | None = None) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or (n is not None and a.size != n):
        raise ValueError(f"{name} must be 1-D of length {n}, got shape {a.shape}")
    if not np.isin(a, (0, 1)).all():
        raise ValueError(f"{name} must be binary (0/1), got values {np.unique(a)[:5]}")
    return a.astype(np.int64)


def _pair(v, name: str, lo: float, hi: float | None) -> tuple[float, float]:
    t = (v, v) if np.isscalar(v) else tuple(v)
    if len(t) != 2:
        raise ValueError(f"{name} must be a number or a pair (group 0, group 1), got {v!r}")
    for x in t:
        if not np.isfinite(x) or x < lo or (hi is not None and x > hi):
            rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
            raise ValueError(f"{name} must lie in {rng}, got {v!r}")
    return float(t[0]), float(t[1])


def _validate(y, yhat, group, fairness, epsilon, delta, eta, sigma):
    y = _binary(y, "y")
    yhat = _binary(yhat, "yhat", y.size)
    group = _binary(group, "group (a binary group column)", y.size)
    if fairness not in FAIRNESS:
        raise ValueError(f"fairness must be one of {FAIRNESS}, got {fairness!r}")
    if not np.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    delta = _pair(delta, "delta", 0.0, 1.0)
    eta = _pair(eta, "eta", 0.0, 1.0)
    sig = tuple(sigma) if not np.isscalar(sigma) else (sigma,) * 3
    if len(sig) != 3 or any(s < 0 for s in sig):
        raise ValueError(f"sigma must be three numbers >= 0 (y=1, y=0, overall), got {sigma!r}")
    for g in (0, 1):
        if not (group == g).any():
            raise ValueError(f"group {g} has no samples")
    return y, yhat, group, delta, eta, tuple(float(s) for s in sig)


CELLS = [(g, t, p) for g in (0, 1) for t in (0, 1) for p in (0, 1)]


class _Rows:
    """Accumulates linear constraints lb <= A x <= ub."""

    def __init__(self, nvar: int):
        self.nvar, self.A, self.lb, self.ub = nvar, [], [], []

    def add(self, coef: np.ndarray, lb: float, ub: float) -> None:
        self.A.append(coef)
        self.lb.append(lb)
        self.ub.append(ub)

    def abs_le(self, coef: np.ndarray, bound: float) -> None:  # |coef . x| <= bound
        self.add(coef, -bound, bound)


def _solve(c, rows: _Rows, lo, hi, integrality):
    from scipy.optimize import Bounds, LinearConstraint, milp

    cons = [LinearConstraint(np.array(rows.A), rows.lb, rows.ub)] if rows.A else []
    res = milp(c, constraints=cons, bounds=Bounds(lo, hi), integrality=integrality,
               options={"time_limit": TIME_LIMIT_S})
    if res.status == 0 and res.x is not None:
        return "optimal", res.x
    return ("infeasible" if res.status == 2 else str(res.message)), None


def _counts_program(y, yhat, group, fairness, epsilon, delta, eta, sigma, allow_flip,
                    minimise_delta=False):
    """Variables x = [a_c, f_c for c in CELLS] (+ delta if minimise_delta)."""
    N = {c: int(np.sum((group == c[0]) & (y == c[1]) & (yhat == c[2]))) for c in CELLS}
    nv = 16 + int(minimise_delta)
    ia = {c: 2 * i for i, c in enumerate(CELLS)}
    jf = {c: 2 * i + 1 for i, c in enumerate(CELLS)}

    def U(c):  # final positives among predicted in cell c
        v = np.zeros(nv)
        v[ia[c] if c[2] == 1 else jf[c]] = 1.0
        return v

    def W(c):
        v = np.zeros(nv)
        v[ia[c]] = v[jf[c]] = 1.0
        return v

    def err(c):
        return c[1] * (W(c) - U(c)) + (1 - c[1]) * U(c)  # (1-2y) u + y w summed over c

    rows = _Rows(nv)
    for c in CELLS:
        rows.add(W(c), 0, N[c])
    for g in (0, 1):
        cg = [c for c in CELLS if c[0] == g]
        n_g = sum(N[c] for c in cg)
        e_g = sum(N[c] for c in cg if c[1] != c[2]) / n_g
        w_g, err_g = sum(W(c) for c in cg), sum(err(c) for c in cg)
        if minimise_delta:  # sum w >= (1 - delta) N_g  <=>  sum w + N_g delta >= N_g
            v = w_g.copy()
            v[16] = n_g
            rows.add(v, n_g, np.inf)
        else:
            rows.add(w_g, (1 - delta[g]) * n_g, np.inf)
        rows.add(err_g - (e_g + eta[g] * (1 - e_g)) * w_g, -np.inf, 0.0)

    def rate_gap(ys):
        num = [sum(U(c) for c in CELLS if c[0] == g and c[1] in ys) for g in (0, 1)]
        den = [sum(N[c] for c in CELLS if c[0] == g and c[1] in ys) for g in (0, 1)]
        if min(den) == 0:
            return None
        return num[0] / den[0] - num[1] / den[1]

    gaps = {"dp": [(0, 1)], "eop": [(1,)], "eod": [(1,), (0,)]}[fairness]
    for ys in gaps:
        gap = rate_gap(ys)
        if gap is not None:
            rows.abs_le(gap, epsilon)
    for ys, s in (((1,), sigma[0]), ((0,), sigma[1]), ((0, 1), sigma[2])):
        if s < 1:
            num = [sum(W(c) for c in CELLS if c[0] == g and c[1] in ys) for g in (0, 1)]
            den = [sum(N[c] for c in CELLS if c[0] == g and c[1] in ys) for g in (0, 1)]
            if min(den) > 0:
                rows.abs_le(num[0] / den[0] - num[1] / den[1], s)
    lo = np.zeros(nv)
    hi = np.array([N[c] if (k == 0 or allow_flip) else 0 for c in CELLS for k in (0, 1)],
                  dtype=float)
    integ = np.ones(nv)
    if minimise_delta:
        hi = np.append(hi, 1.0)
        integ[16] = 0
        obj = np.zeros(nv)
        obj[16] = 1.0
    else:
        obj = sum(err(c) for c in CELLS)
    return N, ia, jf, obj, rows, lo, hi, integ


def assign_within_cells(y, yhat, group, score, counts: dict, order: str = "boundary"
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Turn per-cell counts {(g, y, yhat): (N_c, kept, flipped)} into w, h (n,). Within a cell,
    samples are ranked (``"boundary"``: |score - 0.5| ascending, the least certain first;
    ``"official"``: raw score ascending) and the first N_c - kept - flipped abstain, the next
    ``flipped`` are flipped, the rest keep yhat."""
    if order not in ("boundary", "official"):
        raise ValueError(f"order must be 'boundary' or 'official', got {order!r}")
    n = len(y)
    s = np.full(n, 0.5) if score is None else np.asarray(score, dtype=np.float64)
    if s.shape != (n,):
        raise ValueError(f"score must have shape ({n},), got {s.shape}")
    w, h = np.ones(n, dtype=np.int64), np.asarray(yhat, dtype=np.int64).copy()
    for c, (n_c, kept, flipped) in counts.items():
        rows = np.flatnonzero((group == c[0]) & (y == c[1]) & (yhat == c[2]))
        key = np.abs(s[rows] - 0.5) if order == "boundary" else s[rows]
        rows = rows[np.argsort(key, kind="stable")]
        n_abstain = n_c - kept - flipped
        w[rows[:n_abstain]] = 0
        h[rows[n_abstain:n_abstain + flipped]] = 1 - c[2]
    return w, h


def solve_abstention_ip(y: np.ndarray, yhat: np.ndarray, group: np.ndarray,
                        score: np.ndarray | None = None, *, fairness: str = "dp",
                        epsilon: float = 0.03, delta: float | Sequence[float] = (0.2, 0.2),
                        eta: float | Sequence[float] = (0.0, 0.0),
                        sigma: float | Sequence[float] = (1.0, 1.0, 1.0),
                        allow_flip: bool = True, solver: str = "counts",
                        order: str = "boundary") -> IPResult:
    """Solve FAN's abstention IP on a sample. y, yhat, group: (n,) binary; score: (n,) base
    scores in [0, 1] (used only to order samples within a cell). Returns an :class:`IPResult`;
    an infeasible setting is a status, not an exception. ``allow_flip=False`` forces h = yhat
    (abstention only)."""
    y, yhat, group, delta, eta, sigma = _validate(y, yhat, group, fairness, epsilon, delta,
                                                  eta, sigma)
    if score is not None:
        score = np.asarray(score, dtype=np.float64)
        if score.shape != y.shape or not np.all((score >= 0) & (score <= 1)):
            raise ValueError(f"score must be ({y.size},) finite base scores in [0, 1] (no NaN), "
                             f"got shape {score.shape}")
    if solver == "counts":
        N, ia, jf, obj, rows, lo, hi, integ = _counts_program(
            y, yhat, group, fairness, epsilon, delta, eta, sigma, allow_flip)
        status, x = _solve(obj, rows, lo, hi, integ)
        if x is None:
            return IPResult(status, None, None, None)
        x = np.rint(x).astype(np.int64)
        counts = {c: (N[c], int(x[ia[c]]), int(x[jf[c]])) for c in CELLS}
        w, h = assign_within_cells(y, yhat, group, score, counts, order)
        return IPResult(status, w, h, float(obj @ x), counts)
    if solver == "per_sample":
        return _per_sample(y, yhat, group, fairness, epsilon, delta, eta, sigma, allow_flip)
    raise ValueError(f"solver must be 'counts' or 'per_sample', got {solver!r}")


def _per_sample(y, yhat, group, fairness, epsilon, delta, eta, sigma, allow_flip) -> IPResult:
    n = y.size
    W, H, U = np.arange(n), n + np.arange(n), 2 * n + np.arange(n)
    rows = _Rows(3 * n)

    def sel(idx, vals):
        v = np.zeros(3 * n)
        v[idx] = vals
        return v

    obj = sel(U, 1 - 2 * y) + sel(W, y)
    for i in range(n):  # u = w h linearised
        e = np.zeros(3 * n)
        e[U[i]], e[W[i]] = 1, -1
        rows.add(e, -np.inf, 0)
        e = np.zeros(3 * n)
        e[U[i]], e[H[i]] = 1, -1
        rows.add(e, -np.inf, 0)
        e = np.zeros(3 * n)
        e[U[i]], e[W[i]], e[H[i]] = 1, -1, -1
        rows.add(e, -1, np.inf)
    for g in (0, 1):
        m = group == g
        n_g = int(m.sum())
        e_g = float(np.mean(y[m] != yhat[m]))
        rows.add(sel(W[m], 1.0), (1 - delta[g]) * n_g, np.inf)
        err = sel(U[m], 1 - 2 * y[m]) + sel(W[m], y[m])
        rows.add(err - (e_g + eta[g] * (1 - e_g)) * sel(W[m], 1.0), -np.inf, 0)
    gaps = {"dp": [(0, 1)], "eop": [(1,)], "eod": [(1,), (0,)]}[fairness]
    for ys in gaps:
        m0 = (group == 0) & np.isin(y, ys)
        m1 = (group == 1) & np.isin(y, ys)
        if m0.any() and m1.any():
            rows.abs_le(sel(U[m0], 1 / m0.sum()) - sel(U[m1], 1 / m1.sum()), epsilon)
    for ys, s in (((1,), sigma[0]), ((0,), sigma[1]), ((0, 1), sigma[2])):
        m0 = (group == 0) & np.isin(y, ys)
        m1 = (group == 1) & np.isin(y, ys)
        if s < 1 and m0.any() and m1.any():
            rows.abs_le(sel(W[m0], 1 / m0.sum()) - sel(W[m1], 1 / m1.sum()), s)
    lo, hi = np.zeros(3 * n), np.ones(3 * n)
    if not allow_flip:
        lo[H], hi[H] = yhat, yhat
    status, x = _solve(obj, rows, lo, hi, np.ones(3 * n))
    if x is None:
        return IPResult(status, None, None, None)
    x = np.rint(x).astype(np.int64)
    return IPResult(status, x[W], x[H], float(obj @ x))


def min_feasible_abstention(y: np.ndarray, yhat: np.ndarray, group: np.ndarray, *,
                            fairness: str = "dp", epsilon: float = 0.03,
                            eta: float | Sequence[float] = (0.0, 0.0),
                            allow_flip: bool = False) -> float:
    """The smallest abstention budget delta (the same for both groups) for which the IP is
    feasible, solved exactly as one mixed-integer program over counts with delta as a
    continuous variable (instead of a bisection). 1.0 when only abstaining on everything
    works."""
    y, yhat, group, _, eta, sigma = _validate(y, yhat, group, fairness, epsilon, 0.0, eta, 1.0)
    _N, _ia, _jf, obj, rows, lo, hi, integ = _counts_program(
        y, yhat, group, fairness, epsilon, (0.0, 0.0), eta, sigma, allow_flip,
        minimise_delta=True)
    status, x = _solve(obj, rows, lo, hi, integ)
    if x is None:
        raise RuntimeError(f"the abstention program with free delta did not solve: {status}")
    return float(max(0.0, x[16]))


def min_abstention_dp_closed_form(y: np.ndarray, yhat: np.ndarray, group: np.ndarray, *,
                                  epsilon: float,
                                  eta: float | Sequence[float] = (0.0, 0.0)) -> float:
    """Minimal abstention budget delta (the same for both groups) for DP with abstention only,
    in closed form over the cell counts. y, yhat, group: (n,) binary.

    With P_g predicted positives among N_g samples, r_g = P_g / N_g, let a be the group with the
    larger r (b the other); abstaining in b only lowers r_b and widens the gap, so b abstains on
    nothing and a abstains on
        k = ceil(P_a - N_a (r_b + eps))      predicted positives (DP: r_a' - r_b <= eps),
    false positives first (each removes an error), then on
        j = ceil((E - c A) / (1 - c))        further errors (no harm: E - j <= c (A - j)),
    with E the errors left after k, A = N_a - k accepted, c = e_a + eta_a (1 - e_a); the budget
    is delta* = (k + j) / N_a (0 when |r_a - r_b| <= eps). Valid where the DP window holds an
    integer and the extra j fit in a's false negatives or leftover false positives without
    pushing r_a below r_b - eps; outside that range it raises ``ValueError``."""
    y, yhat, group, _, eta, _ = _validate(y, yhat, group, "dp", epsilon, 0.0, eta, 1.0)
    tol = 1e-9
    N = [int(np.sum(group == g)) for g in (0, 1)]
    P = [int(np.sum((group == g) & (yhat == 1))) for g in (0, 1)]
    r = [P[g] / N[g] for g in (0, 1)]
    if abs(r[0] - r[1]) <= epsilon + tol:
        return 0.0  # the base classifier is already feasible (w = 1, h = yhat)
    a = 0 if r[0] > r[1] else 1
    b = 1 - a
    m = group == a
    fp = int(np.sum(m & (yhat == 1) & (y == 0)))
    fn = int(np.sum(m & (yhat == 0) & (y == 1)))
    k = math.ceil(P[a] - N[a] * (r[b] + epsilon) - tol)  # r_a' = (P_a - k) / N_a <= r_b + eps
    if P[a] - k < N[a] * (r[b] - epsilon) - tol:
        raise ValueError(f"epsilon={epsilon} is below the count resolution of group {a}: no "
                         "integer abstention count lands in the DP window")
    a_fp = min(fp, k)
    errors, accepted = fp + fn - a_fp, N[a] - k
    c = (fp + fn) / N[a] + eta[a] * (1 - (fp + fn) / N[a])  # e_a + eta_a (1 - e_a)
    j = 0 if c >= 1 else max(0, math.ceil((errors - c * accepted) / (1 - c) - tol))
    extra_fp = max(0, j - fn)  # beyond the false negatives, abstain on leftover false positives
    if extra_fp > fp - a_fp or P[a] - k - extra_fp < N[a] * (r[b] - epsilon) - tol:
        raise ValueError(f"epsilon={epsilon}, eta={eta}: no harm needs more error abstentions "
                         "than the closed form's range allows")
    return (k + j) / N[a]
