"""Tabular known-answer checks of CDE's V-step and E-step (Cen et al. 2024, §4; the losses of
the official ``cde.py`` with tables instead of networks).

A 5 × 5 gridworld (actions up/down/left/right, slip to a uniformly random direction with
probability ``slip``, reward 1 for being in the goal corner) and a behaviour policy that uses
only 2 of the 4 actions at each state give an empirical dataset D of N transitions (s uniform,
a ∼ π_b(·|s), s' ∼ P). For a table V and the normaliser λ the dual

    L(V, λ) = (1 − γ) E_{s₀}[V(s₀)] + λ + α E_D[f*((e_V(s,a,s') − λ)/α)],
    e_V = r + γ V(s') − V(s),   f*(y) = y w*(y) − f(w*(y)) (soft-χ² conjugate)

is convex; it is exactly the official V-loss (with the λ_v-loss, whose gradient in λ is
1 − E_D[w]) evaluated on the whole dataset, so ``tabular_v_step`` (Adam on the official losses)
and ``solve_dual`` (SciPy L-BFGS-B on L with its analytic gradient) must reach the same optimum,
where E_D[w] = 1. ``tabular_e_step`` fits E(s, a) = T[s, a] + u[s] + b[a] (a table plus shared
state and action offsets, so values extrapolate to unseen actions as a network's do) with the
official E-loss: ζ MSE on data pairs + (1 − ζ) ReLU(E − λ_e − α log ε̃)² on the OOD actions of
each data state (the exact average over them instead of uniform samples); the density ratios
w_E = (f')⁻¹((E − λ_e)/α) it implies on OOD pairs are then capped near ε̃, while with ζ = 1
(OptiDICE, no OOD term) they are whatever the extrapolation gives.

``ratio_policy`` / ``policy_value`` / ``support_optimal_policy`` read what a ratio w means for
control: the policy π_w(a|s) ∝ w̄(s, a) π_b(a|s) whose occupancy is w · d^D, its exact value
in the known MDP, and the best value reachable within the behaviour's support.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .divergence import soft_chi2
from .losses import eta_loss, ood_penalty, v_loss

__all__ = ["TabularMDP", "dual_objective", "gridworld_mdp", "policy_value", "ratio_policy",
           "sample_transitions", "solve_dual", "support_optimal_policy", "tabular_e_step",
           "tabular_v_step"]

_MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])  # up, down, left, right (row, col)


@dataclass(frozen=True)
class TabularMDP:
    """P (S, A, S), r (S,) reward of the current state, rho0 (S,), behaviour (S, A) policy
    whose support is the in-distribution action set."""

    P: np.ndarray
    r: np.ndarray
    rho0: np.ndarray
    behaviour: np.ndarray

    @property
    def n_states(self) -> int:
        return int(self.P.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.P.shape[1])


def gridworld_mdp(seed: int, *, size: int = 5, slip: float = 0.1) -> TabularMDP:
    """The size × size gridworld with a seeded 2-of-4-actions behaviour policy (the action
    towards the goal is kept at each state with probability ½, so data cover good and bad
    moves)."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        raise ValueError(f"size must be an int >= 2; got {size!r}")
    if not 0 <= slip <= 1:
        raise ValueError(f"slip must be in [0, 1]; got {slip}")
    rng = np.random.default_rng(seed)
    n_s, n_a = size * size, len(_MOVES)
    P = np.zeros((n_s, n_a, n_s))
    for s in range(n_s):
        r0, c0 = divmod(s, size)
        for a in range(n_a):
            for b in range(n_a):
                p = (1 - slip) * (a == b) + slip / n_a
                rr = min(max(r0 + _MOVES[b][0], 0), size - 1)
                cc = min(max(c0 + _MOVES[b][1], 0), size - 1)
                P[s, a, rr * size + cc] += p
    r = np.zeros(n_s)
    r[-1] = 1.0
    rho0 = np.zeros(n_s)
    rho0[0] = 1.0
    behaviour = np.zeros((n_s, n_a))
    for s in range(n_s):
        behaviour[s, rng.choice(n_a, 2, replace=False)] = 0.5
    return TabularMDP(P, r, rho0, behaviour)


def sample_transitions(mdp: TabularMDP, n: int, seed: int) -> dict[str, np.ndarray]:
    """N transitions: s uniform, a ∼ behaviour(·|s), s' ∼ P(·|s, a); arrays s, a, r, s2 (N,)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    rng = np.random.default_rng(seed)
    s = rng.integers(0, mdp.n_states, n)
    a = np.array([rng.choice(mdp.n_actions, p=mdp.behaviour[i]) for i in s])
    s2 = np.array([rng.choice(mdp.n_states, p=mdp.P[i, j]) for i, j in zip(s, a)])
    return {"s": s, "a": a, "r": mdp.r[s], "s2": s2}


def _conjugate(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f*(y), f*'(y) = w*(y)) of soft-χ²: e^y − 1, e^y (y < 0); y + y²/2, 1 + y (y ≥ 0)."""
    yn = np.minimum(y, 0.0)
    return (np.where(y < 0, np.exp(yn) - 1, y + 0.5 * y ** 2),
            np.where(y < 0, np.exp(yn), 1 + y))


