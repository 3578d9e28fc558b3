"""cde claims: sparse-reward maze (CDE vs OptiDICE-style, BC, CQL, IQL), data scarcity (1% of
the trajectories) and the tabular known-answer check of the V- and E-steps. PointUMaze and its
noisy-controller dataset stand in for D4RL maze2d (MuJoCo and the D4RL download are out of reach).
"""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes


def _arms(scale: Scale, names: tuple[str, ...], seed: int):
    """Constructors of the arms, all with the same network sizes and batch."""
    from .baselines import BC, CQL, IQL
    from .cde import CDE, CDEConfig

    hidden = sizes(scale, smoke=(64, 64), small=(64, 64), full=(256, 256))
    batch = sizes(scale, smoke=64, small=256, full=512)
    make = {
        "cde": lambda: CDE(4, 2, CDEConfig(hidden=hidden, batch_size=batch), seed=seed),
        # OptiDICE-style: d^D alone (ζ = 1, no OOD term) and weighted-BC extraction
        "optidice": lambda: CDE(4, 2, CDEConfig(hidden=hidden, batch_size=batch, zeta=1.0,
                                                policy_extract_mode="weighted_bc"), seed=seed),
        "bc": lambda: BC(4, 2, hidden=hidden, batch_size=batch, seed=seed),
        "cql": lambda: CQL(4, 2, hidden=hidden, batch_size=batch, seed=seed),
        "iql": lambda: IQL(4, 2, hidden=hidden, batch_size=batch, seed=seed),
    }
    return {k: make[k] for k in names}


def _train_and_score(agent_fn, dataset, steps: int, seed: int, eval_seed: int, episodes: int,
                     ref: tuple[float, float]):
    """(normalised score, success rate, CPU seconds, losses finite) of one trained arm."""
    import torch

    from iclr24.kits.reinforcement import normalized_score

    from .maze import rollout_returns

    agent = agent_fn()
    t0 = time.process_time()
    hist = agent.fit(dataset, steps, torch.Generator().manual_seed(seed))
    cpu = time.process_time() - t0
    finite = all(np.isfinite(v).all() for v in hist.values())
    returns = rollout_returns(agent.act, episodes, eval_seed)
    score = float(normalized_score(returns, *ref).mean())
    return score, float((returns > 0).mean()), cpu, finite


def _references(episodes: int, eval_seed: int) -> tuple[float, float]:
    """(R_random, R_expert): uniform random actions and the scripted shortest-path controller."""
    from .maze import expert_action, rollout_returns

    rng = np.random.default_rng(eval_seed)
    r_random = rollout_returns(lambda o: rng.uniform(-1, 1, (len(o), 2)), episodes, eval_seed)
    r_expert = rollout_returns(expert_action, episodes, eval_seed)
    return float(r_random.mean()), float(r_expert.mean())


def _vs_best(scores: dict[str, list[float]], method: str = "cde"):
    """Paired gain of ``method`` over the baseline with the highest mean score."""
    best = max((k for k in scores if k != method), key=lambda k: np.mean(scores[k]))
    return best, seed_difference(scores[method], scores[best])


