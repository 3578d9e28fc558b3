"""The scikit-learn transformer LCOTEmbedding."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline

from iclr24.papers.lcot import LCOTEmbedding, embed_measures, lcot_embedding


def _data():
    rng = np.random.default_rng(0)
    return [rng.random(10), (rng.random(30), rng.random(30)), rng.random(5), rng.random(12)]


def test_fit_transform_matches_function_and_is_stateless():
    X = _data()
    t = LCOTEmbedding(grid_size=64)
    E = t.fit_transform(X)
    assert E.shape == (4, 64)
    assert np.allclose(E[1], lcot_embedding(X[1][0], X[1][1], grid_size=64))
    assert np.allclose(E, embed_measures(X, grid_size=64))
    assert np.allclose(LCOTEmbedding(grid_size=64).transform(X), E)  # no fit needed
    assert t.n_features_out_ == 64 and len(t.get_feature_names_out()) == 64


def test_sklearn_api_params_clone_pipeline():
    t = LCOTEmbedding(grid_size=32)
    assert t.get_params() == {"grid_size": 32}
    c = clone(t).set_params(grid_size=16)
    assert c.grid_size == 16 and t.grid_size == 32
    pipe = make_pipeline(LCOTEmbedding(grid_size=50), PCA(n_components=2))
    Z = pipe.fit_transform(_data())
    assert Z.shape == (4, 2)


def test_inverse_transform_round_trip():
    X = _data()
    t = LCOTEmbedding(grid_size=500)
    E = t.fit_transform(X)
    back = t.inverse_transform(E)
    assert len(back) == 4 and back[0].shape == (500,)
    assert np.max(np.abs(t.transform(back) - E)) < 5e-3


def test_transformer_bad_input():
    with pytest.raises(ValueError, match="grid_size must be >= 1"):
        LCOTEmbedding(grid_size=0).fit(_data())
    with pytest.raises(TypeError, match="grid_size must be a positive int"):
        LCOTEmbedding(grid_size="big").fit_transform(_data())
    with pytest.raises(ValueError, match=r"X\[1\] must lie in \[0, 1\)"):
        LCOTEmbedding().fit([[0.1], [0.5, 1.5]])
    with pytest.raises(ValueError, match="X must contain at least one measure"):
        LCOTEmbedding().transform([])
    with pytest.raises(TypeError, match="X must be a list of measures"):
        LCOTEmbedding().transform(3.0)
    with pytest.raises(ValueError, match=r"X\[0\] as a tuple must be \(values, weights\)"):
        LCOTEmbedding().transform([(np.array([0.1]),)])
    with pytest.raises(ValueError, match=r"E must have shape \(K, 10\)"):
        LCOTEmbedding(grid_size=10).inverse_transform(np.zeros((2, 9)))
