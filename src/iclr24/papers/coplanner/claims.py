"""Laptop-scale reproductions of COPlanner's headline results (MBPO variant).

Every claim runs MBPO and MBPO+COPlanner (or policy rollouts and UP-MPC(−) rollouts) side by side
in the same run, on the same seeds, at equal real environment steps. Sizes: ``_config`` below;
what differs from the paper is listed in the package docstring.
"""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.reinforcement import SACConfig
from iclr24.kits.threads import torch_threads

from .envs import (
    MountainCarEnv,
    PendulumEnv,
    mountaincar_termination,
    pendulum_step,
    pendulum_termination,
)
from .mbpo import MBPO, COPlannerConfig

# per-step reward range of Pendulum-v1: pi^2 + 0.1 * 8^2 + 0.001 * 2^2 (DMC rewards lie in [0, 1])
PENDULUM_REWARD_RANGE = np.pi**2 + 6.4 + 0.004
# R + 3254.7 >= 0 for every 200-step episode (the spec's R + 1600 goes negative: returns near
# -1 800 occur early in training, and the ratio of areas then changes sign)
PENDULUM_SHIFT = 200 * PENDULUM_REWARD_RANGE


def _config(scale: Scale, *, on: bool, updates: int) -> COPlannerConfig:
    """The scaled-down MBPO(+COPlanner): UP-MPC at the official N_c = H = 5, γ = 0.97,
    α_c = 2, α_o = 1; 5 × (3 × 64) ensemble; 2 × 64 SAC; refit every ``freq`` steps with
    4 rollout starts per env step and rollout length 1 -> 3 over the run."""
    freq = sizes(scale, smoke=100, small=250)
    return COPlannerConfig(
        use_conservative=on, use_optimistic=on,
        n_members=5, model_hidden=64, model_layers=3, model_batch_size=64, model_lr=3e-3,
        max_model_epochs=sizes(scale, smoke=5, small=10),
        initial_steps=sizes(scale, smoke=200, small=250), freq_train_model=freq,
        rollouts_per_step=4, rollout_schedule=(1, 4, 1, 3), epoch_length=freq, retain_epochs=1,
        sac_updates_per_step=updates,
        sac=SACConfig(hidden=(64, 64), batch_size=128, learning_starts=0))


def _seeds(scale: Scale, seed: int, small: int) -> list[int]:
    return [seed + i for i in range(sizes(scale, smoke=1, small=small))]


