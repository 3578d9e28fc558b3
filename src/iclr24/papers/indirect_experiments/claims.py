"""indirect_experiments claims: DIA against uniform instrument assignment (with the asymptotically
optimal design as positive control and a random-policy null arm), and the variance of the
influence-function gradient against naive REINFORCE (with a shuffled-influence null arm and the
closed-form MSE gradient as positive control).

The official fixed "oracle" (0.95/0.05) is not optimal on this domain (closed-form n MSE at
m = 10: uniform 21.8, that policy 18.8, the optimum 5.3 at 0.60 first / 0.40 last instrument),
so DIA is reported against the optimum computed from the asymptotic 2SLS variance
(``asymptotics``), and the fixed policy is reported under the name ``official_fixed``.
"""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, evaluate_rule, seed_metric, sizes
from iclr24.kits.replications import replicate

from .experiments import DESIGN_ARMS, design_replication, gradient_draws


def _adaptive_control(metrics) -> bool | None:
    """optimal_ratio < 1 (positive control) and not holds(random_ratio < 1) (null arm)."""
    # the null arm judged as DIA is must not pass; an interval across 1 is "not holds" (the
    # expression `not (random_ratio < 1)` would be unknown there)
    null_passes = evaluate_rule("random_ratio < 1", metrics) is True
    positive = evaluate_rule("optimal_ratio < 1", metrics)
    return None if positive is None else bool(positive and not null_passes)


@claim(
    rule="mse_ratio < 1",
    control=_adaptive_control,
    paper="Fig. 3 (synthetic IV): adaptive instrument design (DIA, influence gradients) "
          "substantially lowers the MSE of the 2SLS estimate relative to uniform instrument "
          "assignment and approaches the oracle policy; gains grow with the number of "
          "instruments.",
    paper_numbers={"mse_ratio": 0.5},
    against=("uniform instrument assignment with the same sample budget and seeds (baseline); "
             "the policy minimising the closed-form asymptotic MSE (positive control, and the "
             "reference DIA is reported against); a Dirichlet(1) random policy each round (null "
             "arm); the official fixed 0.95/0.05 policy reported beside"),
    resources={"cpus": 1},
)
def adaptive_vs_uniform(scale: Scale, seed: int, progress=None) -> Measurement:
    """Synthetic IV with m = 10 instruments, 1000 samples in 5 rounds (200 uniform first).
    ``mse_ratio`` = mean squared error of DIA / that of uniform over seeds (32; 2 at smoke),
    paired bootstrap interval; likewise ``optimal_ratio``, ``random_ratio`` and
    ``official_fixed_ratio`` for the reference designs, and ``dia_vs_optimal`` = DIA's MSE / the
    optimal design's (reported, not judged: how close DIA gets to the best fixed design). DIA
    runs 200 Adam steps per round (1000 in the paper; 20 at smoke) with 30 bootstrap replicas
    (10 at smoke).

    Rule (unchanged, the paper's): DIA's MSE below uniform's, whole interval. Control (written
    before running this version): the test bed must be able to show a gain, i.e. the design
    minimising the closed-form asymptotic MSE of the final data (given the uniform first round)
    beats uniform (``optimal_ratio < 1``); and the null arm a sceptic would try first, a
    non-uniform policy chosen without the data (Dirichlet(1), fresh each round, same budget and
    seeds), must not pass the rule (not holds ``random_ratio < 1``). Otherwise a gain over
    uniform would only say that uniform is a poor design, and the test bed cannot tell.

    Size: a first small run with 16 seeds (91 s CPU) gave mse_ratio 0.30 [0.18, 0.71], but the
    positive control optimal_ratio 0.41 [0.14, 1.04] straddled 1 (squared errors are
    heavy-tailed; closed form: 6.19 / 21.83 = 0.28), so the verdict was inconclusive; the seeds
    were raised to 32 (about 185 s CPU), the rule and control unchanged."""
    progress = progress or (lambda *a, **k: None)
    seeds = sizes(scale, smoke=2, small=32)
    steps = sizes(scale, smoke=20, small=200)
    n_boot = sizes(scale, smoke=10, small=30)
    reps = replicate(design_replication, seeds, seed, 10, steps, n_boot)
    progress(1.0, f"{seeds} seeds")
    col = {k: np.array([r[k] for r in reps]) for k in DESIGN_ARMS}

    def ratio(a, b):
        return float(np.mean(a) / np.mean(b))

    def paired(a, b):
        return Estimate.bootstrap((col[a], col[b]), ratio, paired=True, seed=seed)

    metrics = {
        "mse_ratio": paired("dia", "uniform"),
        "optimal_ratio": paired("optimal", "uniform"),
        "random_ratio": paired("random", "uniform"),
        "official_fixed_ratio": paired("official_fixed", "uniform"),
        "dia_vs_optimal": paired("dia", "optimal"),
        **{f"mse_{k}": float(col[k].mean()) for k in DESIGN_ARMS},
    }
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4))
    ax = fig.add_subplot()
    n = [200, 400, 600, 800, 1000]
    for name in DESIGN_ARMS:
        ax.semilogy(n, np.mean([r[f"{name}_curve"] for r in reps], axis=0), "o-", label=name)
    ax.set_xlabel("samples collected")
    ax.set_ylabel("MSE of 2SLS (mean over seeds)")
    ax.legend()
    rows = [{"seed": i, **{k: r[k] for k in DESIGN_ARMS},
             "dia_policy_first": r["dia_final_policy"][0],
             "dia_policy_last": r["dia_final_policy"][-1],
             "optimal_policy_first": r["optimal_final_policy"][0],
             "optimal_policy_last": r["optimal_final_policy"][-1]} for i, r in enumerate(reps)]
    return Measurement(metrics=metrics, figure=fig, tables={"seeds": rows},
                       notes=f"{seeds} seeds, {steps} Adam steps per round, {n_boot} replicas. "
                             "'optimal' = the closed-form asymptotic optimum for rounds 2-5 "
                             "given the uniform first round; 'official_fixed' = the official "
                             "code's 0.95/0.05 'oracle', not optimal on this domain.")


