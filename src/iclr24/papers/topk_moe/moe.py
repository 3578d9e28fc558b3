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

Other differences from the public code: all samples and experts are processed at once (masked
logsumexp instead of per-sample loops), the gate M-step runs at most ``gate_iter`` (10) bound
steps per EM iteration instead of up to 1000 (a generalised EM), and ``tol`` bounds the change
of the *total* log-likelihood.
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


def _masked_log_softmax(logits: np.ndarray, top_k: int) -> np.ndarray:
    """log Softmax(TopK(logits)) row by row: -inf off the K largest, no NaN. (n, k) -> (n, k)."""
    k = logits.shape[1]
    if top_k < k:  # exactly K per row (ties broken by argpartition's order)
        keep = np.zeros_like(logits, dtype=bool)
        np.put_along_axis(keep, np.argpartition(-logits, top_k - 1, axis=1)[:, :top_k], True,
                          axis=1)
    else:
        keep = np.ones_like(logits, dtype=bool)
    top = logits.max(axis=1, keepdims=True)
    shifted = np.where(keep, logits - top, -np.inf)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def _log_sum(a: np.ndarray) -> np.ndarray:
    top = a.max(axis=1, keepdims=True)
    return top[:, 0] + np.log(np.exp(a - top).sum(axis=1))


@dataclass
class _FitTrace:
    log_likelihood: list


class TopKGaussianMoE:
    """Gaussian MoE with a top-K sparse softmax gate; scikit-learn style.

    n_experts: k; top_k: K in 1..k; reference: the expert whose gate parameters are fixed (the
    softmax shift is removed by keeping them at their initial value, 0 by default); tol: stop
    when the total log-likelihood changes by less than this; max_iter: EM iterations;
    gate_iter: bound steps of the gate M-step per EM iteration.

    Fitted attributes (shapes, d = covariate dimension): gate_coef_ (k, d), gate_intercept_ (k,),
    expert_coef_ (k, d), expert_intercept_ (k,), variances_ (k,), log_likelihood_ (trace of the
    mean log-likelihood, one entry per EM iteration), n_iter_.
    """

    def __init__(self, n_experts: int, top_k: int, *, reference: int | None = None,
                 tol: float = 1e-6, max_iter: int = 2000, gate_iter: int = 10):
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
        for name, v in (("max_iter", max_iter), ("gate_iter", gate_iter)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.n_experts, self.top_k, self.reference = int(n_experts), int(top_k), int(reference)
        self.tol, self.max_iter, self.gate_iter = float(tol), int(max_iter), int(gate_iter)

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
        A = np.einsum("ni,nj,nk->kij", Xt, Xt, tau)
        rhs = np.einsum("ni,n,nk->ki", Xt, y, tau)
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

    def fit(self, X, y, init: TopKGaussianMoE | None = None) -> TopKGaussianMoE:
        """EM from ``init`` (a model with the same n_experts whose parameters are copied; rate
        studies start near the truth). X: (n, d), y: (n,). Returns self."""
        X = _as_2d(X)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0] or not np.all(np.isfinite(y)):
            raise ValueError(f"y must be a finite array of {X.shape[0]} entries")
        if not isinstance(init, TopKGaussianMoE) or init.n_experts != self.n_experts:
            raise ValueError(f"init must be a TopKGaussianMoE with {self.n_experts} experts "
                             "(EM needs a starting point)")
        self.set_params(*init._params())
        if self.gate_coef_.shape[1] != X.shape[1]:
            raise ValueError(f"init has {self.gate_coef_.shape[1]} covariates, X has {X.shape[1]}")
        trace = [float(self.log_prob(X, y).mean())]
        for it in range(self.max_iter):
            lj = self._log_joint(X, y)
            tau = np.exp(lj - _log_sum(lj)[:, None])                  # E-step (0 off the top-K)
            self._expert_step(X, y, tau)
            self._gate_step(X, y)
            trace.append(float(self.log_prob(X, y).mean()))
            if abs(trace[-1] - trace[-2]) * X.shape[0] < self.tol:
                break
        self.log_likelihood_ = trace
        self.n_iter_ = it + 1
        return self
