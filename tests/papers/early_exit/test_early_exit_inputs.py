"""Bad inputs at the public boundary (NaN features, labels outside the classes) and the
random-route null arm of the claims."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr24.papers.early_exit import (
    EarlyExitNet,
    JEIDNNTrainer,
    ThresholdExit,
    default_gates,
    nonconformity_scores,
    residual_mlp_backbone,
    set_coverage,
    warmup_exit_heads,
)
from iclr24.papers.early_exit.digits_experiment import random_route
from iclr24.papers.early_exit.training import as_features, as_labels

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _net(width=8, depth=3, classes=3):
    gen = torch.Generator().manual_seed(0)
    blocks, head = residual_mlp_backbone(width, depth, classes, gen)
    ims = [nn.Linear(width, classes) for _ in range(depth - 1)]
    return EarlyExitNet(blocks, ims, head, [b.macs for b in blocks], head_cost=width * classes)


def _data(n=48, width=8):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, width)).astype(np.float32), rng.integers(0, 3, n)


def test_nan_features_are_refused_by_fit_warmup_and_both_predictors():
    net = _net()
    X, y = _data()
    bad = X.copy()
    bad[3, 2] = np.nan
    tr = JEIDNNTrainer(net, default_gates(2), 0.5, warmup_epochs=0, epochs=1)
    with pytest.raises(ValueError, match="X_train must be finite"):
        tr.fit(bad, y, X, y)
    with pytest.raises(ValueError, match="X_val must be finite"):
        warmup_exit_heads(net, X, y, np.where(np.isnan(bad), np.inf, bad), y, max_epochs=1)
    with pytest.raises(ValueError, match="X must be finite"):
        tr.predict(bad)
    with pytest.raises(ValueError, match="X must be finite"):
        ThresholdExit(net, 0.9).predict(bad)
    with pytest.raises(TypeError, match="X must be a numeric array"):
        ThresholdExit(net, 0.9).predict([["a", "b"]])
    with pytest.raises(ValueError, match=r"X must be \(n, d\)"):
        tr.predict(X[0])


def test_labels_outside_the_networks_classes_are_refused():
    net = _net()
    X, y = _data()
    tr = JEIDNNTrainer(net, default_gates(2), 0.5, warmup_epochs=0, epochs=1)
    y12 = y.copy()
    y12[0] = 12                                        # the net has 3 classes
    with pytest.raises(ValueError, match=r"y_train must hold labels in \[0, 3\)"):
        tr.fit(X, y12, X, y)
    with pytest.raises(ValueError, match=r"y_val must hold labels in \[0, 3\)"):
        warmup_exit_heads(net, X, y, X, -y - 1, max_epochs=1)
    with pytest.raises(ValueError, match="y_train must hold integer"):
        tr.fit(X, y + 0.5, X, y)
    with pytest.raises(TypeError, match="y_train must hold integer"):
        tr.fit(X, y.astype(str), X, y)
    with pytest.raises(ValueError, match=r"y_train must be \(48,\)"):
        tr.fit(X, y[:-1], X, y)


def test_as_labels_accepts_integer_valued_floats_and_tensors():
    np.testing.assert_array_equal(as_labels(np.array([0.0, 2.0]), 2, 3).numpy(), [0, 2])
    assert as_labels(torch.tensor([1, 2]), 2, 3).dtype == torch.int64
    assert as_features([[1, 2]]).dtype == torch.float32


def test_conformal_helpers_refuse_labels_outside_the_classes():
    p = np.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        nonconformity_scores(p, np.array([0, 12]))
    with pytest.raises(TypeError, match="y must hold integer"):
        nonconformity_scores(p, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"y must hold labels in \[0, 3\)"):
        set_coverage(p > 0.3, np.array([-1, 0]))


def test_random_route_follows_the_histogram_and_ignores_nothing_else():
    gen = np.random.default_rng(0)
    e = random_route([0, 3, 1], 40_000, gen)
    assert e.shape == (40_000,) and set(np.unique(e)) == {1, 2}
    np.testing.assert_allclose(np.bincount(e, minlength=3) / e.size, [0, 0.75, 0.25], atol=0.01)
    np.testing.assert_array_equal(random_route([0, 5, 0], 7, gen), np.ones(7, dtype=int))
    # same generator state, same draw
    a = random_route([1, 1], 10, np.random.default_rng(3))
    np.testing.assert_array_equal(a, random_route([1, 1], 10, np.random.default_rng(3)))
    for bad in ([], [0, 0], [1, -1], [1, np.nan]):
        with pytest.raises(ValueError, match="exit_counts"):
            random_route(bad, 3, gen)
    with pytest.raises(ValueError, match="n must be"):
        random_route([1, 1], 0, gen)
