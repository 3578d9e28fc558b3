"""ZeRO++ claims: communication volume, convergence on par with ZeRO-3, block quantization error,
and a cross-check of the byte ledger against DeepSpeed's own collectives (ZeRO-3, hpZ).

Smoke runs use the single-process simulator (threads exchanging the real payloads). At ``small``,
``comm_volume`` runs 4 real processes over gloo; ``convergence`` stays in the simulator (its ~900
training steps over gloo on 2 cores would blow the 5-minute budget; the test suite checks that
simulator and gloo give bit-identical losses, gradients and bytes) and uses gloo at ``full``.
Throughput is not claimed: a 2-core machine has no slow cross-node links to save time on.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from iclr24.claims import Measurement, Scale, claim, seed_metric, sizes

from .analytic_volume import cross_node_volume, predicted_cross_node_bytes
from .block_quantization import block_dequantize, block_quantize
from .comm_ledger import CROSS, INTRA, CommLedger
from .engine import ZeroPPConfig
from .topology import Topology
from .training_runs import (
    TrainJob,
    digits_data,
    evaluate,
    mlp,
    one_step_job,
    run_job,
    train_job,
)

_TOPOLOGY = Topology(4, 2)  # N = 4 ranks on n = 2 simulated nodes (G = 2), node-major

_VOLUME_CONFIGS = {
    "zero3": ZeroPPConfig.zero3(),
    "qwz": ZeroPPConfig(8, False, None),
    "hpz": ZeroPPConfig(None, True, None),
    "qgz": ZeroPPConfig(None, False, 4),
    "zeropp": ZeroPPConfig(8, True, 4),
}


def _merge(snapshots) -> CommLedger:
    ledger = CommLedger(_TOPOLOGY)
    for snap in snapshots:
        ledger.absorb(snap)
    return ledger


def _weight_rel_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """||a - b|| / ||b|| over all parameters (relative L2 distance of two state dicts)."""
    num = sum(float(((a[k].double() - b[k].double()) ** 2).sum()) for k in b)
    den = sum(float((b[k].double() ** 2).sum()) for k in b)
    return math.sqrt(num / den)


def _update_rel_err(state: dict[str, torch.Tensor], ref: dict[str, torch.Tensor],
                    init: dict[str, torch.Tensor]) -> float:
    """||Δ - Δ_ref|| / ||Δ_ref|| with Δ = state - init: how far one step's update is from the
    reference run's update (relative L2 over all parameters)."""
    num = sum(float(((state[k].double() - ref[k].double()) ** 2).sum()) for k in ref)
    den = sum(float(((ref[k].double() - init[k].double()) ** 2).sum()) for k in ref)
    return math.sqrt(num / den)