@claim(
    rule="finite_losses == 1 and gain_vs_best_baseline > 0",
    paper="Tables 1-2: CDE reaches the best average normalised score on D4RL, with the largest "
          "margins on sparse-reward tasks (maze2d umaze/medium/large, Adroit) over BC, CQL, IQL, "
          "TD3+BC and OptiDICE (exact numbers not retrieved).",
    paper_numbers={},
    against=("the best by mean score of OptiDICE-style (zeta = 1), BC and IQL on the same "
             "dataset and seeds (CQL at full only, BC alone at smoke)"),
)
def sparse_maze(scale: Scale, seed: int, progress=None) -> Measurement:
    """All arms are trained on the same noisy-controller PointUMaze dataset (200k steps at
    small) with the same seeds (replicate r: training seed ``seed + r``) and evaluated with the
    deterministic action for 20 episodes from the start arm. ``gain_vs_best_baseline`` is the
    paired CDE − baseline score difference against the baseline with the highest mean score."""
    from iclr24.kits.threads import torch_threads

    from .maze import noisy_controller_dataset

    progress = progress or (lambda *a, **k: None)
    n_rep = sizes(scale, smoke=1, small=3, full=5)
    # 2000 steps at small: 3000 took 384 s of CPU on a quiet machine, past the 5-minute budget
    # (there CDE scored 65 [-75, 205] against 7 for the best baseline, IQL: inconclusive)
    steps = sizes(scale, smoke=100, small=2000, full=30000)
    names = sizes(scale, smoke=("cde", "bc"), small=("cde", "optidice", "bc", "iql"),
                  full=("cde", "optidice", "bc", "cql", "iql"))
    episodes, eval_seed = sizes(scale, smoke=10, small=20), 10_000 + seed
    dataset = noisy_controller_dataset(sizes(scale, smoke=10_000, small=200_000), seed)
    ref = _references(episodes, eval_seed)
    scores = {k: [] for k in names}
    success = {k: [] for k in names}
    rows, finite = [], True
    with torch_threads(1):
        for r in range(n_rep):
            for j, (name, make) in enumerate(_arms(scale, names, seed + r).items()):
                sc, sr, cpu, ok = _train_and_score(make, dataset, steps, seed + r, eval_seed,
                                                   episodes, ref)
                scores[name].append(sc)
                success[name].append(sr)
                finite &= ok
                rows.append({"arm": name, "replicate": r, "score": sc, "success_rate": sr,
                             "fit_cpu_s": cpu})
                progress((r * len(names) + j + 1) / (n_rep * len(names)), f"{name} seed {r}")
    best, gain = _vs_best(scores)
    metrics = {"finite_losses": float(finite), "gain_vs_best_baseline": gain,
               "random_return": ref[0], "expert_return": ref[1], "steps": steps,
               "n_replicates": n_rep, "dataset_reward_rate": float(dataset.rewards.mean())}
    for name in names:
        metrics[f"score_{name}"] = seed_metric(scores[name])
        metrics[f"success_{name}"] = seed_metric(success[name])
        if name != "cde":
            metrics[f"gain_vs_{name}"] = seed_difference(scores["cde"], scores[name])

    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for i, name in enumerate(names):
        ax.scatter(np.full(n_rep, i), scores[name], color="k", s=12, zorder=3)
        ax.bar(i, np.mean(scores[name]), color="C0" if name == "cde" else "C7")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("normalised score (expert = 100)")
    ax.set_title(f"PointUMaze, {steps} gradient steps, {n_rep} seed(s)")
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"runs": rows},
        notes=f"Best baseline by mean score: {best}. PointUMaze (numpy point mass, U-maze, sparse "
              "goal reward, 300 steps) replaces D4RL maze2d; networks 64-64 and "
              f"{steps} gradient steps instead of 256-256 and 100k (CPU budget). CQL and IQL are "
              "compact in-house implementations (d3rlpy cannot be installed beside gymnasium "
              "1.4); CQL (the costliest arm) runs at full only. CQL/IQL use raw rewards, CDE/OptiDICE the official standardise-then-x0.1. "
              "Score 100 (R - R_random)/(R_expert - R_random), scripted shortest-path expert.",
    )


