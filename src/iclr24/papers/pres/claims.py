"""PRES claims: AP of TGN under large temporal batches with and without PRES (PR1), and the
exactness of the transition statistics and of the gamma = 0 reduction (PR2)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes


@claim(
    rule="ap_gain > 0",
    paper="Abstract and Fig. 3/Sec. 6: the AP of TGN/JODIE/APAN falls as the temporal batch "
          "grows; with PRES, up to 4x larger temporal batches train to similar AP (up to 3.4x "
          "faster training). Expected here: AP(PRES, largest b) - AP(TGN, largest b) > 0, a "
          "modest 0.5-3 AP points (spec), epoch time falling roughly like 1/b.",
    paper_numbers={"ap_gain": 0.01},
    against=("plain TGN without PRES at the same temporal batch size, epochs, stream, init seed "
             "and negatives"),
    resources={"cpus": 1},
)
def large_batch_ap(scale: Scale, seed: int, progress=None) -> Measurement:
    """TGN (PyG parts: TGNMemory, IdentityMessage, LastAggregator, one TransformerConv layer,
    LastNeighborLoader of 10) on the synthetic drifting-interest stream, trained for the same
    number of epochs at each temporal batch size b, without PRES and with PRES (gamma = 0.9,
    the official default, beta = 0.1, cosine coherence with gradient). Reported beside the rule
    at small: gamma = 0.5 at the two largest b, and at the largest b the official placement of
    the fusion (``store_fused=False``) and both arms trained for 10 epochs. Same stream,
    initialisation seed and negatives per seed for every arm. Metrics: transductive test AP (one fixed-seed random destination per positive, evaluation
    batches of 200) and wall/CPU time per training epoch. The rule reads the paired difference
    AP(PRES, gamma 0.9) - AP(TGN) at the largest b over the seeds."""
    import time

    from iclr24.kits.threads import torch_threads

    from . import TGNConfig, evaluate_ap, make_drifting_stream, train_tgn

    progress = progress or (lambda *a, **k: None)
    batch_sizes = sizes(scale, smoke=[100, 800], small=[50, 200, 800, 1600])
    num_events = sizes(scale, smoke=3000, small=20_000)
    epochs = sizes(scale, smoke=1, small=3)
    dim = sizes(scale, smoke=16, small=32)
    n_seeds = sizes(scale, smoke=1, small=3)
    config = TGNConfig(memory_dim=dim, time_dim=dim, embedding_dim=dim)
    arms = {"tgn": {"use_pres": False}, "pres_g0.9": {"use_pres": True, "gamma": 0.9}}
    largest = max(batch_sizes)
    # reported beside the rule (small only): gamma 0.5 at the two largest b; at the largest b the
    # official placement of the fusion (embeddings only) and a 10-epoch budget for both arms
    extra: dict[str, tuple[dict, list[int], int]] = {} if scale is Scale.SMOKE else {
        "pres_g0.5": ({"use_pres": True, "gamma": 0.5}, sorted(batch_sizes)[-2:], epochs),
        "pres_g0.9_official": ({"use_pres": True, "gamma": 0.9, "store_fused": False},
                               [largest], epochs),
        "tgn_10ep": ({"use_pres": False}, [largest], 10),
        "pres_g0.9_10ep": ({"use_pres": True, "gamma": 0.9}, [largest], 10),
    }
    plan = [(s, b, name, kw, epochs) for s in range(n_seeds) for b in batch_sizes
            for name, kw in arms.items()]
    plan += [(s, b, name, kw, n_ep) for s in range(n_seeds)
             for name, (kw, bs, n_ep) in extra.items() for b in bs]

    runs: dict[tuple[str, int], list[dict]] = {}
    t0 = time.perf_counter()
    with torch_threads(1):
        streams = {s: make_drifting_stream(num_events=num_events, seed=seed + s)
                   for s in range(n_seeds)}
        for step, (s, b, name, kw, n_ep) in enumerate(plan):
            run = train_tgn(streams[s], batch_size=b, epochs=n_ep, beta=0.1, config=config,
                            seed=seed + s, **kw)
            scores = evaluate_ap(run, streams[s], "test")
            runs.setdefault((name, b), []).append({
                "ap": scores["ap"], "auc": scores["auc"],
                "epoch_s": run.epoch_seconds,
                "epoch_cpu_s": float(np.mean([h["cpu_seconds"] for h in run.history])),
                "steps": run.history[0]["batches"], "epochs": n_ep})
            progress((step + 1) / len(plan), f"seed {s}, b = {b}, {name}")

    def col(name: str, b: int, key: str) -> list[float]:
        return [r[key] for r in runs[(name, b)]]

    rows = []
    for (name, b), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        aps = col(name, b, "ap")
        rows.append({"b": b, "method": name, "epochs": rs[0]["epochs"], "ap_mean": float(np.mean(aps)),
                     "ap_std": float(np.std(aps, ddof=1)) if len(aps) > 1 else 0.0,
                     "auc_mean": float(np.mean(col(name, b, "auc"))),
                     "epoch_s": float(np.mean(col(name, b, "epoch_s"))),
                     "epoch_cpu_s": float(np.mean(col(name, b, "epoch_cpu_s"))),
                     "steps_per_epoch": rs[0]["steps"], "seeds": len(rs)})
    smallest = min(batch_sizes)
    metrics = {
        "ap_gain": seed_difference(col("pres_g0.9", largest, "ap"), col("tgn", largest, "ap")),
        "ap_tgn_largest_b": seed_metric(col("tgn", largest, "ap")),
        "ap_pres_largest_b": seed_metric(col("pres_g0.9", largest, "ap")),
        "ap_tgn_smallest_b": seed_metric(col("tgn", smallest, "ap")),
        "tgn_drop": seed_difference(col("tgn", smallest, "ap"), col("tgn", largest, "ap")),
        "pres_drop": seed_difference(col("pres_g0.9", smallest, "ap"),
                                     col("pres_g0.9", largest, "ap")),
        "epoch_time_ratio": float(np.mean(col("tgn", smallest, "epoch_cpu_s"))
                                  / np.mean(col("tgn", largest, "epoch_cpu_s"))),
        "pres_time_overhead": float(np.mean(col("pres_g0.9", largest, "epoch_cpu_s"))
                                    / np.mean(col("tgn", largest, "epoch_cpu_s"))),
        "largest_b": largest, "seeds": n_seeds, "epochs": epochs,
        "wall_s": time.perf_counter() - t0,
    }
    if extra:
        tgn = col("tgn", largest, "ap")
        metrics["ap_gain_g05"] = seed_difference(col("pres_g0.5", largest, "ap"), tgn)
        metrics["ap_gain_official_placement"] = seed_difference(
            col("pres_g0.9_official", largest, "ap"), tgn)
        metrics["ap_gain_10_epochs"] = seed_difference(col("pres_g0.9_10ep", largest, "ap"),
                                                       col("tgn_10ep", largest, "ap"))
        metrics["ap_tgn_largest_b_10_epochs"] = seed_metric(col("tgn_10ep", largest, "ap"))

    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 4.0))
    ax_ap, ax_t = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    for name in [*arms, *extra]:
        rs = [r for r in rows if r["method"] == name]
        bs = [r["b"] for r in rs]
        ax_ap.errorbar(bs, [r["ap_mean"] for r in rs], yerr=[r["ap_std"] for r in rs],
                       marker="o" if name in arms else "x", capsize=3, label=name,
                       linestyle="-" if name in arms else "none")
        if name in arms:
            ax_t.plot(bs, [r["epoch_cpu_s"] for r in rs], marker="o", label=name)
    for ax in (ax_ap, ax_t):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("temporal batch size b")
        ax.legend()
    ax_ap.set_ylabel(f"test AP (mean ± sd over {n_seeds} seed(s))")
    ax_t.set_yscale("log")
    ax_t.set_ylabel("CPU seconds per training epoch")
    ax_ap.set_title(f"TGN on the drifting stream, {epochs} epoch(s)")
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig, tables={"ap_and_epoch_time": rows},
        notes="Synthetic drifting-interest stream (JODIE/TGB need downloads); memory/time/"
              f"embedding dim {dim}; {num_events} events split 70/15/15; equal epochs for every "
              "b, so a large b also means fewer optimiser steps (as in the paper's sweep). PRES "
              "stores the fused memory (the spec's design); the official code fuses only the "
              "memory fed to the current batch's embeddings and its statistics are broken (see "
              "pres_memory.py). Epoch times are single-threaded, on a shared machine. Checks "
              "run before reading a failure as 'not reproduced': memory_statistics_exact "
              "(gamma = 0 is plain TGN bit for bit, statistics exact), the official defaults "
              "(gamma 0.9, beta 0.1, Adam 1e-3, 10 neighbours, evaluation batches of 200), and "
              "at small a 10-epoch budget (ap_gain_10_epochs) and the official placement of the "
              "fusion (ap_gain_official_placement) at the largest b.",
    )


@claim(
    rule="stats_max_err < 1e-9 and inrun_stats_rel_err < 1e-4 and gamma0_memory_diff == 0 "
         "and gamma0_loss_diff == 0 and gamma0_ap_diff == 0",
    paper="Sec. 4.1: PRES models memory transitions per node (mean and variance of the memory "
          "change) and fuses prediction and update with weight gamma; gamma = 0 is the plain "
          "MDGNN update. (The official Filter never increments its count, so its mean is 0/0.)",
    against=("numpy's exact per-node mean/variance of the same deltas; plain TGN (same seed) for "
             "the gamma = 0 reduction"),
    resources={"cpus": 1},
)
def memory_statistics_exact(scale: Scale, seed: int) -> Measurement:
    """(1) MemoryTransitionStats (float64) fed random deltas in batches with repeated node ids
    equals numpy's per-node mean and population variance of all deltas (max abs error);
    (2) during a PRES (gamma 0.9) pass over a stream, the statistics equal the batch statistics
    of the changes PRES recorded (float32; error relative to max |delta|); (3) TGN trained with
    PRES at gamma = 0 and beta = 0 reproduces plain TGN exactly: memory after training,
    per-epoch losses and test AP."""
    import torch
    from torch_geometric.nn.models import TGNMemory
    from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator

    from iclr24.kits.threads import torch_threads

    from . import (
        MemoryTransitionStats,
        PRESMemory,
        TGNConfig,
        evaluate_ap,
        make_drifting_stream,
        train_tgn,
    )

    rng = np.random.default_rng(seed)
    n_nodes, dim = sizes(scale, smoke=(40, 8), small=(200, 16))
    n_updates = sizes(scale, smoke=30, small=200)
    stats = MemoryTransitionStats(n_nodes, dim, dtype=torch.float64)
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    for _ in range(n_updates):
        nodes = rng.integers(0, n_nodes, size=rng.integers(1, 2 * n_nodes))
        delta = rng.normal(rng.normal(0, 3), rng.uniform(0.1, 2), size=(nodes.size, dim))
        stats.update(torch.as_tensor(nodes), torch.as_tensor(delta))
        seen.append((nodes, delta))

    def batch_error(stats, records) -> tuple[float, float]:
        nodes = np.concatenate([r[0] for r in records])
        deltas = np.concatenate([r[1] for r in records])
        err, scale_ = 0.0, float(np.abs(deltas).max())
        for i in np.unique(nodes):
            d = deltas[nodes == i]
            mean = stats.mean[i].double().numpy()
            var = stats.variance(torch.tensor([int(i)]))[0].double().numpy()
            err = max(err, float(np.abs(mean - d.mean(0)).max()),
                      float(np.abs(var - d.var(0)).max()),
                      float(abs(stats.count[i].item() - len(d))))
        return err, scale_

    stats_err, _ = batch_error(stats, seen)

    num_events = sizes(scale, smoke=1500, small=5000)
    data = make_drifting_stream(num_events=num_events, seed=seed)
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        base = TGNMemory(int(data.dst.max()) + 1, data.msg.size(-1), 16, 16,
                         IdentityMessage(data.msg.size(-1), 16, 16), LastAggregator())
        pres = PRESMemory(base, gamma=0.9)
        recorded: list[tuple[np.ndarray, np.ndarray]] = []
        update = pres.stats.update

        def recording_update(nodes, delta):
            recorded.append((nodes.numpy().copy(), delta.detach().double().numpy().copy()))
            update(nodes, delta)

        pres.stats.update = recording_update
        with torch.no_grad():
            for start in range(0, num_events, 100):
                sl = slice(start, start + 100)
                pres.update_state(data.src[sl], data.dst[sl], data.t[sl], data.msg[sl])
        inrun_err, inrun_scale = batch_error(pres.stats, recorded)

        config = TGNConfig(memory_dim=16, time_dim=16, embedding_dim=16)
        plain = train_tgn(data, batch_size=200, epochs=2, config=config, seed=seed)
        zero = train_tgn(data, batch_size=200, epochs=2, use_pres=True, gamma=0.0, beta=0.0,
                         config=config, seed=seed)
        mem_plain = plain.train_end_state["memory"]["memory"]
        mem_zero = zero.train_end_state["memory"]["base.memory"]
        memory_diff = float((mem_plain - mem_zero).abs().max())
        loss_diff = max(abs(a["loss"] - b["loss"]) for a, b in zip(plain.history, zero.history))
        ap_plain = evaluate_ap(plain, data, "test")["ap"]
        ap_zero = evaluate_ap(zero, data, "test")["ap"]
    return Measurement(
        metrics={"stats_max_err": stats_err, "inrun_stats_rel_err": inrun_err / inrun_scale,
                 "inrun_updates": float(sum(len(r[0]) for r in recorded)),
                 "gamma0_memory_diff": memory_diff, "gamma0_loss_diff": loss_diff,
                 "gamma0_ap_diff": abs(ap_plain - ap_zero), "ap_plain": ap_plain},
        notes="Streaming statistics merge each batch with Chan et al.'s update; errors are "
              "against numpy on all deltas at once. The gamma = 0 run uses PRESMemory with the "
              "coherence weight beta = 0, so it must match plain TGN bit for bit.",
    )
