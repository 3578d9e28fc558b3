"""The long-range tree task: source/target at the asked distance, distractors far from the
target, features, target readout, receptive fields."""

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
        assert int(g.source_mask.sum()) == 1 and bool(g.source_mask[src])
        assert not g.distractor_mask.any()
    again = make_long_range_trees(12, 16, distance=5, num_classes=3, seed=0)
    assert all(torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
               for a, b in zip(graphs, again))


def test_distractors_look_like_sources_and_lie_far_from_the_target():
    graphs = make_long_range_trees(30, 30, distance=6, num_classes=4, num_distractors=2,
                                   distractor_distance=10, seed=5)
    labels, distractor_classes = [], []
    for g in graphs:
        nxg = nx.Graph(g.edge_index.t().tolist())
        tgt = int(torch.nonzero(g.target_mask)[0])
        src = int(torch.nonzero(g.source_mask)[0])
        far = torch.nonzero(g.distractor_mask).flatten().tolist()
        assert nx.shortest_path_length(nxg, src, tgt) == 6 and len(far) == 2
        assert src not in far and tgt not in far
        assert all(nx.shortest_path_length(nxg, d, tgt) >= 10 for d in far)
        flagged = torch.nonzero(g.x[:, 4]).flatten().tolist()  # the source indicator
        assert sorted(flagged) == sorted([src, *far])  # distractors carry it too
        for d in far:
            assert g.x[d, :4].sum() == 1
            distractor_classes.append(int(g.x[d, :4].argmax()))
        assert int(g.x[src, :4].argmax()) == int(g.y)
        labels.append(int(g.y))
    assert len(set(distractor_classes)) > 1 and len(set(labels)) > 1
    # the distractors' classes are not the label (independent draws): they disagree often
    assert sum(c != y for c, y in zip(distractor_classes[::2], labels)) >= 10


def test_distractor_arguments_are_checked():
    with pytest.raises(ValueError, match="distractor_distance is required"):
        make_long_range_trees(2, 30, num_distractors=1, seed=0)
    with pytest.raises(ValueError, match="distractor_distance"):
        make_long_range_trees(2, 30, distance=6, num_distractors=1, distractor_distance=6,
                              seed=0)
    with pytest.raises(ValueError, match="num_distractors"):
        make_long_range_trees(2, 8, distance=3, num_distractors=7, distractor_distance=4,
                              seed=0)
    with pytest.raises(ValueError, match="num_distractors"):
        make_long_range_trees(2, 30, num_distractors=-1, distractor_distance=10, seed=0)
    with pytest.raises(ValueError, match="no tree"):  # a 12-node tree has no node 11 hops away
        make_long_range_trees(1, 12, distance=3, num_distractors=1, distractor_distance=12,
                              seed=0)


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


def test_receptive_field_is_the_set_within_k_directed_hops():
    from iclr24.papers.locality_rewiring import receptive_field

    g = make_long_range_trees(1, 20, distance=4, seed=7)[0]
    tgt = int(torch.nonzero(g.target_mask)[0])
    nxg = nx.Graph(g.edge_index.t().tolist())
    for k in (0, 1, 3):
        want = {v for v, d in nx.single_source_shortest_path_length(nxg, tgt).items() if d <= k}
        assert set(torch.nonzero(receptive_field(g, k)).flatten().tolist()) == want
    # a directed chain 0 -> 1 -> 2 with t = 2: the field grows against the edge direction
    chain = g.clone()
    chain.edge_index = torch.tensor([[0, 1], [1, 2]])
    chain.target_mask = torch.zeros(g.num_nodes, dtype=torch.bool)
    chain.target_mask[2] = True
    assert torch.nonzero(receptive_field(chain, 1)).flatten().tolist() == [1, 2]
    assert torch.nonzero(receptive_field(chain, 2)).flatten().tolist() == [0, 1, 2]
    chain.target_mask[0] = True
    with pytest.raises(ValueError, match="one target"):
        receptive_field(chain, 2)
    with pytest.raises(ValueError, match="num_layers"):
        receptive_field(g, -1)


def test_receptive_field_known_answers():
    from iclr24.papers.locality_rewiring import LaserTransform, within_receptive_field

    g = make_long_range_trees(1, 12, distance=6, seed=3)[0]
    assert not within_receptive_field(g, 5) and within_receptive_field(g, 6)
    assert within_receptive_field(LaserTransform(max_distance=3, rho=1.0, seed=0)(g), 2)
    one_way = g.clone()
    src = int(torch.nonzero(g.source_mask)[0])
    tgt = int(torch.nonzero(g.target_mask)[0])
    one_way.edge_index = torch.tensor([[tgt], [src]])  # t -> s only: s cannot send to t
    assert not within_receptive_field(one_way, 3)
    one_way.edge_index = torch.tensor([[src], [tgt]])
    assert within_receptive_field(one_way, 1)
    g.target_mask[:] = False
    with pytest.raises(ValueError, match="one target"):
        within_receptive_field(g, 3)
    g.source_mask[:] = False
    with pytest.raises(ValueError, match="one source"):
        within_receptive_field(g, 3)