@claim(
    rule="finite_losses == 1 and gain_1pct_vs_best > 0 and retention_cde > 0.5",
    paper="Sec. 5 (dataset-ratio figure): with only a small fraction of the trajectories kept "
          "(down to 1%), CDE's score degrades much less than CQL's, IQL's and OptiDICE's "
          "(exact numbers not retrieved).",
    paper_numbers={},
    against=("BC on the same 1% trajectory subsets (OptiDICE, CQL, IQL at full only); CDE's own "
             "full-data score for the retention ratio"),
)
def data_scarcity(scale: Scale, seed: int, progress=None) -> Measurement:
    """Each arm is trained on the full dataset and on a seeded 1% subset of its trajectories
    (replicate r: subset and training seed ``seed + r``). ``retention_cde`` is CDE's per-seed
    score(1%)/score(100%) (0 where CDE scores <= 0 on the full data); ``gain_1pct_vs_best`` the
    paired CDE − baseline score difference at 1% against the best baseline there. The rule reads
    "degrades much less" as: CDE keeps more than half of its score and beats every baseline
    at 1%."""
    from iclr24.kits.threads import torch_threads

    from .maze import noisy_controller_dataset

    progress = progress or (lambda *a, **k: None)
    n_rep = sizes(scale, smoke=1, small=3, full=5)
    # 2000 steps and no OptiDICE arm at small: 3000 steps with it took 467 s of CPU on a quiet
    # machine, past the 5-minute budget (there CDE kept 56 [-65, 178] at 1% against 13 for
    # OptiDICE and 0 for BC: inconclusive)
    steps = sizes(scale, smoke=100, small=2000, full=30000)
    names = sizes(scale, smoke=("cde", "bc"), small=("cde", "bc"),
                  full=("cde", "optidice", "bc", "cql", "iql"))
    fractions = sizes(scale, smoke=(1.0, 0.01), small=(1.0, 0.01), full=(1.0, 0.1, 0.01))
    # at small the baselines' full-data scores are sparse_maze's (same data, seeds and steps)
    full_arms = sizes(scale, smoke=names, small=("cde",), full=names)
    episodes, eval_seed = sizes(scale, smoke=10, small=20), 10_000 + seed
    full = noisy_controller_dataset(sizes(scale, smoke=10_000, small=200_000), seed)
    ref = _references(episodes, eval_seed)
    runs = [(k, f) for f in fractions for k in (full_arms if f == 1.0 else names)]
    scores = {run: [] for run in runs}
    rows, finite, done = [], True, 0
    total = n_rep * len(runs)
    with torch_threads(1):
        for r in range(n_rep):
            for frac in fractions:
                data = full if frac == 1.0 else full.subsample_episodes(frac, seed + r)
                arms = _arms(scale, full_arms if frac == 1.0 else names, seed + r)
                for name, make in arms.items():
                    sc, sr, cpu, ok = _train_and_score(make, data, steps, seed + r, eval_seed,
                                                       episodes, ref)
                    scores[name, frac].append(sc)
                    finite &= ok
                    rows.append({"arm": name, "fraction": frac, "replicate": r, "score": sc,
                                 "success_rate": sr, "transitions": len(data),
                                 "fit_cpu_s": cpu})
                    done += 1
                    progress(done / total, f"{name} at {frac:.0%}, seed {r}")
    low = min(fractions)
    at_low = {k: scores[k, low] for k in names}
    best, gain = _vs_best(at_low)
    retention = [s1 / s0 if s0 > 0 else 0.0 for s1, s0 in zip(scores["cde", low],
                                                              scores["cde", 1.0])]
    metrics = {"finite_losses": float(finite), "gain_1pct_vs_best": gain,
               "retention_cde": seed_metric(retention), "steps": steps, "n_replicates": n_rep}
    for (name, frac), values in scores.items():
        metrics[f"score_{name}_{round(100 * frac)}pct"] = seed_metric(values)
    for name in names:
        if name != "cde":
            metrics[f"gain_1pct_vs_{name}"] = seed_difference(scores["cde", low], at_low[name])

    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for name in names:
        fs = [f for f in fractions if (name, f) in scores]
        ax.plot([100 * f for f in fs], [np.mean(scores[name, f]) for f in fs], "o-", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("% of trajectories kept")
    ax.set_ylabel("normalised score")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"runs": rows},
        notes=f"Best baseline at {low:.0%}: {best}. Subsets keep whole trajectories in a seeded "
              "random order until the fraction of transitions is reached (official "
              "dataset_ratio). 1% of 200k steps is 7 trajectories of 300 steps. At small the "
              "baselines run at 1% only (their full-data scores are sparse_maze's: same data, "
              "seeds and steps); OptiDICE, CQL, IQL and the 10% subset only at full (CPU "
              "budget).",
    )


