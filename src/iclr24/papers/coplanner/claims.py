"""Laptop-scale reproductions of COPlanner's headline results (MBPO variant).

Every claim runs MBPO and MBPO+COPlanner (or policy rollouts and UP-MPC(−) rollouts) side by side
in the same run, on the same seeds, at equal real environment steps, together with the null arm
a sceptic would try first, read by the rule or the ``control``. Sizes: ``_config`` below; what
differs from the paper is listed in the package docstring.
"""

from __future__ import annotations

import time

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.reinforcement import SACConfig, evaluate_policy
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
# The return level of the sample-efficiency claim, fixed before any run of the steps-to-level
# rule: well above the untrained policy (its Pendulum-v1 returns lie near −1 100 to −1 600) and
# well below a swing-up-and-hold policy (≈ −150 to −200): a policy at −600 swings the pendulum
# up in a good share of the episodes.
PENDULUM_LEVEL = -600.0
# UP-MPC(−) with this rate ranks the candidates by their discounted uncertainty alone (the reward
# term is then < 1e-4 of the score): the positive control of ``rollout_model_error``.
UNCERTAINTY_ONLY_RATE = 1e6


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


def _steps_to_level(eval_steps: list[int], eval_returns: list[float], level: float,
                   censored: int) -> int:
    """The first evaluation step whose mean return is >= ``level`` (sample efficiency on the
    paper's terms: env steps needed to reach a return); ``censored`` if none reaches it."""
    if len(eval_steps) != len(eval_returns):
        raise ValueError(f"eval_steps and eval_returns must have the same length; got "
                         f"{len(eval_steps)} and {len(eval_returns)}")
    if not np.isfinite(level):
        raise ValueError(f"level must be finite; got {level}")
    if not np.isfinite(eval_returns).all():
        raise ValueError("eval_returns must be finite (a NaN return cannot reach a level)")
    for step, ret in zip(eval_steps, eval_returns):
        if ret >= level:
            return int(step)
    return int(censored)


