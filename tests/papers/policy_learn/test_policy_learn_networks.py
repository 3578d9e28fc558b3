"""DSGNN: invariances, the expressivity gap that node marking closes, GINE and errors."""

import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch, Data

from iclr24.papers.policy_learn import DSGNN, node_marked_bag


def _from_nx(g: nx.Graph, edge_dim: int | None = None) -> Data:
    e = torch.tensor(list(g.edges())).t()
    e = torch.cat([e, e.flip(0)], dim=1)
    d = Data(x=torch.ones(g.number_of_nodes(), 1), edge_index=e, num_nodes=g.number_of_nodes())
    if edge_dim:
        d.edge_attr = torch.ones(e.size(1), edge_dim)
    return d


def _net(**kw) -> DSGNN:
    torch.manual_seed(0)
    return DSGNN(1, 16, 4, out_dim=3, readout="sum", **kw).eval()


def test_unmarked_bag_cannot_tell_csl_skips_apart_but_a_mark_can(one_torch_thread):
    a, b = _from_nx(nx.circulant_graph(41, [1, 2])), _from_nx(nx.circulant_graph(41, [1, 3]))
    net = _net()
    with torch.no_grad():
        plain = [net(node_marked_bag(g, torch.zeros(1, 0, dtype=torch.long))) for g in (a, b)]
        marked = [net(node_marked_bag(g, torch.tensor([[0]]))) for g in (a, b)]
    assert torch.allclose(plain[0], plain[1], atol=1e-5)   # 1-WL: both 4-regular
    assert (marked[0] - marked[1]).abs().max() > 1e-3      # node marking separates them


def test_invariant_to_subgraph_order_and_node_relabelling(one_torch_thread):
    g = _from_nx(nx.barabasi_albert_graph(12, 2, seed=1))
    net = _net()
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(0))
    h = Data(x=g.x, edge_index=perm[g.edge_index], num_nodes=12)
    roots = torch.tensor([[3, 7, 0]])
    with torch.no_grad():
        base = net(node_marked_bag(g, roots))
        reordered = net(node_marked_bag(g, roots[:, [2, 0, 1]]))
        relabelled = net(node_marked_bag(h, perm[roots]))
    assert torch.allclose(base, reordered, atol=1e-5)
    assert torch.allclose(base, relabelled, atol=1e-5)


def test_batched_equals_one_graph_at_a_time(one_torch_thread):
    graphs = [_from_nx(nx.cycle_graph(5)), _from_nx(nx.path_graph(4))]
    net = _net()
    roots = torch.tensor([[1, 4], [0, 2]])
    with torch.no_grad():
        together = net(node_marked_bag(Batch.from_data_list(graphs), roots))
        alone = torch.cat([net(node_marked_bag(g, r.unsqueeze(0))) for g, r in zip(graphs, roots)])
    assert torch.allclose(together, alone, atol=1e-5)


def test_node_embeddings_and_gine(one_torch_thread):
    g = _from_nx(nx.cycle_graph(6), edge_dim=3)
    torch.manual_seed(0)
    net = DSGNN(1, 8, 2, conv="gine", edge_dim=3).eval()
    bag = node_marked_bag(g, torch.tensor([[0, 3]]))
    with torch.no_grad():
        z = net.node_embeddings(bag, 6)
        states = net.node_states(bag)
    assert z.shape == (6, 8) and net(bag).shape == (1, 8)
    # mean over the three subgraphs of each node's state
    assert torch.allclose(z, states.reshape(3, 6, 8).mean(0), atol=1e-6)
    # marks at opposite nodes of C6: node 1 and node 4 are mirror images
    assert torch.allclose(z[1], z[4], atol=1e-5)


def test_layer_norm_option_is_batch_independent(one_torch_thread):
    torch.manual_seed(0)
    net = DSGNN(1, 8, 2, out_dim=2, norm="layer").train()
    assert not any(isinstance(m, torch.nn.BatchNorm1d) for m in net.modules())
    graphs = [_from_nx(nx.cycle_graph(5)), _from_nx(nx.path_graph(6))]
    roots = torch.tensor([[0], [2]])
    together = net(node_marked_bag(Batch.from_data_list(graphs), roots))
    alone = net(node_marked_bag(graphs[0], roots[:1]))
    assert torch.allclose(together[:1], alone, atol=1e-5)


def test_errors():
    with pytest.raises(ValueError, match="conv"):
        DSGNN(1, conv="gcn")
    with pytest.raises(ValueError, match="edge_dim"):
        DSGNN(1, conv="gine")
    with pytest.raises(ValueError, match="readout"):
        DSGNN(1, readout="max")
    with pytest.raises(ValueError, match="norm"):
        DSGNN(1, norm="group")
    with pytest.raises(ValueError, match="hidden"):
        DSGNN(1, hidden=0)
    with pytest.raises(ValueError, match="in_dim"):
        DSGNN(0)
    net = DSGNN(2, 4, 1)
    bag = node_marked_bag(_from_nx(nx.cycle_graph(4)), torch.tensor([[0]]))
    with pytest.raises(ValueError, match="in_dim \\+ 1"):
        net(bag)
    with pytest.raises(ValueError, match="node_marked_bag"):
        net(_from_nx(nx.cycle_graph(4)))
    with pytest.raises(ValueError, match="edge_attr"):
        DSGNN(1, 4, 1, conv="gine", edge_dim=2)(bag)