def _figure(panels):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * len(panels), 3.2))
    for i, (title, xlabel, ylabel, curves) in enumerate(panels):
        ax = fig.add_subplot(1, len(panels), i + 1)
        for label, x, y in curves:
            ax.plot(x, y, marker="o", ms=3, label=label)
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@claim(
    rule="area_ratio >= 1.05",
    paper="COPlanner plugged into MBPO improves sample efficiency and final return on MuJoCo Gym "
          "and proprioceptive DMC (pendulum swingup among them); reported aggregate gain of "
          "MBPO-COPlanner over MBPO ≈ +16.9% on proprioceptive DMC and ≈ +32.8% on Gym "
          "(as recalled in the spec; not re-checked against the PDF). Ours: Pendulum-v1, ratio "
          "of the areas under the eval-return curves (R + 3254.7, the worst 200-step return, so "
          "every area is positive), COPlanner / MBPO, at equal env steps; the threshold 1.05 is "
          "the spec's.",
    paper_numbers={"area_ratio": 1.169},
    against="plain MBPO (COPlanner off) with the same seeds, model, SAC and env steps on Pendulum",
)
def pendulum_efficiency(scale: Scale, seed: int, progress=None) -> Measurement:
    steps = sizes(scale, smoke=300, small=2000)
    updates = 1
    eval_every = sizes(scale, smoke=100, small=250)
    episodes = sizes(scale, smoke=1, small=3)
    seeds = _seeds(scale, seed, 3)
    arms = {"mbpo": False, "coplanner": True}
    runs: dict[str, list] = {a: [] for a in arms}
    wall: dict[str, float] = {a: 0.0 for a in arms}
    done = 0
    with torch_threads(1):
        for s in seeds:
            for arm, on in arms.items():
                start = time.perf_counter()
                agent = MBPO(PendulumEnv(), _config(scale, on=on, updates=updates), seed=s,
                             termination_fn=pendulum_termination)
                runs[arm].append(agent.train(steps, make_eval_env=PendulumEnv,
                                             eval_every=eval_every, eval_episodes=episodes,
                                             true_dynamics=pendulum_step))
                wall[arm] += time.perf_counter() - start
                done += 1
                if progress is not None:
                    progress(done / (2 * len(seeds)), f"{arm} seed {s}")
    area = {a: [float(np.mean(np.asarray(h.eval_returns) + PENDULUM_SHIFT)) for h in runs[a]]
            for a in arms}
    final = {a: [h.eval_returns[-1] for h in runs[a]] for a in arms}
    error = {a: [float(np.mean(h.rollout_error)) for h in runs[a]] for a in arms}
    ratios = [c / m for c, m in zip(area["coplanner"], area["mbpo"])]
    metrics = {
        "area_ratio": seed_metric(ratios),
        "area_coplanner": seed_metric(area["coplanner"]),
        "area_mbpo": seed_metric(area["mbpo"]),
        "final_return_coplanner": seed_metric(final["coplanner"]),
        "final_return_mbpo": seed_metric(final["mbpo"]),
        "final_return_diff": seed_difference(final["coplanner"], final["mbpo"]),
        "model_error_coplanner": seed_metric(error["coplanner"]),
        "model_error_mbpo": seed_metric(error["mbpo"]),
        "wall_s_coplanner": wall["coplanner"],
        "wall_s_mbpo": wall["mbpo"],
    }
    x = runs["mbpo"][0].eval_steps
    fig = _figure([
        ("Pendulum-v1 eval return", "env steps", "mean return over seeds",
         [(a, x, np.mean([h.eval_returns for h in runs[a]], axis=0)) for a in arms]),
        ("model error of generated rollouts", "env steps", "mean ||ŝ' − f(s, a)||",
         [(a, runs[a][0].refit_steps, np.mean([h.rollout_error for h in runs[a]], axis=0))
          for a in arms]),
    ])
    rows = [{"arm": a, "seed": s, "area": area[a][i], "final_return": final[a][i],
             "rollout_model_error": error[a][i], "eval_returns": runs[a][i].eval_returns}
            for a in arms for i, s in enumerate(seeds)]
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{steps} env steps per arm ({_config(scale, on=True, updates=updates).initial_steps}"
              f" with the untrained policy), {updates} SAC update(s) per step, eval every "
              f"{eval_every} steps ({episodes} episode(s), deterministic policy, separate env). "
              "Area = mean of (R + 3254.7) over the evaluations. Model error: mean L2 distance "
              "between each generated rollout transition's next state and the true Pendulum "
              "successor of the same (s, a), averaged over refits. Paper: 400 k steps on DMC.")


def _probe(agent: MBPO, starts: np.ndarray, rate: float | None) -> tuple[float, float]:
    """(mean model error, mean u) of one-step rollouts from ``starts`` with the policy
    (rate None) or UP-MPC(−, rate); the planner's random stream is restored afterwards so every
    probe of a checkpoint sees the same random numbers."""
    state = agent.generator.get_state()
    batch = agent.generate_rollouts(starts, 1, conservative=rate is not None, rate=rate)
    agent.generator.set_state(state)
    true_next, _ = pendulum_step(batch.obs, batch.actions)
    err = np.linalg.norm(batch.next_obs - true_next, axis=1)
    return float(err.mean()), float(batch.uncertainty.mean())