@claim(
    rule="max_rel_err_vs_formula <= 0.01 and measured_ratio >= 4",
    control="zeropp_update_rel_err < 0.5",
    paper="§3, Table 1: ZeRO-3 moves 3M cross-node bytes per step, ZeRO++ 0.75M "
          "(0.5M qwZ + 0 hpZ + 0.25M qgZ): a 4x reduction.",
    paper_numbers={"measured_ratio": 4.0, "formula_ratio_384": 4.0},
    against=("ZeRO-3's cross-node bytes from the same ledger and run (the null arm: every "
             "ZeRO++ switch off); the paper's closed-form volume formula at N = 4 on 2 nodes; "
             "ZeRO-3's one-step update (fidelity control)"),
)
def comm_volume(scale: Scale, seed: int) -> Measurement:
    """Cross-node bytes per step leaving each node, measured by the byte ledger, for ZeRO-3 and
    each ZeRO++ switch, against the paper's closed form at N = 4 ranks on 2 nodes.

    An exact count, not an estimate: the ledger records the size of every payload the
    collectives send, bytes do not vary with the seed, so no interval is formed. Fails when a
    configuration's bytes miss the formula by more than 1% or ZeRO-3 / ZeRO++ is below 4x; the
    null arm, ZeRO-3 (every switch off) in the same run, has a ratio of exactly 1. Control:
    the bytes ZeRO++ saves must still carry the training step -- one SGD step of ZeRO++ must
    move the weights within 50% (relative L2) of ZeRO-3's step from the same weights and
    batch (``zeropp_update_rel_err``; int8 weights and two int4 gradient hops should cost a
    fraction of that, sending nothing or noise costs >= 100%); a transport that sent the right
    number of bytes of anything else would be caught there."""
    width = sizes(scale, smoke=512, small=512)
    layer_sizes = [width, width, width]  # two Linear(512, 512): 525k parameters
    transport = sizes(scale, smoke="simulator", small="gloo")
    init = mlp(layer_sizes, seed).state_dict()
    g = torch.Generator().manual_seed(seed)
    batch = (torch.randn(32, width, generator=g), torch.randint(0, width, (32,), generator=g))
    names = list(_VOLUME_CONFIGS)
    per_rank = run_job(one_step_job, _TOPOLOGY,
                       (layer_sizes, init, list(_VOLUME_CONFIGS.values()), batch, True),
                       transport)
    metrics: dict[str, float] = {}
    ref_state = per_rank[0][names.index("zero3")]["state"]
    rows = []
    shard_numels = per_rank[0][0]["shard_numels"]
    padded = sum(shard_numels) * _TOPOLOGY.world_size
    m_bytes = 2 * padded  # M: the model in fp16, as communicated (padding included)
    errs = []
    for i, name in enumerate(names):
        cfg = _VOLUME_CONFIGS[name]
        ledger = _merge(r[i]["ledger"] for r in per_rank)
        egress = ledger.egress_per_node(CROSS)
        measured = sum(egress) / len(egress) / m_bytes
        formula = cross_node_volume(4, 2, cfg.quantized_weights, cfg.hpz,
                                    cfg.quantized_gradients)
        exact = predicted_cross_node_bytes(shard_numels, _TOPOLOGY, cfg.quantized_weights,
                                           cfg.hpz, cfg.quantized_gradients, cfg.block_size,
                                           gradient_block_sizes=per_rank[0][i]["grad_blocks"])
        rel = abs(measured - formula["total"]) / formula["total"]
        errs.append(rel)
        intra = sum(ledger.egress_per_node(INTRA)) / len(egress) / m_bytes
        metrics[f"{name}_cross_over_M"] = measured
        metrics[f"{name}_formula"] = formula["total"]
        metrics[f"{name}_intra_over_M"] = intra
        metrics[f"{name}_exact_bytes_match"] = float(
            all(e == exact["total"] for e in egress))
        if name != "zero3":
            metrics[f"{name}_update_rel_err"] = _update_rel_err(per_rank[0][i]["state"],
                                                                ref_state, init)
        row = {"config": name, "cross_node_over_M": round(measured, 5),
               "formula_over_M": round(formula["total"], 5), "rel_err": round(rel, 5),
               "intra_node_over_M": round(intra, 5),
               "nodes_equal": len(set(egress)) == 1,
               "predicted_bytes_per_node": exact["total"], "measured_bytes_node0": egress[0],
               "hpz_secondary_bytes_per_rank": per_rank[0][i]["secondary_bytes"],
               "update_rel_err_vs_zero3": round(metrics.get(f"{name}_update_rel_err", 0.0), 5)}
        for phase in ("fwd_allgather", "bwd_allgather", "grad_reduce"):
            row[f"{phase}_over_M"] = round(
                sum(ledger.egress_per_node(CROSS, phase)) / len(egress) / m_bytes, 5)
        rows.append(row)
    metrics["max_rel_err_vs_formula"] = max(errs)
    metrics["measured_ratio"] = metrics["zero3_cross_over_M"] / metrics["zeropp_cross_over_M"]
    metrics["formula_ratio"] = metrics["zero3_formula"] / metrics["zeropp_formula"]
    big3 = cross_node_volume(384, 16)["total"]
    bigpp = cross_node_volume(384, 16, 8, True, 4)["total"]
    metrics["formula_zero3_384"] = big3
    metrics["formula_zeropp_384"] = bigpp
    metrics["formula_ratio_384"] = big3 / bigpp
    metrics["model_parameters"] = float(sum(p.numel() for p in init.values()))

    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    bottom = [0.0] * len(names)
    for phase, color in (("fwd_allgather", "tab:blue"), ("bwd_allgather", "tab:orange"),
                         ("grad_reduce", "tab:green")):
        vals = [r[f"{phase}_over_M"] for r in rows]
        ax.bar(names, vals, bottom=bottom, color=color, label=phase)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.scatter(names, [metrics[f"{n}_formula"] for n in names], color="black", marker="_",
               s=600, zorder=3, label="paper formula")
    ax.set_ylabel("cross-node bytes / node / step  (x M)")
    ax.set_title(f"N=4 ranks, 2 nodes ({transport}); ZeRO-3/ZeRO++ = "
                 f"{metrics['measured_ratio']:.2f}x")
    ax.legend(fontsize=8)
    fig.tight_layout()
    where = "real processes" if transport == "gloo" else "virtual ranks in one process"
    notes = (f"Measured with the byte ledger over {transport} ({where}); "
             "M = 2 bytes x padded parameter count. The formula neglects the fp32 block scales "
             "(one per 2048 weights for qwZ; one per max(dim0, dim1, N)-th of a layer for qgZ, "
             "DeepSpeed's rule), which is why measured sits a few tenths of a percent above it; "
             "'exact_bytes_match' compares with a prediction that counts scales and padding. "
             f"At 384 GPUs (24 nodes x 16) the formula gives {big3:.3f}M vs {bigpp:.3f}M "
             f"({big3 / bigpp:.2f}x). hpZ raises intra-node traffic and costs M/G bytes of memory "
             "per rank for the secondary copy (column hpz_secondary_bytes_per_rank). "
             "*_update_rel_err: ||Δ - Δ_ZeRO-3|| / ||Δ_ZeRO-3|| for the one SGD step (lr 0.01) "
             "each configuration took from the same weights and batch (the fidelity control: "
             "the saved bytes must still carry the step; hpZ alone is lossless).")
    return Measurement(metrics=metrics, figure=fig, tables={"bytes_per_step": rows}, notes=notes)


