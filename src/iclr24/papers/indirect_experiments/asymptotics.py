"""Closed-form asymptotic MSE of 2SLS on the synthetic IV domain, and the instrument policy that
minimises it (the reference DIA is judged against; not in the paper).

The official code's fixed "oracle" (0.95 on the first instrument, 0.05 on the last) is, by its
own comment, optimal only for homoskedastic noise and confounding 0.1; on the default domain
(heteroskedastic, ``conf_strength`` 0.5) it is not, so the optimum is computed here.

With one-hot instruments z ~ p, regressors X = (x, 1 - x) and residual e = U + eps, 2SLS is
asymptotically normal with n Cov(theta_hat) -> V(p) = A^{-1} B A^{-1}, where, per instrument j,
mu_j = E[X | z = j] = (q_j, 1 - q_j), q_j = E[clip(c_j + U, 0, 1)], and
sigma_j^2 = E[e^2 | z = j] = s^2 + q_j * 1 + (1 - q_j) * 0.1^2 (U independent of eps given x):
A = sum_j p_j mu_j mu_j^T, B = sum_j p_j sigma_j^2 mu_j mu_j^T; n MSE -> tr V(p).
Instruments with equal compliance have equal (mu_j, sigma_j), so V depends on p only through the
total mass of each compliance group; the optimum is found over the groups (a small simplex) and
spread evenly inside each group.
"""

from __future__ import annotations

import numpy as np

from .iv_data import SyntheticIV, check_probs

__all__ = ["asymptotic_mse", "optimal_probs", "surrogate_gradient"]


def _moments(env: SyntheticIV) -> tuple[np.ndarray, np.ndarray]:
    """(q (m,), sigma^2 (m,)): P(x = 1 | z) and E[e^2 | z] for each instrument."""
    from scipy.stats import norm

    c, s = env.compliance, float(env.conf_strength)
    if s == 0:
        q = np.clip(c, 0, 1)
    else:
        a, b = (0 - c) / s, (1 - c) / s                    # V = c + U ~ N(c, s^2), clip to [0, 1]
        # E[clip(V, 0, 1)] = E[V 1{0<V<1}] + P(V > 1)
        q = c * (norm.cdf(b) - norm.cdf(a)) + s * (norm.pdf(a) - norm.pdf(b)) + norm.sf(b)
    sigma2 = s ** 2 + q * 1.0 ** 2 + (1 - q) * 0.1 ** 2     # E[(U + eps)^2 | z]
    return q, sigma2


def asymptotic_mse(env: SyntheticIV, probs) -> float:
    """n * MSE of 2SLS as n -> infinity, tr V(p) (see the module docstring); ``inf`` when p does
    not identify theta (A singular)."""
    if not isinstance(env, SyntheticIV):
        raise TypeError(f"env must be a SyntheticIV, got {type(env).__name__}")
    return _trace_v(check_probs(probs, env.n_instruments), *_moments(env))


def _trace_v(p, q, sigma2) -> float:
    mu = np.stack([q, 1 - q], axis=1)                       # mu_j = E[X | z = j]
    A = (p[:, None, None] * mu[:, :, None] * mu[:, None, :]).sum(0)    # sum p_j mu mu^T
    B = ((p * sigma2)[:, None, None] * mu[:, :, None] * mu[:, None, :]).sum(0)
    if np.linalg.cond(A) > 1e12:
        return float("inf")
    Ainv = np.linalg.inv(A)
    return float(np.trace(Ainv @ B @ Ainv))                 # tr A^{-1} B A^{-1}


def optimal_probs(env: SyntheticIV, prior=None, prior_weight: float = 0.0) -> np.ndarray:
    """The policy p (m,) minimising ``asymptotic_mse(env, w * prior + (1 - w) * p)``, w =
    ``prior_weight``: with w = 0 the best fixed design; with the uniform first round of an
    experiment as ``prior`` and w = first / total, the best policy for the later rounds.
    Numeric minimisation over the compliance groups' masses (softmax logits, BFGS from every
    vertex-pair start and the uniform point), mass spread evenly within a group."""
    from scipy.optimize import minimize

    if not isinstance(env, SyntheticIV):
        raise TypeError(f"env must be a SyntheticIV, got {type(env).__name__}")
    if not 0 <= prior_weight < 1:
        raise ValueError(f"prior_weight must be in [0, 1), got {prior_weight!r}")
    m = env.n_instruments
    prior = np.full(m, 1 / m) if prior is None else check_probs(prior, m)
    groups, label = np.unique(env.compliance, return_inverse=True)
    k = groups.size
    size = np.bincount(label, minlength=k)

    def spread(logits):
        g = np.exp(logits - logits.max())
        return (g / g.sum())[label] / size[label]           # group mass, evenly inside

    q, sigma2 = _moments(env)

    def objective(logits):
        v = _trace_v(prior_weight * prior + (1 - prior_weight) * spread(logits), q, sigma2)
        return v if np.isfinite(v) else 1e12

    starts = [np.zeros(k)] + [4.0 * (np.eye(k)[i] + np.eye(k)[j])
                              for i in range(k) for j in range(i + 1, k)]
    best = min((minimize(objective, s, method="BFGS") for s in starts), key=lambda r: r.fun)
    return spread(best.x)


def surrogate_gradient(env: SyntheticIV, logits, beta_bar, alpha: float,
                       step: float = 1e-5) -> np.ndarray:
    """Gradient (m,) in the policy logits of the asymptotic MSE of the design DIA optimises,
    tr V(pi_eff), pi_eff = alpha beta_bar + (1 - alpha) softmax(logits): the direction the DIA
    gradient estimators should point to in expectation (up to a positive scale). Central
    differences of the closed form."""
    m = env.n_instruments
    logits = np.asarray(logits, dtype=np.float64)
    if logits.shape != (m,) or not np.all(np.isfinite(logits)):
        raise ValueError(f"logits must be {m} finite numbers, got {logits!r}")
    beta_bar = check_probs(beta_bar, m)
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must be in [0, 1), got {alpha!r}")
    q, sigma2 = _moments(env)

    def mse(lg):
        pi = np.exp(lg - lg.max())
        return _trace_v(alpha * beta_bar + (1 - alpha) * pi / pi.sum(), q, sigma2)  # pi_eff

    eye = np.eye(m) * step
    return np.array([(mse(logits + e) - mse(logits - e)) / (2 * step) for e in eye])