@claim(
    rule="error_ratio < 1",
    paper="Conservative rollouts reduce the model error of the generated samples compared with "
          "plain policy rollouts (COPlanner's model-error analysis figure). Ours: at every model "
          "refit of an MBPO run on Pendulum-v1, 1 000 (small) one-step rollouts from the same real "
          "states with UP-MPC(−, α_c = 2) vs the policy, error against the true dynamics; ratio "
          "of mean errors, averaged over checkpoints, Estimate over seeds.",
    paper_numbers={},
    against=("plain policy one-step rollouts of the same model from the same real states; "
             "UP-MPC with alpha_c = 0 (key step removed) reported alongside"),
)
def rollout_model_error(scale: Scale, seed: int, progress=None) -> Measurement:
    steps = sizes(scale, smoke=400, small=1500)
    n_probe = sizes(scale, smoke=200, small=1000)
    seeds = _seeds(scale, seed, 5)
    per_seed, rows = [], []
    with torch_threads(1):
        for j, s in enumerate(seeds):
            checkpoints: list[dict] = []
            rng = np.random.default_rng(s + 777)

            def probe(agent: MBPO, real, step: int, rng=rng, checkpoints=checkpoints,
                      s=s) -> None:
                starts = real.all().obs.numpy()
                starts = starts[rng.integers(0, len(starts), n_probe)]
                e_pol, u_pol = _probe(agent, starts, None)
                e_con, u_con = _probe(agent, starts, agent.config.conservative_rate)
                e_zero, _ = _probe(agent, starts, 0.0)   # key step removed: rate α_c = 0
                # diagnostic: α_c rescaled to Pendulum's reward range (the official α_c = 2 is
                # tuned for DMC rewards in [0, 1])
                e_big, u_big = _probe(agent, starts,
                                      agent.config.conservative_rate * PENDULUM_REWARD_RANGE)
                checkpoints.append({"seed": s, "step": step, "error_policy": e_pol,
                                    "error_conservative": e_con, "error_rate0": e_zero,
                                    "error_rate_scaled": e_big, "u_policy": u_pol,
                                    "u_conservative": u_con, "u_rate_scaled": u_big})

            agent = MBPO(PendulumEnv(), _config(scale, on=False, updates=1), seed=s,
                         termination_fn=pendulum_termination)
            agent.train(steps, on_refit=probe)
            rows += checkpoints
            per_seed.append({
                "ratio": float(np.mean([c["error_conservative"] / c["error_policy"]
                                        for c in checkpoints])),
                "ratio_rate0": float(np.mean([c["error_rate0"] / c["error_policy"]
                                              for c in checkpoints])),
                "ratio_rate_scaled": float(np.mean([c["error_rate_scaled"] / c["error_policy"]
                                                    for c in checkpoints])),
                "error_policy": float(np.mean([c["error_policy"] for c in checkpoints])),
                "error_conservative": float(np.mean([c["error_conservative"]
                                                     for c in checkpoints])),
            })
            if progress is not None:
                progress((j + 1) / len(seeds), f"seed {s}")
    metrics = {
        "error_ratio": seed_metric([p["ratio"] for p in per_seed]),
        "error_ratio_rate0": seed_metric([p["ratio_rate0"] for p in per_seed]),
        "error_ratio_rate_scaled": seed_metric([p["ratio_rate_scaled"] for p in per_seed]),
        "error_policy": seed_metric([p["error_policy"] for p in per_seed]),
        "error_conservative": seed_metric([p["error_conservative"] for p in per_seed]),
        "n_checkpoints": float(len(rows) / len(seeds)),
    }
    first = [r for r in rows if r["seed"] == seeds[0]]
    fig = _figure([("one-step rollout model error", "env steps (refit)", "mean ||ŝ' − f(s, a)||",
                    [(name, [r["step"] for r in first], [r[key] for r in first])
                     for name, key in (("policy", "error_policy"),
                                       ("UP-MPC(−), α_c = 2", "error_conservative"),
                                       ("UP-MPC, α_c = 0", "error_rate0"),
                                       ("UP-MPC(−), α_c = 2 × 16.3", "error_rate_scaled"))])])
    return Measurement(
        metrics=metrics, figure=fig, tables={"checkpoints": rows},
        notes=f"{steps} env steps of plain MBPO per seed, probed at each refit with {n_probe} "
              "one-step rollouts from real states (same states and random numbers for every "
              "probe). error_ratio_rate0 is UP-MPC with α_c = 0 (reward-only planning): the "
              "key step removed, reported as an in-run control. error_ratio_rate_scaled: α_c "
              "multiplied by Pendulum's per-step reward range (16.3; DMC rewards lie in [0, 1], "
              "for which α_c = 2 was tuned), a diagnostic of whether the uncertainty term steers "
              "the choice at all; the rule reads the official α_c = 2.")


