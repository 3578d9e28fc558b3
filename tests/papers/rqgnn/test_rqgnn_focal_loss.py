"""class_balanced_focal_loss against its formula (Cui et al. 2019, the official CB_loss)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.rqgnn import class_balanced_focal_loss, class_balanced_weights


def _reference(logits, y, counts, beta, gamma):
    """Written from the formula with p_t: sum_bc w_{y_b} (1 - p_t)^gamma (-log p_t) / B."""
    z = logits.astype(np.float64)
    eff = 1.0 - beta ** np.asarray(counts, dtype=np.float64)
    w = (1.0 - beta) / eff
    w = w / w.sum() * len(counts)
    total = 0.0
    for b in range(z.shape[0]):
        for c in range(z.shape[1]):
            p = 1.0 / (1.0 + np.exp(-z[b, c]))
            p_t = p if y[b] == c else 1.0 - p
            total += w[y[b]] * (1.0 - p_t) ** gamma * -np.log(p_t)
    return total / z.shape[0]


@settings(max_examples=30)
@given(b=st.integers(1, 12), c=st.integers(2, 4), seed=st.integers(0, 10_000),
       gamma=st.floats(0.0, 3.0), beta=st.sampled_from([0.0, 0.9, 0.999, 0.9999]))
def test_matches_formula(b, c, seed, gamma, beta):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=3.0, size=(b, c))
    y = rng.integers(0, c, size=b)
    counts = rng.integers(1, 500, size=c)
    got = class_balanced_focal_loss(torch.tensor(logits), torch.tensor(y), counts, beta, gamma)
    assert got.dtype == torch.float64
    np.testing.assert_allclose(float(got), _reference(logits, y, counts, beta, gamma), rtol=1e-9)


def test_weights_and_special_cases():
    w = class_balanced_weights([900, 100], beta=0.999)
    eff = 1 - 0.999 ** np.array([900.0, 100.0])
    expected = (0.001 / eff) / (0.001 / eff).sum() * 2
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-12)
    assert float(w.sum()) == pytest.approx(2.0) and w[1] > w[0]  # the minority weighs more
    np.testing.assert_allclose(class_balanced_weights([900, 100], beta=0.0).numpy(), [1.0, 1.0])
    # gamma = 0, equal weights: the mean over the batch of the summed one-hot BCE
    logits, y = torch.randn(7, 2, generator=torch.Generator().manual_seed(0)), torch.arange(7) % 2
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        logits, torch.nn.functional.one_hot(y, 2).float(), reduction="sum") / 7
    torch.testing.assert_close(class_balanced_focal_loss(logits, y, [4, 3], beta=0.0, gamma=0.0),
                               bce)
    # focusing: a confidently right example costs less with gamma > 0
    easy = torch.tensor([[5.0, -5.0]])
    assert class_balanced_focal_loss(easy, torch.tensor([0]), [1, 1], gamma=1.5) < \
        class_balanced_focal_loss(easy, torch.tensor([0]), [1, 1], gamma=0.0)


def test_differentiable_and_divides_by_batch_not_anomalies():
    logits = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 0, 0, 0, 1, 1])
    assert torch.autograd.gradcheck(
        lambda z: class_balanced_focal_loss(z, y, [40, 4]), (logits,))
    doubled = class_balanced_focal_loss(torch.cat([logits, logits]), torch.cat([y, y]), [40, 4])
    torch.testing.assert_close(doubled, class_balanced_focal_loss(logits, y, [40, 4]))


@pytest.mark.parametrize("kwargs, err, match", [
    ({"class_counts": [10, 0]}, ValueError, "class"),  # a class missing from the counts
    ({"class_counts": [10, -1]}, ValueError, "non-negative"),
    ({"class_counts": [10, 2, 3]}, ValueError, "C = 2"),
    ({"class_counts": [10]}, ValueError, "per class"),
    ({"y": torch.tensor([0, 2])}, ValueError, "0..1"),
    ({"y": torch.tensor([0.0, 1.0])}, TypeError, "integer"),
    ({"y": torch.tensor([0, 1, 1])}, ValueError, "one label per row"),
    ({"logits": torch.zeros(2)}, TypeError, r"\(B, C\)"),
    ({"gamma": -1.0}, ValueError, "gamma"),
    ({"beta": 1.0}, ValueError, "beta"),
])
def test_errors(kwargs, err, match):
    args = {"logits": torch.zeros(2, 2), "y": torch.tensor([0, 1]), "class_counts": [5, 5],
            "beta": 0.999, "gamma": 1.5}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        class_balanced_focal_loss(**args)
