"""The long-range tree task: source/target at the asked distance, features, target readout."""

import networkx as nx
import pytest
import torch
from torch_geometric.data import Batch

from iclr24.kits.graphs import GraphClassifier
from iclr24.papers.locality_rewiring import SnapshotGNN, make_long_range_trees, target_logits


def test_trees_hold_one_source_and_one_target_at_the_distance():
    graphs = make_long_range_trees(12, 16, distance=5, num_classes=3, seed=0)
    for g in graphs:
        nxg = nx.Graph(g.edge_index.t().tolist())
        assert nx.is_tree(nxg) and nxg.number_of_nodes() == 16
        src = int(torch.nonzero(g.x[:, 3])[0])
        tgt = int(torch.nonzero(g.target_mask)[0])
        assert int(g.target_mask.sum()) == 1 and g.x[tgt, 4] == 1
        assert nx.shortest_path_length(nxg, src, tgt) == 5
        assert int(g.x[src, :3].argmax()) == int(g.y) and g.x[src, :3].sum() == 1
        assert g.x.sum() == 3  # class one-hot + two indicators, zeros elsewhere
    again = make_long_range_trees(12, 16, distance=5, num_classes=3, seed=0)
    assert all(torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
               for a, b in zip(graphs, again))


def test_target_readout_picks_the_target_rows(one_torch_thread):
    torch.manual_seed(0)
    batch = Batch.from_data_list(make_long_range_trees(4, 10, distance=3, seed=1))
    for model in (SnapshotGNN(6, 8, 4, num_layers=2, num_snapshots=1),
                  GraphClassifier("gcn", 6, 8, 4, num_layers=2)):
        model.eval()
        logits = target_logits(model, batch)
        assert logits.shape == (4, 4)
        h = model.node_embeddings(batch)
        torch.testing.assert_close(logits, model.head(h[batch.target_mask]))
    batch.target_mask[0] = True
    with pytest.raises(ValueError, match="one node per graph"):
        target_logits(model, batch)


def test_bad_arguments():
    with pytest.raises(ValueError, match="distance"):
        make_long_range_trees(2, 5, distance=5, seed=0)
    with pytest.raises(ValueError, match="num_graphs"):
        make_long_range_trees(0, 5, seed=0)


def test_receptive_field_known_answers():
    from iclr24.papers.locality_rewiring import LaserTransform, within_receptive_field

    g = make_long_range_trees(1, 12, distance=6, seed=3)[0]
    assert not within_receptive_field(g, 5) and within_receptive_field(g, 6)
    assert within_receptive_field(LaserTransform(max_distance=3, rho=1.0, seed=0)(g), 2)
    one_way = g.clone()
    src = int(torch.nonzero(g.x[:, -2])[0])
    tgt = int(torch.nonzero(g.target_mask)[0])
    one_way.edge_index = torch.tensor([[tgt], [src]])  # t -> s only: s cannot send to t
    assert not within_receptive_field(one_way, 3)
    one_way.edge_index = torch.tensor([[src], [tgt]])
    assert within_receptive_field(one_way, 1)
    g.target_mask[:] = False
    with pytest.raises(ValueError, match="one target"):
        within_receptive_field(g, 3)
