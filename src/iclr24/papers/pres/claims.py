"""PRES claims: AP of TGN under large temporal batches with and without PRES (PR1), and the
exactness of the transition statistics and of the gamma = 0 reduction (PR2).

Every claim measures its null arm in the same run and its ``control`` requires that the null
does not pass: TGN re-seeded in PRES's place plus the large-batch degradation as a positive
control (``large_batch_ap``); a count-ignoring streaming mean and PRES at gamma = 0.1
(``memory_statistics_exact``). PRES is judged as the official code places it (gamma 0.9, fused
memory read by the embeddings only); this project's stored-fusion variant is reported beside it.
"""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_difference, seed_metric, sizes


@claim(
    rule="ap_gain > 0",
    control="tgn_drop > 0 and null_gain_lower <= 0",
    paper="Abstract and Fig. 3/Sec. 6: the AP of TGN/JODIE/APAN falls as the temporal batch "
          "grows; with PRES, up to 4x larger temporal batches train to similar AP (up to 3.4x "
          "faster training). Expected here: AP(PRES, largest b) - AP(TGN, largest b) > 0, a "
          "modest 0.5-3 AP points (spec), epoch time falling roughly like 1/b.",
    paper_numbers={"ap_gain": 0.01},
    against=("plain TGN without PRES at the same temporal batch size, epochs, stream, init seed "
             "and negatives; null arm: plain TGN re-initialised with another seed put in PRES's "
             "place; positive control: TGN at the smallest b against TGN at the largest b"),
    resources={"cpus": 1},
)
def large_batch_ap(scale: Scale, seed: int, progress=None) -> Measurement:
    """TGN (PyG parts: TGNMemory, IdentityMessage, LastAggregator, one TransformerConv layer,
    LastNeighborLoader of 10) on the synthetic drifting-interest stream, trained for the
    official 10 epochs (smoke: 1) at each temporal batch size b in {200, 400, 800, 1600}
    (200 is the official default; smoke: {100, 800}), without PRES and with PRES as the official
    code places it: gamma = 0.9 fixed, the fused memory feeds only the batch's embeddings while
    the stored memory keeps TGN's own update (``store_fused=False``), beta = 0.1 cosine
    coherence (with gradient, the paper's objective; the official term is detached, a constant).
    Same stream, initialisation seed and negatives per seed for every arm; 3 seeds at small.
    Metrics: transductive test AP (one fixed-seed random destination per positive, evaluation
    batches of 200) and CPU time per training epoch.

    Rule (the spec's, unchanged): the paired difference ``ap_gain`` = AP(PRES) - AP(TGN) at the
    largest b is > 0 over the whole interval.
    Control, written with the repair before any run of it: (1) positive control, the test bed
    shows the large-batch degradation PRES is meant to repair, ``tgn_drop`` = AP(TGN, smallest
    b) - AP(TGN, largest b) > 0; (2) null arm, measured in the same run: plain TGN with another
    initialisation/negative seed in PRES's place, ``null_gain`` = AP(TGN re-seeded) - AP(TGN)
    at the largest b, must not pass the rule (else re-initialisation noise alone passes it):
    the lower end of its interval, ``null_gain_lower``, is <= 0 (written so, because a noise
    null's interval straddles 0 and ``not (null_gain > 0)`` would then be unknown, not true).
    Otherwise the test bed cannot tell.

    Why the judged arm changed: the first version judged the project's own placement (the fused
    state written into the memory), the worst of five variants measured (AP 0.646 against TGN's
    0.761 at b = 1600, 10 epochs). The paper's method is what the official code runs, so that is
    judged; the stored-fusion variant (``ap_gain_stored_fusion``), gamma = 0.5
    (``ap_gain_g05``) and the correction switched off (gamma = 0, coherence term kept:
    ``ap_gain_coherence_only``) are reported at the largest b, never deciding."""
    import time

    from iclr24.kits.threads import torch_threads

    from . import TGNConfig, evaluate_ap, make_drifting_stream, train_tgn

    progress = progress or (lambda *a, **k: None)
    batch_sizes = sizes(scale, smoke=[100, 800], small=[200, 400, 800, 1600])
    num_events = sizes(scale, smoke=3000, small=20_000)
    epochs = sizes(scale, smoke=1, small=10)
    dim = sizes(scale, smoke=16, small=32)
    n_seeds = sizes(scale, smoke=1, small=3)
    config = TGNConfig(memory_dim=dim, time_dim=dim, embedding_dim=dim)
    official = {"use_pres": True, "gamma": 0.9, "store_fused": False}
    arms = {"tgn": {"use_pres": False}, "pres": official}
    largest, smallest = max(batch_sizes), min(batch_sizes)
    # at the largest b only: the null arm (TGN re-seeded, the seed offset below) and the
    # variants reported beside the rule
    extra = {"tgn_reseeded": {"use_pres": False},
             "pres_stored_fusion": {**official, "store_fused": True},
             "pres_g0.5": {**official, "gamma": 0.5},
             "pres_coherence_only": {**official, "gamma": 0.0}}
    reseed = 1_000
    plan = [(s, b, name, kw) for s in range(n_seeds) for b in batch_sizes
            for name, kw in arms.items()]
    plan += [(s, largest, name, kw) for s in range(n_seeds) for name, kw in extra.items()]

    runs: dict[tuple[str, int], list[dict]] = {}
    t0 = time.perf_counter()
    with torch_threads(1):
        streams = {s: make_drifting_stream(num_events=num_events, seed=seed + s)
                   for s in range(n_seeds)}
        for step, (s, b, name, kw) in enumerate(plan):
            run_seed = seed + s + (reseed if name == "tgn_reseeded" else 0)
            run = train_tgn(streams[s], batch_size=b, epochs=epochs, beta=0.1, config=config,
                            seed=run_seed, **kw)
            scores = evaluate_ap(run, streams[s], "test")
            runs.setdefault((name, b), []).append({
                "ap": scores["ap"], "auc": scores["auc"],
                "epoch_cpu_s": float(np.mean([h["cpu_seconds"] for h in run.history])),
                "steps": run.history[0]["batches"]})
            progress((step + 1) / len(plan), f"seed {s}, b = {b}, {name}")

    def col(name: str, b: int, key: str = "ap") -> list[float]:
        return [r[key] for r in runs[(name, b)]]

    rows = []
    for (name, b), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        aps = col(name, b)
        rows.append({"b": b, "method": name, "ap_mean": float(np.mean(aps)),
                     "ap_std": float(np.std(aps, ddof=1)) if len(aps) > 1 else 0.0,
                     "auc_mean": float(np.mean(col(name, b, "auc"))),
                     "epoch_cpu_s": float(np.mean(col(name, b, "epoch_cpu_s"))),
                     "steps_per_epoch": rs[0]["steps"], "seeds": len(rs)})
    tgn_large = col("tgn", largest)
    null_gain = seed_difference(col("tgn_reseeded", largest), tgn_large)
    metrics = {
        "ap_gain": seed_difference(col("pres", largest), tgn_large),
        "tgn_drop": seed_difference(col("tgn", smallest), tgn_large),
        "null_gain": null_gain,
        "null_gain_lower": null_gain.low if isinstance(null_gain, Estimate) else null_gain,
        "ap_tgn_largest_b": seed_metric(tgn_large),
        "ap_pres_largest_b": seed_metric(col("pres", largest)),
        "ap_tgn_smallest_b": seed_metric(col("tgn", smallest)),
        "pres_drop": seed_difference(col("pres", smallest), col("pres", largest)),
        "pres_vs_tgn_smallest_b": seed_difference(col("pres", largest),
                                                  col("tgn", smallest)),
        "ap_gain_stored_fusion": seed_difference(col("pres_stored_fusion", largest), tgn_large),
        "ap_gain_g05": seed_difference(col("pres_g0.5", largest), tgn_large),
        "ap_gain_coherence_only": seed_difference(col("pres_coherence_only", largest),
                                                  tgn_large),
        "epoch_time_ratio": float(np.mean(col("tgn", smallest, "epoch_cpu_s"))
                                  / np.mean(col("tgn", largest, "epoch_cpu_s"))),
        "pres_time_overhead": float(np.mean(col("pres", largest, "epoch_cpu_s"))
                                    / np.mean(col("tgn", largest, "epoch_cpu_s"))),
        "largest_b": largest, "seeds": n_seeds, "epochs": epochs,
        "wall_s": time.perf_counter() - t0,
    }

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
              "b, so a large b also means fewer optimiser steps (as in the paper's sweep). "
              "'pres' is the official placement (fused memory read by the embeddings only, "
              "gamma 0.9); 'pres_stored_fusion' is this project's variant that writes the fused "
              "state into the memory; 'pres_coherence_only' keeps PRES's coherence term with "
              "the correction off (gamma 0); 'tgn_reseeded' is the null arm. The transition "
              "statistics are exact per-node means (the official Filter never increments its "
              "count; see transition_stats.py). Epoch times are single-threaded CPU seconds. "
              "Checks run before reading a failure as 'not reproduced': "
              "memory_statistics_exact (gamma = 0 is plain TGN bit for bit, statistics "
              "exact) and the official defaults (gamma 0.9, beta 0.1, Adam 1e-3, 10 epochs, "
              "10 neighbours, evaluation batches of 200).",
    )