def _gradient_control(metrics) -> bool | None:
    """cosine_influence > 0.5 (positive control) and not holds(null_noise_ratio > 10)."""
    # an interval across 10 is "not holds" for the null (see _adaptive_control)
    null_passes = evaluate_rule("null_noise_ratio > 10", metrics) is True
    positive = evaluate_rule("cosine_influence > 0.5", metrics)
    return None if positive is None else bool(positive and not null_passes)


@claim(
    rule="noise_ratio > 10",
    control=_gradient_control,
    paper="Sec. 5 / Fig. 4: the influence-function estimate of the policy gradient has far lower "
          "variance than the naive score-function (REINFORCE) estimate of the MSE gradient.",
    paper_numbers={},
    against=("naive REINFORCE (score-function) gradient of the MSE on the same data set at the "
             "same uniform logits (baseline); the influence gradient with its influences "
             "shuffled across samples (null arm); the gradient of the closed-form asymptotic "
             "MSE (positive control on the mean direction)"),
    resources={"cpus": 1},
)
def gradient_variance(scale: Scale, seed: int, progress=None) -> Measurement:
    """Data sets of n = 400 uniform samples, m = 10 (15 seeds; 1 at smoke); on each, 200
    gradient draws (20 at smoke) of each estimator at uniform logits, 30 bootstrap replicas each
    (10 at smoke). The estimators differ in scale, so the decision reads the relative noise
    tr Cov(g) / ||E g||^2: ``noise_ratio`` = REINFORCE's over the influence estimator's
    (official ``get_inf`` form), per data set, mean over data sets with a t interval.

    Rule (unchanged): noise_ratio > 10. Control (written before running this version): a
    low-noise estimator only matters if it estimates the right thing, so (positive control) the
    mean influence gradient must point along the gradient of the closed-form asymptotic MSE of
    pi_eff, ``cosine_influence > 0.5`` (within 60 degrees); and the null arm, the same estimator
    with each replica's influences shuffled across its samples (no longer tied to their
    instruments), must not pass the rule (not holds ``null_noise_ratio > 10``, REINFORCE's
    relative noise over the null's). Reported: the cosines of the leave-one-out form, of
    REINFORCE and of the null, and the raw trace ratio.

    Size: a first small run with 5 data sets (26 s CPU) gave noise_ratio 43.2 [4.0, 82.4]
    (the per-data-set ratio is heavy-tailed), straddling 10; the number of data sets was raised
    to 15 (about 80 s CPU), the rule, control and aggregation unchanged."""
    progress = progress or (lambda *a, **k: None)
    n_data = sizes(scale, smoke=1, small=15)
    draws = sizes(scale, smoke=20, small=200)
    n_boot = sizes(scale, smoke=10, small=30)
    rngs = np.random.default_rng(seed).spawn(n_data)

    def rel_noise(G):
        return float(np.trace(np.cov(G.T)) / (G.mean(axis=0) ** 2).sum())  # tr Cov / |E g|^2

    def cosine(G, truth):
        g = G.mean(axis=0)
        return float(g @ truth / (np.linalg.norm(g) * np.linalg.norm(truth)))

    per: dict[str, list[float]] = {k: [] for k in (
        "noise_ratio", "null_noise_ratio", "noise_ratio_loo", "trace_ratio", "cosine_influence",
        "cosine_influence_loo", "cosine_reinforce", "cosine_shuffled", "rel_noise_influence",
        "rel_noise_reinforce")}
    for i, rng in enumerate(rngs):
        g = gradient_draws(rng, 10, 400, draws, n_boot)
        per["noise_ratio"].append(rel_noise(g["reinforce"]) / rel_noise(g["influence"]))
        per["null_noise_ratio"].append(rel_noise(g["reinforce"]) / rel_noise(g["shuffled"]))
        per["noise_ratio_loo"].append(rel_noise(g["reinforce"]) / rel_noise(g["influence_loo"]))
        per["trace_ratio"].append(float(np.trace(np.cov(g["reinforce"].T))
                                        / np.trace(np.cov(g["influence"].T))))
        per["rel_noise_influence"].append(rel_noise(g["influence"]))
        per["rel_noise_reinforce"].append(rel_noise(g["reinforce"]))
        for name in ("influence", "influence_loo", "reinforce", "shuffled"):
            per[f"cosine_{name}"].append(cosine(g[name], g["truth"]))
        progress((i + 1) / n_data, f"data set {i + 1}/{n_data}")
    metrics = {k: seed_metric(v) for k, v in per.items()}
    return Measurement(metrics=metrics, tables={"data_sets": [
        {"data_set": i, **{k: v[i] for k, v in per.items()}} for i in range(n_data)]},
        notes=f"{n_data} data sets x {draws} draws, {n_boot} replicas per draw; cosines are "
              "against the gradient of the closed-form asymptotic MSE of pi_eff.")
