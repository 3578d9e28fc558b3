"""The ULTRA model: layer closed form, invariances (U3), training-mode edge removal, checkpoints."""

from __future__ import annotations

import pytest
import torch

from iclr24.kits.knowledge_graphs import KnowledgeGraph, sample_negatives
from iclr24.papers.ultra import (
    GeneralizedRelationalConv,
    Ultra,
    load_checkpoint,
    make_rule_kg,
    prepare_graph,
    remove_query_edges,
    save_checkpoint,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def kg():
    return make_rule_kg(30, 3, 3, seed=7, degree=2.0)


def _model(seed=0, dim=8, layers=2):
    torch.manual_seed(seed)
    m = Ultra(dim, layers)
    # move parameters away from their init so LayerNorm gains/biases matter too
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return m.eval()


def test_layer_matches_closed_form():
    torch.manual_seed(0)
    layer = GeneralizedRelationalConv(3, 3, num_edge_types=2)
    x = torch.randn(4, 2, 3)  # (N, B, d)
    boundary = torch.randn(4, 2, 3)
    edge_index = torch.tensor([[0, 1, 2, 0], [1, 2, 3, 3]])
    edge_type = torch.tensor([0, 1, 0, 1])
    out = layer(x, boundary, edge_index, edge_type)
    w = layer.relation.weight
    agg = boundary.clone()
    for (u, v), k in zip(edge_index.t().tolist(), edge_type.tolist()):
        agg[v] += x[u] * w[k]  # DistMult message + re-injected boundary
    ref = torch.relu(layer.layer_norm(layer.linear(torch.cat([x, agg], -1))))
    assert torch.allclose(out, ref, atol=1e-6)


def test_dense_relation_path_equals_message_passing(kg):
    from iclr24.papers.ultra import RelationNBFNet

    data = prepare_graph(kg)
    m = _model()
    q = torch.tensor([0, 3, 5])
    dense = m.relation_representations(data, q)
    old = RelationNBFNet.dense_max_nodes
    try:
        RelationNBFNet.dense_max_nodes = 0  # force per-edge PyG message passing
        sparse = m.relation_representations(data, q)
    finally:
        RelationNBFNet.dense_max_nodes = old
    assert torch.allclose(dense, sparse, atol=1e-5)
    assert dense.shape == (3, 2 * kg.num_relations, 8)


def test_shapes_and_forward_agrees_with_score_all_tails(kg):
    data = prepare_graph(kg)
    m = _model()
    g = torch.Generator().manual_seed(0)
    batch = sample_negatives(kg.train[:6], kg.num_entities, 5, generator=g)
    scores = m(data, batch)
    assert scores.shape == (6, 6)
    all_tail = m.score_all_tails(data, batch[:3, 0, 0], batch[:3, 0, 1])
    assert all_tail.shape == (3, kg.num_entities)
    assert torch.allclose(scores[:3], all_tail.gather(1, batch[:3, :, 2]), atol=1e-5)
    # head-corrupted rows are tail queries of the inverse relation
    inv = m.score_all_tails(data, batch[3:, 0, 2], batch[3:, 0, 1] + kg.num_relations)
    assert torch.allclose(scores[3:], inv.gather(1, batch[3:, :, 0]), atol=1e-5)


def test_u3_permutation_invariance(kg):
    """U3: relabelling entities and relations permutes the scores the same way (1e-5)."""
    g = torch.Generator().manual_seed(1)
    ep = torch.randperm(kg.num_entities, generator=g)
    rp = torch.randperm(kg.num_relations, generator=g)
    moved = kg.relabel(ep, rp)
    m = _model(seed=3)
    d1, d2 = prepare_graph(kg), prepare_graph(moved)
    r = kg.num_relations
    anchors = torch.arange(kg.num_entities).repeat(2 * r)  # every (entity, relation) query
    rels = torch.arange(2 * r).repeat_interleave(kg.num_entities)
    rp_full = torch.cat([rp, rp + r])  # inverse of r moves with r
    with torch.no_grad():
        s1 = m.score_all_tails(d1, anchors, rels)
        s2 = m.score_all_tails(d2, ep[anchors], rp_full[rels])
    # entity e in the original is ep[e] in the relabelled graph
    assert torch.allclose(s1, s2[:, ep], atol=1e-5)
    assert s1.std() > 1e-3  # the scores are not trivially constant


def test_same_weights_run_on_any_vocabulary(kg):
    m = _model()
    other = make_rule_kg(25, 2, 5, seed=11)
    assert other.num_relations != kg.num_relations
    out = m.score_all_tails(prepare_graph(other), torch.tensor([0, 1]), torch.tensor([0, 9]))
    assert out.shape == (2, 25) and torch.isfinite(out).all()
    # no parameter depends on |V| or |R|: the relation-graph boundary is all-ones, not learned
    shapes = {tuple(p.shape) for p in m.parameters()}
    assert all(kg.num_relations not in s and kg.num_entities not in s for s in shapes)


def test_remove_query_edges_and_training_mode(kg):
    data = prepare_graph(kg)
    fact = kg.train[:2]
    ei, et = remove_query_edges(data, fact)
    assert ei.shape[1] == data.edge_index.shape[1] - 4  # each fact and its inverse
    kept = set(zip(ei[0].tolist(), et.tolist(), ei[1].tolist()))
    for h, r, t in fact.tolist():
        assert (h, r, t) not in kept and (t, r + kg.num_relations, h) not in kept
    m = _model()
    batch = sample_negatives(fact, kg.num_entities, 3, generator=torch.Generator().manual_seed(0))
    m.train()
    s_train = m(data, batch)
    m.eval()
    s_eval = m(data, batch)
    assert not torch.allclose(s_train, s_eval)  # the easy edges were dropped in training mode


def test_relation_conditioning_is_on_the_direct_relation(kg):
    data = prepare_graph(kg)
    m = _model()
    r = kg.num_relations
    reprs = m.relation_representations(data, torch.tensor([1]))
    out = m.score_all_tails(data, torch.tensor([0]), torch.tensor([1 + r]))
    feats = m.entity_model.node_features(data.edge_index, data.edge_type, data.num_nodes,
                                         reprs, torch.tensor([0]), torch.tensor([1 + r]))
    assert torch.allclose(out, m.entity_model.score(feats), atol=1e-6)


def test_bad_inputs(kg):
    data = prepare_graph(kg)
    m = _model()
    with pytest.raises(ValueError, match="entity ids"):
        m.score_all_tails(data, torch.tensor([kg.num_entities]), torch.tensor([0]))
    with pytest.raises(ValueError, match="relation ids"):
        m.score_all_tails(data, torch.tensor([0]), torch.tensor([2 * kg.num_relations]))
    with pytest.raises(ValueError, match="shape"):
        m(data, torch.zeros(2, 3, dtype=torch.long))
    mixed = torch.tensor([[[0, 0, 1], [2, 0, 3]]])
    with pytest.raises(ValueError, match="share"):
        m(data, mixed)
    with pytest.raises(ValueError, match="dim"):
        Ultra(0)
    with pytest.raises(ValueError, match="num_layers"):
        Ultra(8, 0)
    with pytest.raises(ValueError, match="no triples"):
        prepare_graph(torch.empty(0, 3, dtype=torch.long), 3, 1)


def test_checkpoint_roundtrip(tmp_path, kg):
    m = _model(dim=8, layers=3)
    path = save_checkpoint(m, tmp_path / "ultra.pt")
    loaded = load_checkpoint(path)
    assert loaded.config() == m.config()
    data = prepare_graph(kg)
    q = (torch.tensor([0, 1]), torch.tensor([0, 3]))
    assert torch.equal(m.score_all_tails(data, *q), loaded.score_all_tails(data, *q))
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable ULTRA checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")
    torch.save({"x": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not an ULTRA checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(TypeError):
        save_checkpoint(torch.nn.Linear(2, 2), tmp_path / "x.pt")  # type: ignore[arg-type]


def test_device_follows_inputs(kg):
    data = prepare_graph(kg)
    out = _model().score_all_tails(data, torch.tensor([0]), torch.tensor([0]))
    assert out.device == data.edge_index.device


def test_labels_do_not_matter():
    facts = [("a", "p", "b"), ("b", "q", "c"), ("c", "p", "a")]
    kg1 = KnowledgeGraph.from_labeled_triples(facts)
    kg2 = KnowledgeGraph.from_labeled_triples([(h + "x", r + "y", t + "x") for h, r, t in facts])
    m = _model()
    q = (torch.tensor([0, 1]), torch.tensor([0, 3]))
    assert torch.equal(m.score_all_tails(prepare_graph(kg1), *q),
                       m.score_all_tails(prepare_graph(kg2), *q))
