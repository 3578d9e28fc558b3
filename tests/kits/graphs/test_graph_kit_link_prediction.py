import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from iclr24.kits.graphs import link_metrics, mean_std, sample_negative_edges


@given(n=st.integers(5, 15), m=st.integers(0, 10), seed=st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_negatives_are_non_edges_and_seeded(n, m, seed):
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(2, m))
    neg = sample_negative_edges(edges, n, 20, seed=seed)
    assert neg.shape == (2, 20)
    existing = set(map(tuple, edges.T.tolist()))
    assert not existing & set(map(tuple, neg.T.tolist()))
    assert (neg[0] != neg[1]).all()
    assert torch.equal(neg, sample_negative_edges(edges, n, 20, seed=seed))


def test_direction_is_respected():
    edges = np.array([[0], [1]])
    directed = sample_negative_edges(edges, 2, 50, seed=0)
    assert set(map(tuple, directed.T.tolist())) == {(1, 0)}  # the only non-edge
    with pytest.raises(ValueError, match="no non-edge"):
        sample_negative_edges(edges, 2, 5, seed=0, directed=False)


def test_bipartite_and_exclude():
    edges = np.array([[0, 1], [0, 1]])  # src 0 -> dst 0, src 1 -> dst 1
    exclude = np.array([[0], [1]])
    neg = sample_negative_edges(edges, (2, 2), 30, seed=0, exclude=exclude)
    assert set(map(tuple, neg.T.tolist())) == {(1, 0)}
    with pytest.raises(ValueError, match="outside"):
        sample_negative_edges(np.array([[0], [2]]), (2, 2), 1, seed=0)
    with pytest.raises(ValueError, match="one node set"):
        sample_negative_edges(edges, (2, 2), 1, seed=0, directed=False)


def test_link_metrics_known_values():
    perfect = link_metrics(torch.tensor([2.0, 3.0]), torch.tensor([-1.0, -2.0, -3.0]))
    assert perfect == {"ap": 1.0, "auc": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0}
    m = link_metrics([0.5, -0.5], [1.0, -1.0])
    assert m["auc"] == 0.5 and m["precision"] == 0.5 and m["recall"] == 0.5
    assert np.isclose(m["ap"], average_precision_score([1, 1, 0, 0], [0.5, -0.5, 1.0, -1.0]))
    with pytest.raises(ValueError, match="at least one"):
        link_metrics([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        link_metrics([float("nan")], [1.0])


def test_mean_std():
    assert mean_std([1.0, 3.0]) == (2.0, float(np.std([1, 3], ddof=1)))
    assert mean_std([5.0]) == (5.0, 0.0)
    with pytest.raises(ValueError):
        mean_std([])