def _convergence_worker(comm, plan, layer_sizes, init_state, data):
    """All rows of the convergence claim, run in order on one job (SPMD)."""
    results = {}
    for name, job, start in plan:
        state = init_state if start is None else results[start]["checkpoint"]
        results[name] = train_job(comm, job, layer_sizes, state, data)
    return {name: {"losses": r["losses"], "state": r["state"], "checkpoint": r["checkpoint"]}
            for name, r in results.items()}


@claim(
    rule="q8_loss_ratio >= 0.98 and q8_loss_ratio <= 1.02",
    control="q2_pretrain_loss_ratio_min > 1.02 and q8_weight_rel_diff_min > 1e-4",
    paper="§5 / Fig. 8-9 (ICLR version): pretraining with 8-bit (and 6-bit) weight all-gather "
          "and 4-bit gradients matches ZeRO-3's loss; 4-/2-bit all-gather fine-tuning also "
          "converges (2-bit slightly worse).",
    paper_numbers={"q8_loss_ratio": 1.0, "q6_loss_ratio": 1.0},
    against=("ZeRO-3 (fp16 communication) from the same init, batches and order; ZeRO-3 "
             "fine-tuned from the same checkpoint; positive control: a 2-bit weight all-gather "
             "trained from the same init in the same run"),
)
def convergence(scale: Scale, seed: int, progress=None) -> Measurement:
    """Final training loss of ZeRO++ (qwZ at 8/6 bits + hpZ + int4 qgZ) vs ZeRO-3 on digits, and
    4-/2-bit qwZ fine-tuning from the ZeRO-3 half-way checkpoint; same seeds and data order.
    Loss ratios are per seed (each seed: its own initialization and batch order, shared by
    all runs); the rule asks the whole 95% t interval of the 8-bit ratio to lie within 2% of
    1 (an equivalence test: an interval that straddles the band's edge is inconclusive, one
    wholly outside it fails).

    An equivalence rule also holds when nothing was quantized (ZeRO-3 against itself gives a
    ratio of exactly 1), so the control asks the run to show that it can tell: (1) a positive
    control, ZeRO++ with a 2-bit (ternary) weight all-gather trained from the same init, batches
    and order in the same run (``q2_pretrain``; not a setting the paper claims), leaves the 2%
    band on every seed (``q2_pretrain_loss_ratio_min > 1.02``): the band detects a quantizer
    known to hurt; (2) the judged 8-bit run really differs from ZeRO-3: its final fp32 weights
    are more than 1e-4 (relative L2) away from ZeRO-3's on every seed (the engine is
    deterministic, so a run whose quantization was skipped would sit at exactly 0). If
    quantization were silently switched off, both would fail and the verdict would be
    inconclusive ("the test bed cannot tell")."""
    return _convergence_measurement(scale, seed, progress)


