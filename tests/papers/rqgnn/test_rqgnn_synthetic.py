"""make_spectral_gad / make_spectral_energy_gad / permute_node_features: determinism, labels,
matched per-graph statistics, the built-in spectral gap, the permutation null, errors."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.utils import is_undirected

from iclr24.papers.rqgnn import (
    make_spectral_energy_gad,
    make_spectral_gad,
    permute_node_features,
    rayleigh_quotient,
)


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


def _rq(graphs):
    b = Batch.from_data_list(graphs)
    return rayleigh_quotient(b.x, b.edge_index, b.batch), b.y


def test_energy_gad_structure_labels_and_scaling():
    a = make_spectral_energy_gad(60, anomaly_rate=0.2, n_range=(10, 14), num_channels=3,
                                 amplitude_range=(0.5, 4.0), seed=4)
    b = make_spectral_energy_gad(60, anomaly_rate=0.2, n_range=(10, 14), num_channels=3,
                                 amplitude_range=(0.5, 4.0), seed=4)
    assert all(torch.equal(g.x, h.x) and torch.equal(g.edge_index, h.edge_index)
               for g, h in zip(a, b))
    y = np.array([int(g.y) for g in a])
    assert y.sum() == 12 and set(y) == {0, 1}
    for g in a:
        assert 10 <= g.num_nodes <= 14 and g.x.shape == (g.num_nodes, 3)
        assert g.x.dtype == torch.float32 and bool(torch.isfinite(g.x).all())
        assert is_undirected(g.edge_index)
        assert int(torch.bincount(g.edge_index[0], minlength=g.num_nodes).min()) > 0  # connected
        rms = g.x.pow(2).mean(0).sqrt()  # unit RMS per channel times one amplitude per graph
        torch.testing.assert_close(rms, rms[0].expand(3), rtol=1e-4, atol=0)
        assert 0.5 - 1e-4 <= float(rms[0]) <= 4.0 + 1e-4


def test_energy_gad_is_heat_smoothed_noise():
    """Known answer: with amplitude 1, x = c exp(-t L) z for a unit-RMS constant c and z
    without its kernel component, so x has no energy on the kernel of L and exp(t L) x (undoing
    the smoothing) has its energy spread evenly over the rest of the spectrum."""
    from iclr24.kits.graphs import normalized_laplacian

    g = make_spectral_energy_gad(4, anomaly_rate=0.25, n_range=(30, 30), num_channels=64,
                                 smoothing=(3.0, 1.0), amplitude_range=(1.0, 1.0), seed=2)
    for h in g:
        t = 1.0 if int(h.y) == 1 else 3.0
        lam, u = np.linalg.eigh(normalized_laplacian(h.edge_index, h.num_nodes))
        x_hat2 = ((u.T @ h.x.double().numpy()) ** 2).mean(1)  # per-eigenvector energy
        assert x_hat2[0] < 1e-10 * x_hat2.sum()  # nothing on D^{1/2} 1
        white = (x_hat2 * np.exp(2 * t * lam))[1:]  # z_hat^2 up to c^2: flat in expectation
        lo, hi = white[: len(white) // 2].mean(), white[len(white) // 2:].mean()
        assert 0.5 < lo / hi < 2.0  # flat across the spectrum after undoing exp(-t lambda)


def test_energy_gad_anomalies_have_more_spectral_energy_and_amplitude_is_irrelevant():
    graphs = make_spectral_energy_gad(200, anomaly_rate=0.5, seed=5)
    r, y = _rq(graphs)
    r = r.mean(1)
    gap = float(r[y == 1].mean() - r[y == 0].mean())  # t = 1 against t = 1.5 (the default)
    assert gap > 5 * float(r.std()) / np.sqrt(50)
    strong = make_spectral_energy_gad(200, anomaly_rate=0.5, smoothing=(2.0, 1.0), seed=5)
    rs, ys = _rq(strong)
    rs = rs.mean(1)
    assert float(rs[ys == 1].mean() - rs[ys == 0].mean()) > gap  # more smoothing, wider gap
    amp = torch.stack([g.x.pow(2).mean().sqrt() for g in graphs]).log()
    # the amplitude is drawn alike for both classes (log-uniform, sd ~1.33)
    assert abs(float(amp[y == 1].mean() - amp[y == 0].mean())) < 0.5
    rescaled = [type(g)(x=g.x * 7.0, edge_index=g.edge_index, y=g.y, num_nodes=g.num_nodes)
                for g in graphs[:10]]
    torch.testing.assert_close(_rq(rescaled)[0], _rq(graphs[:10])[0], rtol=1e-5, atol=1e-6)
    near = make_spectral_energy_gad(200, anomaly_rate=0.5, smoothing=(2.0, 1.999), seed=5)
    rn, yn = _rq(near)
    rn = rn.mean(1)
    assert abs(float(rn[yn == 1].mean() - rn[yn == 0].mean())) < 3 * float(rn.std()) / np.sqrt(50)


def test_permute_node_features_keeps_statistics_and_removes_the_signal():
    graphs = make_spectral_energy_gad(200, anomaly_rate=0.5, seed=6)
    before = [g.x.clone() for g in graphs]
    perm = permute_node_features(graphs, seed=0)
    assert all(torch.equal(g.x, x) for g, x in zip(graphs, before))  # inputs untouched
    for g, h in zip(graphs, perm):
        assert torch.equal(g.edge_index, h.edge_index) and torch.equal(g.y, h.y)
        assert torch.equal(torch.sort(g.x, dim=0).values, torch.sort(h.x, dim=0).values)
        assert not torch.equal(g.x, h.x)
    again = permute_node_features(graphs, seed=0)
    assert all(torch.equal(g.x, h.x) for g, h in zip(perm, again))
    r, y = _rq(perm)
    r = r.mean(1)
    assert abs(float(r[y == 1].mean() - r[y == 0].mean())) < 3 * float(r.std()) / np.sqrt(50)
    with pytest.raises(ValueError, match=r"graphs\[0\]\.x"):
        permute_node_features([type(graphs[0])(edge_index=graphs[0].edge_index, num_nodes=3)],
                              seed=0)
    with pytest.raises(TypeError, match="seed"):
        permute_node_features(graphs, seed=0.5)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"num_graphs": 1}, ValueError, "num_graphs"),
    ({"num_channels": 0}, ValueError, "num_channels"),
    ({"smoothing": (1.0, 2.0)}, ValueError, "normal > anomalous"),
    ({"smoothing": (2.0, float("nan"))}, ValueError, "smoothing"),
    ({"smoothing": 2.0}, TypeError, "smoothing"),
    ({"amplitude_range": (0.0, 1.0)}, ValueError, "amplitude_range"),
    ({"amplitude_range": (2.0, 1.0)}, ValueError, "low <= high"),
    ({"n_range": (3, 10)}, ValueError, "n_range"),
    ({"seed": "0"}, TypeError, "seed"),
])
def test_energy_gad_errors(kwargs, err, match):
    args = {"num_graphs": 10, "seed": 0}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        make_spectral_energy_gad(**args)
