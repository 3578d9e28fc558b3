"""FedImpro claims: accuracy under label skew, gradient dissimilarity, the privacy-noise knob.

The federated task (all three claims). The first test bed (10 clients, Dirichlet alpha = 0.1,
all clients every round, 1 local epoch, 100 rounds) sat at its ceiling: FedAvg 0.95 on digits,
so no method could show the paper's gains. The task below was chosen *before FedImpro was run
on it*, by the criterion "FedAvg's accuracy (mean of the last 5 rounds, mean over seeds 0-2)
stays at least 10 points below centralised training", the centralised reference being the same
MLP trained by SGD (same lr and batch) on the union of the clients' data for as many epochs as
the federated run makes in total (rounds x local epochs x participation = 90). Candidates, in
the order tried (FedAvg vs centralised, seeds 0-2):

- 10 clients, alpha 0.05, all per round, 5 local epochs, 30 rounds: 0.922 vs 0.974 (gap 0.052);
- 20 clients, alpha 0.1, 5 of 20 per round, 5 epochs, 50 rounds: 0.942 vs 0.972 (gap 0.030);
- 10 clients, alpha 0.05, 3 of 10 per round, 5 epochs, 40 rounds: 0.888 vs 0.971 (gap 0.083);
- 10 clients, alpha 0.05, 2 of 10 per round, 5 epochs, 40 rounds: 0.888 vs 0.971 (gap 0.083);
- (a class-conditional feature shift between clients made digits *easier*: 0.984 vs 0.996);
- **chosen**: 10 clients, alpha 0.05, 3 of 10 per round, 10 local epochs, 30 rounds:
  FedAvg **0.850** (0.885 / 0.786 / 0.877) vs centralised **0.973** (0.976 / 0.972 / 0.972),
  gap **0.124**.

Strong label skew, partial participation and many local steps are the regime of the paper's
harder settings (alpha = 0.05, 10 or 100 clients, several local epochs). Each claim run reports
the centralised accuracy beside FedAvg's, so the criterion is re-measured every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes
from iclr24.kits.statistics import t_half_width as _mean_ci
from iclr24.kits.threads import torch_threads

_NUM_CLIENTS = 10
_MIN_PARTITION = 5
_ALPHA = 0.05  # the skewed arm of every claim
_PER_ROUND = 3  # clients sampled per round
_LOCAL_EPOCHS = 10


def _fmt(mean: float, half: float | None, digits: int = 4) -> str:
    return f"{mean:.{digits}f}" if half is None else f"{mean:.{digits}f} ± {half:.{digits}f}"


def _tag(x: float) -> str:
    return f"{x:g}".replace(".", "p")


def _setup(seed: int, alpha: float):
    from iclr24.kits.federated import derive_seed, digits_split, dirichlet_label_partition

    data = digits_split(seed=seed)
    parts = dirichlet_label_partition(data.y_train.numpy(), _NUM_CLIENTS, alpha,
                                      min_partition_size=_MIN_PARTITION,
                                      seed=derive_seed(seed, "partition"))
    return data, parts


def _config(rounds: int):
    from .simulation import FedImproConfig

    return FedImproConfig(epochs=_LOCAL_EPOCHS, weight_max_rounds=rounds)


def _central_epochs(rounds: int) -> int:
    return max(1, round(rounds * _LOCAL_EPOCHS * _PER_ROUND / _NUM_CLIENTS))


@claim(
    rule={"smoke": "diff_fedimpro_fedavg_a0p05 >= -0.05",
          "small": "diff_fedimpro_fedavg_a0p05 > 0"},
    paper="Tables 1-2: FedImpro reaches higher test accuracy than FedAvg, FedProx, SCAFFOLD and "
          "FedNova on CIFAR-10/FMNIST/SVHN/CIFAR-100 under Dirichlet label skew (alpha 0.1 and "
          "0.05; values not retrieved). Spec expectation: FedImpro - FedAvg > 0 under strong "
          "skew (roughly +1 to +5 points), shrinking toward 0 near IID (alpha = 100).",
    against=("FedAvg (and FedProx at small) with the same seeds, partitions and client samples; "
             "centralised training as ceiling"),
)
def label_skew_accuracy(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Mean test accuracy over the last 5 rounds on the module's federated task (sklearn digits,
    10 Dirichlet-split clients, 3 sampled per round, 10 local epochs; MLP 64-128-128-10 cut after
    the first layer, SGD lr 0.05, batch 32): FedImpro vs FedAvg (and FedProx, mu = 0.01) at
    alpha = 0.05, same seeds, partitions, client samples and data order; alpha = 100 beside it.
    Centralised training on the union of the clients' data is reported as the ceiling."""
    from .simulation import simulate, train_centralised

    rounds = sizes(scale, smoke=8, small=30)
    seeds_for = {_ALPHA: sizes(scale, smoke=1, small=5), 100.0: sizes(scale, smoke=0, small=3)}
    alphas = [a for a, n in seeds_for.items() if n > 0]
    all_algs = sizes(scale, smoke=("fedavg", "fedimpro"),
                     small=("fedavg", "fedprox", "fedimpro"))

    def algs_for(a: float) -> tuple[str, ...]:  # FedProx only under skew (budget)
        return all_algs if a < 1.0 else ("fedavg", "fedimpro")

    cfg = _config(rounds)
    acc: dict[tuple[str, float], list[float]] = {}
    central: list[float] = []
    curves = {}
    total = sum(seeds_for[a] * (len(algs_for(a)) + int(a == _ALPHA)) for a in alphas)
    done = 0
    with torch_threads(1):
        for a in alphas:
            for s in range(seeds_for[a]):
                data, parts = _setup(seed + s, a)
                for alg in algs_for(a):
                    h = simulate(alg, data, parts, rounds, seed=seed + s, config=cfg,
                                 clients_per_round=_PER_ROUND)
                    acc.setdefault((alg, a), []).append(h.last_mean("accuracy", 5))
                    if s == 0 and a == _ALPHA:
                        curves[alg] = (h.column("round"), h.column("accuracy"))
                    done += 1
                    progress(done / total, f"alpha={a} seed={seed + s} {alg}")
                if a == _ALPHA:
                    central.append(train_centralised(data, _central_epochs(rounds),
                                                     seed=seed + s, config=cfg))
                    done += 1
    metrics: dict[str, object] = {"acc_centralised": seed_metric(central)}
    rows = []
    for a in alphas:
        t = _tag(a)
        for alg in algs_for(a):
            metrics[f"acc_{alg}_a{t}"] = seed_metric(acc[(alg, a)])
        row = {"alpha": a, "seeds": seeds_for[a], "rounds": rounds,
               **{f"acc_{alg}": _fmt(*_mean_ci(acc[(alg, a)])) for alg in algs_for(a)}}
        if a == _ALPHA:
            row["acc_centralised"] = _fmt(*_mean_ci(central))
        for base in [b for b in algs_for(a) if b != "fedimpro"]:
            d = np.asarray(acc[("fedimpro", a)]) - np.asarray(acc[(base, a)])
            # same seeds, partitions, client samples and data order: a paired t interval
            metrics[f"diff_fedimpro_{base}_a{t}"] = seed_difference(acc[("fedimpro", a)],
                                                                    acc[(base, a)])
            row[f"fedimpro_minus_{base}"] = _fmt(*_mean_ci(d))
        rows.append(row)
    metrics["gap_centralised_fedavg"] = seed_difference(central, acc[("fedavg", _ALPHA)])
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot(1, 1, 1)
    for alg, (x, y) in curves.items():
        ax.plot(x, y, label=alg)
    ax.axhline(central[0], color="grey", ls="--", lw=1, label="centralised")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"digits, 10 clients (3 per round), alpha={_ALPHA}, seed {seed}")
    ax.legend()
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_by_alpha": rows},
        notes=("Accuracies: mean over seeds of the mean over the last 5 rounds, with a 95% "
               "t interval over seeds (paired for the differences) that the rule reads whole: "
               "an interval straddling 0 is inconclusive. The task was chosen, before FedImpro "
               "ran on it, as one where FedAvg stays >= 10 points below centralised training "
               "(see the claims module); gap_centralised_fedavg re-measures that. Weight "
               "schedule gradual2half with T_w = number of rounds, sigma_max = 0.1, count-based "
               "running statistics. An MLP on sklearn digits replaces ResNet-18 on CIFAR-10; "
               "absolute accuracies are not comparable to the paper's."))


