"""FedImpro claims: accuracy under label skew, client drift, the privacy-noise knob.

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

Arms (issue 38). The audit found most of FedImpro's gain over FedAvg without any sharing of
statistics: with a server that never updates its feature bank (FedAvg 0.744, FedImpro 0.916,
no sharing 0.882; 15 rounds, 3 seeds), i.e. from the class-balanced synthetic labels. Every
claim therefore runs, beside FedAvg and FedImpro, the same FedImpro with

- ``noshare``: the server never updates its bank (``bank_sharing="none"``): each round the
  clients start from the initial bank (mu ~ U(0, 1), sigma = sigma_max) and only fold in their
  own features; the null arm for the *sharing*, the paper's mechanism;
- ``exact`` (label-skew claim): the server sets the bank to the exact class moments of all
  clients' features at the new global model (``bank_sharing="exact"``): what perfect sharing
  would deliver, the positive control that the test bed can show a benefit of sharing at all.

The rules judge the sharing against ``noshare``; each claim's docstring says what changed.
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
_SHARING = {"fedimpro": "clients", "noshare": "none", "exact": "exact"}  # FedImpro's arms


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


def _run(arm: str, data, parts, rounds: int, seed: int, cfg, **kw):
    """One arm on the claims' task: "fedavg", "fedprox", or FedImpro with its bank shared by
    the clients ("fedimpro"), never updated ("noshare") or exact ("exact")."""
    from .simulation import simulate

    if arm in _SHARING:
        return simulate("fedimpro", data, parts, rounds, seed=seed,
                        config=replace(cfg, bank_sharing=_SHARING[arm]),
                        clients_per_round=_PER_ROUND, **kw)
    return simulate(arm, data, parts, rounds, seed=seed, config=cfg,
                    clients_per_round=_PER_ROUND, **kw)


def _central_epochs(rounds: int) -> int:
    return max(1, round(rounds * _LOCAL_EPOCHS * _PER_ROUND / _NUM_CLIENTS))


@claim(
    rule="diff_fedimpro_fedavg_a0p05 > 0 and diff_fedimpro_noshare_a0p05 > 0",
    control="gap_centralised_fedavg > 0.05 and diff_exact_noshare_a0p05 > 0",
    paper="Tables 1-2: FedImpro reaches higher test accuracy than FedAvg, FedProx, SCAFFOLD and "
          "FedNova on CIFAR-10/FMNIST/SVHN/CIFAR-100 under Dirichlet label skew (alpha 0.1 and "
          "0.05; values not retrieved), by training the high-level model on a *shared* "
          "estimate of the feature distribution. Spec expectation: FedImpro - FedAvg > 0 under "
          "strong skew (roughly +1 to +5 points), shrinking toward 0 near IID (alpha = 100).",
    against=("FedAvg (and FedProx at small) with the same seeds, partitions and client samples; "
             "null arm: FedImpro whose server never updates its bank (no sharing); positive "
             "control: FedImpro with the exact statistics of all clients; centralised training "
             "as ceiling"),
)
def label_skew_accuracy(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Mean test accuracy over the last 5 rounds on the module's federated task (sklearn digits,
    10 Dirichlet-split clients, 3 sampled per round, 10 local epochs; MLP 64-128-128-10 cut after
    the first layer, SGD lr 0.05, batch 32) at alpha = 0.05: FedAvg, FedProx (mu = 0.01, small
    only), FedImpro, and FedImpro without sharing (``noshare``) and with exact sharing
    (``exact``), same seeds, partitions, client samples and data order; FedAvg and FedImpro at
    alpha = 100 beside it (reported). Centralised training on the union of the clients' data is
    the ceiling.

    Rule (issue 38, written before the new arms ran at small): FedImpro beats FedAvg *and* beats
    the same method without sharing, paired differences over the seeds (5 at small) whose 95%
    intervals lie above 0. It fails if the shared statistics add nothing to the class-balanced
    synthetic labels (the audit's reading of the old +0.17 gain), or if FedImpro does not beat
    FedAvg. The old rule read only FedImpro - FedAvg, which the no-sharing arm passes too.

    Control: (1) the test bed has headroom: centralised training beats FedAvg by more than 5
    points over the whole interval; (2) sharing *can* help here: FedImpro with the exact
    statistics of all clients beats the no-sharing arm. Either false or unknown: the test bed
    cannot tell (inconclusive)."""
    from .simulation import train_centralised

    rounds = sizes(scale, smoke=8, small=30)
    seeds_for = {_ALPHA: sizes(scale, smoke=1, small=5), 100.0: sizes(scale, smoke=0, small=3)}
    alphas = [a for a, n in seeds_for.items() if n > 0]
    skew_arms = sizes(scale, smoke=("fedavg", "fedimpro", "noshare", "exact"),
                      small=("fedavg", "fedprox", "fedimpro", "noshare", "exact"))

    def arms_for(a: float) -> tuple[str, ...]:  # the ablations only under skew (budget)
        return skew_arms if a < 1.0 else ("fedavg", "fedimpro")

    cfg = _config(rounds)
    acc: dict[tuple[str, float], list[float]] = {}
    central: list[float] = []
    curves = {}
    total = sum(seeds_for[a] * (len(arms_for(a)) + int(a == _ALPHA)) for a in alphas)
    done = 0
    with torch_threads(1):
        for a in alphas:
            for s in range(seeds_for[a]):
                data, parts = _setup(seed + s, a)
                for arm in arms_for(a):
                    h = _run(arm, data, parts, rounds, seed + s, cfg)
                    acc.setdefault((arm, a), []).append(h.last_mean("accuracy", 5))
                    if s == 0 and a == _ALPHA:
                        curves[arm] = (h.column("round"), h.column("accuracy"))
                    done += 1
                    progress(done / total, f"alpha={a} seed={seed + s} {arm}")
                if a == _ALPHA:
                    central.append(train_centralised(data, _central_epochs(rounds),
                                                     seed=seed + s, config=cfg))
                    done += 1
    metrics: dict[str, object] = {"acc_centralised": seed_metric(central)}
    rows = []
    for a in alphas:
        t = _tag(a)
        for arm in arms_for(a):
            metrics[f"acc_{arm}_a{t}"] = seed_metric(acc[(arm, a)])
        row = {"alpha": a, "seeds": seeds_for[a], "rounds": rounds,
               **{f"acc_{arm}": _fmt(*_mean_ci(acc[(arm, a)])) for arm in arms_for(a)}}
        if a == _ALPHA:
            row["acc_centralised"] = _fmt(*_mean_ci(central))
        pairs = [("fedimpro", b) for b in arms_for(a) if b != "fedimpro"]
        if a == _ALPHA:  # the audit's split of the gain, and the positive control
            pairs += [("noshare", "fedavg"), ("exact", "noshare")]
        for top, base in pairs:
            d = np.asarray(acc[(top, a)]) - np.asarray(acc[(base, a)])
            # same seeds, partitions, client samples and data order: a paired t interval
            metrics[f"diff_{top}_{base}_a{t}"] = seed_difference(acc[(top, a)], acc[(base, a)])
            row[f"{top}_minus_{base}"] = _fmt(*_mean_ci(d))
        rows.append(row)
    metrics["gap_centralised_fedavg"] = seed_difference(central, acc[("fedavg", _ALPHA)])
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot(1, 1, 1)
    for arm, (x, y) in curves.items():
        ax.plot(x, y, label=arm)
    ax.axhline(central[0], color="grey", ls="--", lw=1, label="centralised")
    ax.set_xlabel("round")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"digits, 10 clients (3 per round), alpha={_ALPHA}, seed {seed}")
    ax.legend()
    return Measurement(
        metrics=metrics, figure=fig, tables={"accuracy_by_alpha": rows},
        notes=("Accuracies: mean over seeds of the mean over the last 5 rounds, with a 95% "
               "t interval over seeds (paired for the differences) that the rule reads whole: "
               "an interval straddling 0 is inconclusive. noshare = FedImpro whose server never "
               "updates its bank (class-balanced synthetic labels, no shared statistics); "
               "exact = FedImpro whose server shares the exact class statistics of all clients "
               "(positive control). diff_noshare_fedavg is the part of the gain that needs no "
               "sharing. The task was chosen, before FedImpro ran on it, as one where FedAvg "
               "stays >= 10 points below centralised training (see the claims module); "
               "gap_centralised_fedavg re-measures that. Weight schedule gradual2half with "
               "T_w = number of rounds, sigma_max = 0.1, count-based running statistics. An MLP "
               "on sklearn digits replaces ResNet-18 on CIFAR-10; absolute accuracies are not "
               "comparable to the paper's."))


