"""Uncertainty-aware Policy-guided MPC (UP-MPC), COPlanner §4.1 (Alg. 1; official
``sac.py::mpc_select_action``).

For each state s, N_c candidate first actions come from the current policy; each candidate is
rolled H steps through the learned model, the policy choosing every later action, and scored by

    J^(c) = Σ_{i<H} γ_r^i r̂_i^(c) + sign · rate · Σ_{i<H} γ_u^i u_i^(c)

(sign = −1, rate = α_c for model rollouts: conservative; sign = +1, rate = α_o for real-world
exploration: optimistic). The first action of argmax_c J^(c) is returned; the caller replans at
every step. All N_c candidates of all states go through the model in one batched call per
planning step. Terminations are ignored inside the plan (as in the official code).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch

__all__ = ["DynamicsModel", "up_mpc_action", "up_mpc_scores"]

Policy = Callable[[torch.Tensor, "torch.Generator | None"], torch.Tensor]


class DynamicsModel(Protocol):
    """What UP-MPC needs of a model: ``sample(obs (n, d_o), act (n, d_a), generator) ->
    (next_obs (n, d_o), reward (n,), uncertainty (n,))`` (``GaussianEnsemble`` is one)."""

    def sample(self, obs: torch.Tensor, act: torch.Tensor,
               generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


def _check(n_candidates: object, horizon: object, gamma_r: float, gamma_u: float, rate: float,
           sign: object) -> None:
    for name, v in (("n_candidates", n_candidates), ("horizon", horizon)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int >= 1; got {v!r}")
    for name, g in (("gamma_r", gamma_r), ("gamma_u", gamma_u)):
        if not 0 <= g <= 1:
            raise ValueError(f"{name} must be in [0, 1]; got {g}")
    if not rate >= 0:
        raise ValueError(f"rate must be >= 0; got {rate}")
    if sign not in (-1, 1) or isinstance(sign, bool):
        raise ValueError(f"sign must be -1 (conservative) or +1 (optimistic); got {sign!r}")


def up_mpc_scores(obs: torch.Tensor, policy: Policy, model: DynamicsModel, *,
                  n_candidates: int = 5, horizon: int = 5, gamma_r: float = 0.97,
                  gamma_u: float = 0.97, rate: float = 2.0, sign: int = -1,
                  generator: torch.Generator | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The plan behind ``up_mpc_action``: obs (n, d_o) -> (first actions (N_c, n, d_a),
    scores J (N_c, n), discounted reward sums (N_c, n), discounted uncertainty sums (N_c, n))."""
    _check(n_candidates, horizon, gamma_r, gamma_u, rate, sign)
    if not isinstance(obs, torch.Tensor) or obs.dim() != 2 or obs.shape[0] < 1:
        raise ValueError(f"obs must be a (n, obs_dim) tensor with n >= 1; got "
                         f"{getattr(obs, 'shape', type(obs).__name__)}")
    if not bool(torch.isfinite(obs).all()):
        raise ValueError("obs must be finite; got NaN or infinite entries (a NaN state has no "
                         "plan: every score would be NaN)")
    n = obs.shape[0]
    with torch.no_grad():
        state = obs.repeat(n_candidates, 1)                 # row c·n + j: candidate c of state j
        first = action = policy(state, generator)           # a_0^(c) ~ π(·|s)
        ret = torch.zeros(n_candidates * n, dtype=obs.dtype, device=obs.device)
        unc = torch.zeros_like(ret)
        for i in range(horizon):
            state, reward, u = model.sample(state, action, generator)
            ret = ret + gamma_r**i * reward                  # Σ γ_r^i r_i
            unc = unc + gamma_u**i * u                       # Σ γ_u^i u_i
            if i + 1 < horizon:
                action = policy(state, generator)            # a_{i+1} ~ π(·|s_{i+1})
        score = ret + sign * rate * unc                      # J = Σγ_r^i r_i ± rate Σγ_u^i u_i
    shape = (n_candidates, n)
    return first.reshape(*shape, -1), score.reshape(shape), ret.reshape(shape), unc.reshape(shape)


def up_mpc_action(obs: torch.Tensor, policy: Policy, model: DynamicsModel, *,
                  n_candidates: int = 5, horizon: int = 5, gamma_r: float = 0.97,
                  gamma_u: float = 0.97, rate: float = 2.0, sign: int = -1,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """UP-MPC's action for each row of obs (n, d_o) -> (n, d_a).

    policy(obs (m, d_o), generator) -> actions (m, d_a) samples the current policy (for SAC:
    ``lambda o, g: actor.sample(o, g)[0]``); model: a ``DynamicsModel``. Defaults are the official
    ones (N_c = 5, H = 5, γ_r = γ_u = 0.97, α_c = 2; pass rate = 1, sign = +1 for exploration).
    """
    first, score, _, _ = up_mpc_scores(obs, policy, model, n_candidates=n_candidates,
                                       horizon=horizon, gamma_r=gamma_r, gamma_u=gamma_u,
                                       rate=rate, sign=sign, generator=generator)
    if not bool(torch.isfinite(score).all()):
        # argmax over NaN scores would silently pick a candidate (often the first)
        raise ValueError("model returned non-finite rewards or uncertainties: the UP-MPC "
                         "scores J are NaN/inf, so no candidate can be chosen")
    best = score.argmax(dim=0)                               # c* = argmax_c J^(c)
    return first[best, torch.arange(obs.shape[0], device=obs.device)]
