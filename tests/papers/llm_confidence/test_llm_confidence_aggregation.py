"""Aggregators: closed forms, the official rank matrix, Pair-Rank gradients and optimiser."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.papers.llm_confidence import (
    avg_conf,
    consistency,
    pair_rank,
    pair_rank_batch,
    rank_matrix,
    topk_mean_probability,
    topk_top1_avg_conf,
)
from iclr24.papers.llm_confidence.aggregation import _rank_gradient


def test_consistency_majority_reference_and_unparsed():
    agg = consistency(["3", "4", "3", None, "3"])
    assert agg.answer == "3" and agg.confidence == pytest.approx(3 / 4) and agg.n_dropped == 1
    # misleading: ŷ is the hint-free answer, not the majority
    ref = consistency(["4", "3", "3", "3"], "4", use_reference=True)
    assert ref.answer == "4" and ref.confidence == pytest.approx(1 / 4)
    assert consistency([None, None]).answer is None
    assert consistency(["1", "2"], None, use_reference=True).confidence == 0.0
    assert consistency(["1", "2", "2", "1"]).answer == "1"  # ties: first seen
    with pytest.raises(ValueError, match="use_reference"):
        consistency(["1"], "1")
    with pytest.raises(ValueError, match="empty"):
        consistency([])


def test_avg_conf_denominator_is_all_samples():
    agg = avg_conf(["3", "4", "3"], [0.9, 0.6, 0.3])
    # ŷ = argmax Σ c: "3" (1.2) over "4" (0.6); conf = 1.2 / 1.8
    assert agg.answer == "3" and agg.confidence == pytest.approx(1.2 / 1.8)
    agg = avg_conf(["3", "4", "4"], [0.9, 0.4, 0.4])
    assert agg.answer == "3" and agg.confidence == pytest.approx(0.9 / 1.7)  # not a majority
    assert avg_conf(["3", "4"], [0.0, 0.0]).confidence == 0.0
    r = avg_conf(["5", "3", None], [0.5, 0.5, 0.9], "5", use_reference=True)
    assert r.answer == "5" and r.confidence == pytest.approx(0.5) and r.n_dropped == 1
    with pytest.raises(ValueError, match="equal length"):
        avg_conf(["1"], [0.1, 0.2])
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        avg_conf(["1"], [90])


def test_rank_matrix_counts_later_and_unlisted_options():
    r, opts = rank_matrix([["A", "B"], ["C", "A"]])
    assert opts == ["A", "B", "C"]
    i = {o: k for k, o in enumerate(opts)}
    expected = np.zeros((3, 3))
    # list 1: A ≻ B, A ≻ C (unlisted), B ≻ C (unlisted); list 2: C ≻ A, C ≻ B, A ≻ B
    for u, v in [("A", "B"), ("A", "C"), ("B", "C"), ("C", "A"), ("C", "B"), ("A", "B")]:
        expected[i[u], i[v]] += 0.5
    np.testing.assert_allclose(r, expected)
    r2, _ = rank_matrix([["A", None, "A", "B"]])  # None skipped, a repeat counts once
    np.testing.assert_allclose(r2, [[0, 1], [0, 0]])
    with pytest.raises(ValueError, match="non-empty"):
        rank_matrix([[None], []])


def _torch_loss(w, r, paper):
    p = torch.softmax(w, dim=-1)
    ratio = p[:, None] / (p[:, None] + p[None, :])
    return -(r * torch.log(ratio)).sum() if paper else -(r * ratio).sum()


@pytest.mark.parametrize("paper", [True, False])
def test_rank_gradient_matches_autograd(paper):
    rng = np.random.default_rng(0)
    r = rng.random((4, 4)) * (1 - np.eye(4))
    w = rng.standard_normal(4)
    wt = torch.tensor(w, requires_grad=True)
    _torch_loss(wt, torch.tensor(r), paper).backward()
    g = _rank_gradient(w[None], r[None], np.ones((1, 4), bool), paper)[0]
    np.testing.assert_allclose(g, wt.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_official_objective_equals_the_official_sgd_loop():
    """Plain torch SGD (lr 0.01) on −Σ R · P(u)/(P(u)+P(v)) from the same start."""
    lists = [["A", "B", "C"], ["B", "A", "D"], ["A", "D", "B"]]
    r, _ = rank_matrix(lists)
    init = np.random.default_rng(3).standard_normal((1, r.shape[0]))
    ours = pair_rank_batch(r[None], objective="official", steps=200, init=init)[0]
    w = torch.tensor(init[0], requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.01)
    for _ in range(200):
        opt.zero_grad()
        _torch_loss(w, torch.tensor(r), paper=False).backward()
        opt.step()
    np.testing.assert_allclose(ours, torch.softmax(w, 0).detach().numpy(), atol=1e-10)


def test_paper_objective_reaches_the_likelihood_optimum():
    from scipy.optimize import minimize

    lists = [["A", "B", "C"], ["B", "A", "C"], ["A", "C", "B"], ["A", "B", "D"]]
    r, opts = rank_matrix(lists)
    p = pair_rank_batch(r[None], objective="paper", steps=4000, lr=0.5, rng=0)[0]

    def nll(w):
        q = np.exp(w - w.max())
        q /= q.sum()
        return -float((r * np.log(q[:, None] / (q[:, None] + q[None, :]))).sum())

    res = minimize(nll, np.zeros(len(opts)), method="BFGS", options={"gtol": 1e-10})
    q = np.exp(res.x - res.x.max())
    q /= q.sum()
    np.testing.assert_allclose(p, q, atol=2e-3)
    agg, dist = pair_rank(lists, rng=0)
    assert agg.answer == "A" and dist["A"] == max(dist.values())
    assert set(dist) == {"A", "B", "C", "D"} and sum(dist.values()) == pytest.approx(1.0)


def test_pair_rank_batch_padding_equals_single_problems():
    a, _ = rank_matrix([["A", "B"], ["B", "C"]])
    b, _ = rank_matrix([["X", "Y"]])
    r = np.zeros((2, 3, 3))
    r[0] = a
    r[1, :2, :2] = b
    mask = np.array([[1, 1, 1], [1, 1, 0]], bool)
    init = np.random.default_rng(0).standard_normal((2, 3))
    batch = pair_rank_batch(r, mask, init=init)
    one = pair_rank_batch(b[None], init=init[1:, :2])
    np.testing.assert_allclose(batch[1, :2], one[0], atol=1e-12)
    assert batch[1, 2] == 0.0
    with pytest.raises(ValueError, match="objective"):
        pair_rank_batch(r, mask, objective="mle")
    with pytest.raises(ValueError, match="shape"):
        pair_rank_batch(np.zeros((3, 3)))


def test_topk_avg_conf_variants():
    lists, probs = [["1", "2"], ["2", "1"], ["1", "3"]], [[0.6, 0.3], [0.5, 0.4], [0.9, 0.1]]
    top1 = topk_top1_avg_conf(lists, probs)
    assert top1.answer == "1" and top1.confidence == pytest.approx(1.5 / 2.0)
    mean = topk_mean_probability(lists, probs)
    assert mean.answer == "1" and mean.confidence == pytest.approx((0.6 + 0.4 + 0.9) / 3)
    with pytest.raises(ValueError, match="one probability"):
        topk_mean_probability([["1"]], [[0.1, 0.2]])


def test_official_min_parsed_rule():
    from iclr24.papers.llm_confidence import official_min_parsed

    # extract_answers.py: require_min_num_hints = M − 1 for M >= 3, else M (2 of 2, 1 of 1)
    assert [official_min_parsed(m) for m in (1, 2, 3, 5, 10)] == [1, 2, 2, 4, 9]
    with pytest.raises(ValueError, match="m must"):
        official_min_parsed(0)
    with pytest.raises(TypeError, match="m must"):
        official_min_parsed(2.0)


def test_one_parsed_sample_is_not_full_confidence():
    # the audit's case: 1 parsed sample of 5 agreed with itself, confidence 1.0
    one = consistency(["7", None, None, None, None])
    assert one.answer is None and one.confidence == 0.0 and one.n_dropped == 4
    # the official rule keeps a question with M − 1 = 4 parsed samples
    four = consistency(["7", "7", "8", None, "7"])
    assert four.answer == "7" and four.confidence == pytest.approx(3 / 4)
    # a caller may relax the rule explicitly
    assert consistency(["7", None, None, None, None], min_parsed=1).confidence == 1.0
    assert avg_conf(["7", None, None], [0.9, None, None]).answer is None
    assert avg_conf(["7", None, None], [0.9, None, None], min_parsed=1).confidence == 1.0
    # an answer without a parsed confidence does not count for Avg-Conf
    assert avg_conf(["7", "7", "7"], [0.9, None, None]).answer is None
    # misleading: the reference counts among the parsed samples
    ref = consistency(["4", None, None, "4"], "4", use_reference=True)
    assert ref.answer is None and ref.confidence == 0.0


@pytest.mark.parametrize("bad, err", [(0, ValueError), (6, ValueError), (2.5, TypeError),
                                      (True, TypeError)])
def test_min_parsed_bad_values(bad, err):
    with pytest.raises(err, match="min_parsed"):
        consistency(["1", "2", "1", "1", "1"], min_parsed=bad)
    with pytest.raises(err, match="min_parsed"):
        avg_conf(["1", "2", "1", "1", "1"], [0.5] * 5, min_parsed=bad)
