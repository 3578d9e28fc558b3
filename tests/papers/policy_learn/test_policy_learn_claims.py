"""Smoke runs of the claims, their negative controls, and the experiment's measuring helpers."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from iclr24.claims import Estimate, Scale
from iclr24.papers.policy_learn import (
    distinct_component_fraction,
    make_csl_union_dataset,
    time_forward,
)
from iclr24.papers.policy_learn.claims import cost_vs_full_bag, learned_vs_random_selection


def test_smoke_claims(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(learned_vs_random_selection,
                          ["acc_gain", "acc_policy_learn", "acc_random", "acc_gin",
                           "acc_full_bag", "distinct_policy_learn", "distinct_random", "chance"])
    assert 0 <= m.metrics["distinct_policy_learn"] <= 1
    c = check_smoke_claim(cost_vs_full_bag, ["speedup", "full_bag_ms", "policy_learn_ms",
                                              "pass_ratio"])
    assert c.metrics["pass_ratio"] > 1


def test_selection_rule_negative_controls():
    rnd = [0.55, 0.61, 0.58]
    # the random policy passed as the method: zero gain over the whole interval
    same = {"acc_gain": Estimate.difference(rnd, rnd, paired=True)}
    assert learned_vs_random_selection.verdict(same, Scale.SMALL) == "fails"
    # a method within seed noise of the baseline cannot hold
    noisy = {"acc_gain": Estimate.difference([0.57, 0.60, 0.59], rnd, paired=True)}
    assert learned_vs_random_selection.verdict(noisy, Scale.SMALL) != "holds"
    clear = {"acc_gain": Estimate.difference([0.90, 0.93, 0.95], rnd, paired=True)}
    assert learned_vs_random_selection.verdict(clear, Scale.SMALL) == "holds"


def test_cost_rule_negative_control():
    rng = np.random.default_rng(0)
    t = 0.1 + 0.01 * rng.random(15)
    # the full bag timed against itself
    itself = Estimate.bootstrap((t, t * (1 + 0.02 * rng.standard_normal(15))),
                                lambda a, b: float(np.median(a) / np.median(b)), paired=True)
    assert cost_vs_full_bag.verdict({"speedup": itself}, Scale.SMALL) == "fails"
    fast = Estimate.bootstrap((t, t / 6), lambda a, b: float(np.median(a) / np.median(b)),
                              paired=True)
    assert cost_vs_full_bag.verdict({"speedup": fast}, Scale.SMALL) == "holds"


class _Fixed(torch.nn.Module):
    """A fake policy returning fixed local node choices."""

    def __init__(self, pick):
        super().__init__()
        self.pick = pick

    def forward(self, batch):
        sel = torch.stack([self.pick(batch.component[batch.ptr[i]:batch.ptr[i + 1]])
                           for i in range(batch.num_graphs)])
        return torch.zeros(batch.num_graphs, 1), sel


def test_distinct_component_fraction_known_answers():
    graphs = make_csl_union_dataset(6, seed=0)

    def one_per_component(c):
        return torch.stack([(c == 0).nonzero()[0, 0], (c == 1).nonzero()[0, 0]])

    def same_component(c):
        return (c == 0).nonzero()[:2, 0]

    assert distinct_component_fraction(_Fixed(one_per_component), graphs, batch_size=4) == 1.0
    assert distinct_component_fraction(_Fixed(same_component), graphs) == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        distinct_component_fraction(_Fixed(same_component), [])


def test_time_forward_interleaves_and_counts():
    calls = []

    class Rec(torch.nn.Module):
        def __init__(self, name):
            super().__init__()
            self.name = name

        def forward(self, batch):
            calls.append(self.name)

    times = time_forward({"a": Rec("a"), "b": Rec("b")}, Data(), repeats=3, warmup=1)
    assert calls == ["a", "b"] * 4
    assert [len(v) for v in times.values()] == [3, 3]