@claim(
    rule="steps_to_level_diff < 0",
    control="level_reached_fraction >= 1 and untrained_return < -600",
    paper="COPlanner plugged into MBPO improves sample efficiency and final return on MuJoCo Gym "
          "and proprioceptive DMC (pendulum swingup among them); reported aggregate gain of "
          "MBPO-COPlanner over MBPO ≈ +16.9% on proprioceptive DMC and ≈ +32.8% on Gym "
          "(as recalled in the spec; not re-checked against the PDF). Ours: Pendulum-v1, env "
          "steps until the deterministic policy's eval return first reaches −600, COPlanner "
          "minus MBPO, paired over seeds.",
    paper_numbers={},
    against=("plain MBPO (COPlanner off, the mechanism switched off) with the same seeds, model, "
             "SAC and env steps on Pendulum; the untrained policy (null arm) must not reach the "
             "return level"),
)
def pendulum_efficiency(scale: Scale, seed: int, progress=None) -> Measurement:
    """Sample efficiency on the paper's terms: per seed, the number of env steps each arm needs
    before its deterministic policy's mean eval return first reaches L = −600
    (``PENDULUM_LEVEL``, fixed before running); ``steps_to_level_diff`` = COPlanner − MBPO,
    paired by seed (Student-t over seeds). An arm that never reaches L is censored at
    ``steps + eval_every`` (a lower bound on its true steps: this can only bias the difference
    towards 0 when one arm is censored, never flip its sign).

    Rule: COPlanner needs fewer steps (the whole interval below 0). It fails when COPlanner
    needs more steps on every seed's evidence. Control: (i) in every seed at least one arm
    reaches L (``level_reached_fraction`` = 1), else the step count was not measured there and
    a tie at the censoring value would read as "no gain"; (ii) the null arm, the untrained
    policy evaluated on the same episodes, is below L (the level measures learning).

    Rule before the audit: ``area_ratio >= 1.05`` on the mean of R + 3 254.7 over evaluations,
    whose outcome depends on that arbitrary shift; the area (as a plain difference of mean eval
    returns, shift-free) and the final return are now reported, not deciding.

    Scaled down: 3 000 env steps (250 with the untrained policy), 1 SAC update per step, eval
    every 250 steps with 5 episodes, 3 seeds (paper: 400 k steps on DMC, 10 updates per step)."""
    steps = sizes(scale, smoke=300, small=3000)
    updates = 1
    eval_every = sizes(scale, smoke=100, small=250)
    episodes = sizes(scale, smoke=1, small=5)
    seeds = _seeds(scale, seed, 3)
    arms = {"mbpo": False, "coplanner": True}
    runs: dict[str, list] = {a: [] for a in arms}
    wall: dict[str, float] = {a: 0.0 for a in arms}
    untrained: list[float] = []
    done = 0
    with torch_threads(1):
        for s in seeds:
            for arm, on in arms.items():
                start = time.perf_counter()
                agent = MBPO(PendulumEnv(), _config(scale, on=on, updates=updates), seed=s,
                             termination_fn=pendulum_termination)
                if arm == "mbpo":  # null arm: the untrained policy (shared by both arms)
                    untrained.append(float(np.mean(evaluate_policy(
                        lambda o, agent=agent: agent.agent.act(o, deterministic=True),
                        PendulumEnv, episodes=episodes, seed=10_000 + 1_000 * s))))
                runs[arm].append(agent.train(steps, make_eval_env=PendulumEnv,
                                             eval_every=eval_every, eval_episodes=episodes,
                                             true_dynamics=pendulum_step))
                wall[arm] += time.perf_counter() - start
                done += 1
                if progress is not None:
                    progress(done / (2 * len(seeds)), f"{arm} seed {s}")
    censored = steps + eval_every
    reach = {a: [_steps_to_level(h.eval_steps, h.eval_returns, PENDULUM_LEVEL, censored)
                 for h in runs[a]] for a in arms}
    reached_any = [float(min(reach["mbpo"][i], reach["coplanner"][i]) < censored)
                   for i in range(len(seeds))]
    mean_ret = {a: [float(np.mean(h.eval_returns)) for h in runs[a]] for a in arms}
    final = {a: [h.eval_returns[-1] for h in runs[a]] for a in arms}
    error = {a: [float(np.mean(h.rollout_error)) for h in runs[a]] for a in arms}
    metrics = {
        # Δ = steps_to_level(COPlanner) − steps_to_level(MBPO), paired by seed
        "steps_to_level_diff": seed_difference(reach["coplanner"], reach["mbpo"]),
        "steps_to_level_coplanner": seed_metric(reach["coplanner"]),
        "steps_to_level_mbpo": seed_metric(reach["mbpo"]),
        "level_reached_fraction": float(np.mean(reached_any)),
        "level_reached_fraction_coplanner": float(np.mean([r < censored
                                                           for r in reach["coplanner"]])),
        "level_reached_fraction_mbpo": float(np.mean([r < censored for r in reach["mbpo"]])),
        "untrained_return": seed_metric(untrained),
        "mean_eval_return_diff": seed_difference(mean_ret["coplanner"], mean_ret["mbpo"]),
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
         [(a, x, np.mean([h.eval_returns for h in runs[a]], axis=0)) for a in arms]
         + [(f"level {PENDULUM_LEVEL:.0f}", [x[0], x[-1]], [PENDULUM_LEVEL] * 2)]),
        ("model error of generated rollouts", "env steps", "mean ||ŝ' − f(s, a)||",
         [(a, runs[a][0].refit_steps, np.mean([h.rollout_error for h in runs[a]], axis=0))
          for a in arms]),
    ])
    rows = [{"arm": a, "seed": s, "steps_to_level": reach[a][i], "mean_eval_return":
             mean_ret[a][i], "final_return": final[a][i], "rollout_model_error": error[a][i],
             "untrained_return": untrained[i], "eval_returns": runs[a][i].eval_returns}
            for a in arms for i, s in enumerate(seeds)]
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{steps} env steps per arm ({_config(scale, on=True, updates=updates).initial_steps}"
              f" with the untrained policy), {updates} SAC update(s) per step, eval every "
              f"{eval_every} steps ({episodes} episode(s), deterministic policy, separate env). "
              f"Steps to level: first eval with mean return >= {PENDULUM_LEVEL:.0f}; never "
              f"reached = {censored} (censored). Model error: mean L2 distance between each "
              "generated rollout transition's next state and the true Pendulum successor of the "
              "same (s, a), averaged over refits. Paper: 400 k steps on DMC.")


