"""RQGNN claims: smoke runs, and negative controls (a broken or null method must not hold)."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch

from iclr24.claims import HOLDS, Scale
from iclr24.papers.rqgnn import dense_spectral_energy, edge_case_graphs, rayleigh_quotient
from iclr24.papers.rqgnn.arms import ARMS
from iclr24.papers.rqgnn.claims import _comparison_metrics, rayleigh_identity, spectral_anomalies


def test_smoke_claims(check_smoke_claim):
    m = check_smoke_claim(spectral_anomalies, ["auc_gain_partial", "f1_gain_partial",
                                               "auc_rqgnn_full", "auc_logreg_rq_partial"])
    assert {r["arm"] for r in m.tables["per_seed"]} == set(ARMS)
    m = check_smoke_claim(rayleigh_identity, ["max_abs_err", "max_rel_err_code", "rq_gap"])
    assert rayleigh_identity.verdict(m.metrics, Scale.SMOKE) == HOLDS
    assert m.metrics["graphs_with_isolated_nodes"] > 0


def _results(rng, rqgnn_like=None):
    """Per-seed AUC/F1 for every arm and both fractions; ``rqgnn_like`` copies another arm into
    the RQGNN slot (the null method: the baseline passed as the method)."""
    level = {"rqgnn": 0.97, "gin": 0.9, "gcn": 0.88, "chebnet": 0.93, "logreg_rq": 0.8}
    out = {}
    for arm in ARMS:
        for suffix in ("full", "partial"):
            out[(arm, suffix)] = {k: list(np.clip(level[arm] + rng.normal(0, 0.01, 3), 0, 1))
                                  for k in ("auc", "macro_f1")}
    if rqgnn_like is not None:
        for suffix in ("full", "partial"):
            out[("rqgnn", suffix)] = {k: list(v) for k, v in out[(rqgnn_like, suffix)].items()}
    return out


@pytest.mark.parametrize("null_arm", ["chebnet", "gin"])
def test_spectral_anomalies_negative_control(null_arm):
    rng = np.random.default_rng(0)
    assert spectral_anomalies.verdict(_comparison_metrics(_results(rng)), Scale.SMALL) == HOLDS
    null = _comparison_metrics(_results(rng, rqgnn_like=null_arm))
    assert spectral_anomalies.verdict(null, Scale.SMALL) != HOLDS
    # a method that only matches the best baseline (ChebNet) on the subtle anomalies
    tied = _results(rng)
    tied[("rqgnn", "partial")] = {k: [v + e for v, e in zip(vals, rng.normal(0, 0.01, 3))]
                                  for k, vals in tied[("chebnet", "partial")].items()}
    assert spectral_anomalies.verdict(_comparison_metrics(tied), Scale.SMALL) != HOLDS


def test_rayleigh_identity_negative_control():
    """The official (unnormalised) quantity passed off as the Rayleigh quotient fails the rule."""
    graphs = edge_case_graphs(6, seed=0)[:6]
    b = Batch.from_data_list(graphs)
    with torch.no_grad():
        broken = rayleigh_quotient(b.x, b.edge_index, b.batch, normalize=False)
    err = max(float(np.abs(broken[i].double().numpy() - dense_spectral_energy(g)[0]).max())
              for i, g in enumerate(graphs))
    metrics = {"max_abs_err": err, "max_rel_err_code": 0.0, "rq_gap": 0.1, "num_graphs": 6.0,
               "graphs_with_isolated_nodes": 1.0}
    assert rayleigh_identity.verdict(metrics, Scale.SMALL) == "fails"
