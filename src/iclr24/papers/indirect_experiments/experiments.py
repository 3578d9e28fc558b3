"""Replications of the two experiments, module-level so joblib workers can import them."""

from __future__ import annotations

import numpy as np

from .design import DIADesigner, run_adaptive_experiment
from .iv_data import SyntheticIV

__all__ = ["design_replication", "gradient_draws"]


def design_replication(rng: np.random.Generator, m: int, steps: int, n_boot: int) -> dict:
    """Final squared error of uniform, oracle and DIA designs, each on its own data stream
    drawn from a generator spawned from ``rng`` (so the three are paired by seed)."""
    env = SyntheticIV(m)
    seeds = rng.spawn(3)
    out = {}
    for name, designer, r in (("uniform", "uniform", seeds[0]), ("oracle", "oracle", seeds[1]),
                              ("dia", DIADesigner(steps=steps, n_boot=n_boot), seeds[2])):
        res = run_adaptive_experiment(env, designer, rng=r)
        out[name] = res["squared_errors"][-1]
        out[f"{name}_curve"] = res["squared_errors"]
        if name == "dia":
            out["dia_final_policy"] = res["policies"][-1].tolist()
    return out


def gradient_draws(rng: np.random.Generator, m: int, n: int, draws: int, n_boot: int,
                   final_budget: int = 1000) -> dict:
    """``draws`` policy gradients at uniform logits on one fixed data set of n uniform samples,
    with the influence estimator and with naive REINFORCE (same bootstrap settings)."""
    env = SyntheticIV(m)
    X, Y, Z, _ = env.sample(n, np.full(m, 1 / m), rng)
    logits = np.ones(m)
    out = {}
    for kind in ("influence", "reinforce"):
        d = DIADesigner(n_boot=n_boot, gradient=kind)
        out[kind] = np.array([d.policy_gradient(logits, X, Y, Z, final_budget, rng)
                              for _ in range(draws)])
    return out
