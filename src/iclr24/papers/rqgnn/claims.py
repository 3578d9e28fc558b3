"""RQGNN claims: RQ-aware detection of spectral anomalies (the main comparison, on synthetic
graphs) and the Rayleigh-quotient / spectral-energy identity (paper Sec. 3)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .arms import ARMS, GNN_BASELINES, ArmConfig, run_comparison
from .rayleigh import rayleigh_quotient
from .spectral_energy import dense_spectral_energy, edge_case_graphs

_FRACS = {"full": 1.0, "partial": 0.3}  # metric suffix -> shuffle_frac


def _comparison_metrics(results: dict[tuple[str, str], dict[str, list[float]]]) -> dict:
    """Per-arm AUC / F1 (over seeds) and RQGNN's paired gains over the best GNN baseline by mean
    (judged) and over every other arm (reported), from ``{(arm, suffix): {"auc": [...], "macro_f1":
    [...]}}`` with one entry per seed."""
    metrics: dict[str, object] = {}
    for (arm, suffix), res in results.items():
        metrics[f"auc_{arm}_{suffix}"] = seed_metric(res["auc"])
        metrics[f"f1_{arm}_{suffix}"] = seed_metric(res["macro_f1"])
    for suffix in _FRACS:
        for key, short in (("auc", "auc"), ("macro_f1", "f1")):
            best = max(GNN_BASELINES, key=lambda a: np.mean(results[(a, suffix)][key]))
            metrics[f"{short}_gain_{suffix}"] = seed_difference(
                results[("rqgnn", suffix)][key], results[(best, suffix)][key])
            for arm in ARMS[1:]:  # every pairwise gain, reported beside the judged one
                metrics[f"{short}_gain_vs_{arm}_{suffix}"] = seed_difference(
                    results[("rqgnn", suffix)][key], results[(arm, suffix)][key])
            metrics[f"{short}_best_baseline_{suffix}"] = float(GNN_BASELINES.index(best))
    return metrics


@claim(
    rule={"smoke": "auc_gain_partial > -0.1",
          "small": "auc_rqgnn_full >= 0.9 and auc_gain_partial > 0 and f1_gain_partial > 0"},
    paper="Abstract and main results table: on 10 TUDataset anticancer screens RQGNN beats the best rival "
          "(spectral GNNs GCN, GIN, ChebyNet, BernNet, graph classifiers and graph-level anomaly "
          "detectors) by 6.74 Macro-F1 points and 1.44 AUC points on average; the ablation shows "
          "that removing RQL or RQ-pooling costs accuracy.",
    paper_numbers={"auc_gain_partial": 0.0144, "f1_gain_partial": 0.0674},
    against=("the best by mean of GIN, GCN and a ChebNet ablation (no RQ branch or RQ-pooling) on "
             "the same splits, loss and epochs; logistic regression on r_G shown"),
    resources={"cpus": {"smoke": 1, "small": 2}},
)
def spectral_anomalies(scale: Scale, seed: int, progress=None) -> Measurement:
    """RQGNN against GIN (sum pool), GCN (mean pool), a ChebNet ablation (the same Chebyshev
    filters, mean pool, no RQ branch, no RQ-pooling) and logistic regression on r_G alone, on
    synthetic graphs (10% anomalous) whose classes differ only in where node types sit
    (``make_spectral_gad``), at shuffle_frac 1 (easy, suffix ``_full``) and 0.3 (suffix
    ``_partial``). Same 70/15/15 stratified split, loss, optimiser and epochs for every GNN;
    test AUC at the best-val-AUC checkpoint, Macro-F1 at the best-val-F1 checkpoint. At small,
    the six (seed, shuffle_frac) datasets run two at a time (joblib), each single-threaded, for
    15 epochs (20 took ~626 s of CPU over the two workers, past the 5-minute budget).

    Rule (small): RQGNN is near-perfect when the anomaly is blatant (AUC >= 0.9 over the whole
    interval at shuffle_frac 1) and, at shuffle_frac 0.3, beats the best GNN baseline (the one
    with the highest mean) on both AUC and Macro-F1: paired differences over 3 seeds with 95%
    intervals above 0. Logistic regression on r_G is reported, not judged (it is not a paper
    rival). It fails if the subtle anomalies are found as well by a spectrum-agnostic GNN."""
    progress = progress or (lambda *a, **k: None)
    num_graphs = sizes(scale, smoke=300, small=2000)
    seeds = [seed + i for i in range(sizes(scale, smoke=1, small=3))]
    config = sizes(scale, smoke=ArmConfig(hidden=16, cheb_k=3, epochs=3),
                   small=ArmConfig(epochs=15), full=ArmConfig(epochs=100, batch_size=512))
    n_jobs = sizes(scale, smoke=1, small=2)
    tasks = [(rep, suffix) for rep in seeds for suffix in _FRACS]
    if n_jobs == 1:
        outs = [run_comparison(num_graphs, _FRACS[s], rep, config) for rep, s in tasks]
    else:
        from joblib import Parallel, delayed

        outs = []
        for out in Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(run_comparison)(num_graphs, _FRACS[s], rep, config) for rep, s in tasks):
            outs.append(out)
            progress(len(outs) / len(tasks), f"{len(outs)}/{len(tasks)} datasets done")
    results: dict[tuple[str, str], dict[str, list[float]]] = {
        (arm, suffix): {"auc": [], "macro_f1": []} for arm in ARMS for suffix in _FRACS}
    rows = []
    for (rep, suffix), out in zip(tasks, outs):
        for arm in ARMS:
            for key in ("auc", "macro_f1"):
                results[(arm, suffix)][key].append(out[arm][key])
            rows.append({"seed": rep, "shuffle_frac": _FRACS[suffix], "arm": arm, **out[arm]})
    metrics = _comparison_metrics(results)

    summary = [{"arm": arm, "shuffle_frac": frac,
                "auc_mean": float(np.mean(results[(arm, s)]["auc"])),
                "auc_std": float(np.std(results[(arm, s)]["auc"])),
                "f1_mean": float(np.mean(results[(arm, s)]["macro_f1"])),
                "f1_std": float(np.std(results[(arm, s)]["macro_f1"]))}
               for s, frac in _FRACS.items() for arm in ARMS]

    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 3.6))
    for k, (key, title) in enumerate((("auc_mean", "test AUC"), ("f1_mean", "test Macro-F1"))):
        ax = fig.add_subplot(1, 2, k + 1)
        width = 0.38
        for j, (s, frac) in enumerate(_FRACS.items()):
            vals = [r[key] for r in summary if r["shuffle_frac"] == frac]
            errs = [r[key.replace("mean", "std")] for r in summary if r["shuffle_frac"] == frac]
            ax.bar(np.arange(len(ARMS)) + (j - 0.5) * width, vals, width, yerr=errs,
                   label=f"shuffle_frac {frac}")
        ax.set_xticks(np.arange(len(ARMS)), ARMS, rotation=20)
        ax.set_ylim(0, 1.02)
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    notes = (f"{num_graphs} graphs per dataset (10% anomalous, n in 20..40, 8 node types), "
             f"{len(seeds)} seed(s), {config.epochs} epochs, batch {config.batch_size}, hidden "
             f"{config.hidden}, K = {config.cheb_k}. Every GNN arm trains with the class-balanced "
             "focal loss. *_best_baseline_* is the index into (gin, gcn, chebnet) of the best "
             "GNN baseline by mean, the arm the gain is measured against. Synthetic stand-in "
             "for the TU anticancer screens (download-only); the Rayleigh quotient is "
             "informative by construction, so this tests the implementation and the direction "
             "of the comparison, not the paper's margins.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"per_seed": rows, "summary": summary}, notes=notes)


@claim(
    rule="max_abs_err < 1e-5 and max_rel_err_code < 1e-5",
    paper="Sec. 3: the accumulated spectral energy of a graph signal, sum_k lambda_k x_hat_k^2 / "
          "sum_k x_hat_k^2 with x_hat = U^T x, equals its Rayleigh quotient x^T L x / x^T x; the "
          "motivating figure shows a clear gap in this quantity between anomalous and normal graphs.",
    against=("the closed form: spectral energy from float64 numpy eigh of the dense normalised "
             "Laplacian; diag(X^T L X) with scipy's Laplacian as the official code"),
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
    motivating observation of the paper, which the synthetic data builds in."""
    import torch
    from torch_geometric.data import Batch

    from iclr24.kits.threads import single_threaded

    num = sizes(scale, smoke=40, small=300)
    with single_threaded():
        graphs = edge_case_graphs(num, seed=seed)
        errs, rel_code, gaps = [], [], {0: [], 1: []}
        for group in (graphs[:num], graphs[num:]):
            b = Batch.from_data_list(group)
            with torch.no_grad():
                ours = rayleigh_quotient(b.x, b.edge_index, b.batch, num_graphs=b.num_graphs)
                code = rayleigh_quotient(b.x, b.edge_index, b.batch, normalize=False,
                                         num_graphs=b.num_graphs)
            for i, g in enumerate(group):
                paper, diag = dense_spectral_energy(g)
                errs.append(float(np.abs(ours[i].double().numpy() - paper).max()))
                rel_code.append(float((np.abs(code[i].double().numpy() - diag)
                                       / np.maximum(1.0, np.abs(diag))).max()))
                if g.y is not None:
                    gaps[int(g.y)].append(float(ours[i].mean()))
    isolated = sum(int((torch.bincount(g.edge_index[0], minlength=g.num_nodes) == 0).any())
                   for g in graphs)
    return Measurement(
        metrics={"max_abs_err": max(errs), "max_rel_err_code": max(rel_code),
                 "rq_gap": float(np.mean(gaps[1]) - np.mean(gaps[0])),
                 "num_graphs": float(len(graphs)), "graphs_with_isolated_nodes": float(isolated)},
        tables={"errors": [{"graph": i, "abs_err": e, "rel_err_code": c}
                           for i, (e, c) in enumerate(zip(errs, rel_code))][:50]},
        notes="Exact identity checked in float32 against float64 eigh; errors are rounding.")
