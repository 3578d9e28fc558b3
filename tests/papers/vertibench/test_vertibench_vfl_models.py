"""SplitNN and LocalEnsemble: learning, determinism, equivalences and input validation."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from iclr24.papers.vertibench import LocalEnsemble, SplitNN, SplitNNNetwork


@pytest.fixture(autouse=True)
def _one_blas_thread():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # tiny problems: idle BLAS threads only spin on a busy machine
        yield


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=8, n_informative=6, n_redundant=0,
                               n_classes=3, random_state=0)
    return [X[:, :3], X[:, 3:5], X[:, 5:]], y


def test_splitnn_learns_and_is_deterministic(data):
    Xs, y = data
    a = SplitNN(epochs=30, seed=1).fit(Xs, y)
    b = SplitNN(epochs=30, seed=1).fit(Xs, y)
    assert a.loss_curve_[-1] < a.loss_curve_[0]
    assert a.score(Xs, y) > 0.8
    np.testing.assert_array_equal(a.predict_proba(Xs), b.predict_proba(Xs))
    np.testing.assert_allclose(a.predict_proba(Xs).sum(axis=1), 1.0, atol=1e-6)
    assert set(a.predict(Xs)) <= set(y)


def test_splitnn_network_gradients_reach_every_party():
    net = SplitNNNetwork([2, 3, 0], n_classes=2)
    xs = [torch.randn(5, 2), torch.randn(5, 3), torch.zeros(5, 0)]
    out = net(xs)
    assert out.shape == (5, 2)
    out.sum().backward()
    assert net.encoders[0][0].weight.grad.abs().sum() > 0
    assert net.encoders[1][0].weight.grad.abs().sum() > 0


def test_local_ensemble_average_is_mean_of_party_models(data):
    Xs, y = data
    le = LocalEnsemble(combiner="average").fit(Xs, y)
    probs = [make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(X, y)
             .predict_proba(X) for X in Xs]
    np.testing.assert_allclose(le.predict_proba(Xs), np.mean(probs, axis=0), atol=1e-8)


def test_local_ensemble_stacking_beats_worst_party(data):
    Xs, y = data
    le = LocalEnsemble(seed=0).fit(Xs, y)
    single = [LocalEnsemble(seed=0).fit([X], y).score([X], y) for X in Xs]
    assert le.score(Xs, y) >= min(single)
    np.testing.assert_array_equal(le.predict_proba(Xs),
                                  LocalEnsemble(seed=0).fit(Xs, y).predict_proba(Xs))


def test_bad_inputs(data):
    Xs, y = data
    with pytest.raises(ValueError, match="y"):
        SplitNN(epochs=1).fit(Xs, y[:-1])
    with pytest.raises(ValueError, match="same rows"):
        LocalEnsemble().fit([Xs[0], Xs[1][:-1]], y)
    fitted = LocalEnsemble(combiner="average").fit(Xs, y)
    with pytest.raises(ValueError, match="3 parties"):
        fitted.predict(Xs[:2])
    with pytest.raises(ValueError, match="columns"):
        fitted.predict([Xs[0], Xs[0], Xs[2]])
    with pytest.raises(RuntimeError, match="fit"):
        SplitNN().predict(Xs)
    with pytest.raises(ValueError, match="epochs"):
        SplitNN(epochs=0)
    with pytest.raises(ValueError, match="n_threads"):
        SplitNN(n_threads=0)
    with pytest.raises(ValueError, match="lr"):
        SplitNN(lr=0.0)
    with pytest.raises(ValueError, match="combiner"):
        LocalEnsemble(combiner="vote")
    with pytest.raises(ValueError, match="cv"):
        LocalEnsemble(cv=1)
    with pytest.raises(ValueError, match="Xs"):
        SplitNN().fit(np.ones((3, 2)), np.array([0, 1, 0]))
    with pytest.raises(ValueError, match="2 classes"):
        SplitNN(epochs=1).fit(Xs, np.zeros_like(y))
