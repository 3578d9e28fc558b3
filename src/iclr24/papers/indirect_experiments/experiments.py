"""Replications of the two experiments, module-level so joblib workers can import them."""

from __future__ import annotations

import numpy as np

from .asymptotics import surrogate_gradient
from .design import DIADesigner, instrument_index, run_adaptive_experiment
from .iv_data import SyntheticIV

__all__ = ["DESIGN_ARMS", "design_replication", "gradient_draws"]

DESIGN_ARMS = ("uniform", "official_fixed", "optimal", "random", "dia")


def design_replication(rng: np.random.Generator, m: int, steps: int, n_boot: int) -> dict:
    """Final squared error of each arm of ``DESIGN_ARMS`` (the reference designs and DIA), each
    on its own data stream drawn from a generator spawned from ``rng`` (paired by seed)."""
    env = SyntheticIV(m)
    out = {}
    for name, r in zip(DESIGN_ARMS, rng.spawn(len(DESIGN_ARMS))):
        designer = DIADesigner(steps=steps, n_boot=n_boot) if name == "dia" else name
        res = run_adaptive_experiment(env, designer, rng=r)
        out[name] = res["squared_errors"][-1]
        out[f"{name}_curve"] = res["squared_errors"]
        out[f"{name}_final_policy"] = res["policies"][-1].tolist()
    return out


def gradient_draws(rng: np.random.Generator, m: int, n: int, draws: int, n_boot: int,
                   final_budget: int = 1000) -> dict:
    """``draws`` policy gradients at uniform logits on one fixed data set of n uniform samples,
    with the influence estimator (official and leave-one-out forms), naive REINFORCE and the
    shuffled-influence null (same bootstrap settings); "truth": the gradient of the closed-form
    asymptotic MSE of pi_eff (:func:`~.asymptotics.surrogate_gradient`)."""
    env = SyntheticIV(m)
    X, Y, Z, _ = env.sample(n, np.full(m, 1 / m), rng)
    logits = np.ones(m)
    beta_bar = np.bincount(instrument_index(Z), minlength=m) / n
    out = {"truth": surrogate_gradient(env, logits, beta_bar, n / final_budget)}
    for name, kind, form in (("influence", "influence", "official"),
                             ("influence_loo", "influence", "loo"),
                             ("reinforce", "reinforce", "official"),
                             ("shuffled", "shuffled_influence", "official")):
        d = DIADesigner(n_boot=n_boot, gradient=kind, influence_form=form)
        out[name] = np.array([d.policy_gradient(logits, X, Y, Z, final_budget, rng)
                              for _ in range(draws)])
    return out