def dual_objective(v: np.ndarray, lam: float, data: dict[str, np.ndarray], mdp: TabularMDP, *,
                   alpha: float, gamma: float) -> tuple[float, np.ndarray, float]:
    """(L(V, λ), ∂L/∂V (S,), ∂L/∂λ) of the tabular dual (module docstring)."""
    e = data["r"] + gamma * v[data["s2"]] - v[data["s"]]
    fstar, w = _conjugate((e - lam) / alpha)
    n = len(e)
    value = (1 - gamma) * mdp.rho0 @ v + lam + alpha * fstar.mean()
    grad_v = (1 - gamma) * mdp.rho0 + (gamma * np.bincount(data["s2"], w, mdp.n_states)
                                      - np.bincount(data["s"], w, mdp.n_states)) / n
    return float(value), grad_v, float(1 - w.mean())


def solve_dual(data: dict[str, np.ndarray], mdp: TabularMDP, *, alpha: float, gamma: float
               ) -> tuple[np.ndarray, float, float]:
    """(V*, λ*, L*) by SciPy L-BFGS-B on the joint convex dual."""
    from scipy.optimize import minimize

    def fun(x):
        val, gv, gl = dual_objective(x[:-1], x[-1], data, mdp, alpha=alpha, gamma=gamma)
        return val, np.append(gv, gl)

    res = minimize(fun, np.zeros(mdp.n_states + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-10})
    return res.x[:-1], float(res.x[-1]), float(res.fun)


def tabular_v_step(data: dict[str, np.ndarray], mdp: TabularMDP, *, alpha: float, gamma: float,
                   steps: int = 4000, lr: float = 0.05, normalize: bool = True
                   ) -> tuple[np.ndarray, float]:
    """(V, λ_v) after ``steps`` full-batch Adam steps on the official V-loss (λ_v detached)
    and λ_v-loss E_D[w̄ (ē_V − λ_v)] + λ_v (skipped with ``normalize=False``)."""
    (s, _, s2), r, p = _unique_transitions(data)
    v = torch.zeros(mdp.n_states, dtype=torch.float64, requires_grad=True)
    eta = torch.zeros((), dtype=torch.float64, requires_grad=True)
    rho0 = torch.as_tensor(mdp.rho0)
    opt_v, opt_eta = torch.optim.Adam([v], lr=lr), torch.optim.Adam([eta], lr=lr)
    for step in range(steps):
        _decay(step, steps, lr, opt_v, opt_eta)
        adv = r + gamma * v[s2] - v[s]                           # e_V
        loss, loss_eta, _ = v_loss(adv, rho0 @ v, eta, alpha=alpha, gamma=gamma, p=p)
        opt_v.zero_grad()
        loss.backward()
        opt_v.step()
        if normalize:
            opt_eta.zero_grad()
            loss_eta.backward()
            opt_eta.step()
    return v.detach().numpy(), float(eta.detach())


def _unique_transitions(data: dict[str, np.ndarray]):
    """The dataset as distinct (s, a, s') tuples with their empirical probabilities: the
    minibatch mean over all N rows equals the p-weighted sum (same loss, fewer rows)."""
    keys, counts = np.unique(np.stack([data["s"], data["a"], data["s2"]], 1), axis=0,
                             return_counts=True)
    r = np.zeros(len(keys))
    for i, (s, a, s2) in enumerate(keys):
        r[i] = data["r"][(data["s"] == s) & (data["a"] == a) & (data["s2"] == s2)][0]
    cols = tuple(torch.as_tensor(keys[:, j]) for j in range(3))
    return cols, torch.as_tensor(r), torch.as_tensor(counts / counts.sum())


def _decay(step: int, steps: int, lr: float, *opts) -> None:
    """Exponential learning-rate decay from lr to lr/100 so that Adam settles at the optimum."""
    for opt in opts:
        for group in opt.param_groups:
            group["lr"] = lr * 0.01 ** (step / steps)


