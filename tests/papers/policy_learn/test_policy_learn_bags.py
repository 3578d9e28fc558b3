"""node_marked_bag: copies, marking channel, index vectors, soft marks and errors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Batch, Data

from iclr24.papers.policy_learn import node_marked_bag


def _path(n: int, feat: float = 1.0) -> Data:
    src = torch.arange(n - 1)
    e = torch.stack([torch.cat([src, src + 1]), torch.cat([src + 1, src])])
    return Data(x=torch.full((n, 1), feat) + torch.arange(n).unsqueeze(1) / 10, edge_index=e,
                num_nodes=n)


def _edges_of(bag, s):
    """Edge set of subgraph s, in local node numbering."""
    nodes = torch.nonzero(bag.subgraph_batch == s).flatten()
    start = int(nodes.min())
    keep = bag.subgraph_batch[bag.edge_index[0]] == s
    return {(int(u) - start, int(v) - start) for u, v in bag.edge_index[:, keep].t()}


def test_integer_roots_copy_graphs_and_mark_one_node():
    batch = Batch.from_data_list([_path(4), _path(3, 2.0)])
    bag = node_marked_bag(batch, torch.tensor([[2, 0], [1, -1]]))
    # graph 0: original + 2 copies, graph 1: original + 1 copy
    assert bag.num_subgraphs == 5 and bag.num_parent_graphs == 2
    assert bag.graph_batch.tolist() == [0, 0, 0, 1, 1]
    assert bag.subgraph_copy.tolist() == [0, 1, 2, 0, 1]
    assert bag.x.shape == (3 * 4 + 2 * 3, 2)
    # features are copies of the original nodes
    assert torch.equal(bag.x[:, :1], batch.x[bag.node_id])
    marks = bag.x[:, 1]
    for s, root in [(0, None), (1, 2), (2, 0), (3, None), (4, 1)]:
        m = marks[bag.subgraph_batch == s]
        if root is None:
            assert m.sum() == 0
        else:
            assert m.sum() == 1 and int(m.argmax()) == root
    # every copy keeps its graph's connectivity
    e0, e1 = _edges_of(bag, 0), _edges_of(bag, 3)
    assert e0 == {(int(u), int(v)) for u, v in _path(4).edge_index.t()}
    assert all(_edges_of(bag, s) == e0 for s in (1, 2))
    assert _edges_of(bag, 4) == e1
    assert bag.edge_index.size(1) == 3 * 6 + 2 * 4


def test_soft_marks_equal_integer_roots_and_carry_gradient():
    batch = Batch.from_data_list([_path(4), _path(3)])
    roots = torch.tensor([[3, 1], [0, 2]])
    soft = torch.zeros(2, 2, 4)
    soft[torch.arange(2)[:, None], torch.arange(2)[None, :], roots] = 1.0
    soft.requires_grad_(True)
    hard_bag = node_marked_bag(batch, roots)
    soft_bag = node_marked_bag(batch, soft)
    assert torch.equal(hard_bag.x, soft_bag.x.detach())
    weights = torch.arange(soft_bag.x.size(0), dtype=torch.float)
    (soft_bag.x[:, 1] * weights).sum().backward()
    # d/d soft[b, t, i] = weight of the bag node that copies node i into subgraph t of graph b
    assert soft.grad[0, 0, 0] == weights[4] and soft.grad[1, 1, 2] == weights[-1]
    assert soft.grad[1, 0, 3] == 0  # padding column of the 3-node graph is unused


def test_full_bag_of_a_single_data_and_no_original():
    g = _path(5)
    bag = node_marked_bag(g, torch.arange(5).unsqueeze(0), include_original=False)
    assert bag.num_subgraphs == 5
    per_sub = bag.x[:, 1].reshape(5, 5)
    assert torch.equal(per_sub, torch.eye(5))


@settings(max_examples=25)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=4), t=st.integers(0, 3),
       seed=st.integers(0, 1000))
def test_bag_invariants_on_random_graphs(sizes, t, seed):
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for n in sizes:
        a = (torch.rand(n, n, generator=gen) < 0.5).triu(1)
        a = a | a.t()
        graphs.append(Data(x=torch.rand(n, 2, generator=gen), edge_index=a.nonzero().t(),
                           num_nodes=n))
    batch = Batch.from_data_list(graphs)
    roots = (torch.rand(len(sizes), t, generator=gen)
             * torch.tensor(sizes)[:, None]).long()
    bag = node_marked_bag(batch, roots)
    assert bag.num_subgraphs == len(sizes) * (t + 1)
    assert bag.x.size(0) == sum(sizes) * (t + 1)
    assert bag.edge_index.size(1) == batch.edge_index.size(1) * (t + 1)
    # edges stay inside their subgraph, and the mark count is one per marked copy
    assert torch.equal(bag.subgraph_batch[bag.edge_index[0]], bag.subgraph_batch[bag.edge_index[1]])
    assert int(bag.x[:, -1].sum()) == len(sizes) * t
    # every bag edge copies an original edge
    orig = {(int(u), int(v)) for u, v in batch.edge_index.t()}
    mapped = {(int(bag.node_id[u]), int(bag.node_id[v])) for u, v in bag.edge_index.t()}
    assert mapped == orig


def test_errors():
    g = _path(3)
    with pytest.raises(ValueError, match="no nodes"):
        node_marked_bag(Data(x=torch.zeros(0, 1), edge_index=torch.zeros(2, 0, dtype=torch.long),
                             num_nodes=0), torch.zeros(1, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="not below"):
        node_marked_bag(g, torch.tensor([[3]]))
    with pytest.raises(ValueError, match="pad the end"):
        node_marked_bag(g, torch.tensor([[-1, 0]]))
    with pytest.raises(ValueError, match="shape"):
        node_marked_bag(g, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="max_nodes"):
        node_marked_bag(g, torch.zeros(1, 1, 2))
    with pytest.raises(TypeError, match="roots"):
        node_marked_bag(g, [[0]])
    with pytest.raises(TypeError, match="Data"):
        node_marked_bag("graph", torch.tensor([[0]]))
