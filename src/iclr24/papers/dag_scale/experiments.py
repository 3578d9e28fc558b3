"""One replication of each experiment of the spec, module-level for seeded replications.

- ``population_replication``: exact population test - LS-optimal order before and after the
  rescaling attack towards a random wrong order, and LL's invariance; null arms: no rescaling
  and a random rescaling, on the same SEM and target.
- ``learners_replication``: finite-sample learners on raw, standardised and attacked data;
  null arm: DAGMA-LS on an independent second raw sample of the same SEM.
- ``nonlinear_replication``: DAGMA-nonlinear and PC on additive-noise data, raw vs rescaled;
  null arm: DAGMA-nonlinear on the raw data with another torch seed.
"""

from __future__ import annotations

import numpy as np

from .golem import golem
from .learners import run_learner
from .metrics import shd, varsortability
from .scores import (
    best_order_exact,
    is_consistent_order,
    order_residual_variances,
    rescale_covariance,
    scale_attack,
)
from .sem import population_covariance, simulate_anm, simulate_dag, simulate_linear_sem

__all__ = ["learners_replication", "nonlinear_replication", "population_replication",
           "topological_order"]


def topological_order(B) -> list[int]:
    A = np.asarray(B) != 0
    order, left = [], list(range(A.shape[0]))
    while left:
        roots = [j for j in left if not A[left, j].any()]
        order += roots
        left = [j for j in left if j not in roots]
    return order


def population_replication(rng: np.random.Generator, d: int) -> dict:
    """Random ER-2 SEM with equal noise variances and a random target order not consistent
    with the DAG. For the attack (``scale_attack`` towards the target) and two null arms on
    the same SEM and target - no rescaling (``_unattacked``) and a random rescaling, log s_j ~
    U(log 0.1, log 10) (``_random_rescale``) - whether the LS-optimal order is consistent
    with the true DAG and whether the target order attains the LS minimum; plus the spread of
    the attack's LL changes over a few orders (0 = every order shifted by the same constant)
    and varsortability before/after the attack."""
    B = simulate_dag(d, 2, "ER", rng)
    while not (B != 0).any():
        B = simulate_dag(d, 2, "ER", rng)
    Sigma = population_covariance(B, 1.0)
    target = list(rng.permutation(d))
    while is_consistent_order(target, B):
        target = list(rng.permutation(d))
    arms = {"": scale_attack(Sigma, target), "_unattacked": np.ones(d),
            "_random_rescale": np.exp(rng.uniform(np.log(0.1), np.log(10.0), d))}
    before, _ls_before = best_order_exact(Sigma, "ls")
    out: dict = {"consistent_before": is_consistent_order(before, B)}
    optimum = {}
    for name, s in arms.items():
        Sigma_s = rescale_covariance(Sigma, s)                 # S Sigma S
        best, ls_best = best_order_exact(Sigma_s, "ls")
        ls_target = float(order_residual_variances(Sigma_s, target).sum())  # LS = sum_j r_j
        out[f"consistent_after{name}"] = is_consistent_order(best, B)
        out[f"target_wins{name}"] = ls_target <= ls_best * (1 + 1e-9)
        optimum[name] = best, Sigma_s
    after, Sigma_a = optimum[""]                               # the attack's arm
    orders = [target, before, after] + [list(rng.permutation(d)) for _ in range(5)]
    dll = [0.5 * (np.log(order_residual_variances(Sigma_a, o)).sum()     # LL = 1/2 sum log r_j
                  - np.log(order_residual_variances(Sigma, o)).sum()) for o in orders]
    out["ll_shift_spread"] = float(np.ptp(dll))
    out["varsortability_before"] = varsortability(np.diag(Sigma), B)
    out["varsortability_after"] = varsortability(np.diag(Sigma_a), B)
    return out