def tabular_e_step(data: dict[str, np.ndarray], mdp: TabularMDP, v: np.ndarray, *,
                   alpha: float, gamma: float, zeta: float = 0.9, ood_eps: float = 0.3,
                   steps: int = 3000, lr: float = 0.05, seed: int = 0
                   ) -> tuple[np.ndarray, float]:
    """(E (S, A), λ_e) after ``steps`` full-batch Adam steps on the official E-loss and λ_e-loss
    with advantages ē_V from table ``v``. Offsets start at small seeded values."""
    if not 0 < zeta <= 1:
        raise ValueError(f"zeta must be in (0, 1]; got {zeta}")
    fns = soft_chi2()
    g = torch.Generator().manual_seed(seed)
    n_s, n_a = mdp.n_states, mdp.n_actions
    (s, a, s2), r, p = _unique_transitions(data)
    adv = r + gamma * torch.as_tensor(v)[s2] - torch.as_tensor(v)[s]      # ē_V
    ood_mask = torch.as_tensor(mdp.behaviour == 0, dtype=torch.float64)[s]   # (N, A)
    table = torch.zeros((n_s, n_a), dtype=torch.float64, requires_grad=True)
    u = (0.01 * torch.randn(n_s, generator=g, dtype=torch.float64)).requires_grad_()
    b = (0.01 * torch.randn(n_a, generator=g, dtype=torch.float64)).requires_grad_()
    eta = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt, opt_eta = torch.optim.Adam([table, u, b], lr=lr), torch.optim.Adam([eta], lr=lr)
    for step in range(steps):
        _decay(step, steps, lr, opt, opt_eta)
        e_all = table + u[:, None] + b[None, :]                  # E(s, a), (S, A)
        e_sa = e_all[s, a]
        loss = p @ (e_sa - adv).pow(2)
        if zeta < 1:  # ReLU(E(s, a_ood) − λ_e − α f'(ε̃))², averaged over the OOD actions
            pen = ood_penalty(e_all[s], eta, alpha=alpha, ood_eps=ood_eps)  # (rows, A)
            ood = p @ ((pen * ood_mask).sum(1) / ood_mask.sum(1))
            loss = zeta * loss + (1 - zeta) * ood
        opt.zero_grad()
        loss.backward()
        opt.step()
        w_e = fns.f_prime_inv((e_sa.detach() - eta.detach()) / alpha)
        opt_eta.zero_grad()
        eta_loss(w_e, adv, eta, p=p).backward()
        opt_eta.step()
    e_final = (table + u[:, None] + b[None, :]).detach().numpy()
    return e_final, float(eta.detach())


def ratio_policy(mdp: TabularMDP, data: dict[str, np.ndarray], w: np.ndarray) -> np.ndarray:
    """π_w (S, A) ∝ w̄(s, a) π_b(a|s), the policy whose occupancy is w · d^D (DICE policy
    extraction: π_w(a|s) = w(s, a) d^D(s, a) / Σ_a' w(s, a') d^D(s, a')); w̄(s, a) is the mean of
    the per-transition ratios ``w`` (N,) over the data rows of (s, a). States without data, or
    whose ratios are all 0, keep the behaviour policy."""
    w = np.asarray(w, dtype=np.float64)
    if w.shape != data["s"].shape:
        raise ValueError(f"w must have shape {data['s'].shape} (one ratio per transition); got "
                         f"{w.shape}")
    n_s, n_a = mdp.n_states, mdp.n_actions
    flat = data["s"] * n_a + data["a"]
    total = np.bincount(flat, w, n_s * n_a).reshape(n_s, n_a)
    count = np.bincount(flat, minlength=n_s * n_a).reshape(n_s, n_a)
    w_bar = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    pi = w_bar * mdp.behaviour
    mass = pi.sum(1, keepdims=True)
    return np.where(mass > 0, pi / np.where(mass > 0, mass, 1.0), mdp.behaviour)


def policy_value(mdp: TabularMDP, pi: np.ndarray, *, gamma: float) -> float:
    """Exact normalised value J(π) = (1 − γ) ρ₀ᵀ (I − γ P_π)⁻¹ r of a policy π (S, A)."""
    pi = np.asarray(pi, dtype=np.float64)
    if pi.shape != (mdp.n_states, mdp.n_actions) or (pi < 0).any() \
            or not np.allclose(pi.sum(1), 1.0):
        raise ValueError(f"pi must be a ({mdp.n_states}, {mdp.n_actions}) row-stochastic "
                         f"array; got shape {pi.shape}")
    p_pi = np.einsum("sa,sat->st", pi, mdp.P)
    v = np.linalg.solve(np.eye(mdp.n_states) - gamma * p_pi, mdp.r)  # V = r + γ P_π V
    return float((1 - gamma) * mdp.rho0 @ v)


def support_optimal_policy(mdp: TabularMDP, *, gamma: float, iters: int = 2000) -> np.ndarray:
    """The optimal deterministic policy (S, A) restricted to the behaviour's support (value
    iteration over the actions with π_b(a|s) > 0): the best any ratio on d^D can reach."""
    q_mask = np.where(mdp.behaviour > 0, 0.0, -np.inf)
    v = np.zeros(mdp.n_states)
    for _ in range(iters):
        q = mdp.r[:, None] + gamma * mdp.P @ v + q_mask
        v = q.max(1)
    pi = np.zeros_like(mdp.behaviour)
    pi[np.arange(mdp.n_states), q.argmax(1)] = 1.0
    return pi
