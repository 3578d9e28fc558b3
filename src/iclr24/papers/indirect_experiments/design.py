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
frequencies (the official fits a softmax to the observed Z, which converges to the same), a 1%
uniform floor in the sampled policy (``floor``) so that Z^T W Z stays invertible, and a
bootstrap replica whose sub-sample does not identify theta (e.g. one instrument only) is dropped
from the step (the official code fits it through the ridge). The influence on the squared error
is the official ``get_inf`` form by default; ``influence_form="loo"`` uses the leave-one-out form
(see ``tsls``). Z must be one-hot (discrete instruments): anything else raises, it is never
reduced by argmax.

Reference policies of :func:`run_adaptive_experiment`: "uniform"; "official_fixed" (the official
code's fixed "oracle", 0.95/0.05, not optimal on this domain); "optimal" (the policy minimising
the closed-form asymptotic MSE of the final data given the uniform first round,
``asymptotics.optimal_probs``); "random" (a Dirichlet(1) policy drawn afresh each round, the
null arm: a non-uniform design chosen without looking at the data).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .asymptotics import optimal_probs
from .iv_data import SyntheticIV, check_probs
from .tsls import IF_FORMS, _check, _fit, _identified, _influence, tsls

__all__ = ["GRADIENTS", "REFERENCE_DESIGNS", "DIADesigner", "InstrumentPolicy",
           "instrument_index", "run_adaptive_experiment", "subsample_size"]

REFERENCE_DESIGNS = ("uniform", "official_fixed", "optimal", "random")
GRADIENTS = ("influence", "reinforce", "shuffled_influence")


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


def instrument_index(Z) -> np.ndarray:
    """Index (n,) of the instrument of each row of a one-hot Z (n, m); ``ValueError`` if Z is
    not one-hot (continuous or multi-hot instruments are outside the discrete-policy method)."""
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2 or not np.all((Z == 0) | (Z == 1)) or not np.all(Z.sum(axis=1) == 1):
        raise ValueError("Z must be one-hot (n, m): one 1 per row, zeros elsewhere; DIA designs "
                         "a policy over discrete instruments")
    return Z.argmax(axis=1)


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
    "influence" (DIA), "reinforce" (naive score-function ablation) or "shuffled_influence"
    (null arm: each replica's influences permuted across its samples, so they no longer belong
    to their instruments; same bootstrap and scale); floor: mixture weight of
    the uniform policy in the returned probabilities; influence_form: "official" (``get_inf``,
    default) or "loo" (leave-one-out influence on the squared error).
    """

    def __init__(self, n_boot: int = 30, subsample_power: float = 0.7,
                 lr: tuple[float, float] = (5e-2, 1e-3), steps: int = 1000,
                 gradient: str = "influence", floor: float = 0.01,
                 influence_form: str = "official"):
        if gradient not in GRADIENTS:
            raise ValueError(f"gradient must be one of {GRADIENTS}, got {gradient!r}")
        if influence_form not in IF_FORMS:
            raise ValueError(f"influence_form must be one of {IF_FORMS}, got {influence_form!r}")
        for name, v in (("n_boot", n_boot), ("steps", steps)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not 0 < subsample_power <= 1:
            raise ValueError(f"subsample_power must be in (0, 1], got {subsample_power!r}")
        if not 0 <= floor < 1:
            raise ValueError(f"floor must be in [0, 1), got {floor!r}")
        self.n_boot, self.subsample_power, self.lr = n_boot, subsample_power, lr
        self.steps, self.gradient, self.floor = steps, gradient, floor
        self.influence_form = influence_form

    def policy_gradient(self, logits, X, Y, Z, final_budget: int,
                        rng: np.random.Generator) -> np.ndarray:
        """One stochastic gradient (m,) of the loss w.r.t. the policy logits. X (n, 2), Y (n,),
        Z (n, m) one-hot."""
        zi = instrument_index(Z)
        X, Y, Z, w = _check(X, Y, Z, None)
        n, m = Z.shape
        alpha = n / final_budget
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
            Xb, Yb, Zb, wb = X[idx], Y[idx], Z[idx], w[idx]
            if not _identified(Xb, Zb, wb):
                continue                                              # dropped replica
            theta_b = _fit(Xb, Yb, Zb, wb, 1e-5)
            if self.gradient == "influence":
                _, coef = _influence(theta_b, Xb, Yb, Zb, wb, theta_ref, 1e-5,
                                     self.influence_form)             # IF_bi
            elif self.gradient == "shuffled_influence":
                _, coef = _influence(theta_b, Xb, Yb, Zb, wb, theta_ref, 1e-5,
                                     self.influence_form)
                coef = rng.permutation(coef)                          # null: IF detached
            else:
                coef = np.full(idx.size, float(((theta_b - theta_ref) ** 2).sum()))
            grad += np.bincount(zi[idx], weights=coef, minlength=m) @ dlog
            total += idx.size
        return grad / max(total, 1)

    def update(self, data, final_budget: int, rng: np.random.Generator) -> np.ndarray:
        """Probabilities (m,) for the next round; ``data`` = (X, Y, Z) collected so far."""
        X, Y, Z = data
        n, m = np.asarray(Z).shape
        instrument_index(Z)
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
    chosen by ``designer`` (a DIADesigner or one of ``REFERENCE_DESIGNS``, see the module
    docstring); returns the squared error ||theta_hat - theta||^2 of 2SLS on all data after each round (against the simulator's true
    theta, never theta_ref) and the policies used."""
    if not isinstance(env, SyntheticIV):
        raise TypeError("env must be a SyntheticIV")
    if not (isinstance(designer, DIADesigner) or (isinstance(designer, str)
                                                  and designer in REFERENCE_DESIGNS)):
        raise ValueError(f"designer must be a DIADesigner or one of {REFERENCE_DESIGNS}, "
                         f"got {designer!r}")
    if not 0 < first <= total or rounds < 1:
        raise ValueError(f"need 0 < first <= total and rounds >= 1, got first={first}, "
                         f"total={total}, rounds={rounds}")
    m = env.n_instruments
    per_round = (total - first) // max(1, rounds - 1)
    X, Y, Z, _ = env.sample(first, np.full(m, 1 / m), rng)
    theta = np.asarray(env.theta)
    errors, policies = [float(((tsls(X, Y, Z) - theta) ** 2).sum())], [np.full(m, 1 / m)]
    if isinstance(designer, str) and designer == "optimal":   # best fixed later-round policy
        best = optimal_probs(env, np.full(m, 1 / m), first / total) if first < total \
            else np.full(m, 1 / m)
    for _ in range(rounds - 1):
        if isinstance(designer, DIADesigner):
            probs = designer.update((X, Y, Z), total, rng)
        elif designer == "uniform":
            probs = np.full(m, 1 / m)
        elif designer == "official_fixed":
            probs = env.official_fixed_probs()
        elif designer == "optimal":
            probs = best
        else:                                                  # "random": the null arm
            probs = rng.dirichlet(np.ones(m))
        probs = check_probs(probs, m)
        Xn, Yn, Zn, _ = env.sample(per_round, probs, rng)
        X, Y, Z = np.vstack([X, Xn]), np.r_[Y, Yn], np.vstack([Z, Zn])
        errors.append(float(((tsls(X, Y, Z) - theta) ** 2).sum()))
        policies.append(probs)
    return {"squared_errors": errors, "policies": policies, "n": [first + i * per_round
                                                                  for i in range(rounds)]}
