"""cde claims: sparse-reward maze (CDE vs OptiDICE-style, BC, CQL, IQL), data scarcity (1% of
the trajectories) and the tabular known-answer check of the V- and E-steps. PointUMaze and its
noisy-controller dataset stand in for D4RL maze2d (MuJoCo and the D4RL download are out of reach).
Every claim measures its null arm in the same run (a uniform random policy in the maze claims;
OptiDICE's E-step, the V-step without λ and random ratios in the tabular one) and reads it in
its ``control``; the maze claims also need the scripted expert to reach the goal.
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
        # filtered BC (%BC): BC on the episodes CDE's is_optimal weights flag (same information)
        "bc_success": lambda: BC(4, 2, hidden=hidden, batch_size=batch, successful_only=True,
                                 seed=seed),
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


def _references(episodes: int, eval_seed: int) -> tuple[float, float, float]:
    """(R_random, R_expert, expert success rate): uniform random actions and the scripted
    shortest-path controller (the positive control: the task is solvable in the horizon)."""
    from .maze import expert_action, rollout_returns

    rng = np.random.default_rng(eval_seed)
    r_random = rollout_returns(lambda o: rng.uniform(-1, 1, (len(o), 2)), episodes, eval_seed)
    r_expert = rollout_returns(expert_action, episodes, eval_seed)
    return float(r_random.mean()), float(r_expert.mean()), float((r_expert > 0).mean())


def _random_policy_score(episodes: int, eval_seed: int, policy_seed: int,
                         ref: tuple[float, float]) -> tuple[float, float]:
    """(normalised score, success rate) of the null arm: uniform random actions, drawn from its
    own seeded stream (not the one R_random was measured with), on the evaluation episodes."""
    from iclr24.kits.reinforcement import normalized_score

    from .maze import rollout_returns

    rng = np.random.default_rng([policy_seed, 7])
    returns = rollout_returns(lambda o: rng.uniform(-1, 1, (len(o), 2)), episodes, eval_seed)
    return float(normalized_score(returns, *ref).mean()), float((returns > 0).mean())


def _vs_best(scores: dict[str, list[float]], method: str = "cde"):
    """Paired gain of ``method`` over the baseline with the highest mean score."""
    best = max((k for k in scores if k != method), key=lambda k: np.mean(scores[k]))
    return best, seed_difference(scores[method], scores[best])


@claim(
    rule="finite_losses == 1 and gain_vs_best_baseline > 0",
    control="expert_success >= 0.9 and null_gain_vs_best_baseline <= 0",
    paper="Tables 1-2: CDE reaches the best average normalised score on D4RL, with the largest "
          "margins on sparse-reward tasks (maze2d umaze/medium/large, Adroit) over BC, CQL, IQL, "
          "TD3+BC and OptiDICE (exact numbers not retrieved).",
    paper_numbers={},
    against=("the best by mean score of OptiDICE-style (zeta = 1), BC, filtered BC (%BC, the "
             "episodes CDE's is_optimal weights flag) and IQL on the same dataset and seeds (CQL "
             "at full only; BC alone at smoke); null arm: a uniform random policy; positive "
             "control: the scripted shortest-path expert"),
)
def sparse_maze(scale: Scale, seed: int, progress=None) -> Measurement:
    """All arms are trained on the same noisy-controller PointUMaze dataset (200k steps at
    small) with the same seeds (replicate r: training seed ``seed + r``) and evaluated with the
    deterministic action for 20 episodes from the start arm. ``gain_vs_best_baseline`` is the
    paired CDE − baseline score difference against the baseline with the highest mean score.

    CDE uses the official ``is_optimal`` weighting of its policy loss (only transitions of
    episodes that end in reward count; ``CDEConfig.is_optimal_weighting``). Because that gives
    CDE the success labels of the episodes, filtered BC on the same flagged episodes ("%BC") is
    a baseline: the sceptic's explanation "it only imitates the successful episodes".

    Control (written before the small run): (i) positive, the scripted expert reaches the goal
    in >= 90% of the evaluation episodes (the task is solvable in the horizon, so a score of 0
    is the method's, not the test bed's); (ii) null arm, a uniform random policy evaluated on
    the same episodes (its own random stream) and compared with the same best baseline,
    ``null_gain_vs_best_baseline``, must not beat it (<= 0, whole interval): if it did, the
    baselines would be worse than doing nothing and a win over them would say nothing.

    Budget (not the paper's): 64-64 networks, 2 000 gradient steps, batch 256 at small against
    the official 256-256, 100k steps, batch 512 (full: 30k steps). At smoke (100 steps, 10k
    transitions) every arm scores 0: smoke is a run check, not a reproduction."""
    from iclr24.kits.threads import torch_threads

    from .maze import noisy_controller_dataset

    progress = progress or (lambda *a, **k: None)
    n_rep = sizes(scale, smoke=1, small=3, full=5)
    # 2000 steps at small: 3000 took 384 s of CPU on a quiet machine, past the 5-minute budget
    # (there CDE scored 65 [-75, 205] against 7 for the best baseline, IQL: inconclusive)
    steps = sizes(scale, smoke=100, small=2000, full=30000)
    names = sizes(scale, smoke=("cde", "bc"),
                  small=("cde", "optidice", "bc", "bc_success", "iql"),
                  full=("cde", "optidice", "bc", "bc_success", "cql", "iql"))
    episodes, eval_seed = sizes(scale, smoke=10, small=20), 10_000 + seed
    dataset = noisy_controller_dataset(sizes(scale, smoke=10_000, small=200_000), seed)
    r_random, r_expert, expert_success = _references(episodes, eval_seed)
    ref = (r_random, r_expert)
    scores = {k: [] for k in (*names, "random")}
    success = {k: [] for k in (*names, "random")}
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
            sc, sr = _random_policy_score(episodes, eval_seed, seed + r, ref)  # null arm
            scores["random"].append(sc)
            success["random"].append(sr)
            rows.append({"arm": "random", "replicate": r, "score": sc, "success_rate": sr,
                         "fit_cpu_s": 0.0})
    baselines = {k: v for k, v in scores.items() if k != "random"}
    best, gain = _vs_best(baselines)
    flags = dataset.optimal_episode_weights()
    metrics = {"finite_losses": float(finite), "gain_vs_best_baseline": gain,
               "null_gain_vs_best_baseline": seed_difference(scores["random"], scores[best]),
               "expert_success": expert_success,
               "random_return": r_random, "expert_return": r_expert, "steps": steps,
               "n_replicates": n_rep, "dataset_reward_rate": float(dataset.rewards.mean()),
               "flagged_episodes": float((flags[dataset.is_initial > 0] >= 0.5).sum())}
    for name in (*names, "random"):
        metrics[f"score_{name}"] = seed_metric(scores[name])
        metrics[f"success_{name}"] = seed_metric(success[name])
        if name != "cde":
            metrics[f"gain_vs_{name}"] = seed_difference(scores["cde"], scores[name])

    from matplotlib.figure import Figure

    shown = (*names, "random")
    fig = Figure(figsize=(6, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for i, name in enumerate(shown):
        ax.scatter(np.full(n_rep, i), scores[name], color="k", s=12, zorder=3)
        ax.bar(i, np.mean(scores[name]), color="C0" if name == "cde" else "C7")
    ax.set_xticks(range(len(shown)), shown)
    ax.set_ylabel("normalised score (expert = 100)")
    ax.set_title(f"PointUMaze, {steps} gradient steps, {n_rep} seed(s)")
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"runs": rows},
        notes=f"Best baseline by mean score: {best}. PointUMaze (numpy point mass, U-maze, sparse "
              "goal reward, 300 steps) replaces D4RL maze2d; networks 64-64 and "
              f"{steps} gradient steps instead of 256-256 and 100k (CPU budget). CQL and IQL are "
              "compact in-house implementations (d3rlpy cannot be installed beside gymnasium "
              "1.4); CQL (the costliest arm, ~37 s of CPU per 2000-step fit) runs at full only. "
              "CQL/IQL use raw rewards, CDE/OptiDICE the official standardise-then-x0.1. CDE "
              "weights its policy loss by the official is_optimal flags; bc_success is BC on "
              "the same flagged episodes. Null arm: uniform random actions. "
              "Score 100 (R - R_random)/(R_expert - R_random), scripted shortest-path expert. "
              "At smoke every arm scores 0 (100 steps): a run check only.",
    )


@claim(
    rule="finite_losses == 1 and gain_1pct_vs_best > 0 and retention_cde > 0.5",
    control=("expert_success >= 0.9 and score_cde_100pct > 0 "
             "and null_gain_1pct_vs_best <= 0"),
    paper="Sec. 5 (dataset-ratio figure): with only a small fraction of the trajectories kept "
          "(down to 1%), CDE's score degrades much less than CQL's, IQL's and OptiDICE's "
          "(exact numbers not retrieved).",
    paper_numbers={},
    against=("OptiDICE-style (zeta = 1), IQL and BC on the same 1% trajectory subsets (CQL and "
             "the 10% subset at full only; BC alone at smoke); CDE's own full-data score for "
             "the retention ratio; null arm: a uniform random policy"),
)
def data_scarcity(scale: Scale, seed: int, progress=None) -> Measurement:
    """Each arm is trained on a seeded 1% subset of the trajectories, CDE also on the full
    dataset (replicate r: subset and training seed ``seed + r``). ``retention_cde`` is CDE's
    per-seed score(1%)/score(100%) (0 where CDE scores <= 0 on the full data);
    ``gain_1pct_vs_best`` the paired CDE − baseline score difference at 1% against the best
    baseline there. The rule reads "degrades much less" as: CDE keeps more than half of its
    score and beats every baseline at 1%.

    Control (written before the small run): (i) the expert reaches the goal in >= 90% of the
    evaluation episodes; (ii) CDE scores above 0 on the full data (whole interval): otherwise
    there is nothing to retain and the retention ratio says nothing (budget, not scarcity);
    (iii) null arm, a uniform random policy on the same episodes, does not beat the best
    baseline at 1% (``null_gain_1pct_vs_best`` <= 0).

    Budget (not the paper's): 64-64 networks, 2 000 steps. CQL is left to ``full``: one
    2 000-step fit costs ~37 s of CPU (CDE ~27 s, OptiDICE-style and IQL ~9 s, BC ~3 s), so
    CDE at 100% and 1% with OptiDICE, IQL, BC *and* CQL at 1% over 3 seeds is ~340 s, past the
    5-minute budget; without CQL it is ~225 s. At smoke every arm scores 0: a run check."""
    from iclr24.kits.threads import torch_threads

    from .maze import noisy_controller_dataset

    progress = progress or (lambda *a, **k: None)
    n_rep = sizes(scale, smoke=1, small=3, full=5)
    steps = sizes(scale, smoke=100, small=2000, full=30000)
    names = sizes(scale, smoke=("cde", "bc"), small=("cde", "optidice", "bc", "iql"),
                  full=("cde", "optidice", "bc", "cql", "iql"))
    fractions = sizes(scale, smoke=(1.0, 0.01), small=(1.0, 0.01), full=(1.0, 0.1, 0.01))
    full_arms = sizes(scale, smoke=("cde",), small=("cde",), full=names)
    episodes, eval_seed = sizes(scale, smoke=10, small=20), 10_000 + seed
    full = noisy_controller_dataset(sizes(scale, smoke=10_000, small=200_000), seed)
    r_random, r_expert, expert_success = _references(episodes, eval_seed)
    ref = (r_random, r_expert)
    runs = [(k, f) for f in fractions for k in (full_arms if f == 1.0 else names)]
    scores = {run: [] for run in runs}
    null_scores = []
    rows, finite, done = [], True, 0
    total = n_rep * len(runs)
    low = min(fractions)
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
            sc, sr = _random_policy_score(episodes, eval_seed, seed + r, ref)  # null arm
            null_scores.append(sc)
            rows.append({"arm": "random", "fraction": low, "replicate": r, "score": sc,
                         "success_rate": sr, "transitions": 0, "fit_cpu_s": 0.0})
    at_low = {k: scores[k, low] for k in names}
    best, gain = _vs_best(at_low)
    retention = [s1 / s0 if s0 > 0 else 0.0 for s1, s0 in zip(scores["cde", low],
                                                              scores["cde", 1.0])]
    metrics = {"finite_losses": float(finite), "gain_1pct_vs_best": gain,
               "retention_cde": seed_metric(retention), "expert_success": expert_success,
               "null_gain_1pct_vs_best": seed_difference(null_scores, at_low[best]),
               "score_random_1pct": seed_metric(null_scores),
               "steps": steps, "n_replicates": n_rep}
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
    ax.axhline(np.mean(null_scores), ls="--", c="gray", label="random (null)")
    ax.set_xscale("log")
    ax.set_xlabel("% of trajectories kept")
    ax.set_ylabel("normalised score")
    ax.legend()
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"runs": rows},
        notes=f"Best baseline at {low:.0%}: {best}. Subsets keep whole trajectories in a seeded "
              "random order until the fraction of transitions is reached (official "
              "dataset_ratio). 1% of 200k steps is 7 trajectories of 300 steps (usually none "
              "ends at the goal, so CDE's is_optimal weights fall back to 1, as official). At "
              "small the baselines run at 1% only (CDE also at 100% for its retention); CQL "
              "and the 10% subset only at full (CPU budget). At smoke every arm scores 0.",
    )


@claim(
    rule=("dual_rel_error < 0.01 and mean_w_error < 0.01 and ood_ratio_max <= 0.35 "
          "and value_gain_min > 0"),
    control="optidice_ood_ratio_max > 0.35 and random_w_value_gain_min <= 0",
    paper="Sec. 4: the V-step minimises the convex dual of the regularised occupancy LP with "
          "E_D[w] = 1 at the optimum; the OOD term caps the density ratio on unseen actions at "
          "eps~ = 0.3 (bounded concentrability), where OptiDICE's ratios are unbounded.",
    paper_numbers={"ood_cap": 0.3},
    against=("SciPy's exact solution of the same convex dual; null arms: the OptiDICE E-step "
             "(zeta = 1, no OOD term), the V-step without the lambda normaliser, and random "
             "ratios w on the data's (s, a) pairs; the behaviour policy (value gain 0)"),
)
def tabular_check(scale: Scale, seed: int) -> Measurement:
    """On seeded 5 × 5 gridworlds with a 2-of-4-actions behaviour policy and 2 000 logged
    transitions, gradient descent on the official V-loss (tabular V) is compared with SciPy's
    solution of the same convex dual: ``dual_rel_error`` = (L_gd − L*)/(L_init − L*), the
    suboptimality left relative to the initial one, worst over MDPs; ``mean_w_error`` =
    max |E_D[w] − 1|. The E-step with the OOD term (ζ = 0.9) and without it (OptiDICE, ζ = 1)
    is then fitted on the V-step advantages; ``ood_ratio_max`` is the largest implied ratio on
    an unseen (s, a) pair (rule: <= ε̃ + 0.05).

    A second audit found this claim could hold partly by construction: the behaviour policy
    itself (w ≡ 1) has E_D[w] = 1, and the OOD cap and the dual match say nothing about whether
    the ratios are worth anything. So (written before the small run) the rule adds
    ``value_gain_min`` > 0: the policy the V-step's ratios define, π_w(a|s) ∝ w̄(s, a) π_b(a|s)
    (occupancy w · d^D), has a higher exact value than the behaviour policy on every MDP
    (J = (1 − γ) ρ₀ᵀ V^π in the known model; the behaviour policy's own gain is 0, so it fails
    this part). The control shows each part can fail here: (i) OptiDICE's E-step (no OOD term)
    leaves an OOD ratio > 0.35; (ii) random ratios (w = exp(N(0, 1)) per data (s, a), 5 draws per MDP) do *not*
    improve the policy on every MDP: their worst gain ``random_w_value_gain_min`` <= 0 (if any
    reweighting improved it, a gain would say nothing). ``value_gain_frac`` (the share of the
    improvement available within the support, best policy by value iteration) is reported.

    Changed after the first small run (disclosed): the control also asked that the V-step
    *without* λ miss E_D[w] = 1 by >= 0.01. At small it does not (1e-4): summing the stationarity
    conditions of the V-loss over states gives (1 − γ) + γ E_D[w] − E_D[w] = 0, so E_D[w] = 1
    at any optimum of the tabular dual with or without λ (at smoke, 400 steps, it was 0.2 only
    because unconverged). That control was mis-specified, not informative, and was removed;
    ``unnormalised_mean_w_error`` is still reported. The behaviour policy (w ≡ 1), which meets
    E_D[w] = 1 trivially, is refused by ``value_gain_min > 0`` instead."""
    import torch

    from iclr24.kits.threads import torch_threads

    from .divergence import soft_chi2
    from .tabular import (
        dual_objective,
        gridworld_mdp,
        policy_value,
        ratio_policy,
        sample_transitions,
        solve_dual,
        support_optimal_policy,
        tabular_e_step,
        tabular_v_step,
    )

    n_mdp = sizes(scale, smoke=1, small=3, full=10)
    v_steps = sizes(scale, smoke=400, small=3000, full=5000)
    e_steps = sizes(scale, smoke=400, small=2000, full=5000)
    n_random_w = 5
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
            w = fns.f_prime_inv(torch.as_tensor((adv - lam) / alpha)).numpy()  # (f')⁻¹((e−λ)/α)
            # null: the V-step without the normaliser λ (λ stays 0)
            v_un, lam_un = tabular_v_step(data, mdp, alpha=alpha, gamma=gamma, steps=v_steps,
                                          normalize=False)
            adv_un = data["r"] + gamma * v_un[data["s2"]] - v_un[data["s"]]
            w_un = fns.f_prime_inv(torch.as_tensor((adv_un - lam_un) / alpha)).numpy()
            j_b = policy_value(mdp, mdp.behaviour, gamma=gamma)
            j_w = policy_value(mdp, ratio_policy(mdp, data, w), gamma=gamma)
            j_opt = policy_value(mdp, support_optimal_policy(mdp, gamma=gamma), gamma=gamma)
            rng = np.random.default_rng([seed + k, 11])
            pair_w = np.exp(rng.standard_normal((n_random_w, mdp.n_states, mdp.n_actions)))
            j_rand = [policy_value(mdp, ratio_policy(mdp, data, pw[data["s"], data["a"]]),
                                   gamma=gamma) for pw in pair_w]
            row = {"mdp": k, "L_star": l_star, "L_gd": l_gd,
                   "dual_rel_error": (l_gd - l_star) / (l_init - l_star),
                   "mean_w": float(w.mean()), "unnormalised_mean_w": float(w_un.mean()),
                   "J_behaviour": j_b, "J_w": j_w, "J_support_optimal": j_opt,
                   "value_gain": j_w - j_b, "random_w_value_gain_min": min(j_rand) - j_b,
                   "value_gain_frac": (j_w - j_b) / (j_opt - j_b) if j_opt > j_b else np.nan}
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
        "unnormalised_mean_w_error": max(abs(r["unnormalised_mean_w"] - 1) for r in rows),
        "ood_ratio_max": max(r["cde_ood_ratio_max"] for r in rows),
        "optidice_ood_ratio_max": max(r["optidice_ood_ratio_max"] for r in rows),
        "value_gain_min": min(r["value_gain"] for r in rows),
        "random_w_value_gain_min": min(r["random_w_value_gain_min"] for r in rows),
        "value_gain_frac": float(np.mean([r["value_gain_frac"] for r in rows])),
        "cde_data_ratio_mean": float(np.mean([r["cde_data_ratio_mean"] for r in rows])),
        "ood_cap": eps, "n_mdps": n_mdp,
    }
    return Measurement(
        metrics=metrics, tables={"mdps": rows},
        notes="alpha = 0.1, gamma = 0.9 on the tabular task (the maze's alpha = 0.001 is tuned to "
              "standardised x0.1 rewards and 256-unit networks). E(s, a) = T[s, a] + u[s] + b[a]: "
              "the shared offsets make unseen actions inherit values, as a network's "
              "extrapolation does. Null arms: OptiDICE's E-step (its OOD ratios), the V-step "
              "without lambda (its E_D[w]), random ratios (their policy's value).",
    )
