"""Smoke runs of the EMO claims: finite metrics, everything the rule names, a verdict."""

import ast
import dataclasses
import math

import numpy as np
import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.emo.claims import bound_exact, reverse_kl


def _rule_names(rule_text: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(rule_text, mode="eval")) if isinstance(n, ast.Name)}


@pytest.fixture(scope="module")
def smoke_runs():
    return {c.name: c(Scale.SMOKE, 0) for c in (bound_exact, reverse_kl)}


@pytest.mark.parametrize("claim_obj", [bound_exact, reverse_kl], ids=lambda c: c.name)
def test_smoke_claim(claim_obj, smoke_runs):
    m = smoke_runs[claim_obj.name]
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    for scale in ("smoke", "small"):
        assert _rule_names(claim_obj.rule_text(scale)) <= set(m.metrics)
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.notes


def test_reverse_kl_smoke_reports_every_method(smoke_runs):
    m = smoke_runs["reverse_kl"]
    for method in ("mle", "emo", "mixce", "tailr", "emo_oracle"):
        for key in ("reverse_kl", "forward_kl", "wrong_mass"):
            assert f"{method}_{key}" in m.metrics
    assert m.metrics["n_seeds"] == 1
    assert isinstance(m.metrics["delta_reverse_kl"], float)  # one seed: a plain number
    assert m.figure is not None and len(m.tables["per_seed"]) == 5


def test_reverse_kl_rule_reads_the_interval_and_rejects_mle_as_emo():
    """Negative control: MLE passed as EMO gives a zero paired difference (fails); a mean
    gain whose interval straddles 0 is inconclusive, not a win."""
    from iclr24.claims import seed_difference

    mle = [1.16, 1.18, 1.15, 1.20, 1.17]
    assert reverse_kl.verdict({"delta_reverse_kl": seed_difference(mle, mle)},
                              Scale.SMALL) == "fails"
    straddle = seed_difference([1.10, 1.25, 1.12, 1.22, 1.14], mle)
    assert straddle.value < 0 < straddle.high
    assert reverse_kl.verdict({"delta_reverse_kl": straddle}, Scale.SMALL) == "inconclusive"


def test_reverse_kl_smoke_reports_the_budget_sweep(smoke_runs):
    m = smoke_runs["reverse_kl"]
    sweep = m.tables["budget_sweep"]
    assert [r["epochs"] for r in sweep] == [1, 2]
    assert [r["judged"] for r in sweep] == [True, False]        # the paper's 1 epoch decides
    assert sweep[1]["steps"] == 2 * sweep[0]["steps"]
    assert sweep[0]["delta_reverse_kl"] == pytest.approx(m.metrics["delta_reverse_kl"])
    assert "delta_reverse_kl_2_epochs" in m.metrics


def test_reverse_kl_negative_control_measured_with_mle_as_emo():
    """Baseline passed as the method, on per-seed numbers measured by a (tiny) comparison."""
    from iclr24.claims import seed_difference
    from iclr24.papers.emo.comparison import ComparisonConfig, run_finetuning_comparison
    from iclr24.papers.emo.finetuning import FinetuneConfig

    cfg = ComparisonConfig(n_clusters=4, n_synonyms=2, length=16, d_model=16, n_layers=1,
                           n_heads=2, pretrain_sequences=128, finetune_sequences=64,
                           eval_sequences=16, n_seeds=3, oracle_ablation=False,
                           budget_epochs=(2,), finetune=FinetuneConfig(batch_size=16))
    result = run_finetuning_comparison(cfg, 0)
    mle = result.per_seed("mle", "reverse_kl")
    assert mle.size == 3 and result.per_seed("emo", "reverse_kl", 2).size == 3
    assert reverse_kl.verdict({"delta_reverse_kl": seed_difference(mle, mle)},
                              Scale.SMALL) == "fails"
    # the sweep on the first two seeds only repeats those seeds' numbers exactly
    part = run_finetuning_comparison(dataclasses.replace(cfg, budget_seeds=2), 0)
    np.testing.assert_array_equal(part.per_seed("emo", "reverse_kl", 2),
                                  result.per_seed("emo", "reverse_kl", 2)[:2])
    np.testing.assert_array_equal(part.per_seed("mle", "reverse_kl"), mle)


def test_bound_exact_negative_control_cross_entropy_as_demd():
    """Broken method: the cross-entropy −log q_y put where DEMD belongs (no transport cost)."""
    import torch

    from iclr24.papers.emo.demd import (
        cosine_cost_matrix,
        demd_logit_gradient,
        earth_movers_distance,
    )

    g = torch.Generator().manual_seed(0)
    emb = torch.randn(10, 4, generator=g, dtype=torch.float64)
    logits = torch.randn(8, 10, generator=g, dtype=torch.float64)
    target = torch.randint(0, 10, (8,), generator=g)
    q = torch.softmax(logits, -1)
    exact = earth_movers_distance(q, torch.nn.functional.one_hot(target, 10).double(),
                                  cosine_cost_matrix(emb))
    x = logits.clone().requires_grad_(True)
    nll = torch.nn.functional.cross_entropy(x, target, reduction="none")
    (grad,) = torch.autograd.grad(nll.sum(), x)
    metrics = {
        "max_abs_diff_onehot": float((nll.detach().numpy() - exact).__abs__().max()),
        "max_grad_error": float((grad - demd_logit_gradient(logits, target, emb)).abs().max()),
        "max_soft_bound_violation": 0.0,
    }
    assert bound_exact.verdict(metrics, Scale.SMALL) == "fails"


@pytest.mark.parametrize("bad", [0, 4, 1.5, True])
def test_budget_seeds_must_be_a_count_of_seeds(bad):
    from iclr24.papers.emo.comparison import ComparisonConfig

    with pytest.raises(ValueError, match="budget_seeds"):
        ComparisonConfig(n_seeds=3, budget_seeds=bad)
