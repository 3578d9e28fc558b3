"""Smoke runs of both claims and their negative controls."""

import numpy as np
import torch

from iclr24.claims import Estimate, Scale
from iclr24.papers.jssp_improve import claims, dispatch, random_instance, schedule_batch
from iclr24.papers.jssp_improve.evaluator import _FORWARD, batched_times


def test_smoke_claims(check_smoke_claim):
    m = check_smoke_claim(claims.evaluator_exact,
                          ["makespan_mismatches", "est_max_err", "lst_max_err", "cpsat_max_err",
                           "speedup"])
    assert m.metrics["makespan_mismatches"] == 0 and m.metrics["cpsat_max_err"] == 0
    check_smoke_claim(claims.learned_vs_random_moves,
                      ["gain_vs_random", "gap_l2s", "gap_random_n5", "gap_greedy_n5", "gap_rule"])


def test_evaluator_negative_control_truncated_sweeps():
    """An evaluator that stops after 3 max-plus sweeps (no resolved mask) must not hold."""
    rng = np.random.default_rng(0)
    scheds = [dispatch(random_instance(6, 6, seed=rng), "random", seed=rng) for _ in range(8)]
    batch = schedule_batch(scheds)
    _, _, exact = batched_times(batch)
    p = batch.dur.double().unsqueeze(1)
    est = torch.zeros_like(p)
    for _ in range(3):
        est = _FORWARD(est + p, batch.edge_index)
    broken = est[batch.ptr[1:] - 1, 0]
    mism = int((broken != exact).sum())
    assert mism > 0
    metrics = {"makespan_mismatches": mism, "est_max_err": float((broken - exact).abs().max()),
               "lst_max_err": 0.0, "cpsat_max_err": 0.0, "speedup": 5.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claims.evaluator_exact.verdict(metrics, scale) == "fails"
    ok = dict(metrics, makespan_mismatches=0, est_max_err=0.0, speedup=0.5)
    assert claims.evaluator_exact.verdict(ok, Scale.SMALL) == "fails"  # slower than CPM


def test_learned_vs_random_negative_control_random_as_method():
    """Random N5 passed as the learned method (same gaps per seed): the gain is 0, never holds."""
    gaps = [0.12, 0.10, 0.14]
    jitter = [0.121, 0.099, 0.141]
    metrics = {"gain_vs_random": Estimate.difference(gaps, jitter, paired=True)}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claims.learned_vs_random_moves.verdict(metrics, scale) != "holds"
    worse = {"gain_vs_random": Estimate.difference(gaps, [g + 0.05 for g in gaps], paired=True)}
    assert claims.learned_vs_random_moves.verdict(worse, Scale.SMALL) != "holds"