def _probe(agent: MBPO, starts: np.ndarray, rate: float | None) -> tuple[float, float]:
    """(mean model error, mean u) of one-step rollouts from ``starts`` with the policy
    (rate None) or UP-MPC(−, rate); the planner's random stream is restored afterwards so every
    probe of a checkpoint sees the same random numbers."""
    state = agent.generator.get_state()
    batch = agent.generate_rollouts(starts, 1, conservative=rate is not None, rate=rate)
    agent.generator.set_state(state)
    true_next, _ = pendulum_step(batch.obs, batch.actions)
    err = np.linalg.norm(batch.next_obs - true_next, axis=1)   # ||ŝ' − f(s, a)||₂
    return float(err.mean()), float(batch.uncertainty.mean())


@claim(
    rule="error_ratio < 1 and error_vs_rate0 < 1",
    control="uncertainty_only_vs_rate0 < 1",
    paper="Conservative rollouts reduce the model error of the generated samples compared with "
          "plain policy rollouts (COPlanner's model-error analysis figure), because the "
          "uncertainty penalty steers rollouts away from unreliable regions. Ours: at every "
          "model refit of an MBPO run on Pendulum-v1, one-step rollouts from the same real "
          "states with UP-MPC(−, α_c = 2), UP-MPC with α_c = 0 and the policy; error against "
          "the true dynamics; ratios of mean errors, averaged over checkpoints, Estimate over "
          "seeds.",
    paper_numbers={},
    against=("plain policy one-step rollouts of the same model from the same real states "
             "(MBPO), and UP-MPC with alpha_c = 0 (reward-only planning: the uncertainty term "
             "switched off, the null arm); positive control: candidates ranked by uncertainty "
             "alone"),
)
def rollout_model_error(scale: Scale, seed: int, progress=None) -> Measurement:
    """At each refit of a plain MBPO run, the same ``n_probe`` real start states and the same
    random numbers are rolled one step with: the policy; UP-MPC(−, α_c = 2) (official); UP-MPC
    with α_c = 0 (the null arm: reward-only planning, the uncertainty term switched off);
    UP-MPC(−) with α_c = 1e6 (candidates ranked by uncertainty alone); UP-MPC(−) with
    α_c = 2 × 16.3 (diagnostic: α_c rescaled from DMC's reward range [0, 1] to Pendulum's).
    Error = ||ŝ' − f(s, a)||₂ against the true dynamics f.

    Rule: conservative rollouts have a lower error than policy rollouts (``error_ratio`` =
    e(α_c = 2) / e(policy) < 1) *and* than reward-only planning from the same candidates
    (``error_vs_rate0`` = e(α_c = 2) / e(α_c = 0) < 1): the paper attributes the reduction to
    the uncertainty penalty, and the audit found e(α_c = 2) ≈ e(α_c = 0) at smoke (0.95 vs
    0.95), i.e. any gain over the policy came from reward-based planning. The null arm in the
    method's place (α_c = 0) gives error_vs_rate0 = 1 exactly: not holds. Control (positive):
    ranking the same candidates by uncertainty alone lowers the error relative to reward-only
    planning (``uncertainty_only_vs_rate0`` < 1); if even that does not, the ensemble's u says
    nothing about the true error on this test bed and no α_c could show the effect:
    inconclusive, "the test bed cannot tell".

    Rule before the audit: ``error_ratio < 1`` alone (α_c = 0 reported, not read). Scaled down:
    1 500 env steps of MBPO-lite per seed, 5 seeds, 1 000 probe starts per checkpoint."""
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
                rate = agent.config.conservative_rate
                e_pol, u_pol = _probe(agent, starts, None)
                e_con, u_con = _probe(agent, starts, rate)     # J = Σγ^i r_i − α_c Σγ^i u_i
                e_zero, u_zero = _probe(agent, starts, 0.0)    # null arm: J = Σγ^i r_i
                e_u, u_u = _probe(agent, starts, UNCERTAINTY_ONLY_RATE)  # ≈ argmin_c Σγ^i u_i
                # diagnostic: α_c rescaled to Pendulum's reward range (the official α_c = 2 is
                # tuned for DMC rewards in [0, 1])
                e_big, u_big = _probe(agent, starts, rate * PENDULUM_REWARD_RANGE)
                checkpoints.append({"seed": s, "step": step, "error_policy": e_pol,
                                    "error_conservative": e_con, "error_rate0": e_zero,
                                    "error_uncertainty_only": e_u,
                                    "error_rate_scaled": e_big, "u_policy": u_pol,
                                    "u_conservative": u_con, "u_rate0": u_zero,
                                    "u_uncertainty_only": u_u, "u_rate_scaled": u_big})

            agent = MBPO(PendulumEnv(), _config(scale, on=False, updates=1), seed=s,
                         termination_fn=pendulum_termination)
            agent.train(steps, on_refit=probe)
            rows += checkpoints

            def mean_ratio(num: str, den: str, checkpoints=checkpoints) -> float:
                return float(np.mean([c[num] / c[den] for c in checkpoints]))

            per_seed.append({
                "ratio": mean_ratio("error_conservative", "error_policy"),
                "vs_rate0": mean_ratio("error_conservative", "error_rate0"),
                "uonly_vs_rate0": mean_ratio("error_uncertainty_only", "error_rate0"),
                "ratio_rate0": mean_ratio("error_rate0", "error_policy"),
                "ratio_uonly": mean_ratio("error_uncertainty_only", "error_policy"),
                "ratio_rate_scaled": mean_ratio("error_rate_scaled", "error_policy"),
                "u_vs_rate0": mean_ratio("u_conservative", "u_rate0"),
                "error_policy": float(np.mean([c["error_policy"] for c in checkpoints])),
                "error_conservative": float(np.mean([c["error_conservative"]
                                                     for c in checkpoints])),
                "error_rate0": float(np.mean([c["error_rate0"] for c in checkpoints])),
            })
            if progress is not None:
                progress((j + 1) / len(seeds), f"seed {s}")

    def over_seeds(key: str):
        return seed_metric([p[key] for p in per_seed])

    metrics = {
        "error_ratio": over_seeds("ratio"),
        "error_vs_rate0": over_seeds("vs_rate0"),
        "uncertainty_only_vs_rate0": over_seeds("uonly_vs_rate0"),
        "error_ratio_rate0": over_seeds("ratio_rate0"),
        "error_ratio_uncertainty_only": over_seeds("ratio_uonly"),
        "error_ratio_rate_scaled": over_seeds("ratio_rate_scaled"),
        "uncertainty_vs_rate0": over_seeds("u_vs_rate0"),
        "error_policy": over_seeds("error_policy"),
        "error_conservative": over_seeds("error_conservative"),
        "error_rate0": over_seeds("error_rate0"),
        "n_checkpoints": float(len(rows) / len(seeds)),
    }
    first = [r for r in rows if r["seed"] == seeds[0]]
    fig = _figure([("one-step rollout model error", "env steps (refit)", "mean ||ŝ' − f(s, a)||",
                    [(name, [r["step"] for r in first], [r[key] for r in first])
                     for name, key in (("policy", "error_policy"),
                                       ("UP-MPC(−), α_c = 2", "error_conservative"),
                                       ("UP-MPC, α_c = 0 (null)", "error_rate0"),
                                       ("uncertainty only", "error_uncertainty_only"),
                                       ("UP-MPC(−), α_c = 2 × 16.3", "error_rate_scaled"))])])
    return Measurement(
        metrics=metrics, figure=fig, tables={"checkpoints": rows},
        notes=f"{steps} env steps of plain MBPO per seed ({len(seeds)} seed(s)), probed at each "
              f"refit with {n_probe} one-step rollouts from real states (same states and random "
              "numbers for every probe). error_vs_rate0: UP-MPC(−, α_c = 2) over UP-MPC with "
              "α_c = 0 (the null arm); uncertainty_only_vs_rate0: candidates ranked by u alone "
              "over α_c = 0 (positive control); uncertainty_vs_rate0: the mean u of the chosen "
              "actions, α_c = 2 over α_c = 0 (does the penalty change the choice at all?). "
              "error_ratio_rate_scaled: α_c multiplied by Pendulum's per-step reward range "
              "(16.3; DMC rewards lie in [0, 1], for which α_c = 2 was tuned), a diagnostic; "
              "the rule reads the official α_c = 2.")


