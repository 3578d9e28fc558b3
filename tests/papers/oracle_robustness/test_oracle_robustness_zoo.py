"""OracleZoo: ensemble probabilities, the penalty term, acceptance and its errors."""

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.papers.oracle_robustness import OracleZoo


class FixedLogits(nn.Module):
    """Returns the same logits row for every image."""

    def __init__(self, row):
        super().__init__()
        self.row = torch.tensor(row, dtype=torch.float64)

    def forward(self, x):
        return self.row.expand(len(x), -1) + 0 * x.flatten(1).sum(1, keepdim=True)


def _x(b=2):
    return torch.rand(b, 1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def test_log_probs_is_log_of_mean_member_probability():
    a, b = [2.0, 0.0, -1.0], [0.0, 1.0, 0.5]
    zoo = OracleZoo([FixedLogits(a), FixedLogits(b)], ["a", "b", "c"])
    want = torch.log((F.softmax(torch.tensor(a, dtype=torch.float64), 0)
                      + F.softmax(torch.tensor(b, dtype=torch.float64), 0)) / 2)
    got = zoo.log_probs(_x())
    assert torch.allclose(got, want.expand(2, -1))
    assert torch.allclose(got.exp().sum(1), torch.ones(2, dtype=torch.float64))


def test_accepts_needs_top_label_and_threshold():
    row = [math.log(0.6), math.log(0.3), math.log(0.1)]
    y0, y1 = torch.tensor([0, 0]), torch.tensor([1, 1])
    assert OracleZoo([FixedLogits(row)], [0, 1, 2], 0.5).accepts(_x(), y0).all()
    assert not OracleZoo([FixedLogits(row)], [0, 1, 2], 0.65).accepts(_x(), y0).any()
    assert not OracleZoo([FixedLogits(row)], [0, 1, 2], 0.0).accepts(_x(), y1).any()


def test_penalty_is_mean_member_cross_entropy_and_differentiable():
    torch.manual_seed(0)
    m1, m2 = nn.Linear(16, 3).double(), nn.Linear(16, 3).double()
    members = [lambda x, m=m1: m(x.flatten(1)), lambda x, m=m2: m(x.flatten(1))]
    zoo = OracleZoo(members, ["a", "b", "c"])
    x, y = _x(3), torch.tensor([0, 2, 1])
    want = (F.cross_entropy(m1(x.flatten(1)), y, reduction="none")
            + F.cross_entropy(m2(x.flatten(1)), y, reduction="none")) / 2
    assert torch.allclose(zoo.penalty(x, y), want)
    xg = x.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: zoo.penalty(t, y), (xg,))


def test_non_differentiable_member_is_refused_for_the_penalty_only():
    def thresholded(x):  # a detector whose output carries no gradient
        return F.one_hot((x.flatten(1).mean(1) > 0.5).long(), 3).double()

    zoo = OracleZoo([FixedLogits([1.0, 0.0, 0.0]), thresholded], ["a", "b", "c"])
    x, y = _x(), torch.tensor([0, 0])
    assert zoo.accepts(x, y).shape == (2,)  # filtering is fine
    with pytest.raises(ValueError, match="oracle member 1 .*not differentiable"):
        zoo.check_differentiable(x)
    with pytest.raises(ValueError, match="oracle member 1 .*not differentiable"):
        zoo.score(x.clone().requires_grad_(True), y)


@pytest.mark.parametrize("members, classes, thr, match", [
    ([], ["a", "b"], 0.5, "at least one oracle"),
    ([FixedLogits([0.0, 1.0])], [], 0.5, "at least 2 labels"),
    ([FixedLogits([0.0, 1.0])], ["a", "a"], 0.5, "distinct"),
    ([FixedLogits([0.0, 1.0])], ["a", "b"], 1.0, "accept_threshold"),
])
def test_bad_construction(members, classes, thr, match):
    with pytest.raises(ValueError, match=match):
        OracleZoo(members, classes, thr)


def test_bad_calls():
    zoo = OracleZoo([FixedLogits([0.0, 1.0, 2.0])], ["a", "b", "c"])
    with pytest.raises(TypeError, match="members"):
        OracleZoo(FixedLogits([0.0, 1.0]), ["a", "b"])
    with pytest.raises(TypeError, match="callable"):
        OracleZoo([3], ["a", "b"])
    with pytest.raises(ValueError, match="labels in \\[0, 3\\)"):
        zoo.accepts(_x(), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="shape \\(2,\\)"):
        zoo.accepts(_x(), torch.tensor([0]))
    wrong = OracleZoo([FixedLogits([0.0, 1.0])], ["a", "b", "c"])
    with pytest.raises(ValueError, match="oracle member 0 must return logits of shape"):
        wrong.log_probs(_x())


def test_label_shifted_zoo_keeps_the_next_label():
    """The null oracle reads label k from the members' class k + shift (mod K): it accepts and
    penalises as if the image should be the shifted digit, with the same threshold."""
    zoo = OracleZoo([FixedLogits([0.0, 3.0, 0.0]), FixedLogits([0.0, 2.0, 1.0])],
                    ["a", "b", "c"], 0.4)
    null = zoo.label_shifted(1)
    x = _x(2)
    y = torch.tensor([0, 1])
    assert null.accept_threshold == 0.4 and len(null) == 2 and null.classes == zoo.classes
    # the members favour class 1 ("b"); the shifted zoo asks member class y + 1
    assert zoo.accepts(x, y).tolist() == [False, True]
    assert null.accepts(x, y).tolist() == [True, False]
    assert torch.allclose(null.penalty(x, y), zoo.penalty(x, (y + 1) % 3))
    assert torch.allclose(zoo.label_shifted(-1).penalty(x, y), zoo.penalty(x, (y + 2) % 3))
    xg = x.clone().requires_grad_(True)
    null.penalty(xg, y).sum().backward()  # still differentiable: usable in generation
    assert xg.grad is not None


def test_label_shifted_zoo_errors():
    zoo = OracleZoo([FixedLogits([0.0, 1.0])], ["a", "b"])
    with pytest.raises(ValueError, match="shift"):
        zoo.label_shifted(2)
    with pytest.raises(ValueError, match="shift"):
        zoo.label_shifted(0)
    with pytest.raises(TypeError, match="shift"):
        zoo.label_shifted(1.0)
    with pytest.raises(TypeError, match="shift"):
        zoo.label_shifted(True)