@claim(
    rule="dual_rel_error < 0.01 and mean_w_error < 0.01 and ood_ratio_max <= 0.35",
    paper="Sec. 4: the V-step minimises the convex dual of the regularised occupancy LP with "
          "E_D[w] = 1 at the optimum; the OOD term caps the density ratio on unseen actions at "
          "eps~ = 0.3 (bounded concentrability), where OptiDICE's ratios are unbounded.",
    paper_numbers={"ood_cap": 0.3},
    against=("SciPy's exact solution of the same convex dual; the OptiDICE E-step (zeta = 1) "
             "alongside, reported but not judged"),
)
def tabular_check(scale: Scale, seed: int) -> Measurement:
    """On seeded 5 × 5 gridworlds with a 2-of-4-actions behaviour policy and 2 000 logged
    transitions, gradient descent on the official V-loss (tabular V) is compared with SciPy's
    solution of the same convex dual: ``dual_rel_error`` = (L_gd − L*)/(L_init − L*), the
    suboptimality left relative to the initial one, worst over MDPs; ``mean_w_error`` =
    max |E_D[w] − 1|. The E-step with the OOD term (ζ = 0.9) and without it (OptiDICE, ζ = 1)
    is then fitted on the V-step advantages; ``ood_ratio_max`` is the largest implied ratio on
    an unseen (s, a) pair (rule: <= ε̃ + 0.05)."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .divergence import soft_chi2
    from .tabular import (
        dual_objective,
        gridworld_mdp,
        sample_transitions,
        solve_dual,
        tabular_e_step,
        tabular_v_step,
    )

    n_mdp = sizes(scale, smoke=1, small=3, full=10)
    v_steps = sizes(scale, smoke=400, small=3000, full=5000)
    e_steps = sizes(scale, smoke=400, small=2000, full=5000)
    alpha, gamma, eps = 0.1, 0.9, 0.3
    fns, rows = soft_chi2(), []
    with torch_threads(1):
        for k in range(n_mdp):
            mdp = gridworld_mdp(seed + k)
            data = sample_transitions(mdp, 2000, seed + k)
            _, _, l_star = solve_dual(data, mdp, alpha=alpha, gamma=gamma)
            l_init = dual_objective(np.zeros(mdp.n_states), 0.0, data, mdp, alpha=alpha,
                                    gamma=gamma)[0]
            v, lam = tabular_v_step(data, mdp, alpha=alpha, gamma=gamma, steps=v_steps)
            l_gd = dual_objective(v, lam, data, mdp, alpha=alpha, gamma=gamma)[0]
            adv = data["r"] + gamma * v[data["s2"]] - v[data["s"]]
            w = fns.f_prime_inv(torch.as_tensor((adv - lam) / alpha)).numpy()
            row = {"mdp": k, "L_star": l_star, "L_gd": l_gd,
                   "dual_rel_error": (l_gd - l_star) / (l_init - l_star),
                   "mean_w": float(w.mean())}
            ood = mdp.behaviour == 0
            for arm, zeta in (("cde", 0.9), ("optidice", 1.0)):
                e, lam_e = tabular_e_step(data, mdp, v, alpha=alpha, gamma=gamma, zeta=zeta,
                                          ood_eps=eps, steps=e_steps, seed=seed + k)
                ratio = fns.f_prime_inv(torch.as_tensor((e - lam_e) / alpha)).numpy()
                row[f"{arm}_ood_ratio_max"] = float(ratio[ood].max())
                row[f"{arm}_data_ratio_mean"] = float(ratio[data["s"], data["a"]].mean())
            rows.append(row)
    metrics = {
        "dual_rel_error": max(abs(r["dual_rel_error"]) for r in rows),
        "mean_w_error": max(abs(r["mean_w"] - 1) for r in rows),
        "ood_ratio_max": max(r["cde_ood_ratio_max"] for r in rows),
        "optidice_ood_ratio_max": max(r["optidice_ood_ratio_max"] for r in rows),
        "cde_data_ratio_mean": float(np.mean([r["cde_data_ratio_mean"] for r in rows])),
        "ood_cap": eps, "n_mdps": n_mdp,
    }
    return Measurement(
        metrics=metrics, tables={"mdps": rows},
        notes="alpha = 0.1, gamma = 0.9 on the tabular task (the maze's alpha = 0.001 is tuned to "
              "standardised x0.1 rewards and 256-unit networks). E(s, a) = T[s, a] + u[s] + b[a]: "
              "the shared offsets make unseen actions inherit values, as a network's "
              "extrapolation does; OptiDICE's OOD ratios are reported, not judged.",
    )