@claim(
    rule="drift_ratio < 1 and drift_ratio_vs_noshare < 1",
    control="skew_drift_ratio > 1",
    paper="Sec. 4-5 and Fig. 3: training the high-level part on the shared feature "
          "distribution reduces the gradient dissimilarity between clients during training. "
          "Spec expectation: dissimilarity FedImpro-run / FedAvg-run < 1 under label skew.",
    against=("a FedAvg run and a no-sharing FedImpro run (server never updates its bank) on the "
             "same task, seed, partition and client samples, each measured at its own "
             "checkpoints; positive control: FedAvg on an IID (alpha = 100) partition"),
)
def gradient_dissimilarity(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Client drift in the trainings of FedAvg, FedImpro and FedImpro without sharing
    (``noshare``) on the same task (same seed, partition, client samples, data order), and of
    FedAvg on an IID partition (alpha = 100) of the same data: at each run's own global model
    after rounds {5, 15, 30}, every client's full-batch gradient g_k of H's parameters on its
    real data (the loss all runs share, CE on real samples); drift = mean_k ||g_k - g_bar||^2
    over all 10 clients.

    Rule (issue 38, written before it ran at small): the drift itself, per seed the mean over
    checkpoints of drift(FedImpro run) / drift(FedAvg run) (``drift_ratio``) and of
    drift(FedImpro run) / drift(no-sharing run) (``drift_ratio_vs_noshare``), both with 95% t
    intervals over seeds (3 at small) below 1. It fails if FedImpro's clients drift as much as
    FedAvg's, or as much as without sharing. The old rule read the normalised dissimilarity
    drift / ||g_bar||^2, which penalises the better-fitted model (its g_bar is small: the audit
    measured FedImpro's drift lower, 7.3 vs 10.3, but a normalised ratio of 2.46); it is
    reported (``normalised_ratio``) and no longer decides.

    Control: label skew produces drift on this test bed: FedAvg's drift at alpha = 0.05 exceeds
    its drift on the IID partition (``skew_drift_ratio > 1``); otherwise there is no drift to
    reduce and the test bed cannot tell."""
    import torch

    from .diagnostics import gradient_dissimilarity as dissimilarity
    from .diagnostics import gradient_drift, head_gradient
    from .split_network import digits_mlp

    rounds = sizes(scale, smoke=6, small=30)
    checkpoints = sizes(scale, smoke=(3, 6), small=(5, 15, 30))
    n_seeds = sizes(scale, smoke=1, small=3)
    cfg = _config(rounds)
    runs = (("fedavg", _ALPHA), ("fedimpro", _ALPHA), ("noshare", _ALPHA), ("fedavg_iid", 100.0))
    drift: dict[tuple[str, int], list[float]] = {}
    normalised: dict[tuple[str, int], list[float]] = {}
    with torch_threads(1):
        for s in range(n_seeds):
            for i, (name, alpha) in enumerate(runs):
                data, parts = _setup(seed + s, alpha)
                net = digits_mlp(data.x_train.shape[1], cfg.hidden, data.num_classes)
                snaps: dict[int, torch.Tensor] = {}

                def keep(t: int, params, bank, snaps=snaps) -> None:
                    if t in checkpoints:
                        snaps[t] = params.clone()

                _run(name.removesuffix("_iid"), data, parts, rounds, seed + s, cfg,
                     checkpoint_fn=keep)
                for t in checkpoints:
                    grads = torch.stack([head_gradient(net, snaps[t],
                                                       data.x_train[torch.as_tensor(p)],
                                                       data.y_train[torch.as_tensor(p)])
                                         for p in parts])
                    drift.setdefault((name, t), []).append(gradient_drift(grads))
                    normalised.setdefault((name, t), []).append(dissimilarity(grads))
                progress((len(runs) * s + i + 1) / (len(runs) * n_seeds), f"seed {seed + s} {name}")

    def per_seed_ratio(table: dict, top: str, base: str) -> np.ndarray:  # (n_seeds,)
        return np.mean([np.asarray(table[(top, t)]) / np.asarray(table[(base, t)])
                        for t in checkpoints], axis=0)

    metrics: dict[str, object] = {
        "drift_ratio": seed_metric(per_seed_ratio(drift, "fedimpro", "fedavg")),
        "drift_ratio_vs_noshare": seed_metric(per_seed_ratio(drift, "fedimpro", "noshare")),
        "drift_ratio_noshare": seed_metric(per_seed_ratio(drift, "noshare", "fedavg")),
        "skew_drift_ratio": seed_metric(per_seed_ratio(drift, "fedavg", "fedavg_iid")),
        "normalised_ratio": seed_metric(per_seed_ratio(normalised, "fedimpro", "fedavg")),
    }
    rows = []
    for t in checkpoints:
        row: dict[str, object] = {"round": t, "seeds": n_seeds}
        for name, _ in runs:
            metrics[f"drift_{name}_r{t}"] = seed_metric(drift[(name, t)])
            metrics[f"normalised_{name}_r{t}"] = seed_metric(normalised[(name, t)])
            row[f"drift_{name}"] = _fmt(*_mean_ci(drift[(name, t)]), digits=5)
            row[f"normalised_{name}"] = _fmt(*_mean_ci(normalised[(name, t)]), digits=3)
        rows.append(row)
    return Measurement(
        metrics=metrics, tables={"drift_by_round": rows},
        notes=("drift = mean_k ||g_k - g_bar||^2 of the clients' full-batch head gradients on "
               "their real data, each measured at the global model of its own training run "
               "(FedAvg-, FedImpro-, no-sharing-FedImpro-trained; FedAvg on an IID partition "
               "for the control), with the same loss. Ratios: per seed, mean over checkpoints; "
               "95% t interval over seeds. normalised = drift / ||g_bar||^2 (the old, reported "
               "only: it penalises a better-fitted model). drift_ratio_noshare: how much of "
               "the reduction needs no sharing. Table entries mean ± 95% t half-width."))


@claim(
    rule="diff_noise0p2_noise0 > -0.05 and diff_noise0p2_noshare > 0",
    control="diff_noise0_noshare > 0",
    paper="Sec. 5 (privacy): accuracy degrades only mildly as the noise on the shared feature "
          "statistics grows. Spec expectation: monotone-ish, graceful decline for noise std "
          "s in {0, 0.05, 0.2}.",
    against=("FedImpro without noise on the shared statistics (s = 0), and FedImpro without any "
             "sharing (server never updates its bank: the null arm for the statistics), same "
             "task and seeds; FedAvg reported beside"),
)
def privacy_noise(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """FedImpro's final accuracy (mean of the last 5 rounds) on the module's federated task at
    alpha = 0.05 when clients add N(0, s^2) noise to the uploaded class means and stds,
    s in {0, 0.05, 0.2}; FedImpro without sharing (``noshare``) beside, and FedAvg (small only).

    Rule (issue 38, written before it ran at small): the paired drop from s = 0 to s = 0.2
    stays above -5 points *and* FedImpro with s = 0.2 still beats the no-sharing arm (95% t
    intervals over 3 seeds): our reading of "degrades only mildly", since a decline that
    removes everything the shared statistics bring is not mild, whatever its size. It fails if the noise costs more than 5 points or destroys what
    the sharing brings. The old rule was the non-inferiority alone, which a method whose
    shared statistics do not matter passes (noise on statistics nobody uses costs nothing).

    Control: the shared statistics matter on this test bed: without noise FedImpro beats the
    no-sharing arm (``diff_noise0_noshare > 0``); otherwise robustness to noise on them says
    nothing and the test bed cannot tell."""
    rounds = sizes(scale, smoke=5, small=30)
    n_seeds = sizes(scale, smoke=1, small=3)
    with_fedavg = scale is not Scale.SMOKE
    noises = (0.0, 0.05, 0.2)
    base_cfg = _config(rounds)
    acc: dict[str, list[float]] = {}
    total = n_seeds * (len(noises) + 1 + int(with_fedavg))
    done = 0
    with torch_threads(1):
        for s in range(n_seeds):
            data, parts = _setup(seed + s, _ALPHA)
            for arm in ("fedavg", "noshare") if with_fedavg else ("noshare",):
                acc.setdefault(arm, []).append(
                    _run(arm, data, parts, rounds, seed + s, base_cfg).last_mean("accuracy", 5))
                done += 1
                progress(done / total, f"seed {seed + s} {arm}")
            for z in noises:
                h = _run("fedimpro", data, parts, rounds, seed + s,
                         replace(base_cfg, noise_std=z))
                acc.setdefault(f"noise{_tag(z)}", []).append(h.last_mean("accuracy", 5))
                done += 1
                progress(done / total, f"seed {seed + s} noise {z}")
    metrics: dict[str, object] = {f"acc_{k}": seed_metric(v) for k, v in acc.items()}
    for z in noises[1:]:
        metrics[f"diff_noise{_tag(z)}_noise0"] = seed_difference(acc[f"noise{_tag(z)}"],
                                                                 acc["noise0"])
    for z in noises:
        metrics[f"diff_noise{_tag(z)}_noshare"] = seed_difference(acc[f"noise{_tag(z)}"],
                                                                  acc["noshare"])
    rows = [{"setting": k, "seeds": n_seeds, "rounds": rounds,
             "accuracy": _fmt(*_mean_ci(v)),
             "minus_noise0": _fmt(*_mean_ci(np.asarray(v) - np.asarray(acc["noise0"]))),
             "minus_noshare": _fmt(*_mean_ci(np.asarray(v) - np.asarray(acc["noshare"])))}
            for k, v in acc.items()]
    return Measurement(
        metrics=metrics, tables={"accuracy_by_noise": rows},
        notes=("Noise is added to each client's uploaded mu and sigma (sigma clamped at 0) "
               "before the server aggregates. noshare = FedImpro whose server never updates "
               "its bank (no statistics shared; noise on uploads it ignores changes nothing). "
               "The rule reads the paired differences acc(s=0.2) - acc(s=0) > -0.05 and "
               "acc(s=0.2) - acc(noshare) > 0; the control acc(s=0) - acc(noshare) > 0, each "
               "as a 95% t interval over seeds. Table: mean ± 95% t-interval half-width."))
