import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch

from iclr24.kits.graphs import GraphClassifier, csl_graph, random_tree, to_pyg


@pytest.mark.parametrize("conv", ["gin", "gcn", "cheb"])
@pytest.mark.parametrize("pool", ["sum", "mean"])
def test_logits_are_per_graph_and_permutation_invariant(conv, pool):
    torch.manual_seed(0)
    model = GraphClassifier(conv, 3, 8, 2, num_layers=2, pool=pool, batch_norm=True).eval()
    g = random_tree(12, seed=0)
    x = torch.randn(12, 3)
    perm = torch.randperm(12)
    inverse = torch.argsort(perm)
    gp = nx.relabel_nodes(g, {int(i): int(inverse[i]) for i in range(12)})
    a, b = to_pyg(g, x=x), to_pyg(gp, x=x[perm])
    batch = Batch.from_data_list([a, b, to_pyg(random_tree(5, seed=1), x=torch.randn(5, 3))])
    out = model(batch)
    assert out.shape == (3, 2)
    assert torch.allclose(out[0], out[1], atol=1e-5)
    assert model(Batch.from_data_list([a])).shape == (1, 2)


def test_gin_cannot_separate_csl_graphs():
    torch.manual_seed(0)
    model = GraphClassifier("gin", 1, 16, 2).eval()
    out = model(Batch.from_data_list([to_pyg(csl_graph(s, seed=s)) for s in (2, 3, 5)]))
    assert torch.allclose(out[0], out[1], atol=1e-5) and torch.allclose(out[0], out[2], atol=1e-5)


def test_bad_arguments():
    with pytest.raises(ValueError, match="conv"):
        GraphClassifier("gat", 1, 4, 2)
    with pytest.raises(ValueError, match="pool"):
        GraphClassifier("gin", 1, 4, 2, pool="max")
    with pytest.raises(ValueError, match="hidden"):
        GraphClassifier("gin", 1, 0, 2)
    with pytest.raises(ValueError, match="dropout"):
        GraphClassifier("gin", 1, 4, 2, dropout=1.0)


def test_pool_graphs_sums_or_averages_per_graph():
    from iclr24.kits.graphs import pool_graphs

    batch = Batch.from_data_list([to_pyg(random_tree(3, seed=0)), to_pyg(random_tree(2, seed=1))])
    h = torch.arange(5.0)[:, None]
    assert pool_graphs(h, batch, "sum").tolist() == [[3.0], [7.0]]
    assert pool_graphs(h, batch, "mean").tolist() == [[1.0], [3.5]]
    assert pool_graphs(h[:3], to_pyg(random_tree(3, seed=0)), "sum").tolist() == [[3.0]]
    with pytest.raises(ValueError, match="pool"):
        pool_graphs(h, batch, "max")
