"""DAGNN against a dense closed form, the encoders' two graph formats, the decoders, DeepWalk."""

import itertools

import numpy as np
import pytest
import torch

from iclr24.papers.ex_graph import (
    DAGNN,
    ENCODERS,
    DAGNNPropagation,
    EdgeDecoder,
    GraphEncoder,
    RGCNEncoder,
    deepwalk_embeddings,
    message_graph,
    uniform_random_walks,
)


def _graph(n=30, e=120, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    ei = ei[:, ei[0] != ei[1]]
    return torch.unique(ei, dim=1)


def test_dagnn_propagation_matches_dense_formula():
    n, d, k = 30, 5, 4
    ei = _graph(n)
    x = torch.randn(n, d, dtype=torch.float64)
    prop = DAGNNPropagation(d, K=k).double()
    # Â = D̃^{-1/2}(A + I)D̃^{-1/2} with A[dst, src] = 1 and D̃ the in-degree + 1
    a = torch.zeros(n, n, dtype=torch.float64)
    a[ei[1], ei[0]] = 1.0
    a += torch.eye(n, dtype=torch.float64)
    dinv = a.sum(1) ** -0.5
    a_hat = dinv[:, None] * a * dinv[None, :]
    hs = [x]
    for _ in range(k):
        hs.append(a_hat @ hs[-1])
    s = prop.s.detach()
    expected = sum(torch.sigmoid(h @ s) * h for h in hs)
    got = prop(x, ei)
    assert torch.allclose(got, expected, atol=1e-10)
    sparse = prop.float()(x.float(), message_graph("dagnn", ei, n))  # CSR values are float32
    assert torch.allclose(sparse.double(), expected, atol=1e-5)
    prop.double()
    # K = 0: only the retention of the input itself
    p0 = DAGNNPropagation(d, K=0).double()
    assert torch.allclose(p0(x, ei), torch.sigmoid(x @ p0.s.detach()) * x)


def test_dagnn_gradients_reach_retention_scores():
    model = DAGNN(6, 16, 4, K=3)
    ei = _graph(20, 60)
    out = model(torch.randn(20, 6), ei)
    assert out.shape == (20, 4)
    out.sum().backward()
    assert model.propagation.s.grad is not None and float(model.propagation.s.grad.abs().sum()) > 0
    with pytest.raises(ValueError, match="K"):
        DAGNNPropagation(4, K=-1)


@pytest.mark.parametrize("name", ENCODERS)
def test_encoders_same_output_on_edge_list_and_sparse_adjacency(name):
    torch.manual_seed(0)
    n = 40
    ei = _graph(n, 160)
    enc = GraphEncoder(name, 8, 16, 4, heads=2).eval()
    x = torch.randn(n, 8)
    a = enc(x, ei)
    assert a.shape == (n, 4)
    assert torch.allclose(a, enc(x, message_graph(name, ei, n)), atol=1e-5)


def test_messages_flow_source_to_target():
    # node 0 only sends: its embedding ignores everyone else; node 1 receives from 0
    ei = torch.tensor([[0, 2], [1, 1]])
    torch.manual_seed(0)
    enc = GraphEncoder("sage", 3, 8, 2).eval()
    x = torch.randn(3, 3)
    x2 = x.clone()
    x2[2] += 5.0
    a, b = enc(x, ei), enc(x2, ei)
    assert torch.allclose(a[0], b[0])
    assert not torch.allclose(a[1], b[1])


def test_encoder_errors():
    with pytest.raises(ValueError, match="name must be one of"):
        GraphEncoder("gin", 8)
    with pytest.raises(ValueError, match="ggnn"):
        GraphEncoder("ggnn", 200, hidden=16)
    with pytest.raises(ValueError, match="in_dim"):
        GraphEncoder("gcn", 0)


def test_rgcn_encoder_uses_edge_types():
    torch.manual_seed(0)
    ei = _graph(20, 80)
    enc = RGCNEncoder(4, 2, 8, 3).eval()
    x = torch.randn(20, 4)
    t0 = torch.zeros(ei.shape[1], dtype=torch.long)
    assert enc(x, ei, t0).shape == (20, 3)
    assert not torch.allclose(enc(x, ei, t0), enc(x, ei, torch.ones_like(t0)))


def test_edge_decoder():
    torch.manual_seed(0)
    dec = EdgeDecoder("linear", 4)
    zu, zv = torch.randn(5, 4), torch.randn(5, 4)
    lin = dec.net
    assert torch.allclose(dec(zu, zv), (torch.cat([zu, zv], 1) @ lin.weight.T + lin.bias)[:, 0])
    assert not torch.allclose(dec(zu, zv), dec(zv, zu))  # direction matters
    mlp = EdgeDecoder("mlp", 4, hidden=7)
    assert mlp(zu, zv).shape == (5,)
    assert [p.shape for p in mlp.parameters()] == [(7, 8), (7,), (1, 7), (1,)]
    with pytest.raises(ValueError, match="kind"):
        EdgeDecoder("bilinear")
    with pytest.raises(ValueError, match="z_src and z_dst"):
        dec(zu, zv[:3])


def test_random_walks_follow_edges():
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])  # a directed triangle; node 3 isolated
    walks = uniform_random_walks(ei, 4, walk_length=6, walks_per_node=3, seed=0)
    assert walks.shape == (12, 6)
    und = {(0, 1), (1, 0), (1, 2), (2, 1), (2, 0), (0, 2)}
    for w in walks:
        if w[0] == 3:
            assert (w == 3).all()
        else:
            assert all((int(a), int(b)) in und for a, b in itertools.pairwise(w))
    assert np.array_equal(walks, uniform_random_walks(ei, 4, walk_length=6, walks_per_node=3,
                                                      seed=0))
    with pytest.raises(ValueError, match="walk_length"):
        uniform_random_walks(ei, 4, walk_length=1, walks_per_node=1, seed=0)


def test_deepwalk_embeds_communities(one_torch_thread):
    # two 8-cliques joined by one edge: same-clique nodes end up closer than cross-clique ones
    a = [(i, j) for i in range(8) for j in range(8) if i < j]
    ei = torch.tensor(a + [(i + 8, j + 8) for i, j in a] + [(0, 8)]).T
    z = deepwalk_embeddings(ei, 16, dim=16, walk_length=10, context_size=4, walks_per_node=10,
                            epochs=5, lr=0.05, batch_size=8, seed=0)
    z = torch.nn.functional.normalize(z, dim=1)
    sim = z @ z.T
    same = torch.block_diag(torch.ones(8, 8), torch.ones(8, 8)).bool() & ~torch.eye(16).bool()
    cross = ~torch.block_diag(torch.ones(8, 8), torch.ones(8, 8)).bool()
    assert float(sim[same].mean()) > float(sim[cross].mean()) + 0.2
