"""make_spectral_gad: determinism, labels, matched type histograms, the built-in spectral gap,
errors."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.utils import is_undirected

from iclr24.papers.rqgnn import make_spectral_gad, rayleigh_quotient


def test_deterministic_labels_and_structure():
    a = make_spectral_gad(40, anomaly_rate=0.2, n_range=(10, 14), num_types=4, seed=7)
    b = make_spectral_gad(40, anomaly_rate=0.2, n_range=(10, 14), num_types=4, seed=7)
    c = make_spectral_gad(40, anomaly_rate=0.2, n_range=(10, 14), num_types=4, seed=8)
    assert all(torch.equal(g.x, h.x) and torch.equal(g.edge_index, h.edge_index)
               for g, h in zip(a, b))
    assert not all(torch.equal(g.x, h.x) for g, h in zip(a, c) if g.x.shape == h.x.shape)
    y = np.array([int(g.y) for g in a])
    assert y.sum() == 8 and set(y) == {0, 1}
    for g in a:
        assert 10 <= g.num_nodes <= 14 and g.x.shape == (g.num_nodes, 4)
        assert bool((g.x.sum(1) == 1).all())  # one-hot
        assert is_undirected(g.edge_index) and g.edge_index.shape[1] > 0
        counts = g.x.sum(0)  # equal-count quantile bins in both classes
        assert float(counts.max() - counts.min()) <= 1


def test_shuffle_frac_changes_only_the_anomalies():
    full = make_spectral_gad(30, n_range=(10, 12), num_types=4, shuffle_frac=1.0, seed=3)
    none = make_spectral_gad(30, n_range=(10, 12), num_types=4, shuffle_frac=0.0, seed=3)
    for g, h in zip(full, none):
        assert torch.equal(g.edge_index, h.edge_index) and torch.equal(g.y, h.y)
        assert torch.equal(g.x.sum(0), h.x.sum(0))  # same histogram
        if int(g.y) == 0:
            assert torch.equal(g.x, h.x)


def test_anomalies_have_more_spectral_energy_and_zero_shuffle_has_none():
    def gap(frac):
        graphs = make_spectral_gad(120, anomaly_rate=0.5, n_range=(15, 25), shuffle_frac=frac,
                                   seed=11)
        b = Batch.from_data_list(graphs)
        r = rayleigh_quotient(b.x, b.edge_index, b.batch).mean(1)
        return float(r[b.y == 1].mean() - r[b.y == 0].mean()), float(r.std())

    big, spread = gap(1.0)
    none, _ = gap(0.0)
    assert big > 0.1 and big > 2 * spread / np.sqrt(60)
    assert abs(none) < 2 * spread / np.sqrt(30)  # identical construction: no systematic gap


@pytest.mark.parametrize("kwargs, err, match", [
    ({"num_graphs": 1}, ValueError, "num_graphs"),
    ({"anomaly_rate": 0.0}, ValueError, "anomaly_rate"),
    ({"n_range": (0, 10)}, ValueError, "empty graph"),
    ({"n_range": (12, 10)}, ValueError, "n_range"),
    ({"n_range": 5}, TypeError, "n_range"),
    ({"num_types": 1}, ValueError, "num_types"),
    ({"shuffle_frac": 1.5}, ValueError, "shuffle_frac"),
    ({"seed": 1.5}, TypeError, "seed"),
])
def test_errors(kwargs, err, match):
    args = {"num_graphs": 10, "seed": 0}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        make_spectral_gad(**args)
