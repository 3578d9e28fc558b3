"""n-step REINFORCE training of the L2S policy and its use as an improvement heuristic (Sec. 4.4;
official ``n-step_reinforce.py``).

Each episode draws ``batch_size`` random instances, starts from the dispatching rule's schedule
and runs ``horizon`` steps; every ``n_step`` steps the policy is updated from those steps only:

    R_t = sum_{t <= t' < t0 + n} gamma^(t'-t) r_t'                    (gamma = 1, within the window)
    loss = mean_b sum_t -log pi(a_t | s_t) * (R_t - mean_t R) / (std_t R + eps)

(returns normalised per instance over the window, steps taken in a state without moves left out,
as the official ``learn``). Adam, lr 5e-5 in the paper. The paper trains on 128,000 instances of
10x10 for 500-step episodes (2,000 batches of 64), which a CPU cannot approach; the claims train a
smaller network on 6x6 for a few hundred updates and say so.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .environment import ImprovementEnv
from .instance import JSSPInstance, random_instance
from .policy import L2SPolicy

__all__ = ["ReinforceConfig", "improve", "move_entropy_ratio", "train_n_step_reinforce"]


@dataclass(frozen=True)
class ReinforceConfig:
    """Training setup; defaults are the official script's (10x10, U[1, 99], FDD/MWKR)."""

    n_jobs: int = 10
    n_machines: int = 10
    low: int = 1
    high: int = 99
    batch_size: int = 64
    horizon: int = 500
    n_step: int = 10
    episodes: int = 2000  # batches; 2000 x 64 = 128,000 instances
    lr: float = 5e-5
    gamma: float = 1.0
    init_rule: str = "fdd_mwkr"

    def __post_init__(self) -> None:
        for name in ("n_jobs", "n_machines", "batch_size", "horizon", "n_step", "episodes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr!r}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma!r}")


def _reinforce_loss(rewards: list[np.ndarray], logps: list[torch.Tensor],
                    dones: list[np.ndarray], gamma: float) -> torch.Tensor | None:
    eps = float(np.finfo(np.float32).eps)
    ret = np.zeros_like(rewards[0])
    returns = []
    for r in rewards[::-1]:
        ret = r + gamma * ret  # R_t = r_t + gamma R_{t+1}
        returns.insert(0, ret)
    R = torch.tensor(np.stack(returns, 1), dtype=torch.float32)  # (B, n)
    keep = ~torch.tensor(np.stack(dones, 1))
    L = torch.stack(logps, 1)  # (B, n)
    losses = []
    for b in range(R.shape[0]):
        if not bool(keep[b].any()):
            continue
        rb = R[b][keep[b]]
        rb = (rb - rb.mean()) / (rb.std(unbiased=False) + eps)  # per-instance normalisation
        losses.append(-(L[b][keep[b]] * rb).sum())
    return torch.stack(losses).mean() if losses else None


def train_n_step_reinforce(policy: L2SPolicy, config: ReinforceConfig = ReinforceConfig(), *,
                           seed: int = 0,
                           progress: Callable[[float, str], None] | None = None) -> list[float]:
    """Train ``policy`` in place. Returns the mean incumbent makespan of each training batch at
    the end of its episode (the official training log)."""
    if not isinstance(policy, L2SPolicy):
        raise TypeError(f"policy must be an L2SPolicy, got {type(policy).__name__}")
    if not isinstance(config, ReinforceConfig):
        raise TypeError("config must be a ReinforceConfig")
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=config.lr)
    policy.train()
    log = []
    for episode in range(config.episodes):
        insts = [random_instance(config.n_jobs, config.n_machines, config.low, config.high,
                                 seed=rng) for _ in range(config.batch_size)]
        env = ImprovementEnv(insts, config.init_rule, config.horizon)
        batch, moves = env.reset()
        rewards, logps, dones = [], [], []
        while not env.finished:
            done_before = np.array([not ms for ms in moves])
            actions, lp = policy.act(batch, moves, generator=gen)
            r, _ = env.step(actions)
            batch, moves = env.batch, env.moves
            rewards.append(r.astype(np.float32))
            logps.append(lp)
            dones.append(done_before)
            if env.t % config.n_step == 0 or env.finished:
                loss = _reinforce_loss(rewards, logps, dones, config.gamma)
                if loss is not None:
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                rewards, logps, dones = [], [], []
        log.append(float(env.incumbent.mean()))
        if progress is not None:
            progress((episode + 1) / config.episodes, f"episode {episode + 1}: mean incumbent "
                                                      f"{log[-1]:.1f}")
    return log


