"""Policy evaluation on a separate environment instance, and D4RL-style normalised scores.

``evaluate_policy`` builds a fresh environment with ``make_env()`` (never the training
instance), resets episode i with seed ``seed + i`` and acts with ``policy(obs)`` (pass the
deterministic action function), returning one undiscounted return per episode.
``normalized_score`` = 100 (R − R_random) / (R_expert − R_random) (Fu et al. 2020).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["evaluate_policy", "normalized_score"]


def evaluate_policy(policy: Callable[[np.ndarray], Any], make_env: Callable[[], Any], *,
                    episodes: int, seed: int, max_steps: int | None = None) -> list[float]:
    """Undiscounted return of each of ``episodes`` evaluation episodes."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int; got {episodes!r}")
    env = make_env()
    returns = []
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=int(seed) + i)
            total, steps, done = 0.0, 0, False
            while not done:
                obs, reward, terminated, truncated, _ = env.step(policy(obs))
                total += float(reward)
                steps += 1
                done = terminated or truncated or (max_steps is not None and steps >= max_steps)
            returns.append(total)
    finally:
        env.close()
    return returns


def normalized_score(returns: Any, random_return: float, expert_return: float) -> np.ndarray:
    """100 (R − R_random) / (R_expert − R_random), elementwise."""
    if not np.isfinite([random_return, expert_return]).all() or expert_return == random_return:
        raise ValueError(f"expert_return must differ from random_return (both finite); got "
                         f"{expert_return} and {random_return}")
    r = np.asarray(returns, dtype=float)
    return 100.0 * (r - random_return) / (expert_return - random_return)