@claim(
    rule="stats_max_err < 1e-9 and inrun_stats_rel_err < 1e-4 and gamma0_memory_diff == 0 "
         "and gamma0_loss_diff == 0 and gamma0_ap_diff == 0",
    control="not (naive_stats_max_err < 1e-9) and gamma01_memory_diff > 0",
    paper="Sec. 4.1: PRES models memory transitions per node (mean and variance of the memory "
          "change) and fuses prediction and update with weight gamma; gamma = 0 is the plain "
          "MDGNN update. (The official Filter never increments its count, so its mean is 0/0.)",
    against=("numpy's exact per-node mean/variance of the same deltas; plain TGN (same seed) for "
             "the gamma = 0 reduction; null arms: a count-ignoring merge of the same deltas and "
             "PRES at gamma = 0.1"),
    resources={"cpus": 1},
)
def memory_statistics_exact(scale: Scale, seed: int) -> Measurement:
    """(1) MemoryTransitionStats (float64) fed random deltas in batches with repeated node ids
    equals numpy's per-node mean and population variance of all deltas (max abs error);
    (2) during a PRES (gamma 0.9) pass over a stream, the statistics equal the batch statistics
    of the changes PRES recorded (float32; error relative to max |delta|); (3) TGN trained with
    PRES at gamma = 0 and beta = 0 reproduces plain TGN exactly: memory after training,
    per-epoch losses and test AP.

    Control (added with issue 35's repair, before any run of it): the comparisons must be able
    to see a wrong answer. (a) A wrong statistic fed the same deltas, a streaming mean that
    merges each batch's mean with equal weight (ignoring the counts), must not pass the
    statistics threshold (``naive_stats_max_err``); (b) PRES at gamma = 0.1 (beta = 0), trained
    like the gamma = 0 run, must differ from plain TGN (``gamma01_memory_diff > 0``), else the
    exact-reduction check would pass whatever gamma does. Otherwise the test bed cannot tell."""
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
    naive = np.zeros((n_nodes, dim))  # the wrong statistic: mean <- (mean + batch mean) / 2
    naive_seen = np.zeros(n_nodes, dtype=bool)
    for nodes, delta in seen:
        for i in np.unique(nodes):
            batch_mean = delta[nodes == i].mean(0)
            naive[i] = (naive[i] + batch_mean) / 2 if naive_seen[i] else batch_mean
            naive_seen[i] = True
    all_nodes = np.concatenate([r[0] for r in seen])
    all_deltas = np.concatenate([r[1] for r in seen])
    naive_err = max(float(np.abs(naive[i] - all_deltas[all_nodes == i].mean(0)).max())
                    for i in np.unique(all_nodes))

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
        small_gamma = train_tgn(data, batch_size=200, epochs=2, use_pres=True, gamma=0.1,
                                beta=0.0, config=config, seed=seed)
        mem_small = small_gamma.train_end_state["memory"]["base.memory"]
        gamma01_diff = float((mem_plain - mem_small).abs().max())
    return Measurement(
        metrics={"stats_max_err": stats_err, "inrun_stats_rel_err": inrun_err / inrun_scale,
                 "inrun_updates": float(sum(len(r[0]) for r in recorded)),
                 "gamma0_memory_diff": memory_diff, "gamma0_loss_diff": loss_diff,
                 "gamma0_ap_diff": abs(ap_plain - ap_zero), "ap_plain": ap_plain,
                 "naive_stats_max_err": naive_err, "gamma01_memory_diff": gamma01_diff},
        notes="Streaming statistics merge each batch with Chan et al.'s update; errors are "
              "against numpy on all deltas at once. The gamma = 0 run uses PRESMemory with the "
              "coherence weight beta = 0, so it must match plain TGN bit for bit. Null arms: the "
              "count-ignoring merge (naive_stats_max_err) and gamma = 0.1 "
              "(gamma01_memory_diff) must both be caught.",
    )
