"""Top-K sparse softmax gating Gaussian mixture of experts and its EM fit (Nguyen, Akbarian, Yan
& Ho, ICLR 2024, Sec. 2).

p_G(y | x) = sum_i Softmax(TopK(beta_1^T x + beta_0, K))_i N(y; a_i^T x + b_i, sigma_i),
TopK keeping the K largest logits and sending the rest to -inf (weight exactly 0); sigma_i is a
*variance*. The estimator is the MLE, computed by EM:

- E-step: tau_ni proportional to g_i(x_n) N(y_n; a_i^T x_n + b_i, sigma_i), zero off the top-K set;
- M-step, experts: weighted least squares per expert, sigma_i = weighted mean squared residual;
- M-step, gate: the quadratic-bound (IRLS) step of the public EM code,
  beta_i <- beta_i + 4 (X~^T X~)^{-1} X~^T (tau_i - g_i) (working response with weights 1/4), with a
  backtracking line search that re-evaluates the top-K sets (the objective is only piecewise
  smooth). The reference expert's gate stays fixed (softmax is invariant to a common shift).

The line search accepts a gate step when the *observed* log-likelihood does not decrease, not
the EM surrogate Q = sum tau log g: Q is -inf as soon as any sample's responsible expert leaves
its top-K set, so a Q-based search can never move a region boundary inwards and EM locks the
partition of its initialisation (we observed fits ending below the truth's likelihood). The
bound step is still an ascent direction (grad Q = grad loglik at the current point), and the
likelihood is non-decreasing at every EM iteration. For the same reason each gate M-step ends
with a small compass search (steps 1e-2 to 1e-4 per gate parameter, kept only if the likelihood
rises), which moves region boundaries across samples; the public code has no such step.

Dense gates (top_k = n_experts) have a smooth, concave gate objective Q_gate = sum tau log g,
so their gate M-step is exact: Newton's method on Q_gate, warm-started (``_gate_newton``).
Over-specified dense fits converge sublinearly under EM (the likelihood is nearly flat along
the split of two atoms of one cell); ``polish=True`` finishes EM by maximising the same
log-likelihood with a trust-region Newton method (analytic gradient and Hessian), which is
where the MLE lies whatever EM's stopping point. The over-specified likelihood can have
several maxima (one atom of a cell nearly dropping out is another stationary point), and the
polish reports the one it reaches from EM's iterate; it never ends below it.

Starting points: the public code (and our rate studies) start EM near the truth. ``fit``
without ``init`` starts from ``default_init`` (ours, not in the paper): k-means on the
standardised (x, y), least-squares experts per cluster and a dense logistic gate fitted to the
cluster labels; ``n_init`` starts (a given ``init`` first) are run and the highest final
likelihood is kept, since EM from far starts can stop at poor local maxima.

Other differences from the public code: all samples and experts are processed at once (masked
logsumexp instead of per-sample loops), the sparse gate M-step runs at most ``gate_iter`` (10)
bound steps per EM iteration instead of up to 1000 (a generalised EM), and ``tol`` bounds the
change of the *total* log-likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["TopKGaussianMoE"]

_LOG2PI = np.log(2 * np.pi)
_VAR_FLOOR = 1e-12


def _as_2d(X, name="X") -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"{name} must be a finite (n, d) array, got shape {X.shape}")
    return X


def _row_max(a: np.ndarray) -> np.ndarray:
    """max over the (few) columns of a (n, k) array, column by column: numpy's reduction along
    a short contiguous axis is ~20x slower than k - 1 elementwise maxima. (n, k) -> (n, 1)."""
    top = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.maximum(top, a[:, j], out=top)
    return top[:, None]


def _row_sum(a: np.ndarray) -> np.ndarray:
    """sum over the columns of a finite (n, k) array (BLAS matrix-vector product). -> (n, 1)"""
    return a @ np.ones((a.shape[1], 1))


def _masked_log_softmax(logits: np.ndarray, top_k: int) -> np.ndarray:
    """log Softmax(TopK(logits)) row by row: -inf off the K largest, no NaN. (n, k) -> (n, k)."""
    k = logits.shape[1]
    shifted = logits - _row_max(logits)
    if top_k < k:  # exactly K per row: keep expert i if fewer than K experts outrank it
        keep = np.empty(logits.shape, dtype=bool)
        for i in range(k):
            rank = np.zeros(logits.shape[0], dtype=np.int16)
            for j in range(k):                                   # ties go to the lower index
                if j != i:
                    rank += logits[:, j] > logits[:, i] if j > i else logits[:, j] >= logits[:, i]
            keep[:, i] = rank < top_k
        shifted = np.where(keep, shifted, -np.inf)
    return shifted - np.log(_row_sum(np.exp(shifted)))


def _log_sum(a: np.ndarray) -> np.ndarray:
    top = _row_max(a)
    return top[:, 0] + np.log(_row_sum(np.exp(a - top))[:, 0])


@dataclass
class _FitTrace:
    log_likelihood: list


class TopKGaussianMoE:
    """Gaussian MoE with a top-K sparse softmax gate; scikit-learn style.

    n_experts: k; top_k: K in 1..k; reference: the expert whose gate parameters are fixed (the
    softmax shift is removed by keeping them at their initial value, 0 by default); tol: stop
    when the total log-likelihood changes by less than this; max_iter: EM iterations;
    gate_iter: bound (sparse) or Newton (dense) steps of the gate M-step per EM iteration;
    polish: after EM, maximise the likelihood by trust-region Newton (dense gates only);
    polish_gtol: its stopping bound on the gradient of the mean log-likelihood; n_init: number of
    EM starts, the fit with the highest likelihood is kept (a given ``init`` is one of them, the
    others are data-driven, see :meth:`default_init`); random_state: seed of those starts.

    Fitted attributes (shapes, d = covariate dimension): gate_coef_ (k, d), gate_intercept_ (k,),
    expert_coef_ (k, d), expert_intercept_ (k,), variances_ (k,), log_likelihood_ (trace of the
    mean log-likelihood, one entry per EM iteration, plus one after the polish), n_iter_,
    polish_gradient_ (with polish: largest |gradient| of the mean log-likelihood at the end),
    start_log_likelihoods_ (final mean log-likelihood of each start, the given ``init`` first),
    best_start_ (index of the kept start).
    """

    def __init__(self, n_experts: int, top_k: int, *, reference: int | None = None,
                 tol: float = 1e-6, max_iter: int = 2000, gate_iter: int = 10,
                 polish: bool = False, polish_gtol: float = 1e-9, n_init: int = 1,
                 random_state: int | np.random.Generator | None = None):
        if isinstance(n_experts, bool) or not isinstance(n_experts, (int, np.integer)) \
                or n_experts < 1:
            raise ValueError(f"n_experts must be a positive int, got {n_experts!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) \
                or not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k must be an int in 1..n_experts={n_experts}, got {top_k!r}")
        reference = n_experts - 1 if reference is None else reference
        if not 0 <= reference < n_experts:
            raise ValueError(f"reference must index an expert (0..{n_experts - 1}), "
                             f"got {reference!r}")
        if not tol > 0:
            raise ValueError(f"tol must be positive, got {tol!r}")
        for name, v in (("max_iter", max_iter), ("gate_iter", gate_iter), ("n_init", n_init)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.n_experts, self.top_k, self.reference = int(n_experts), int(top_k), int(reference)
        if not isinstance(polish, (bool, np.bool_)):
            raise TypeError(f"polish must be a bool, got {polish!r}")
        if polish and top_k != n_experts:
            raise ValueError("polish needs a dense gate (top_k == n_experts): the top-K "
                             f"likelihood is only piecewise smooth; got top_k={top_k}")
        if not polish_gtol > 0:
            raise ValueError(f"polish_gtol must be positive, got {polish_gtol!r}")
        self.tol, self.max_iter, self.gate_iter = float(tol), int(max_iter), int(gate_iter)
        self.polish, self.polish_gtol = bool(polish), float(polish_gtol)
        if random_state is not None and (isinstance(random_state, bool) or not isinstance(
                random_state, (int, np.integer, np.random.Generator))):
            raise TypeError("random_state must be None, an int or a numpy Generator, got "
                            f"{type(random_state).__name__}")
        self.n_init, self.random_state = int(n_init), random_state

    # -- parameters ---------------------------------------------------------------------------
    def set_params(self, gate_coef, gate_intercept, expert_coef, expert_intercept,
                   variances) -> TopKGaussianMoE:
        """Set all parameters (shapes as the fitted attributes); returns self."""
        k = self.n_experts
        gc = _as_2d(gate_coef, "gate_coef") if np.ndim(gate_coef) == 2 else \
            np.asarray(gate_coef, float).reshape(k, -1)
        ec = _as_2d(expert_coef, "expert_coef") if np.ndim(expert_coef) == 2 else \
            np.asarray(expert_coef, float).reshape(k, -1)
        gi, ei = (np.asarray(v, float).reshape(-1) for v in (gate_intercept, expert_intercept))
        var = np.asarray(variances, float).reshape(-1)
        if gc.shape[0] != k or ec.shape != gc.shape or gi.shape != (k,) or ei.shape != (k,) \
                or var.shape != (k,):
            raise ValueError(f"parameters must describe {k} experts with equal covariate "
                             f"dimension; got gate_coef {gc.shape}, expert_coef {ec.shape}, "
                             f"intercepts {gi.shape}, {ei.shape}, variances {var.shape}")
        if not np.all(np.isfinite(var)) or np.any(var <= 0):
            raise ValueError(f"variances must be positive, got {var}")
        self.gate_coef_, self.gate_intercept_ = gc.copy(), gi.copy()
        self.expert_coef_, self.expert_intercept_, self.variances_ = ec.copy(), ei.copy(), var.copy()
        return self

    def _params(self):
        try:
            return (self.gate_coef_, self.gate_intercept_, self.expert_coef_,
                    self.expert_intercept_, self.variances_)
        except AttributeError:
            raise ValueError("the model has no parameters yet: call set_params or fit") from None

    # -- densities ----------------------------------------------------------------------------
    def log_gate(self, X) -> np.ndarray:
        """log of the top-K softmax gate, -inf for unselected experts: (n, d) -> (n, k)."""
        gc, gi, *_ = self._params()
        X = self._check_X(X)
        return _masked_log_softmax(X @ gc.T + gi, self.top_k)

    def _check_X(self, X):
        X = _as_2d(X)
        if X.shape[1] != self._params()[0].shape[1]:
            raise ValueError(f"X must have {self.gate_coef_.shape[1]} columns, got {X.shape[1]}")
        return X

    def _log_joint(self, X, y):
        return self.log_gate(X) + self._log_normals(X, y)             # log g_i + log N(y; a_i^T x + b_i, sigma_i)

    def log_prob(self, X, y) -> np.ndarray:
        """log p_G(y_n | x_n): X (n, d), y (n,) -> (n,)."""
        X = self._check_X(X)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have {X.shape[0]} entries, got {y.shape[0]}")
        return _log_sum(self._log_joint(X, y))

    def sample(self, X, rng: np.random.Generator) -> np.ndarray:
        """y_n ~ p_G(. | x_n), shape (n,)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        X = self._check_X(X)
        g = np.exp(self.log_gate(X))
        u = rng.random(X.shape[0])[:, None]
        expert = np.minimum((np.cumsum(g, axis=1) < u).sum(axis=1), self.n_experts - 1)
        _, _, ec, ei, var = self._params()
        mean = np.einsum("nd,nd->n", X, ec[expert]) + ei[expert]
        return mean + np.sqrt(var[expert]) * rng.standard_normal(X.shape[0])

    # -- EM -----------------------------------------------------------------------------------
    def _log_normals(self, X, y):
        _, _, ec, ei, var = self._params()
        return -0.5 * (_LOG2PI + np.log(var) + (y[:, None] - X @ ec.T - ei) ** 2 / var)

    def _gate_loglik(self, X, log_norm, gc, gi):
        return float(_log_sum(_masked_log_softmax(X @ gc.T + gi, self.top_k) + log_norm).sum())

    def _gate_newton(self, X, tau):
        """Exact gate M-step for a dense gate (top_k = n_experts): maximise the concave
        Q_gate(beta) = sum_n sum_i tau_ni log softmax_i(beta^T x~_n) by Newton's method with
        backtracking on Q_gate, warm-started at the current gate (one to three steps suffice)."""
        n, k = tau.shape
        Xt = np.hstack([X, np.ones((n, 1))])
        p = Xt.shape[1]
        free = np.flatnonzero(np.arange(k) != self.reference)
        m = free.size
        beta = np.hstack([self.gate_coef_, self.gate_intercept_[:, None]])   # (k, d + 1)

        def q_gate(b):
            return float((tau * _masked_log_softmax(Xt @ b.T, k)).sum())   # sum tau log g

        q = q_gate(beta)
        for _ in range(self.gate_iter):
            g = np.exp(_masked_log_softmax(Xt @ beta.T, k))[:, free]        # (n, m)
            grad = ((tau[:, free] - g).T @ Xt).reshape(-1)                  # dQ/dbeta_i = sum (tau_i - g_i) x~
            H = np.empty((m, p, m, p))                                      # -Hessian of Q_gate:
            for i in range(m):                                              # sum (delta_ij g_i - g_i g_j) x~ x~^T
                for j in range(i, m):
                    w = (g[:, i] if i == j else 0.0) - g[:, i] * g[:, j]
                    H[i, :, j, :] = H[j, :, i, :] = (Xt * w[:, None]).T @ Xt
            H = H.reshape(m * p, m * p)
            step = np.linalg.solve(H + 1e-12 * np.eye(m * p), grad).reshape(m, p)
            eta = 1.0
            for _ in range(30):                                             # backtracking on Q
                cand = beta.copy()
                cand[free] += eta * step
                q_new = q_gate(cand)
                if q_new >= q:
                    break
                eta /= 2
            else:
                break
            done = q_new - q <= 1e-13 * max(1.0, abs(q))
            beta, q = cand, q_new
            if done:
                break
        self.gate_coef_, self.gate_intercept_ = beta[:, :-1].copy(), beta[:, -1].copy()

    def _gate_step(self, X, y):
        Xt = np.hstack([X, np.ones((X.shape[0], 1))])
        pre = 4.0 * np.linalg.inv(Xt.T @ Xt)                         # 4 (X~^T X~)^{-1}
        free = np.arange(self.n_experts) != self.reference
        gc, gi = self.gate_coef_, self.gate_intercept_
        log_norm = self._log_normals(X, y)                            # experts are fixed here
        ll = self._gate_loglik(X, log_norm, gc, gi)
        for _ in range(self.gate_iter):
            lj = self.log_gate(X) + log_norm
            tau = np.exp(lj - _log_sum(lj)[:, None])
            g = np.exp(self.log_gate(X))
            step = (Xt.T @ (tau - g)).T @ pre                         # IRLS bound step on Q
            step[~free] = 0.0
            eta, accepted = 1.0, False
            for _ in range(12):                                       # backtracking line search
                gc_new, gi_new = gc + eta * step[:, :-1], gi + eta * step[:, -1]
                ll_new = self._gate_loglik(X, log_norm, gc_new, gi_new)
                if ll_new >= ll:
                    accepted = True
                    break
                eta /= 2
            if not accepted:
                break
            done = ll_new - ll <= 1e-12 * max(1.0, abs(ll))
            gc, gi, ll = gc_new, gi_new, ll_new
            self.gate_coef_, self.gate_intercept_ = gc, gi
            if done:
                break
        self._boundary_search(X, log_norm, ll)

    def _boundary_search(self, X, log_norm, ll):
        """Compass search over each free gate parameter (steps +-1e-2, 1e-3, 1e-4, kept only
        if the log-likelihood rises): the bound step follows the gradient inside one top-K
        partition and cannot see the likelihood jump when a region boundary crosses samples."""
        free = [i for i in range(self.n_experts) if i != self.reference]
        for delta in (1e-2, 1e-3, 1e-4):
            for i in free:
                for j in range(self.gate_coef_.shape[1] + 1):
                    for sign in (1.0, -1.0):
                        gc, gi = self.gate_coef_.copy(), self.gate_intercept_.copy()
                        if j < gc.shape[1]:
                            gc[i, j] += sign * delta
                        else:
                            gi[i] += sign * delta
                        ll_new = self._gate_loglik(X, log_norm, gc, gi)
                        if ll_new > ll:
                            self.gate_coef_, self.gate_intercept_, ll = gc, gi, ll_new
                            break

    def _expert_step(self, X, y, tau):
        Xt = np.hstack([X, np.ones((X.shape[0], 1))])
        A = np.stack([(Xt * t[:, None]).T @ Xt for t in tau.T])     # sum tau x~ x~^T per expert
        rhs = (tau * y[:, None]).T @ Xt
        mass = tau.sum(axis=0)
        ok = mass > 1e-8 * X.shape[0]               # an expert with no responsibility keeps its fit
        if np.any(ok):
            A_ok = A[ok] + 1e-12 * np.eye(Xt.shape[1])
            theta = np.linalg.solve(A_ok, rhs[ok][..., None])[..., 0]   # weighted least squares
            self.expert_coef_[ok] = theta[:, :-1]
            self.expert_intercept_[ok] = theta[:, -1]
        resid2 = (y[:, None] - X @ self.expert_coef_.T - self.expert_intercept_) ** 2
        var = (tau * resid2).sum(axis=0) / np.maximum(mass, 1e-300)   # sigma_i = sum tau r^2 / sum tau
        self.variances_[ok] = np.maximum(var[ok], _VAR_FLOOR)

    def _em_step(self, X, y):
        """One EM iteration from the current parameters (in place)."""
        lj = self._log_joint(X, y)
        tau = np.exp(lj - _log_sum(lj)[:, None])                      # E-step (0 off the top-K)
        self._expert_step(X, y, tau)
        if self.top_k == self.n_experts:
            self._gate_newton(X, tau)                                 # smooth Q: exact M-step
        else:
            self._gate_step(X, y)

    def _theta(self) -> np.ndarray:
        """Free parameters as one vector: for each non-reference expert its gate (beta_1,
        beta_0), then for each expert (a, b, log sigma)."""
        free = np.arange(self.n_experts) != self.reference
        gate = np.hstack([self.gate_coef_, self.gate_intercept_[:, None]])[free]
        expert = np.hstack([self.expert_coef_, self.expert_intercept_[:, None],
                            np.log(self.variances_)[:, None]])
        return np.concatenate([gate.ravel(), expert.ravel()])

    def _set_theta(self, theta: np.ndarray) -> None:
        k, d = self.expert_coef_.shape
        free = np.arange(k) != self.reference
        m = int(free.sum())
        gate = theta[:m * (d + 1)].reshape(m, d + 1)
        expert = theta[m * (d + 1):].reshape(k, d + 2)
        self.gate_coef_[free], self.gate_intercept_[free] = gate[:, :-1], gate[:, -1]
        self.expert_coef_[:], self.expert_intercept_[:] = expert[:, :d], expert[:, d]
        self.variances_[:] = np.maximum(np.exp(expert[:, d + 1]), _VAR_FLOOR)

    def _loglik_derivatives(self, X, y, theta, hessian: bool = False):
        """Total log-likelihood, its gradient and (optionally) Hessian in ``theta`` (layout of
        ``_theta``), dense gate. With l_ni = log g_i(x_n) + log N(y_n; a_i^T x_n + b_i, sigma_i),
        tau_ni its softmax over i and J_ni = grad l_ni:
        grad = sum_n u_n, u_n = sum_i tau_ni J_ni;
        Hessian = sum_n [sum_i tau_ni (grad^2 l_ni + J_ni J_ni^T) - u_n u_n^T], where
        dlog g_i/dbeta_j = (delta_ij - g_j) x~, dl_i/d(a_i, b_i) = r_i / sigma_i x~,
        dl_i/dlog sigma_i = r_i^2 / (2 sigma_i) - 1/2 (r_i = y - a_i^T x - b_i)."""
        self._set_theta(theta)
        n, k = X.shape[0], self.n_experts
        Xt = np.hstack([X, np.ones((n, 1))])
        p = Xt.shape[1]
        free = np.flatnonzero(np.arange(k) != self.reference)
        m = free.size
        lg = self.log_gate(X)
        g = np.exp(lg)[:, free]                                             # (n, m)
        resid = y[:, None] - X @ self.expert_coef_.T - self.expert_intercept_
        prec = 1.0 / self.variances_
        lj = lg - 0.5 * (_LOG2PI + np.log(self.variances_) + resid ** 2 * prec)
        ll = _log_sum(lj)
        tau = np.exp(lj - ll[:, None])                                      # (n, k)
        J = np.zeros((n, k, m * p + k * (p + 1)))                           # J_ni
        for jf, j in enumerate(free):                                       # gate: (delta_ij - g_j) x~
            J[:, :, jf * p:(jf + 1) * p] = ((np.arange(k) == j)[None, :] - g[:, jf:jf + 1])[
                :, :, None] * Xt[:, None, :]
        for i in range(k):                                                  # expert i only
            o = m * p + i * (p + 1)
            J[:, i, o:o + p] = (resid[:, i] * prec[i])[:, None] * Xt
            J[:, i, o + p] = 0.5 * resid[:, i] ** 2 * prec[i] - 0.5
        u = np.einsum("ni,nip->np", tau, J)
        grad = u.sum(axis=0)
        if not hessian:
            return float(ll.sum()), grad
        Jw = (J * np.sqrt(tau)[:, :, None]).reshape(n * k, -1)
        H = Jw.T @ Jw - u.T @ u
        for a_ in range(m):                                                 # gate: -(diag g - g g^T) x~ x~^T
            for b_ in range(m):
                w = (g[:, a_] if a_ == b_ else 0.0) - g[:, a_] * g[:, b_]
                H[a_ * p:(a_ + 1) * p, b_ * p:(b_ + 1) * p] -= (Xt * w[:, None]).T @ Xt
        for i in range(k):                                                  # expert i, weights tau_i
            o = m * p + i * (p + 1)
            t = tau[:, i] * prec[i]
            H[o:o + p, o:o + p] -= (Xt * t[:, None]).T @ Xt                 # -x~ x~^T / sigma
            cross = (Xt * (t * resid[:, i])[:, None]).sum(axis=0)           # -r x~ / sigma
            H[o:o + p, o + p] -= cross
            H[o + p, o:o + p] -= cross
            H[o + p, o + p] -= 0.5 * (t * resid[:, i] ** 2).sum()           # -r^2 / (2 sigma)
        return float(ll.sum()), grad, H

    def _newton_polish(self, X, y) -> None:
        """Maximise the log-likelihood from the current (EM) parameters by a trust-region
        Newton method (scipy ``trust-exact`` with the analytic Hessian), until the gradient of
        the mean log-likelihood is below ``polish_gtol`` in every coordinate."""
        from scipy.optimize import minimize

        n = X.shape[0]

        def fun(theta):
            ll, grad = self._loglik_derivatives(X, y, theta)
            return -ll / n, -grad / n

        def hess(theta):
            return -self._loglik_derivatives(X, y, theta, hessian=True)[2] / n

        theta0 = self._theta()
        res = minimize(fun, theta0, jac=True, hess=hess, method="trust-exact",
                       options={"gtol": self.polish_gtol, "maxiter": 200})
        best = res.x if res.fun <= fun(theta0)[0] else theta0              # never lower the likelihood
        self._set_theta(best)
        self.polish_gradient_ = float(np.abs(fun(best)[1]).max())

    def default_init(self, X, y, rng: np.random.Generator) -> TopKGaussianMoE:
        """A data-driven starting model (ours; the paper and the public code start near the
        truth): k-means (k-means++ seeding, 25 Lloyd steps) on the standardised pairs (x, y),
        then per cluster the least-squares expert and its residual variance, and a dense
        multinomial-logistic gate fitted by Newton to the cluster labels (the top-K mask is
        applied only when the model is used). X: (n, d), y: (n,), n >= n_experts."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
        X = _as_2d(X)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        n, k = X.shape[0], self.n_experts
        if y.shape[0] != n or not np.all(np.isfinite(y)):
            raise ValueError(f"y must be a finite array of {n} entries")
        if n < k:
            raise ValueError(f"X must have at least n_experts={k} rows, got {n}")
        Z = np.hstack([X, y[:, None]])
        Z = (Z - Z.mean(axis=0)) / np.maximum(Z.std(axis=0), 1e-12)
        centres = Z[[rng.integers(n)]]
        for _ in range(1, k):                                        # k-means++ seeding
            d2 = ((Z[:, None, :] - centres[None]) ** 2).sum(axis=2).min(axis=1)
            prob = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
            centres = np.vstack([centres, Z[rng.choice(n, p=prob)]])
        for _ in range(25):                                          # Lloyd steps
            label = ((Z[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
            for j in range(k):
                if np.any(label == j):
                    centres[j] = Z[label == j].mean(axis=0)
        tau = np.eye(k)[label]                                       # hard responsibilities
        start = TopKGaussianMoE(k, self.top_k, reference=self.reference,
                                gate_iter=self.gate_iter).set_params(
            np.zeros((k, X.shape[1])), np.zeros(k), np.zeros((k, X.shape[1])),
            np.full(k, y.mean()), np.full(k, max(y.var(), _VAR_FLOOR)))
        start._expert_step(X, y, tau)
        start._gate_newton(X, tau)
        return start

    def _fit_from(self, X, y, start: TopKGaussianMoE):
        """EM (and the polish) from ``start``; returns (parameters, trace, iterations)."""
        self.set_params(*start._params())
        trace = [float(self.log_prob(X, y).mean())]
        steps = 0
        while steps < self.max_iter:
            self._em_step(X, y)
            steps += 1
            trace.append(float(self.log_prob(X, y).mean()))
            if abs(trace[-1] - trace[-2]) * X.shape[0] < self.tol:
                break
        if self.polish:
            self._newton_polish(X, y)
            trace.append(float(self.log_prob(X, y).mean()))
        polish_gradient = getattr(self, "polish_gradient_", None)
        return tuple(p.copy() for p in self._params()), trace, steps, polish_gradient

    def fit(self, X, y, init: TopKGaussianMoE | None = None) -> TopKGaussianMoE:
        """EM from ``n_init`` starts, keeping the fit with the highest likelihood: ``init`` (a
        model with the same n_experts whose parameters are copied; rate studies start near the
        truth) if given, and data-driven starts (:meth:`default_init`, seeded by
        ``random_state``) for the rest. X: (n, d), y: (n,). Returns self."""
        X = _as_2d(X)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0] or not np.all(np.isfinite(y)):
            raise ValueError(f"y must be a finite array of {X.shape[0]} entries")
        starts = []
        if init is not None:
            if not isinstance(init, TopKGaussianMoE):
                raise TypeError(f"init must be a TopKGaussianMoE or None, got "
                                f"{type(init).__name__}")
            if init.n_experts != self.n_experts:
                raise ValueError(f"init must have {self.n_experts} experts, got "
                                 f"{init.n_experts}")
            if init._params()[0].shape[1] != X.shape[1]:
                raise ValueError(f"init has {init.gate_coef_.shape[1]} covariates, X has "
                                 f"{X.shape[1]}")
            starts.append(init)
        rng = self.random_state if isinstance(self.random_state, np.random.Generator) \
            else np.random.default_rng(self.random_state)
        starts += [self.default_init(X, y, rng) for _ in range(self.n_init - len(starts))]
        fits = [self._fit_from(X, y, s) for s in starts]
        finals = [f[1][-1] for f in fits]
        best = int(np.argmax(finals))
        params, trace, steps, polish_gradient = fits[best]
        self.set_params(*params)
        self.log_likelihood_, self.n_iter_ = trace, steps
        if self.polish:
            self.polish_gradient_ = polish_gradient
        self.start_log_likelihoods_, self.best_start_ = finals, best
        return self
