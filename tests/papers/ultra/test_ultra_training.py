"""Self-adversarial loss, the training loop (determinism, learning), fine-tuning."""

from __future__ import annotations

import math

import pytest
import torch

from iclr24.papers.ultra import (
    TrainConfig,
    Ultra,
    evaluate,
    fine_tune,
    make_rule_kg,
    pretrain,
    self_adversarial_bce,
    train_ultra,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_self_adversarial_bce_closed_form():
    s = torch.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 1.0]])
    loss = self_adversarial_bce(s, temperature=0.5)
    expected = 0.0
    for row in s.tolist():
        pos, negs = row[0], row[1:]
        w = torch.softmax(torch.tensor(negs) / 0.5, 0).tolist()
        num = -math.log(1 / (1 + math.exp(-pos)))
        num += sum(wi * -math.log(1 - 1 / (1 + math.exp(-n))) for wi, n in zip(w, negs))
        expected += num / (1 + sum(w))
    assert loss.item() == pytest.approx(expected / 2, rel=1e-6)


def test_self_adversarial_weights_are_detached():
    s = torch.tensor([[1.0, 0.3, -0.2]], requires_grad=True)
    self_adversarial_bce(s).backward()
    with torch.no_grad():
        w = torch.softmax(s[0, 1:], 0)
        sig = torch.sigmoid(s[0])
        # d/ds_i of w_i * -log(1 - σ(s_i)) / 2 with w fixed is w_i σ(s_i) / 2
        expected = torch.cat([(sig[:1] - 1) / 2, w * sig[1:] / 2])
    assert torch.allclose(s.grad[0], expected, atol=1e-6)


def test_loss_errors():
    with pytest.raises(ValueError, match="shape"):
        self_adversarial_bce(torch.zeros(3))
    with pytest.raises(ValueError, match="temperature"):
        self_adversarial_bce(torch.zeros(2, 3), temperature=0)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=-1)
    with pytest.raises(ValueError, match="num_negatives"):
        TrainConfig(num_negatives=0)


@pytest.fixture(scope="module")
def small_graphs():
    return [make_rule_kg(40, 3, 3, seed=s) for s in (1, 2)]


def test_training_is_deterministic_and_learns(small_graphs):
    cfg = TrainConfig(steps=40, batch_size=4, num_negatives=8, lr=5e-3)
    m1, l1 = pretrain(small_graphs, cfg, dim=8, num_layers=2, seed=5)
    m2, l2 = pretrain(small_graphs, cfg, dim=8, num_layers=2, seed=5)
    assert l1 == l2
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(p1, p2)
    assert sum(l1[-10:]) / 10 < sum(l1[:10]) / 10  # the loss goes down


def test_fine_tune_returns_a_copy(small_graphs):
    torch.manual_seed(0)
    model = Ultra(8, 2)
    before = [p.clone() for p in model.parameters()]
    tuned, losses = fine_tune(model, small_graphs[0], TrainConfig(steps=3, batch_size=4,
                                                                  num_negatives=4))
    assert len(losses) == 3
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(before, tuned.parameters()))
    m = evaluate(tuned, small_graphs[0])
    assert set(m) >= {"mrr", "hits@1", "hits@3", "hits@10"} and 0 < m["mrr"] <= 1


def test_train_errors(small_graphs):
    model = Ultra(8, 1)
    with pytest.raises(ValueError, match="at least one"):
        train_ultra(model, [], TrainConfig(steps=1))
    with pytest.raises(TypeError, match="KnowledgeGraph"):
        train_ultra(model, ["not a graph"], TrainConfig(steps=1))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="Ultra"):
        train_ultra(torch.nn.Linear(2, 2), small_graphs, TrainConfig(steps=1))  # type: ignore
