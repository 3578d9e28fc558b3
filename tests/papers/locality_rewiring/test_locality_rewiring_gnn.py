"""SnapshotGNN: relational sum over snapshots (paper Sec. 4), the official variant, progressive
snapshots, and snapshot ids never reaching GCNConv as edge weights."""

import pytest
import torch
from torch_geometric.data import Batch
from torch_geometric.nn import GCNConv

from iclr24.kits.graphs import random_tree, to_pyg
from iclr24.papers.locality_rewiring import LaserTransform, SnapshotGNN


def _graphs(k=3, n=14):
    out = []
    for s in range(k):
        d = to_pyg(random_tree(n, seed=s), x=torch.randn(n, 5, generator=torch.Generator().manual_seed(s)))
        out.append(LaserTransform(max_distance=3, rho=0.5, seed=s)(d))
    return out


def _relu_bn(model, t, out):
    return torch.relu(model.norms[t](out))


def test_relational_layer_is_sum_of_per_snapshot_convs(one_torch_thread):
    torch.manual_seed(0)
    model = SnapshotGNN(5, 8, 2, num_layers=2, num_snapshots=3).eval()
    batch = Batch.from_data_list(_graphs())
    h = batch.x
    for t, convs in enumerate(model.layers):
        assert len(convs) == 3
        out = sum(conv(h, batch.edge_index[:, batch.edge_snapshot == lvl])
                  for lvl, conv in enumerate(convs))
        h = _relu_bn(model, t, out)
    torch.testing.assert_close(model.node_embeddings(batch), h)


def test_official_mode_uses_the_union_until_the_last_layer(one_torch_thread):
    torch.manual_seed(1)
    model = SnapshotGNN(5, 8, 2, num_layers=3, num_snapshots=3, mode="official").eval()
    assert [len(c) for c in model.layers] == [1, 1, 3]
    batch = Batch.from_data_list(_graphs())
    h = batch.x
    for t in range(2):
        h = _relu_bn(model, t, model.layers[t][0](h, batch.edge_index))
    out = sum(conv(h, batch.edge_index[:, batch.edge_snapshot == lvl])
              for lvl, conv in enumerate(model.layers[2]))
    torch.testing.assert_close(model.node_embeddings(batch), _relu_bn(model, 2, out))


@pytest.mark.parametrize("mode", ["relational", "official"])
def test_progressive_first_layer_ignores_added_edges(mode, one_torch_thread):
    torch.manual_seed(2)
    g = _graphs(1)[0]
    plain = g.clone()
    keep = plain.edge_snapshot == 0
    plain.edge_index, plain.edge_snapshot = plain.edge_index[:, keep], plain.edge_snapshot[keep]
    model = SnapshotGNN(5, 8, 2, num_layers=1, num_snapshots=3, mode=mode,
                        progressive=True).eval()
    torch.testing.assert_close(model(g), model(plain))
    dense = SnapshotGNN(5, 8, 2, num_layers=1, num_snapshots=3, mode=mode).eval()
    dense.load_state_dict(model.state_dict())
    assert not torch.allclose(dense(g), dense(plain))


def test_snapshot_ids_never_reach_gcnconv_as_edge_weights(monkeypatch, one_torch_thread):
    seen = []
    original = GCNConv.forward

    def spy(self, x, edge_index, edge_weight=None):
        seen.append(edge_weight)
        return original(self, x, edge_index, edge_weight)

    monkeypatch.setattr(GCNConv, "forward", spy)
    torch.manual_seed(3)
    batch = Batch.from_data_list(_graphs())
    batch.edge_weight = batch.edge_snapshot.float()  # even if present on the data, it is unused
    for mode in ("relational", "official"):
        SnapshotGNN(5, 8, 2, num_layers=2, num_snapshots=3, mode=mode)(batch)
    assert seen and all(w is None for w in seen)


def test_relabelling_snapshot_ids_changes_which_weights_see_an_edge(one_torch_thread):
    """Ids select convolutions (not scale messages): swapping ids 1 and 2 equals swapping the
    two convolutions' parameters."""
    torch.manual_seed(4)
    model = SnapshotGNN(5, 8, 2, num_layers=1, num_snapshots=3).eval()
    g = _graphs(1)[0]
    swapped = g.clone()
    s = g.edge_snapshot
    swapped.edge_snapshot = torch.where(s == 1, 2, torch.where(s == 2, 1, s))
    other = SnapshotGNN(5, 8, 2, num_layers=1, num_snapshots=3).eval()
    state = model.state_dict()
    remap = {k.replace("layers.0.1.", "layers.0.X.").replace("layers.0.2.", "layers.0.1.")
             .replace("layers.0.X.", "layers.0.2."): v for k, v in state.items()}
    other.load_state_dict(remap)
    torch.testing.assert_close(model(g), other(swapped))


def test_batching_matches_single_graphs_and_missing_ids_mean_original(one_torch_thread):
    torch.manual_seed(5)
    model = SnapshotGNN(5, 8, 3, num_layers=3, num_snapshots=3, pool="sum").eval()
    graphs = _graphs()
    together = model(Batch.from_data_list(graphs))
    alone = torch.cat([model(g) for g in graphs])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=1e-5)
    assert together.shape == (3, 3)
    plain = to_pyg(random_tree(9, seed=0), x=torch.randn(9, 5))
    tagged = plain.clone()
    tagged.edge_snapshot = torch.zeros(plain.edge_index.shape[1], dtype=torch.long)
    torch.testing.assert_close(model(plain), model(tagged))


def test_gin_variant_runs_and_backpropagates(one_torch_thread):
    torch.manual_seed(6)
    model = SnapshotGNN(5, 8, 2, num_layers=2, num_snapshots=3, conv="gin")
    loss = model(Batch.from_data_list(_graphs())).sum()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="mode"):
        SnapshotGNN(5, 8, 2, mode="temporal")
    with pytest.raises(ValueError, match="conv"):
        SnapshotGNN(5, 8, 2, conv="gat")
    with pytest.raises(ValueError, match="num_snapshots"):
        SnapshotGNN(5, 8, 2, num_snapshots=0)
    with pytest.raises(ValueError, match="pool"):
        SnapshotGNN(5, 8, 2, pool="max")
    g = _graphs(1)[0]
    with pytest.raises(ValueError, match="edge_snapshot ids"):
        SnapshotGNN(5, 8, 2, num_snapshots=2)(g)
    g.x = None
    with pytest.raises(ValueError, match="node features"):
        SnapshotGNN(5, 8, 2)(g)