@claim(
    rule="ratio_mean < 1",
    paper="Sec. 4-5 and Fig. 3: training the high-level part on the shared feature "
          "distribution reduces the gradient dissimilarity between clients during training. "
          "Spec expectation: dissimilarity FedImpro-run / FedAvg-run < 1 under label skew.",
    against=("a FedAvg run on the same task, seed, partition and client samples, measured at its "
             "own checkpoints"),
)
def gradient_dissimilarity(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Client drift in the two trainings: a FedAvg run and a FedImpro run on the same task
    (same seed, partition, client samples, data order), and at each run's own global model
    after rounds {5, 15, 30} every client's full-batch gradient of H's parameters on its real
    data (the loss both methods share, CE on real samples); dissimilarity
    mean_k ||g_k - g_bar||^2 / ||g_bar||^2 over all 10 clients. Metric: FedImpro-run /
    FedAvg-run ratio, averaged over the checkpoints, per seed."""
    import torch

    from .diagnostics import gradient_dissimilarity as dissimilarity
    from .diagnostics import head_gradient
    from .simulation import simulate
    from .split_network import digits_mlp

    rounds = sizes(scale, smoke=6, small=30)
    checkpoints = sizes(scale, smoke=(3, 6), small=(5, 15, 30))
    n_seeds = sizes(scale, smoke=1, small=3)
    cfg = _config(rounds)
    d_run: dict[tuple[str, int], list[float]] = {}
    spread: dict[tuple[str, int], list[float]] = {}
    mean_sq: dict[tuple[str, int], list[float]] = {}
    ratios: dict[int, list[float]] = {c: [] for c in checkpoints}
    with torch_threads(1):
        for s in range(n_seeds):
            data, parts = _setup(seed + s, _ALPHA)
            net = digits_mlp(data.x_train.shape[1], cfg.hidden, data.num_classes)
            for alg in ("fedavg", "fedimpro"):
                snaps: dict[int, torch.Tensor] = {}

                def keep(t: int, params, bank, snaps=snaps) -> None:
                    if t in checkpoints:
                        snaps[t] = params.clone()

                simulate(alg, data, parts, rounds, seed=seed + s, config=cfg,
                         clients_per_round=_PER_ROUND, checkpoint_fn=keep)
                for t in checkpoints:
                    grads = torch.stack([head_gradient(net, snaps[t],
                                                       data.x_train[torch.as_tensor(p)],
                                                       data.y_train[torch.as_tensor(p)])
                                         for p in parts])
                    d_run.setdefault((alg, t), []).append(dissimilarity(grads))
                    # diagnostics: the ratio's numerator mean_k ||g_k - g_bar||^2 and its
                    # denominator ||g_bar||^2 (a better-fitted model has a smaller g_bar)
                    g_bar = grads.mean(0)
                    spread.setdefault((alg, t), []).append(
                        float((grads - g_bar).pow(2).sum(1).mean()))
                    mean_sq.setdefault((alg, t), []).append(float(g_bar.pow(2).sum()))
                progress((2 * s + 1 + int(alg == "fedimpro")) / (2 * n_seeds),
                         f"seed {seed + s} {alg}")
            for t in checkpoints:
                ratios[t].append(d_run[("fedimpro", t)][-1] / d_run[("fedavg", t)][-1])
    per_seed = np.mean([ratios[t] for t in checkpoints], axis=0)  # (n_seeds,)
    metrics: dict[str, object] = {"ratio_mean": seed_metric(per_seed)}
    rows = []
    for t in checkpoints:
        metrics[f"ratio_r{t}"] = seed_metric(ratios[t])
        metrics[f"dissimilarity_fedavg_r{t}"] = seed_metric(d_run[("fedavg", t)])
        metrics[f"dissimilarity_fedimpro_r{t}"] = seed_metric(d_run[("fedimpro", t)])
        row = {"round": t, "seeds": n_seeds,
               "dissimilarity_fedavg_run": _fmt(*_mean_ci(d_run[("fedavg", t)])),
               "dissimilarity_fedimpro_run": _fmt(*_mean_ci(d_run[("fedimpro", t)])),
               "ratio": _fmt(*_mean_ci(ratios[t]), digits=3)}
        for alg in ("fedavg", "fedimpro"):
            metrics[f"spread_{alg}_r{t}"] = seed_metric(spread[(alg, t)])
            metrics[f"mean_grad_sq_{alg}_r{t}"] = seed_metric(mean_sq[(alg, t)])
            row[f"spread_{alg}"] = _fmt(*_mean_ci(spread[(alg, t)]), digits=5)
            row[f"mean_grad_sq_{alg}"] = _fmt(*_mean_ci(mean_sq[(alg, t)]), digits=5)
        rows.append(row)
    return Measurement(
        metrics=metrics, tables={"dissimilarity_by_round": rows},
        notes=("Each dissimilarity is measured at the global model of its own training run "
               "(FedAvg-trained vs FedImpro-trained), over all clients' real data with the same "
               "loss, so the ratio measures how much FedImpro's training reduced client drift. "
               "(An earlier version compared two losses at one model, which holds by "
               "construction.) spread = mean_k ||g_k - g_bar||^2 and mean_grad_sq = "
               "||g_bar||^2 are the ratio's numerator and denominator, reported to show which "
               "one moves. ratio_mean: 95% t interval over seeds of the per-seed mean over "
               "checkpoints; table entries mean ± 95% t half-width."))


@claim(
    rule="diff_noise0p2_noise0 > -0.05",
    paper="Sec. 5 (privacy): accuracy degrades only mildly as the noise on the shared feature "
          "statistics grows. Spec expectation: monotone-ish, graceful decline for noise std "
          "s in {0, 0.05, 0.2}.",
    against=("FedImpro without noise on the shared statistics (s = 0), same task and seeds; "
             "FedAvg reported beside"),
)
def privacy_noise(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """FedImpro's final accuracy (mean of the last 5 rounds) on the module's federated task at
    alpha = 0.05 when clients add N(0, s^2) noise to the uploaded class means and stds,
    s in {0, 0.05, 0.2}; FedAvg beside (not at smoke scale). Rule: the paired drop from s = 0
    to s = 0.2 stays above -5 points over the whole interval."""
    from .simulation import simulate

    rounds = sizes(scale, smoke=5, small=30)
    n_seeds = sizes(scale, smoke=1, small=3)
    with_fedavg = scale is not Scale.SMOKE
    noises = (0.0, 0.05, 0.2)
    base_cfg = _config(rounds)
    acc: dict[str, list[float]] = {}
    total = n_seeds * (len(noises) + int(with_fedavg))
    done = 0
    with torch_threads(1):
        for s in range(n_seeds):
            data, parts = _setup(seed + s, _ALPHA)
            if with_fedavg:
                acc.setdefault("fedavg", []).append(simulate(
                    "fedavg", data, parts, rounds, seed=seed + s, config=base_cfg,
                    clients_per_round=_PER_ROUND).last_mean("accuracy", 5))
                done += 1
            for z in noises:
                cfg = replace(base_cfg, noise_std=z)
                h = simulate("fedimpro", data, parts, rounds, seed=seed + s, config=cfg,
                             clients_per_round=_PER_ROUND)
                acc.setdefault(f"noise{_tag(z)}", []).append(h.last_mean("accuracy", 5))
                done += 1
                progress(done / total, f"seed {seed + s} noise {z}")
    metrics: dict[str, object] = {f"acc_{k}": seed_metric(v) for k, v in acc.items()}
    for z in noises[1:]:
        metrics[f"diff_noise{_tag(z)}_noise0"] = seed_difference(acc[f"noise{_tag(z)}"],
                                                                 acc["noise0"])
    rows = [{"setting": k, "seeds": n_seeds, "rounds": rounds,
             "accuracy": _fmt(*_mean_ci(v)),
             "minus_noise0": _fmt(*_mean_ci(np.asarray(v) - np.asarray(acc["noise0"])))}
            for k, v in acc.items()]
    return Measurement(
        metrics=metrics, tables={"accuracy_by_noise": rows},
        notes=("Noise is added to each client's uploaded mu and sigma (sigma clamped at 0) "
               "before the server aggregates; the rule asks that the paired difference "
               "acc(s=0.2) - acc(s=0), read as a 95% t interval over seeds, stay above -0.05. "
               "Table: mean ± 95% t-interval half-width over seeds."))
