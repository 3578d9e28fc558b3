"""Symbol embedding, rule selection and the three transition models."""

import pytest
import torch

from iclr24.papers.cosmos import (
    AlignedNPS,
    GNNTransition,
    NeurosymbolicTransition,
    SymbolEmbedding,
    hard_select,
)


def _inputs(b=4, k=3, d=32, s=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    slots = torch.randn(b, k, d, generator=g)
    symbols = torch.randn(b, k, s, generator=g)
    action = torch.zeros(b, k, 4)
    for i in range(b):
        action[i, i % k, i % 4] = 1.0
    return slots, action, symbols


def test_symbol_embedding_concatenates_per_attribute_vectors():
    emb = SymbolEmbedding({"shape": 4, "color": 4}, dim=8)
    labels = torch.tensor([[[1, 3], [0, 0]]])
    out = emb(labels)
    assert out.shape == (1, 2, 16) and emb.out_dim == 16
    assert torch.equal(out[0, 0, :8], emb.tables[0].weight[1])
    assert torch.equal(out[0, 0, 8:], emb.tables[1].weight[3])
    with pytest.raises(ValueError, match="must be in \\[0, 4\\)"):
        emb(torch.tensor([[[4, 0]]]))
    with pytest.raises(ValueError, match="integer tensor"):
        emb(torch.zeros(1, 2, 2))


def test_hard_select_is_straight_through_one_hot():
    logits = torch.tensor([[0.1, 2.0, -1.0]], requires_grad=True)
    w = hard_select(logits, training=False)
    assert torch.allclose(w.detach(), torch.tensor([[0.0, 1.0, 0.0]]), atol=1e-6)
    target = torch.tensor([[1.0, -2.0, 0.5]])
    (w * target).sum().backward()
    soft = torch.softmax(logits.detach(), -1)
    expected = soft * (target - (soft * target).sum())  # d/dlogits of <softmax, target>
    assert torch.allclose(logits.grad, expected, atol=1e-6)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    big = torch.zeros(200, 4)
    a = hard_select(big, training=True, generator=g1)
    assert torch.equal(a, hard_select(big, training=True, generator=g2))
    assert torch.allclose(a.sum(-1), torch.ones(200)) and (a.round().sum(0) > 20).all()  # Gumbel noise spreads choices
    assert torch.allclose(hard_select(logits.detach(), training=False, hard=False), soft)


@pytest.mark.parametrize("make", [
    lambda: NeurosymbolicTransition(slot_dim=32, symbol_dim=16),
    lambda: AlignedNPS(slot_dim=32),
    lambda: GNNTransition(slot_dim=32),
], ids=["cosmos", "aligned_nps", "gnn"])
def test_permuting_entities_and_action_permutes_the_output(make):
    torch.manual_seed(0)
    model = make().eval()
    for p in model.parameters():  # make every part matter (rules start near the identity)
        p.data.normal_(0, 0.3)
    slots, action, symbols = _inputs()
    perm = torch.tensor([2, 0, 1])
    out, _ = model(slots, action, symbols if model.uses_symbols else None)
    out_p, _ = model(slots[:, perm], action[:, perm],
                     symbols[:, perm] if model.uses_symbols else None)
    assert torch.allclose(out_p, out[:, perm], atol=1e-5)
    assert not torch.allclose(out, slots, atol=1e-3)


def test_cosmos_selection_reads_symbols_not_slots():
    torch.manual_seed(1)
    model = NeurosymbolicTransition(slot_dim=32, symbol_dim=16).eval()
    slots, action, symbols = _inputs(b=64)
    _, sel = model(slots, action, symbols)
    _, sel2 = model(slots + torch.randn_like(slots), action, symbols)
    assert torch.equal(sel, sel2)  # the neural encoding does not choose the rule
    _, sel3 = model(slots, action, torch.randn_like(symbols))
    assert not torch.equal(sel, sel3)
    nps = AlignedNPS(slot_dim=32).eval()
    _, s1 = nps(slots, action)
    _, s2 = nps(slots + torch.randn_like(slots), action)
    assert not torch.equal(s1, s2)  # Aligned NPS chooses from the neural slots


def test_selected_rule_is_the_one_applied():
    torch.manual_seed(2)
    model = NeurosymbolicTransition(n_rules=3, slot_dim=8, symbol_dim=4, hidden=16).eval()
    for p in model.parameters():
        p.data.normal_(0, 0.5)
    slots, action, symbols = _inputs(b=2, k=3, d=8, s=4)
    out, sel = model(slots, action, symbols)
    k = slots.shape[1]
    direction = action.sum(1, keepdim=True).expand(-1, k, -1)
    actor = (action.abs().sum(-1) > 0).float()
    s_actor = torch.einsum("bk,bkd->bd", actor, slots)[:, None].expand(-1, k, -1)
    x = torch.cat([slots, s_actor, action, direction], -1)
    for b in range(2):
        for i in range(k):
            r = int(sel[b, i].argmax())
            h = torch.relu(x[b, i] @ model.w1[r] + model.b1[r])
            h = torch.relu(h @ model.w2[r] + model.b2[r])
            assert torch.allclose(out[b, i], slots[b, i] + h @ model.w3[r] + model.b3[r],
                                  atol=1e-5)


def test_gnn_messages_exclude_self():
    torch.manual_seed(3)
    gnn = GNNTransition(slot_dim=8, hidden=16, rounds=1)
    for p in gnn.parameters():
        p.data.normal_(0, 0.5)
    slots, action, _ = _inputs(b=1, k=1, d=8)
    out, _ = gnn(slots, action)
    expected = slots + gnn.node[0](torch.cat([slots, action, torch.zeros(1, 1, 16)], -1))
    assert torch.allclose(out, expected, atol=1e-6)


def test_transition_input_errors():
    slots, action, _ = _inputs()
    with pytest.raises(ValueError, match="symbols must be"):
        NeurosymbolicTransition()(slots, action, None)
    with pytest.raises(ValueError, match="action must be"):
        AlignedNPS()(slots, action[:, :2])
    with pytest.raises(ValueError, match="slots must be"):
        GNNTransition()(slots[..., :5], action)
    with pytest.raises(ValueError, match="n_rules"):
        NeurosymbolicTransition(n_rules=0)