@claim(
    rule={"smoke": "final_return_diff > 0",
          "small": "final_return_diff > 0 and reach_fraction_coplanner >= reach_fraction_mbpo"},
    paper="Optimistic exploration visits high-reward, uncertain regions the baseline misses, "
          "improving return on hard-exploration / sparse tasks (e.g. DMC cartpole swingup "
          "sparse). Ours: MountainCarContinuous (+100 only at the flag): fraction of seeds whose "
          "training reaches the goal at least once, and final eval return, COPlanner vs MBPO.",
    paper_numbers={},
    against="plain MBPO (COPlanner off) with the same seeds and env steps on MountainCarContinuous",
)
def mountaincar_exploration(scale: Scale, seed: int, progress=None) -> Measurement:
    steps = sizes(scale, smoke=300, small=2000)
    seeds = _seeds(scale, seed, 3)
    arms = {"mbpo": False, "coplanner": True}
    runs: dict[str, list] = {a: [] for a in arms}
    wall: dict[str, float] = {a: 0.0 for a in arms}
    done = 0
    with torch_threads(1):
        for s in seeds:
            for arm, on in arms.items():
                start = time.perf_counter()
                agent = MBPO(MountainCarEnv(), _config(scale, on=on, updates=1), seed=s,
                             termination_fn=mountaincar_termination)
                history = agent.train(steps, make_eval_env=MountainCarEnv, eval_every=steps,
                                      eval_episodes=sizes(scale, smoke=1, small=3))
                positions = agent.real_buffer.all().obs[:, 0].numpy()
                runs[arm].append((history, positions))
                wall[arm] += time.perf_counter() - start
                done += 1
                if progress is not None:
                    progress(done / (2 * len(seeds)), f"{arm} seed {s}")
    reached = {a: [float(any(h.episode_terminated)) for h, _ in runs[a]] for a in arms}
    final = {a: [h.eval_returns[-1] for h, _ in runs[a]] for a in arms}
    max_pos = {a: [float(p.max()) for _, p in runs[a]] for a in arms}
    metrics = {
        "reach_fraction_coplanner": float(np.mean(reached["coplanner"])),
        "reach_fraction_mbpo": float(np.mean(reached["mbpo"])),
        "final_return_coplanner": seed_metric(final["coplanner"]),
        "final_return_mbpo": seed_metric(final["mbpo"]),
        "final_return_diff": seed_difference(final["coplanner"], final["mbpo"]),
        "max_position_diff": seed_difference(max_pos["coplanner"], max_pos["mbpo"]),
        "wall_s_coplanner": wall["coplanner"],
        "wall_s_mbpo": wall["mbpo"],
    }
    rows = [{"arm": a, "seed": s, "reached_goal": bool(reached[a][i]),
             "final_return": final[a][i], "max_position": max_pos[a][i]}
            for a in arms for i, s in enumerate(seeds)]
    fig = _figure([("positions visited in training", "env step", "car position",
                    [(a, np.arange(len(runs[a][0][1])), runs[a][0][1]) for a in arms])])
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{steps} env steps per arm and seed ({len(seeds)} seed(s)), 1 SAC update per "
              "step, final evaluation with the deterministic policy on a separate env. "
              "max_position_diff (how far right the car got in training) is a coverage proxy, "
              "reported, not deciding. Paper-scale exploration runs are out of reach.")
