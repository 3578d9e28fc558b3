"""DIA: adaptive instrument design by influence-function policy gradients (Chandak, Shankar,
Syrgkanis & Brunskill, ICLR 2024, Sec. 4-5), for the linear IV (2SLS) case.

Per gradient step, with n current samples and final budget N:
1. theta_ref = 2SLS on all current data (a stand-in for the unknown truth);
2. alpha = n / N, pi_eff = alpha beta_bar + (1 - alpha) pi_theta, beta_bar the mixture of all
   behaviour policies so far (the empirical instrument frequencies);
3. B sub-samples distributed as pi_eff by rejection: accept sample i with probability
   rho_i / max rho, rho_i = pi_eff(z_i) / beta_bar(z_i); keep the first k = n^0.7 (even) accepted;
4. loss = sum_b sum_i IF_bi log pi_eff(z_i) / sum_b k_b (influence gradient) or, for the naive
   REINFORCE ablation, sum_b ||theta_b - theta_ref||^2 sum_i log pi_eff(z_i) / sum_b k_b; only
   log pi_eff depends on the logits, so the gradient is closed-form (no autodiff needed):
   d log pi_eff(z) / d theta_m = (1 - alpha) pi(z) (1[z = m] - pi(m)) / pi_eff(z);
5. Adam on the logits, learning rate decayed linearly 5e-2 -> 1e-3; logits reset to ones at each
   round (official ``reset_sampler_param``).

Differences from the official code: numpy instead of JAX/optax, beta_bar as empirical
frequencies (the official fits a softmax to the observed Z, which converges to the same), and a
1% uniform floor in the sampled policy (``floor``) so that Z^T W Z stays invertible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .iv_data import SyntheticIV, check_probs
from .tsls import tsls, tsls_influence

__all__ = ["DIADesigner", "InstrumentPolicy", "run_adaptive_experiment", "subsample_size"]


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


class InstrumentPolicy:
    """Softmax policy over m instruments; ``logits`` start at ones (as the official code)."""

    def __init__(self, n_instruments: int):
        if isinstance(n_instruments, bool) or not isinstance(n_instruments, int) \
                or n_instruments < 2:
            raise ValueError(f"n_instruments must be an int >= 2, got {n_instruments!r}")
        self.logits = np.ones(n_instruments)

    def probs(self) -> np.ndarray:
        return _softmax(self.logits)


def subsample_size(n: int, power: float = 0.7) -> int:
    """k = n^power rounded down to an even number (at least 2)."""
    k = int(n ** power)
    return max(2, k - k % 2)


@dataclass
class _Adam:
    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self):
        self.m = self.v = None
        self.t = 0

    def step(self, params, grad, lr):
        if self.m is None:
            self.m, self.v = np.zeros_like(params), np.zeros_like(params)
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad ** 2
        mh = self.m / (1 - self.b1 ** self.t)
        vh = self.v / (1 - self.b2 ** self.t)
        return params - lr * mh / (np.sqrt(vh) + self.eps)


class DIADesigner:
    """Chooses the next instrument policy from the data so far (see the module docstring).

    n_boot: bootstrap replicas per step (30); subsample_power: k = n^power (0.7); lr: (start,
    end) of the linear decay (5e-2, 1e-3); steps: Adam steps per round (1000); gradient:
    "influence" (DIA) or "reinforce" (naive score-function ablation); floor: mixture weight of
    the uniform policy in the returned probabilities.
    """

    def __init__(self, n_boot: int = 30, subsample_power: float = 0.7,
                 lr: tuple[float, float] = (5e-2, 1e-3), steps: int = 1000,
                 gradient: str = "influence", floor: float = 0.01):
        if gradient not in ("influence", "reinforce"):
            raise ValueError(f"gradient must be 'influence' or 'reinforce', got {gradient!r}")
        for name, v in (("n_boot", n_boot), ("steps", steps)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not 0 < subsample_power <= 1:
            raise ValueError(f"subsample_power must be in (0, 1], got {subsample_power!r}")
        if not 0 <= floor < 1:
            raise ValueError(f"floor must be in [0, 1), got {floor!r}")
        self.n_boot, self.subsample_power, self.lr = n_boot, subsample_power, lr
        self.steps, self.gradient, self.floor = steps, gradient, floor

    def policy_gradient(self, logits, X, Y, Z, final_budget: int,
                        rng: np.random.Generator) -> np.ndarray:
        """One stochastic gradient (m,) of the loss w.r.t. the policy logits."""
        n, m = Z.shape
        alpha = n / final_budget
        zi = Z.argmax(axis=1)
        beta_bar = np.bincount(zi, minlength=m) / n                  # all past rounds
        pi = _softmax(logits)
        pi_eff = alpha * beta_bar + (1 - alpha) * pi                  # effective policy
        rho = pi_eff[zi] / beta_bar[zi]                               # stop-gradient IS ratios
        theta_ref = tsls(X, Y, Z)
        k = subsample_size(n, self.subsample_power)
        # d log pi_eff(z) / d logits: (1 - alpha) pi(z) (e_z - pi) / pi_eff(z), one row per z
        dlog = (1 - alpha) * pi[:, None] * (np.eye(m) - pi[None, :]) / pi_eff[:, None]
        grad, total = np.zeros(m), 0
        for _ in range(self.n_boot):
            accept = np.flatnonzero(rng.random(n) < rho / rho.max())
            idx = rng.permutation(accept)[:k]
            Xb, Yb, Zb = X[idx], Y[idx], Z[idx]
            theta_b = tsls(Xb, Yb, Zb)
            if self.gradient == "influence":
                _, inf = tsls_influence(theta_b, Xb, Yb, Zb, theta_ref=theta_ref)
                coef = inf                                            # IF_bi
            else:
                coef = np.full(idx.size, float(((theta_b - theta_ref) ** 2).sum()))
            grad += np.bincount(zi[idx], weights=coef, minlength=m) @ dlog
            total += idx.size
        return grad / total

    def update(self, data, final_budget: int, rng: np.random.Generator) -> np.ndarray:
        """Probabilities (m,) for the next round; ``data`` = (X, Y, Z) collected so far."""
        X, Y, Z = data
        n, m = np.asarray(Z).shape
        if final_budget < n:
            raise ValueError(f"final_budget ({final_budget}) is smaller than the data already "
                             f"collected ({n})")
        policy = InstrumentPolicy(m)                                  # reset to ones
        adam = _Adam(self.lr[0])
        lr0, lr1 = self.lr
        for step in range(self.steps):
            lr = lr0 + (lr1 - lr0) * step / max(1, self.steps - 1)   # linear decay
            g = self.policy_gradient(policy.logits, X, Y, Z, final_budget, rng)
            policy.logits = adam.step(policy.logits, g, lr)
        return (1 - self.floor) * policy.probs() + self.floor / m


def run_adaptive_experiment(env: SyntheticIV, designer, *, total: int = 1000, first: int = 200,
                            rounds: int = 5, rng: np.random.Generator) -> dict:
    """Collect ``first`` samples uniformly, then ``rounds - 1`` equal rounds from the policy
    chosen by ``designer`` (a DIADesigner, "uniform" or "oracle"); returns the squared error
    ||theta_hat - theta||^2 of 2SLS on all data after each round (against the simulator's true
    theta, never theta_ref) and the policies used."""
    if not isinstance(env, SyntheticIV):
        raise TypeError("env must be a SyntheticIV")
    if not (isinstance(designer, DIADesigner) or designer in ("uniform", "oracle")):
        raise ValueError(f"designer must be a DIADesigner, 'uniform' or 'oracle', "
                         f"got {designer!r}")
    if not 0 < first <= total or rounds < 1:
        raise ValueError(f"need 0 < first <= total and rounds >= 1, got first={first}, "
                         f"total={total}, rounds={rounds}")
    m = env.n_instruments
    per_round = (total - first) // max(1, rounds - 1)
    X, Y, Z, _ = env.sample(first, np.full(m, 1 / m), rng)
    theta = np.asarray(env.theta)
    errors, policies = [float(((tsls(X, Y, Z) - theta) ** 2).sum())], [np.full(m, 1 / m)]
    for _ in range(rounds - 1):
        if designer == "uniform":
            probs = np.full(m, 1 / m)
        elif designer == "oracle":
            probs = env.oracle_probs()
        else:
            probs = designer.update((X, Y, Z), total, rng)
        probs = check_probs(probs, m)
        Xn, Yn, Zn, _ = env.sample(per_round, probs, rng)
        X, Y, Z = np.vstack([X, Xn]), np.r_[Y, Yn], np.vstack([Z, Zn])
        errors.append(float(((tsls(X, Y, Z) - theta) ** 2).sum()))
        policies.append(probs)
    return {"squared_errors": errors, "policies": policies, "n": [first + i * per_round
                                                                  for i in range(rounds)]}
