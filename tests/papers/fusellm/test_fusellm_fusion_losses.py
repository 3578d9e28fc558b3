"""MinCE / AvgCE fusion and the FuseLLM objective."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.fusellm import SparseDist, fuse, fusellm_loss, fusion_loss, fusion_weights


def _dist(rows, transferred=None):
    return SparseDist.from_rows(rows, transferred or [True] * len(rows))


A = _dist([([0, 1], [0.7, 0.3]), ([2], [1.0])])
B = _dist([([1, 3], [0.5, 0.5]), ([2, 0], [0.6, 0.4])], [False, True])


def test_min_ce_picks_the_lowest_ce_source_for_the_whole_sequence():
    assert fuse([A, B], [2.0, 1.5], "min_ce") is B
    assert fuse([A, B], [1.0, 1.5], "min_ce") is A


@settings(max_examples=40)
@given(st.floats(0.0, 8.0), st.floats(0.0, 8.0), st.sampled_from(["official", "softmax_neg_ce"]))
def test_avg_ce_is_the_weighted_average_of_the_dense_rows(ce_a, ce_b, weights):
    w = fusion_weights([ce_a, ce_b], weights)
    score = np.exp(-np.array([ce_a, ce_b])) if weights == "official" else -np.array([ce_a, ce_b])
    np.testing.assert_allclose(w, np.exp(score) / np.exp(score).sum(), rtol=1e-9)
    fused = fuse([A, B], [ce_a, ce_b], "avg_ce", weights)
    expected = w[0] * A.dense(4) + w[1] * B.dense(4)
    np.testing.assert_allclose(fused.dense(4), expected, atol=1e-6)
    assert list(fused.transferred) == [True, True]


def test_fuse_bad_inputs():
    with pytest.raises(ValueError, match="method"):
        fuse([A], [1.0], "max")
    with pytest.raises(ValueError, match="seq_ce has 1 entries for 2"):
        fuse([A, B], [1.0])
    with pytest.raises(ValueError, match="same target positions"):
        fuse([A, SparseDist.one_hot([1])], [1.0, 2.0])
    with pytest.raises(ValueError, match="weights"):
        fusion_weights([1.0], "uniform")
    with pytest.raises(TypeError, match=r"dists\[0\]"):
        fuse([np.zeros(3)], [1.0])


def _logits(b=2, t=3, v=5, seed=0):
    return torch.randn(b, t, v, generator=torch.Generator().manual_seed(seed))


def test_sparse_and_dense_fusion_losses_agree_and_match_closed_form():
    logits = _logits()
    ids = torch.tensor([[[0, 1], [2, 0], [4, 3]], [[1, 0], [1, 2], [0, 0]]])
    probs = torch.tensor([[[0.6, 0.4], [1.0, 0.0], [0.5, 0.5]],
                          [[0.9, 0.1], [0.2, 0.8], [1.0, 0.0]]])
    dense = torch.zeros(2, 3, 5).scatter_add_(-1, ids, probs)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    sparse_loss = fusion_loss(logits, (ids, probs), mask)
    dense_loss = fusion_loss(logits, dense, mask)
    torch.testing.assert_close(sparse_loss, dense_loss)
    logq = F.log_softmax(logits, -1)
    by_hand = -(dense * logq).sum(-1)
    torch.testing.assert_close(dense_loss, (by_hand * mask).sum() / mask.sum())
    kl = fusion_loss(logits, dense, mask, kind="kl")
    ent = -(torch.where(dense > 0, dense * dense.clamp_min(1e-30).log(), 0.0)).sum(-1)
    torch.testing.assert_close(kl, ((by_hand - ent) * mask).sum() / mask.sum())


def test_one_hot_fusion_target_is_the_clm_loss_and_pads_are_ignored():
    logits = _logits(seed=1)
    labels = torch.tensor([[1, 2, 3], [4, 0, -100]])
    one_hot = F.one_hot(labels.clamp_min(0), 5).float()
    mask = (labels != -100).float()
    clm = F.cross_entropy(logits.reshape(-1, 5), labels.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(fusion_loss(logits, one_hot, mask), clm)
    torch.testing.assert_close(fusellm_loss(logits, labels, None, lam=1.0), clm)
    torch.testing.assert_close(fusellm_loss(logits, labels, one_hot, lam=0.9), clm)
    # L = λ L_CLM + (1 − λ) L_Fusion with a different fused target
    soft = torch.full((2, 3, 5), 0.2)
    expected = 0.9 * clm + 0.1 * fusion_loss(logits, soft, mask)
    torch.testing.assert_close(fusellm_loss(logits, labels, soft, lam=0.9), expected)
    # changing the logits at a padded position changes nothing
    logits2 = logits.clone()
    logits2[1, 2] += 10.0
    torch.testing.assert_close(fusellm_loss(logits2, labels, soft, 0.9),
                               fusellm_loss(logits, labels, soft, 0.9))


@pytest.mark.parametrize("lam", [-0.1, 1.5, float("nan"), True, "0.9"])
def test_lambda_outside_unit_interval_is_refused(lam):
    logits = _logits()
    with pytest.raises(ValueError, match="lam"):
        fusellm_loss(logits, torch.zeros(2, 3, dtype=torch.long), None, lam=lam)


def test_loss_bad_inputs():
    logits = _logits()
    labels = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="fused targets are needed"):
        fusellm_loss(logits, labels, None, lam=0.9)
    with pytest.raises(ValueError, match="dense target"):
        fusion_loss(logits, torch.zeros(2, 3, 4))
    with pytest.raises(ValueError, match="sparse target ids"):
        fusion_loss(logits, (torch.full((2, 3, 1), 9), torch.ones(2, 3, 1)))
    with pytest.raises(ValueError, match="mask"):
        fusion_loss(logits, torch.zeros(2, 3, 5), torch.ones(3, 2))
    with pytest.raises(ValueError, match="labels"):
        fusellm_loss(logits, labels[:, :2], None, lam=1.0)


def test_fused_target_rows_must_be_distributions():
    logits = _logits()
    labels = torch.tensor([[1, 2, 3], [4, 0, -100]])
    mask = (labels != -100).float()
    ids = torch.tensor([[[0, 1]] * 3, [[2, 3]] * 3])
    probs = torch.tensor([[[0.6, 0.4]] * 3, [[0.5, 0.5]] * 3])
    fusion_loss(logits, (ids, probs), mask)  # a proper target is accepted
    dense = torch.zeros(2, 3, 5).scatter_add_(-1, ids, probs)
    for bad in (3.0 * probs, 0.5 * probs):  # rows summing to 3 (or 0.5)
        with pytest.raises(ValueError, match=r"rows summing to 1.*\[(3|0.5)"):
            fusion_loss(logits, (ids, bad), mask)
        with pytest.raises(ValueError, match="rows summing to 1"):
            fusellm_loss(logits, labels, (ids, bad), lam=0.9)
    with pytest.raises(ValueError, match="rows summing to 1"):
        fusion_loss(logits, 3.0 * dense, mask)
    negative = probs.clone()
    negative[0, 0] = torch.tensor([1.5, -0.5])  # sums to 1 but is no distribution
    with pytest.raises(ValueError, match=">= 0"):
        fusion_loss(logits, (ids, negative), mask)
    nan = probs.clone()
    nan[1, 1, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        fusion_loss(logits, (ids, nan), mask)
    # a padded position (mask 0) may carry an all-zero row, as the trainer's batches do
    padded = probs.clone()
    padded[1, 2] = 0.0
    torch.testing.assert_close(fusion_loss(logits, (ids, padded), mask),
                               fusion_loss(logits, (ids, probs), mask))