def _rollout_copy(policy: L2SPolicy, batch_norm_stats: str) -> L2SPolicy:
    """A copy in eval mode (dropout off) whose BatchNorm uses batch statistics with ``"batch"``
    (as the official test script, which never calls ``eval()``) or the running ones."""
    if batch_norm_stats not in ("batch", "running"):
        raise ValueError(f"batch_norm_stats must be 'batch' or 'running', got "
                         f"{batch_norm_stats!r}")
    roll = copy.deepcopy(policy).eval()  # a copy: batch statistics must not touch the buffers
    if batch_norm_stats == "batch":
        for mod in roll.modules():
            if isinstance(mod, torch.nn.BatchNorm1d):
                mod.train()
    return roll


def move_entropy_ratio(policy: L2SPolicy, instances: Sequence[JSSPInstance], *,
                       init_rule: str = "fdd_mwkr", batch_norm_stats: str = "batch") -> float:
    """How far ``policy`` is from picking N5 moves uniformly at random, on the start states
    (``init_rule`` schedules) of ``instances``: the mean over instances with >= 2 moves of

        H(pi(. | s)) / log |N5(s)|,   H = -sum_a pi(a | s) log pi(a | s)

    1 = uniform (the random-N5 baseline), 0 = deterministic. NaN when no instance has two moves
    or more. ``policy`` is left unchanged (a copy is evaluated, BatchNorm as in :func:`improve`).
    """
    if not isinstance(policy, L2SPolicy):
        raise TypeError(f"policy must be an L2SPolicy, got {type(policy).__name__}")
    if isinstance(instances, JSSPInstance):
        instances = [instances]
    roll = _rollout_copy(policy, batch_norm_stats)
    batch, moves = ImprovementEnv(instances, init_rule, horizon=0).reset()
    with torch.no_grad():
        logps = roll(batch, moves)
    ratios = [float(-(lp.exp() * lp).sum()) / float(np.log(len(lp)))  # H / log |N5|
              for lp in logps if len(lp) > 1]
    return float(np.mean(ratios)) if ratios else float("nan")


def improve(instances: JSSPInstance | Sequence[JSSPInstance], policy: L2SPolicy,
            steps: int = 500, greedy: bool = False, *, init_rule: str = "fdd_mwkr",
            seed: int = 0, batch_norm_stats: str = "batch"):
    """Run the policy for ``steps`` N5 moves from the ``init_rule`` schedule (sampling, or arg-max
    with ``greedy``), without gradients. ``batch_norm_stats="batch"`` normalises GIN's BatchNorm
    with the statistics of the current batch of states, as the official test script does (it
    never calls ``eval()``), which carries a policy trained on small instances over to larger
    ones; ``"running"`` uses the running statistics gathered in training (eval mode). Dropout is
    off either way and ``policy`` itself is left unchanged. Returns (best_schedule,
    best_makespan), or a list of them for a sequence (rolled out as one batch)."""
    if not isinstance(policy, L2SPolicy):
        raise TypeError(f"policy must be an L2SPolicy, got {type(policy).__name__}")
    single = isinstance(instances, JSSPInstance)
    insts = [instances] if single else instances
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    roll = _rollout_copy(policy, batch_norm_stats)
    env = ImprovementEnv(insts, init_rule, int(steps))
    batch, moves = env.reset()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        while not env.finished:
            actions, _ = roll.act(batch, moves, generator=gen, greedy=greedy)
            env.step(actions)
            batch, moves = env.batch, env.moves
    out = list(zip(env.best_schedules, env.incumbent.tolist()))
    return out[0] if single else out
