"""RQGNN claims: RQ-aware detection of spectral anomalies (the main comparison, on synthetic
graphs whose classes differ only in accumulated spectral energy) and the Rayleigh-quotient /
spectral-energy identity (paper Sec. 3). Each claim measures its null arm in the same run and
its ``control`` requires that the null does not pass the rule: RQGNN on node-permuted features
(``spectral_anomalies``), the Rayleigh quotient of node-permuted features against the
eigen-decomposition of the true graph (``rayleigh_identity``)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .arms import ARMS, GNN_BASELINES, ArmConfig, run_comparison
from .rayleigh import rayleigh_quotient
from .spectral_energy import dense_spectral_energy, edge_case_graphs
from .synthetic_gad import permute_node_features

_SHORT = {"auc": "auc", "macro_f1": "f1"}


def _comparison_metrics(results: dict[str, dict[str, list[float]]]) -> dict:
    """From ``{arm: {"auc": [...], "macro_f1": [...]}}`` (one entry per seed): per-arm AUC / F1
    over seeds; the best GNN baseline by mean AUC (``auc_best_baseline``, its index into
    GNN_BASELINES ``best_baseline``); paired gains over it of RQGNN (``auc_gain``, ``f1_gain``,
    judged), of the null arm (``*_gain_permuted``) and of the ablation (``*_gain_norq``); RQGNN's
    paired gain over every other arm (``*_gain_vs_<arm>``, reported)."""
    metrics: dict[str, object] = {}
    for arm, res in results.items():
        for key, short in _SHORT.items():
            metrics[f"{short}_{arm}"] = seed_metric(res[key])
    best = max(GNN_BASELINES, key=lambda a: np.mean(results[a]["auc"]))
    metrics["auc_best_baseline"] = seed_metric(results[best]["auc"])
    metrics["best_baseline"] = float(GNN_BASELINES.index(best))
    for key, short in _SHORT.items():
        for arm, suffix in (("rqgnn", ""), ("rqgnn_permuted", "_permuted"),
                            ("rqgnn_norq", "_norq")):
            metrics[f"{short}_gain{suffix}"] = seed_difference(results[arm][key],
                                                               results[best][key])
        for arm in ARMS[1:]:
            metrics[f"{short}_gain_vs_{arm}"] = seed_difference(results["rqgnn"][key],
                                                                results[arm][key])
    return metrics


@claim(
    rule="auc_gain > 0 and f1_gain > 0",
    control="auc_best_baseline < 0.95 and auc_logreg_rq >= 0.8 "
            "and not (auc_gain_permuted > 0 and f1_gain_permuted > 0)",
    paper="Abstract and main results table: on 10 TUDataset anticancer screens RQGNN beats the best rival "
          "(spectral GNNs GCN, GIN, ChebyNet, BernNet, graph classifiers and graph-level anomaly "
          "detectors) by 6.74 Macro-F1 points and 1.44 AUC points on average; the ablation shows "
          "that removing RQL or RQ-pooling costs accuracy.",
    paper_numbers={"auc_gain": 0.0144, "f1_gain": 0.0674},
    against=("the best by mean AUC of GIN, GCN and ChebNet on the same splits, loss and epochs; "
             "null arm: RQGNN on node-permuted features; positive control: logistic regression "
             "on r_G; RQGNN without its RQ mechanism (ablation) reported"),
    resources={"cpus": 1},
)
def spectral_anomalies(scale: Scale, seed: int, progress=None) -> Measurement:
    """RQGNN against GIN (sum pool), GCN (mean pool) and ChebNet (mean pool) on synthetic graphs
    (10% anomalous, ``make_spectral_energy_gad``) whose classes differ only in the accumulated
    spectral energy of 4 real-valued channels (heat-smoothed noise, t = 1.5 normal, t = 1
    anomalous; :mod:`.synthetic_gad` says how t was set), each graph scaled by a log-uniform
    amplitude in [0.1, 10] so that only the scale-free spread of the energy over the spectrum
    (its mean: the Rayleigh quotient) carries the class. Same 70/15/15 stratified split,
    class-balanced focal loss, optimiser and epochs for every GNN; test AUC at the best-val-AUC
    checkpoint, Macro-F1 (arg-max) at the best-val-F1 checkpoint; single-threaded, seeds run one
    after the other.

    Rule (the paper's headline, unchanged in substance): RQGNN beats the best GNN baseline (the
    one with the highest mean AUC) on both AUC and Macro-F1, paired differences over the seeds
    (3 at small) whose 95% intervals lie above 0. It fails if a spectrum-agnostic GNN detects
    the anomalies as well.

    Control (issue 35, written before the test bed was run at small). The old test bed (one-hot
    types, shuffle_frac 0.3) saturated: ChebNet AUC 1.000, RQGNN 0.999, so no gain could show.
    Now the verdict counts only if (1) the test bed is not at the ceiling for the baselines: the
    best baseline's AUC < 0.95; (2) the spectral signal is there: logistic regression on r_G
    alone reaches AUC >= 0.8 (positive control); (3) the null arm, RQGNN trained and tested on
    the same graphs with node features permuted within each graph (every per-graph feature
    statistic kept, spectral placement destroyed), does not pass the rule; if it did, the class
    would leak through feature statistics, not the spectrum. The ablation RQGNN without RQL and
    RQ-pooling (``*_norq``) is reported, not judged: on a near-tie its gain interval straddles 0
    and a control on it could never be true."""
    progress = progress or (lambda *a, **k: None)
    num_graphs = sizes(scale, smoke=300, small=2000)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    config = sizes(scale, smoke=ArmConfig(hidden=16, cheb_k=3, epochs=10),
                   small=ArmConfig(epochs=20), full=ArmConfig(epochs=100, batch_size=512))
    results: dict[str, dict[str, list[float]]] = {arm: {"auc": [], "macro_f1": []}
                                                  for arm in ARMS}
    rows = []
    for k, rep in enumerate(seeds):
        out = run_comparison(num_graphs, rep, config)
        for arm in ARMS:
            for key in ("auc", "macro_f1"):
                results[arm][key].append(out[arm][key])
            rows.append({"seed": rep, "arm": arm, **out[arm]})
        progress((k + 1) / len(seeds), f"seed {k + 1}/{len(seeds)} done")
    metrics = _comparison_metrics(results)
    summary = [{"arm": arm, **{f"{short}_{stat}": float(fn(results[arm][key]))
                               for key, short in _SHORT.items()
                               for stat, fn in (("mean", np.mean), ("std", np.std))}}
               for arm in ARMS]

    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.6))
    for k, short in enumerate(("auc", "f1")):
        ax = fig.add_subplot(1, 2, k + 1)
        ax.bar(np.arange(len(ARMS)), [r[f"{short}_mean"] for r in summary],
               yerr=[r[f"{short}_std"] for r in summary], color="tab:blue")
        ax.set_xticks(np.arange(len(ARMS)), ARMS, rotation=25, fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.set_title("test AUC" if short == "auc" else "test Macro-F1")
    fig.tight_layout()
    notes = (f"{num_graphs} graphs per seed (10% anomalous, n in 20..40, 4 channels), "
             f"{len(seeds)} seed(s), {config.epochs} epochs, batch {config.batch_size}, hidden "
             f"{config.hidden}, K = {config.cheb_k}. Every GNN arm trains with the class-balanced "
             "focal loss. best_baseline is the index into (gin, gcn, chebnet) of the best GNN "
             "baseline by mean AUC, the arm the gains are measured against. Synthetic stand-in "
             "for the TU anticancer screens (download-only) built so that only the scale-free "
             "spectral energy carries the class (the amplitude nuisance is this test bed's, not "
             "the paper's): it tests the implementation and the direction of the comparison, not "
             "the paper's margins.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"per_seed": rows, "summary": summary}, notes=notes)


@claim(
    rule="max_abs_err < 1e-5 and max_rel_err_code < 1e-5",
    control="not (null_max_abs_err < 1e-5 and null_max_rel_err_code < 1e-5)",
    paper="Sec. 3: the accumulated spectral energy of a graph signal, sum_k lambda_k x_hat_k^2 / "
          "sum_k x_hat_k^2 with x_hat = U^T x, equals its Rayleigh quotient x^T L x / x^T x; the "
          "motivating figure shows a clear gap in this quantity between anomalous and normal graphs.",
    against=("the closed form: spectral energy from float64 numpy eigh of the dense normalised "
             "Laplacian; diag(X^T L X) with scipy's Laplacian as the official code; null arm: "
             "the same quotients of node-permuted features"),
    resources={"cpus": 1},
)
def rayleigh_identity(scale: Scale, seed: int) -> Measurement:
    """``rayleigh_quotient`` (float32 message passing over a PyG batch) against the spectral
    energy from ``numpy.linalg.eigh`` of the dense normalised Laplacian (float64), on trees,
    grids and rings of cliques with isolated nodes appended, a zero channel and Gaussian
    features, and on spectral-GAD graphs. ``max_abs_err`` is the largest |difference| (the paper's
    normalisation); ``max_rel_err_code`` compares ``normalize=False`` with the official code's
    diag(X^T L X) (scipy ``csgraph.laplacian(normed=True)``), relative to max(1, |value|).
    ``rq_gap`` (mean r_G of anomalous minus normal graphs, shuffle_frac 0.5) is reported: the
    motivating observation of the paper, which the synthetic data builds in.

    Null arm (issue 35), in the same run: both quantities computed by message passing from the
    features permuted over the nodes of each graph (same graph, same per-channel values, wrong
    placement) and compared with the same dense references of the true features
    (``null_max_abs_err``, ``null_max_rel_err_code``). Control: the null does not pass the rule,
    i.e. the tolerance 1e-5 can tell the Rayleigh quotient of this signal from that of another
    signal with the same values on the same graph; otherwise the test bed cannot tell."""
    import torch
    from torch_geometric.data import Batch

    from iclr24.kits.threads import single_threaded

    num = sizes(scale, smoke=40, small=300)
    with single_threaded():
        graphs = edge_case_graphs(num, seed=seed)
        errs, rel_code, gaps = [], [], {0: [], 1: []}
        null_errs, null_rel_code = [], []
        for group in (graphs[:num], graphs[num:]):
            b = Batch.from_data_list(group)
            bp = Batch.from_data_list(permute_node_features(group, seed=seed))  # the null arm
            with torch.no_grad():
                ours, code, null, null_code = (
                    rayleigh_quotient(bb.x, bb.edge_index, bb.batch, normalize=norm,
                                      num_graphs=bb.num_graphs)
                    for bb, norm in ((b, True), (b, False), (bp, True), (bp, False)))
            for i, g in enumerate(group):
                paper, diag = dense_spectral_energy(g)
                for e, rel, rq, xlx in ((errs, rel_code, ours, code),
                                        (null_errs, null_rel_code, null, null_code)):
                    e.append(float(np.abs(rq[i].double().numpy() - paper).max()))
                    rel.append(float((np.abs(xlx[i].double().numpy() - diag)
                                      / np.maximum(1.0, np.abs(diag))).max()))
                if g.y is not None:
                    gaps[int(g.y)].append(float(ours[i].mean()))
    isolated = sum(int((torch.bincount(g.edge_index[0], minlength=g.num_nodes) == 0).any())
                   for g in graphs)
    return Measurement(
        metrics={"max_abs_err": max(errs), "max_rel_err_code": max(rel_code),
                 "null_max_abs_err": max(null_errs), "null_max_rel_err_code": max(null_rel_code),
                 "rq_gap": float(np.mean(gaps[1]) - np.mean(gaps[0])),
                 "num_graphs": float(len(graphs)), "graphs_with_isolated_nodes": float(isolated)},
        tables={"errors": [{"graph": i, "abs_err": e, "rel_err_code": c}
                           for i, (e, c) in enumerate(zip(errs, rel_code))][:50]},
        notes="Exact identity checked in float32 against float64 eigh; errors are rounding.")
