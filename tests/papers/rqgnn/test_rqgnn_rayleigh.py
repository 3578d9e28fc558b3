"""rayleigh_quotient: the spectral-energy identity against eigh, the code's normalisation, batching,
invariances, gradients and errors."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import laplacian
from torch_geometric.data import Batch

from iclr24.kits.graphs import to_pyg
from iclr24.papers.rqgnn import dense_spectral_energy, edge_case_graphs, rayleigh_quotient


def _graph(n, p, d, seed, isolated=0, zero_channel=None, dtype=torch.float64):
    g = nx.gnp_random_graph(n, p, seed=seed)
    g.add_nodes_from(range(n, n + isolated))
    x = np.random.default_rng(seed).standard_normal((n + isolated, d))
    if zero_channel is not None:
        x[:, zero_channel] = 0.0
    data = to_pyg(g)
    data.x = torch.as_tensor(x, dtype=dtype)
    return data


def _eigh_rq(data):
    """sum_k lambda_k x_hat_k^2 / sum_k x_hat_k^2 written out independently of the package."""
    a = np.zeros((data.num_nodes, data.num_nodes))
    a[data.edge_index[0].numpy(), data.edge_index[1].numpy()] = 1.0
    lam, u = np.linalg.eigh(laplacian(a, normed=True))
    x_hat = u.T @ data.x.double().numpy()
    num, den = (lam[:, None] * x_hat**2).sum(0), (x_hat**2).sum(0)
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


@settings(max_examples=25)
@given(n=st.integers(2, 25), p=st.floats(0.05, 0.9), d=st.integers(1, 4),
       isolated=st.integers(0, 3), seed=st.integers(0, 10_000), zero=st.booleans())
def test_identity_with_eigh_including_isolated_nodes_and_zero_channels(n, p, d, isolated, seed,
                                                                       zero):
    data = _graph(n, p, d, seed, isolated, zero_channel=0 if zero else None)
    ours = rayleigh_quotient(data.x, data.edge_index)[0].numpy()
    np.testing.assert_allclose(ours, _eigh_rq(data), atol=1e-5)
    if zero:
        assert ours[0] == 0.0


def test_float32_batch_matches_eigh_to_1e5_and_dense_reference():
    graphs = edge_case_graphs(12, seed=3)
    assert any((torch.bincount(g.edge_index[0], minlength=g.num_nodes) == 0).any()
               for g in graphs)  # isolated nodes are really there
    assert all(float(g.x[:, 2].abs().sum()) == 0 for g in graphs[:12])  # the zero channel
    for group in (graphs[:12], graphs[12:]):  # 5 Gaussian channels, then 8 one-hot types
        b = Batch.from_data_list(group)
        r = rayleigh_quotient(b.x, b.edge_index, b.batch)
        assert r.dtype == torch.float32 and r.shape == (len(group), b.x.shape[1])
        for i, g in enumerate(group):
            np.testing.assert_allclose(r[i].double().numpy(), _eigh_rq(g), atol=1e-5)
            np.testing.assert_allclose(dense_spectral_energy(g)[0], _eigh_rq(g), atol=1e-12)


def test_unnormalised_option_is_the_official_diag_xtlx():
    data = _graph(15, 0.3, 3, seed=1, isolated=2)
    a = np.zeros((data.num_nodes,) * 2)
    a[data.edge_index[0], data.edge_index[1]] = 1.0
    x = data.x.numpy()
    expected = np.diag(x.T @ laplacian(a, normed=True) @ x)  # official utils.generate_batches
    got = rayleigh_quotient(data.x, data.edge_index, normalize=False)[0].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dense_spectral_energy(data)[1], expected, rtol=1e-10)
    normed = rayleigh_quotient(data.x, data.edge_index)[0].numpy()
    np.testing.assert_allclose(normed, expected / (x**2).sum(0), rtol=1e-10)


def test_known_answers_path_and_constant_signal():
    # two nodes joined by an edge: L = [[1, -1], [-1, 1]]; x = (1, -1) is the top eigenvector
    e = torch.tensor([[0, 1], [1, 0]])
    x = torch.tensor([[1.0, 1.0], [-1.0, 1.0]], dtype=torch.float64)
    np.testing.assert_allclose(rayleigh_quotient(x, e)[0].numpy(), [2.0, 0.0], atol=1e-12)
    # D^{1/2} 1 is in the kernel of the normalised Laplacian: r = 0 on a star
    star = to_pyg(nx.star_graph(5))
    deg = torch.bincount(star.edge_index[0]).double()
    assert abs(float(rayleigh_quotient(deg.sqrt()[:, None], star.edge_index))) < 1e-12


def test_batching_scale_and_permutation_invariance():
    graphs = [_graph(8 + i, 0.4, 2, seed=i, isolated=i % 2) for i in range(4)]
    b = Batch.from_data_list(graphs)
    batched = rayleigh_quotient(b.x, b.edge_index, b.batch)
    single = torch.cat([rayleigh_quotient(g.x, g.edge_index) for g in graphs])
    torch.testing.assert_close(batched, single)
    torch.testing.assert_close(rayleigh_quotient(3.0 * b.x, b.edge_index, b.batch), batched)
    g = graphs[2]
    perm = torch.randperm(g.num_nodes, generator=torch.Generator().manual_seed(0))
    inv = torch.argsort(perm)
    torch.testing.assert_close(rayleigh_quotient(g.x[perm], inv[g.edge_index]),
                               rayleigh_quotient(g.x, g.edge_index))
    assert bool(((batched >= -1e-12) & (batched <= 2 + 1e-12)).all())  # spectrum of L in [0, 2]


def test_trailing_graph_ids_and_gradients():
    g = _graph(6, 0.5, 2, seed=4)
    x = g.x.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: rayleigh_quotient(t, g.edge_index), (x,))
    with pytest.raises(ValueError, match="no nodes"):
        rayleigh_quotient(g.x, g.edge_index, num_graphs=2)  # graph 1 would be empty


@pytest.mark.parametrize("kwargs, err, match", [
    ({"x": torch.zeros(0, 2)}, ValueError, "empty graph"),
    ({"x": torch.ones(3, 2, dtype=torch.long)}, TypeError, "floating-point"),
    ({"edge_index": torch.tensor([[0, 1]])}, TypeError, r"\(2, E\)"),
    ({"edge_index": torch.tensor([[0, 5], [5, 0]])}, ValueError, "outside"),
    ({"edge_index": torch.tensor([[0], [1]])}, ValueError, "undirected"),
    ({"batch": torch.tensor([0, 2, 2])}, ValueError, "no nodes"),
    ({"batch": torch.tensor([0, 0])}, TypeError, "batch"),
    ({"normalize": 1}, TypeError, "normalize"),
    # NaN used to read as an absent channel (r = 0): now refused
    ({"x": torch.tensor([[1.0, float("nan")], [0.5, 1.0], [1.0, 2.0]])}, ValueError, "finite"),
    ({"x": torch.tensor([[1.0, 0.0], [float("inf"), 1.0], [1.0, 2.0]])}, ValueError, "finite"),
])
def test_errors(kwargs, err, match):
    args = {"x": torch.ones(3, 2), "edge_index": torch.tensor([[0, 1], [1, 0]]), "batch": None}
    args.update(kwargs)
    normalize = args.pop("normalize", True)
    with pytest.raises(err, match=match):
        rayleigh_quotient(args["x"], args["edge_index"], args["batch"], normalize=normalize)


def test_nan_in_one_graph_is_refused_in_a_batch_and_without_normalisation():
    graphs = [_graph(6, 0.5, 2, seed=s) for s in range(3)]
    graphs[1].x[2, 1] = float("nan")
    b = Batch.from_data_list(graphs)
    for normalize in (True, False):
        with pytest.raises(ValueError, match=r"x must be finite.*\[\[8, 1\]\]"):
            rayleigh_quotient(b.x, b.edge_index, b.batch, normalize=normalize)