def _convergence_measurement(scale: Scale, seed: int, progress=None, *,
                             quantize: bool = True) -> Measurement:
    """The runs of :func:`convergence`. ``quantize=False`` is the claim's null arm: every
    ZeRO++ run keeps hpZ but its qwZ and qgZ are switched off (what a silently skipped
    quantizer would give), with the same names, so the rule and control can be read on it."""
    hidden = sizes(scale, smoke=64, small=256)
    steps = sizes(scale, smoke=16, small=200, full=300)
    n_seeds = sizes(scale, smoke=1, small=3)
    transport = sizes(scale, smoke="simulator", small="simulator", full="gloo")
    layer_sizes = [64, hidden, hidden, 10]
    half = steps // 2

    def pp(bits, grad_bits=4):
        if not quantize:
            return ZeroPPConfig(None, True, None)
        return ZeroPPConfig(bits, True, grad_bits)

    per_seed: dict[str, list[float]] = {}
    curves = {}
    rows = []
    for s in range(n_seeds):
        run_seed = seed + s
        data = digits_data(run_seed)
        init = mlp(layer_sizes, run_seed).state_dict()

        def job(cfg, n, ckpt=None, _seed=run_seed):
            return TrainJob(cfg, n, global_batch=64, lr=1e-3, data_seed=_seed,
                            checkpoint_step=ckpt)

        plan = [("zero3", job(ZeroPPConfig.zero3(), steps, half), None),
                ("q8", job(pp(8), steps), None),
                ("q6", job(pp(6), steps), None),
                ("q8_fp16grads", job(pp(8, None), steps), None),
                ("q2_pretrain", job(pp(2), steps), None),
                ("ft_zero3", job(ZeroPPConfig.zero3(), half), "zero3"),
                ("ft_q4", job(pp(4), half), "zero3"),
                ("ft_q2", job(pp(2), half), "zero3")]
        if progress:
            progress(0.05 + 0.9 * s / n_seeds,
                     f"seed {run_seed}: training {len(plan)} runs over {transport}")
        per_rank = run_job(_convergence_worker, _TOPOLOGY, (plan, layer_sizes, init, data),
                           transport)
        values: dict[str, float] = {}
        for name, job_, start in plan:
            losses = torch.tensor([r[name]["losses"] for r in per_rank]).mean(0)  # global batch
            if s == 0:
                curves[name] = losses
            state = per_rank[0][name]["state"]
            tr_loss, _tr_acc = evaluate(layer_sizes, state, data["x_train"], data["y_train"])
            te_loss, te_acc = evaluate(layer_sizes, state, data["x_test"], data["y_test"])
            key = {"ft_q4": "q4", "ft_q2": "q2"}.get(name, name)
            values[f"{key}_final_loss"] = tr_loss
            values[f"{key}_test_loss"] = te_loss
            values[f"{key}_test_acc"] = te_acc
            rows.append({"seed": run_seed, "run": name,
                         "weights": job_.config.quantized_weights or "fp16",
                         "hpz": job_.config.hpz, "grads": job_.config.quantized_gradients or "fp16",
                         "start": start or "init", "steps": job_.steps,
                         "final_train_loss": round(tr_loss, 5), "test_loss": round(te_loss, 5),
                         "test_acc": round(te_acc, 4)})
        base, ft_base = values["zero3_final_loss"], values["ft_zero3_final_loss"]
        values["q8_loss_ratio"] = values["q8_final_loss"] / base
        values["q6_loss_ratio"] = values["q6_final_loss"] / base
        values["q8_fp16grads_loss_ratio"] = values["q8_fp16grads_final_loss"] / base
        values["q2_pretrain_loss_ratio"] = values["q2_pretrain_final_loss"] / base
        values["q4_ft_loss_ratio"] = values["q4_final_loss"] / ft_base
        values["q2_ft_loss_ratio"] = values["q2_final_loss"] / ft_base
        values["q8_weight_rel_diff"] = _weight_rel_diff(per_rank[0]["q8"]["state"],
                                                        per_rank[0]["zero3"]["state"])
        for key, value in values.items():
            per_seed.setdefault(key, []).append(value)
    metrics = {key: seed_metric(vals) for key, vals in per_seed.items()}
    metrics["q2_pretrain_loss_ratio_min"] = min(per_seed["q2_pretrain_loss_ratio"])
    metrics["q8_weight_rel_diff_min"] = min(per_seed["q8_weight_rel_diff"])
    metrics["n_seeds"] = n_seeds

    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    for name, _, start in plan:  # the first seed's curves
        offset = half if start else 0
        xs = list(range(offset + 1, offset + 1 + len(curves[name])))
        ax.plot(xs, curves[name].tolist(), label=name, lw=1.2,
                ls="--" if start else ":" if name == "q2_pretrain" else "-")
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("global batch loss")
    ax.set_title(f"digits MLP {'-'.join(map(str, layer_sizes))}, N=4 on 2 nodes ({transport})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    notes = (f"{n_seeds} seed(s); loss ratios are per seed, then a 95% t interval over seeds. "
             "Rows q8/q6: ZeRO++ (qwZ at 8/6 bits with 2048-element blocks, hpZ, int4 qgZ with "
             "DeepSpeed's group rule) trained from the "
             "same initialization, batches and order as ZeRO-3 (fp16 communication). Rows "
             "q4/q2: fine-tuning from ZeRO-3's half-way checkpoint with 4-/2-bit qwZ, compared "
             "with ZeRO-3 fine-tuned from the same checkpoint (fresh Adam, same batches). Losses "
             "are the full training-set cross-entropy of the final fp32 master weights. 2-bit "
             "symmetric codes are ternary, so the 2-bit row is expected to lag. Diagnostic row "
             "q8_fp16grads (qwZ 8-bit + hpZ, gradients in fp16) separates the weight and "
             "gradient quantization effects: when q8 misses the 2% band and q8_fp16grads does "
             "not, the gap comes from int4 gradients (qgZ), not from 8-bit weights. Control "
             "rows: q2_pretrain (2-bit qwZ + hpZ + int4 qgZ from the same init as ZeRO-3, a "
             "positive control the band must catch on every seed) and q8_weight_rel_diff "
             "(relative L2 distance of the 8-bit run's final weights from ZeRO-3's; exactly 0 "
             "if nothing were quantized). The digits "
             "MLP reaches a training loss near 0.01, where 2% is 0.0002 nats; compare the test "
             "losses and accuracies too.")
    return Measurement(metrics=metrics, figure=fig, tables={"runs": rows}, notes=notes)