def _goal_fraction(returns: list[float]) -> float:
    """Fraction of MountainCarContinuous episodes that reached the flag: +100 at the goal and
    an action cost 0.1 a² <= 0.1 per step over <= 999 steps, so a return > 0 <=> the goal."""
    return float(np.mean(np.asarray(returns) > 0))


@claim(
    rule="final_return_diff > 0",
    control="eval_goal_fraction_coplanner + eval_goal_fraction_mbpo > 0",
    paper="Optimistic exploration visits high-reward, uncertain regions the baseline misses, "
          "improving return on hard-exploration / sparse tasks (e.g. DMC cartpole swingup "
          "sparse). Ours: MountainCarContinuous (+100 only at the flag): final eval return of "
          "COPlanner vs MBPO at equal env steps, paired over seeds; the goal must be reached in "
          "the evaluation for a return difference to be about exploration.",
    paper_numbers={},
    against=("plain MBPO (COPlanner off: the mechanism switched off) with the same seeds and "
             "env steps on MountainCarContinuous; control: the goal is reached in some final "
             "evaluation, else both returns are action-cost noise"),
)
def mountaincar_exploration(scale: Scale, seed: int, progress=None) -> Measurement:
    """Per seed, MBPO and MBPO+COPlanner train for the same env steps on MountainCarContinuous;
    the deterministic policy is then evaluated on ``episodes`` episodes (separate env).

    Rule (the paper's measure, return): ``final_return_diff`` = COPlanner − MBPO final eval
    return > 0, paired by seed. Control: at least one final evaluation episode of either arm
    reaches the flag (``eval_goal_fraction_*``: return > 0 <=> goal). Without a goal reach
    both returns are −0.1 Σ a², a difference in action cost, not exploration: the audit found
    exactly this (no seed reached the goal; differences +0.29 … −0.14 decided the verdict),
    so that case is now *inconclusive*, "the test bed cannot tell". The null arm (MBPO in the
    method's place) gives a difference of exactly 0: not holds.

    Rule before the audit: ``final_return_diff > 0 and reach_fraction_coplanner >=
    reach_fraction_mbpo`` with no control (0 >= 0 passed). The fraction of seeds whose training
    reached the goal and the highest position reached in training (coverage proxies) are
    reported, not deciding.

    Scaled down: 4 000 env steps (4 training episodes of 999 steps; the spec's 20 000 steps x
    5 seeds do not fit 5 minutes), 3 seeds, 1 SAC update per step, 3 eval episodes."""
    steps = sizes(scale, smoke=300, small=4000)
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
                agent = MBPO(MountainCarEnv(), _config(scale, on=on, updates=1), seed=s,
                             termination_fn=mountaincar_termination)
                history = agent.train(steps)
                returns = evaluate_policy(lambda o, agent=agent: agent.agent.act(
                    o, deterministic=True), MountainCarEnv, episodes=episodes,
                    seed=10_000 + 1_000 * s)
                positions = agent.real_buffer.all().obs[:, 0].numpy()
                runs[arm].append((history, positions, returns))
                wall[arm] += time.perf_counter() - start
                done += 1
                if progress is not None:
                    progress(done / (2 * len(seeds)), f"{arm} seed {s}")
    reached = {a: [float(any(h.episode_terminated)) for h, _, _ in runs[a]] for a in arms}
    final = {a: [float(np.mean(r)) for _, _, r in runs[a]] for a in arms}
    goal = {a: _goal_fraction([x for _, _, r in runs[a] for x in r]) for a in arms}
    max_pos = {a: [float(p.max()) for _, p, _ in runs[a]] for a in arms}
    metrics = {
        "final_return_diff": seed_difference(final["coplanner"], final["mbpo"]),
        "final_return_coplanner": seed_metric(final["coplanner"]),
        "final_return_mbpo": seed_metric(final["mbpo"]),
        "eval_goal_fraction_coplanner": goal["coplanner"],
        "eval_goal_fraction_mbpo": goal["mbpo"],
        "reach_fraction_coplanner": float(np.mean(reached["coplanner"])),
        "reach_fraction_mbpo": float(np.mean(reached["mbpo"])),
        "max_position_diff": seed_difference(max_pos["coplanner"], max_pos["mbpo"]),
        "wall_s_coplanner": wall["coplanner"],
        "wall_s_mbpo": wall["mbpo"],
    }
    rows = [{"arm": a, "seed": s, "reached_goal_in_training": bool(reached[a][i]),
             "final_return": final[a][i], "eval_returns": runs[a][i][2],
             "max_position": max_pos[a][i]}
            for a in arms for i, s in enumerate(seeds)]
    fig = _figure([("positions visited in training", "env step", "car position",
                    [(a, np.arange(len(runs[a][0][1])), runs[a][0][1]) for a in arms])])
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=f"{steps} env steps per arm and seed ({len(seeds)} seed(s)), 1 SAC update per "
              f"step, final evaluation: {episodes} episode(s) of the deterministic policy on a "
              "separate env. eval_goal_fraction: share of those episodes that reached the flag. "
              "reach_fraction (seeds whose training reached the flag) and max_position_diff "
              "(how far right the car got in training) are coverage proxies, reported, not "
              "deciding. Paper-scale exploration runs are out of reach.")
