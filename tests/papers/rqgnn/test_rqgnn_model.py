"""RQGNN: shapes, the RQ-pooling and RQL formulas, registered (trainable) Chebyshev filters,
invariance to node order, ablation switches, errors."""

import pytest
import torch
from torch_geometric.data import Batch

from iclr24.papers.rqgnn import RQGNN, make_spectral_gad, rayleigh_quotient


@pytest.fixture(scope="module")
def batch():
    return Batch.from_data_list(make_spectral_gad(6, n_range=(8, 12), num_types=4, seed=0))


def test_shapes_and_formulas(batch, one_torch_thread):
    torch.manual_seed(0)
    model = RQGNN(4, hidden=8, width=3, cheb_k=2).eval()
    logits = model(batch)
    assert logits.shape == (6, 2)
    # recompute the head input by hand from the documented equations
    r = rayleigh_quotient(batch.x, batch.edge_index, batch.batch)
    h = model.node_embeddings(batch.x, batch.edge_index)
    act = torch.nn.functional.leaky_relu
    a = act(model.pool2(act(model.pool1(r))))
    h_g = torch.stack([(h[batch.batch == g] @ a[g])[:, None].mul(h[batch.batch == g]).sum(0)
                       for g in range(6)])  # sum_i <H_i, a_G> H_i
    h_rq = act(model.rql2(model.rql1(r)))
    expected = model.head(model.norm(torch.cat([h_g, h_rq], dim=1)))
    torch.testing.assert_close(logits, expected)


def test_chebyshev_filters_are_registered_and_trained(batch, one_torch_thread):
    torch.manual_seed(1)
    model = RQGNN(4, hidden=8, width=4, cheb_k=3)
    cheb = {id(p) for conv in model.cheb for p in conv.parameters()}
    assert len(model.cheb) == 4 and cheb <= {id(p) for p in model.parameters()}
    before = [p.detach().clone() for conv in model.cheb for p in conv.parameters()]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(batch), batch.y).backward()
    opt.step()
    after = [p for conv in model.cheb for p in conv.parameters()]
    assert all(not torch.equal(b, a) for b, a in zip(before, after))  # the official list stays put


def test_invariant_to_node_order(one_torch_thread):
    graphs = make_spectral_gad(4, n_range=(8, 10), num_types=3, seed=2)
    torch.manual_seed(2)
    model = RQGNN(3, hidden=8, width=2, cheb_k=3).eval()
    gen = torch.Generator().manual_seed(0)
    permuted = []
    for g in graphs:
        perm = torch.randperm(g.num_nodes, generator=gen)
        inv = torch.argsort(perm)
        permuted.append(type(g)(x=g.x[perm], edge_index=inv[g.edge_index], y=g.y,
                                num_nodes=g.num_nodes))
    torch.testing.assert_close(model(Batch.from_data_list(permuted)),
                               model(Batch.from_data_list(graphs)), atol=1e-5, rtol=1e-5)


def test_single_graph_and_ablation_switches(batch, one_torch_thread):
    one = make_spectral_gad(2, n_range=(8, 8), num_types=4, seed=5)[0]
    assert RQGNN(4, hidden=8, cheb_k=2).eval()(one).shape == (1, 2)
    torch.manual_seed(3)
    no_rql = RQGNN(4, hidden=8, cheb_k=2, use_rql=False, pooling="mean").eval()
    assert no_rql.head.in_features == 8 and no_rql(batch).shape == (6, 2)
    # without RQL and RQ-pooling the output is the head of the plain mean of node embeddings
    h = no_rql.node_embeddings(batch.x, batch.edge_index)
    means = torch.stack([h[batch.batch == g].mean(0) for g in range(6)])
    torch.testing.assert_close(no_rql(batch), no_rql.head(no_rql.norm(means)))
    code = RQGNN(4, hidden=8, cheb_k=2, normalize_rq=False)
    assert code.normalize_rq is False


@pytest.mark.parametrize("kwargs, err, match", [
    ({"in_dim": 0}, ValueError, "in_dim"),
    ({"hidden": 2.5}, ValueError, "hidden"),
    ({"cheb_k": 0}, ValueError, "cheb_k"),
    ({"dropout": 1.0}, ValueError, "dropout"),
    ({"pooling": "max"}, ValueError, "pooling"),
    ({"normalize_rq": "yes"}, TypeError, "normalize_rq"),
])
def test_constructor_errors(kwargs, err, match):
    args = {"in_dim": 4}
    args.update(kwargs)
    with pytest.raises(err, match=match):
        RQGNN(**args)


def test_forward_errors(batch):
    model = RQGNN(5, hidden=8, cheb_k=2)
    with pytest.raises(ValueError, match="in_dim=5"):
        model(batch)
    empty = Batch.from_data_list(make_spectral_gad(2, n_range=(8, 8), num_types=4, seed=0))
    empty.x = empty.x[:0]
    with pytest.raises(ValueError, match="in_dim=4|empty"):
        RQGNN(4, hidden=8, cheb_k=2)(empty)


def test_single_graph_in_training_mode_is_a_clear_error(one_torch_thread):
    one = make_spectral_gad(2, n_range=(8, 8), num_types=4, seed=5)[0]
    model = RQGNN(4, hidden=8, cheb_k=2).train()
    with pytest.raises(ValueError, match="at least 2 graphs.*model.eval"):
        model(one)
    with pytest.raises(ValueError, match="at least 2 graphs"):
        model(Batch.from_data_list([one]))
    assert model.eval()(one).shape == (1, 2)  # running statistics serve one graph
    no_bn = RQGNN(4, hidden=8, cheb_k=2, batch_norm=False).train()
    assert no_bn(one).shape == (1, 2)