def _relative_error(tensors, bits, block_size):
    """sqrt(sum ||x - Q(x)||^2 / sum ||x||^2) over tensors; block_size None = one per tensor."""
    num = den = 0.0
    for t in tensors:
        flat = t.detach().reshape(-1).float()
        b = flat.numel() if block_size is None else block_size
        deq = block_dequantize(block_quantize(flat, bits, b))
        num += float(((deq - flat) ** 2).sum())
        den += float((flat ** 2).sum())
    return math.sqrt(num / den)


def _trained_tensors(layer_sizes, train_steps: int, seed: int):
    """Weights and one mini-batch gradient of the digits MLP after ``train_steps`` Adam steps."""
    data = digits_data(seed)
    model = mlp(layer_sizes, seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(seed)
    x, y = data["x_train"], data["y_train"]
    for _ in range(train_steps):
        idx = torch.randint(0, len(y), (64,), generator=g)
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    opt.zero_grad()
    idx = torch.randint(0, len(y), (64,), generator=g)
    F.cross_entropy(model(x[idx]), y[idx]).backward()
    return ([p.detach() for p in model.parameters()],
            [p.grad.detach() for p in model.parameters()])


@claim(
    rule="weight_ratio_int8 >= 2 and grad_ratio_int8 >= 2",
    paper="§3.1 (qwZ): block-based quantization has a much lower quantization error than one "
          "scale per tensor, which is why qwZ quantizes in blocks.",
    against=("the same quantizer with one scale per parameter tensor (the blocking switched "
             "off), on the same weights and gradients"),
)
def block_quantization_error(scale: Scale, seed: int) -> Measurement:
    """Relative L2 error of int8/int4 quantization with block sizes 256..8192 vs one scale per
    parameter tensor, on the weights and gradients of a digits MLP after brief training.

    The ratio per-tensor error / block-2048 error is computed per seed (each seed: its own
    initialization, training batches and gradient batch); at small, 3 seeds and a 95% t interval
    over them. Holds when the whole interval of both the weight and the gradient ratio (int8)
    is at least 2 (the paper's "much lower"), fails when either lies wholly below 2. The
    baseline is the null arm itself: the same quantizer with the blocking switched off (one
    block per tensor), measured on the same tensors; it scores exactly 1."""
    hidden = sizes(scale, smoke=256, small=256)
    train_steps = sizes(scale, smoke=50, small=200)
    n_seeds = sizes(scale, smoke=1, small=3)
    layer_sizes = [64, hidden, hidden, 10]
    blocks = [256, 512, 1024, 2048, 4096, 8192]
    rows, per_seed = [], {}
    for s in range(n_seeds):
        weights, grads = _trained_tensors(layer_sizes, train_steps, seed + s)
        values = {}
        for kind, tensors in (("weight", weights), ("grad", grads)):
            for bits in (8, 4):
                whole = _relative_error(tensors, bits, None)
                row = {"seed": seed + s, "tensors": kind, "bits": bits,
                       "per_tensor": round(whole, 6)}
                for b in blocks:
                    err = _relative_error(tensors, bits, b)
                    row[f"block_{b}"] = round(err, 6)
                    if b == 2048:
                        values[f"{kind}_int{bits}_block2048"] = err
                values[f"{kind}_int{bits}_per_tensor"] = whole
                values[f"{kind}_ratio_int{bits}"] = whole / values[f"{kind}_int{bits}_block2048"]
                rows.append(row)
        for key, value in values.items():
            per_seed.setdefault(key, []).append(value)
    metrics = {key: seed_metric(vals) for key, vals in per_seed.items()}
    metrics["n_seeds"] = n_seeds

    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.4))
    ax = fig.add_subplot(1, 1, 1)
    for row in (r for r in rows if r["seed"] == seed):   # the first seed
        line = ax.plot(blocks, [row[f"block_{b}"] for b in blocks], marker="o",
                       label=f"{row['tensors']} int{row['bits']}")[0]
        ax.axhline(row["per_tensor"], color=line.get_color(), ls=":", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("block size (elements)")
    ax.set_ylabel("relative L2 error")
    ax.set_title(f"block quantization (solid) vs one scale per tensor (dotted), seed {seed}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    notes = ("Tensors are the MLP's parameter tensors (64x256, 256x256, 256x10 weights and the "
             "biases) after a short Adam run, and one mini-batch gradient. 'per_tensor' uses one "
             "symmetric scale per tensor; block errors use the same quantizer with blocks of "
             "consecutive elements. Blocks help as much as magnitudes vary within a tensor: a "
             "tensor whose values share one scale gains little, one with outliers or dead "
             f"rows/columns gains a lot. {n_seeds} seed(s): ratios per seed, then a 95% t "
             "interval over seeds.")
    return Measurement(metrics=metrics, figure=fig, tables={"errors": rows}, notes=notes)


@claim(
    rule="max_rel_diff_zero3 <= 0.01 and max_rel_diff_hpz <= 0.01",
    control="null_rel_diff_swapped > 0.01",
    paper="§3.2 / Table 1 (and DeepSpeed's implementation of ZeRO-3 and hpZ): ZeRO-3 moves a "
          "forward and a backward all-gather and a gradient reduce-scatter across nodes; hpZ "
          "keeps the backward all-gather inside the node (0 cross-node bytes). Cross-check: "
          "our byte ledger equals what DeepSpeed's own collectives move for the same model "
          "and ranks.",
    paper_numbers={"zero3_over_hpz_deepspeed": 1.5},
    against=("DeepSpeed's own ZeRO-3 and hpZ collectives on the same model and ranks, priced "
             "with the ring schedule; null arm: each of our ledgers against DeepSpeed's other "
             "configuration"),
    resources={"cpus": 2},
    scales=("small", "full"),
)
def deepspeed_cross_check(scale: Scale, seed: int) -> Measurement:
    """One training step of the same 2-layer MLP (525k parameters) on N = 4 ranks over 2
    simulated nodes: cross-node bytes per node and phase from our engine's ledger vs from the
    collectives DeepSpeed ZeRO-3 issues (4 gloo processes, ``DS_ACCELERATOR=cpu``, bf16),
    for ZeRO-3 and hpZ. Needs the ``deepspeed`` extra; qwZ/qgZ are CUDA-only in DeepSpeed.

    An exact comparison of byte counts (both sides are deterministic), so no interval is
    formed; fails when any phase on any node differs by more than 1% of that node's traffic.
    Control: the comparison must be able to tell the two configurations apart -- our ZeRO-3
    ledger against DeepSpeed's hpZ run, and our hpZ ledger against DeepSpeed's ZeRO-3 run (the
    swapped pairs, the null arm), must both differ by more than 1%
    (``null_rel_diff_swapped``, the smaller of the two); otherwise a match would say nothing
    about hpZ.

    Not run at smoke: its smallest honest form (4 ranks, the fewest with two nodes of two)
    starts four processes that each import torch and DeepSpeed and build an engine, ~57 s of
    CPU in all, past the 20 s a paper may use at smoke; the test suite runs it."""
    from .deepspeed_reference import (
        deepspeed_available,
        deepspeed_step_job,
        max_relative_difference,
        ring_cross_node_egress,
    )

    if not deepspeed_available():
        raise ImportError("deepspeed_cross_check needs DeepSpeed: pip install -e '.[deepspeed]'")
    width = sizes(scale, smoke=512, small=512)
    layer_sizes = [width, width, width]
    init = mlp(layer_sizes, seed).state_dict()
    g = torch.Generator().manual_seed(seed)
    batch = (torch.randn(32, width, generator=g), torch.randint(0, width, (32,), generator=g))
    configs = {"zero3": ZeroPPConfig.zero3(), "hpz": ZeroPPConfig(None, True, None)}
    ours_runs = run_job(one_step_job, _TOPOLOGY,
                        (layer_sizes, init, list(configs.values()), batch), "simulator")
    ds_runs = run_job(deepspeed_step_job, _TOPOLOGY,
                      (layer_sizes, init, batch, [cfg.hpz for cfg in configs.values()]), "gloo")
    phases = ("fwd_allgather", "bwd_allgather", "grad_reduce")
    m_bytes = 2 * sum(p.numel() for p in init.values())  # M: the model in 16-bit elements
    metrics: dict[str, float] = {}
    rows, calls = [], []
    totals, ours_by, ref_by = {}, {}, {}
    for i, name in enumerate(configs):
        ledger = _merge(r[i]["ledger"] for r in ours_runs)
        ours = ours_by[name] = {ph: ledger.egress_per_node(CROSS, ph) for ph in phases}
        records = [rec for rank in ds_runs for rec in rank[i]]
        ref = ref_by[name] = ring_cross_node_egress(records, _TOPOLOGY)
        metrics[f"max_rel_diff_{name}"] = max_relative_difference(ours, ref)
        totals[name] = (sum(sum(v) for v in ours.values()), sum(sum(v) for v in ref.values()))
        metrics[f"{name}_cross_over_M_ours"] = totals[name][0] / _TOPOLOGY.num_nodes / m_bytes
        metrics[f"{name}_cross_over_M_deepspeed"] = totals[name][1] / _TOPOLOGY.num_nodes / m_bytes
        for ph in phases:
            rows.append({"config": name, "phase": ph, "ours_bytes_per_node": ours[ph],
                         "deepspeed_bytes_per_node": ref[ph],
                         "ours_over_M": round(sum(ours[ph]) / len(ours[ph]) / m_bytes, 5),
                         "deepspeed_over_M": round(sum(ref[ph]) / len(ref[ph]) / m_bytes, 5)})
        for rec in ds_runs[0][i]:  # rank 0's calls in the measured step
            calls.append({"config": name, "phase": rec.phase, "op": rec.op,
                          "group": list(rec.group), "in_bytes": rec.in_bytes,
                          "out_bytes": rec.out_bytes})
    metrics["null_rel_diff_swapped"] = min(
        max_relative_difference(ours_by["zero3"], ref_by["hpz"]),
        max_relative_difference(ours_by["hpz"], ref_by["zero3"]))
    metrics["zero3_over_hpz_ours"] = totals["zero3"][0] / totals["hpz"][0]
    metrics["zero3_over_hpz_deepspeed"] = totals["zero3"][1] / totals["hpz"][1]
    metrics["deepspeed_calls_per_step_rank0_zero3"] = float(
        sum(1 for c in calls if c["config"] == "zero3"))
    notes = ("Ours: the engine's byte ledger (simulator; bit-identical to gloo, see the tests), "
             "fp16 payloads. DeepSpeed 0.19 ZeRO stage 3 on 4 gloo processes (bf16, SGD, "
             "stage3_max_reuse_distance=0, prefetch 0, persistence threshold 0; hpZ: "
             "zero_hpz_partition_size=2), second training step; every torch.distributed "
             "collective it issues is recorded (table deepspeed_calls: rank 0) and priced with "
             "the ring schedule (rank i sends to the next rank of its group). This checks "
             "which collectives run, over which groups and with how many bytes; it does not "
             "measure gloo's wire bytes. The few-byte broadcasts and all-reduces DeepSpeed "
             "issues for bookkeeping are listed but not counted. qwZ and qgZ raise 'not "
             "implemented on CPU backend' in DeepSpeed, so they are not cross-checked.")
    return Measurement(metrics=metrics, tables={"cross_node_bytes": rows,
                                                "deepspeed_calls": calls}, notes=notes)