def learners_replication(rng: np.random.Generator, d: int, n: int,
                         dagma_iter: tuple[int, int] = (30_000, 60_000)) -> dict:
    """ER-2 linear SEM (equal noise), n samples; SHD of DAGMA-LS on raw, standardised and
    attacked data (attack towards the reverse topological order, computed from the population
    covariance), of GOLEM-EV and GOLEM-NV on raw and attacked data, and the SHD between PC's
    outputs on raw and attacked data (0 for a scale-invariant learner). Null arm
    ``shd_dagma_ls_resample``: DAGMA-LS on a second, independent raw sample of n from the same
    SEM (how much SHD moves with no rescaling at all). ``dagma_iter``: DAGMA's (warm_iter,
    max_iter), defaults its own."""
    X, B, noise = simulate_linear_sem(d, 2, "ER", n, 1.0, rng)
    Sigma = population_covariance(B, noise)
    s = scale_attack(Sigma, topological_order(B)[::-1])
    X_resample = (rng.standard_normal((n, d)) * np.sqrt(noise)) @ np.linalg.inv(np.eye(d) - B)
    variants = {"raw": X, "standardized": X / X.std(axis=0), "attacked": X * s,
                "resample": X_resample}                    # X = X B + N, fresh N
    out = {}
    warm, last = dagma_iter
    for v, Xv in variants.items():
        out[f"shd_dagma_ls_{v}"] = shd(run_learner("dagma_ls", Xv, warm_iter=warm,
                                                   max_iter=last), B)
        if v in ("raw", "attacked"):                       # NV starts from EV's solution
            W_ev = golem(Xv, equal_variances=True, w_threshold=0.0)
            out[f"shd_golem_ev_{v}"] = shd(np.abs(W_ev) > 0.3, B)
            out[f"shd_golem_nv_{v}"] = shd(golem(Xv, B_init=W_ev), B)
    out["pc_change"] = shd(run_learner("pc", variants["raw"]),
                           run_learner("pc", variants["attacked"]))
    out["shd_pc_raw"] = shd(run_learner("pc", variants["raw"]), B)
    out["varsortability_raw"] = varsortability(X.var(axis=0), B)
    out["varsortability_attacked"] = varsortability((X * s).var(axis=0), B)
    return out


def nonlinear_replication(rng: np.random.Generator, d: int, n: int,
                          rescale: str = "loguniform",
                          dagma_iter: tuple[int, int] = (50_000, 80_000),
                          lr: float = 2e-4) -> dict:
    """ANM (tanh/sin mechanisms, unit Gaussian noise, ER-2), n samples; SHD of DAGMA-nonlinear
    on raw and rescaled data (same torch seed for both fits), on the raw data again with another
    torch seed (null arm ``shd_mlp_reseed``: how far SHD moves with the initialisation alone),
    and the SHD between PC's outputs on raw and rescaled data. ``rescale``: "loguniform" (each
    variable times s_j, log s_j ~ U(log 0.1, log 10), the spec's rescaling) or "identity"
    (s = 1, a null attack).
    ``dagma_iter``: (warm_iter, max_iter) of DAGMA-nonlinear, ``lr`` its Adam step; the defaults
    are dagma's own."""
    if rescale not in ("loguniform", "identity"):
        raise ValueError(f"rescale must be 'loguniform' or 'identity', got {rescale!r}")
    X, A = simulate_anm(d, 2, "ER", n, rng)
    s = (np.exp(rng.uniform(np.log(0.1), np.log(10.0), d)) if rescale == "loguniform"
         else np.ones(d))
    torch_seed, null_seed = (int(t) for t in rng.integers(2 ** 31, size=2))
    warm, last = dagma_iter
    out = {}
    for v, Xv, ts in (("raw", X, torch_seed), ("rescaled", X * s, torch_seed),
                      ("reseed", X, null_seed)):     # null arm: raw data, another init
        out[f"shd_mlp_{v}"] = shd(run_learner("dagma_mlp", Xv, warm_iter=warm, max_iter=last,
                                              lr=lr, seed=ts), A)
    pc_raw = run_learner("pc", X)
    out["pc_change"] = shd(pc_raw, run_learner("pc", X * s))
    out["shd_pc_raw"] = shd(pc_raw, A)
    out["n_edges"] = int(A.sum())
    out["varsortability_raw"] = varsortability(X.var(axis=0), A)
    out["varsortability_rescaled"] = varsortability((X * s).var(axis=0), A)
    return out

