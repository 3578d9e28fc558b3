"""Smoke runs of the claims with their null arms put in the method's place, the rules and controls
fed hand-made numbers, and the experiment's helpers (distinct components, oracle, timing)."""

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from iclr24.claims import Estimate, Scale
from iclr24.papers.policy_learn import (
    ComponentOracle,
    CSLSelectionConfig,
    build_arm,
    distinct_component_fraction,
    make_csl_union_dataset,
    time_forward,
)
from iclr24.papers.policy_learn.claims import cost_vs_full_bag, learned_vs_random_selection


def _diff(a, b):
    return Estimate.difference(a, b, paired=True)


def test_selection_smoke_and_random_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(learned_vs_random_selection,
                          ["acc_gain", "oracle_gain", "acc_policy_learn", "acc_random",
                           "acc_oracle", "acc_gin", "distinct_policy_learn",
                           "distinct_policy_learn_sampled", "distinct_random",
                           "distinct_oracle", "chance"])
    assert "acc_full_bag" not in m.metrics
    # the oracle marks one node per component by construction
    assert m.metrics["distinct_oracle"] == 1.0
    assert 0 <= m.metrics["distinct_policy_learn"] <= 1
    assert {r["arm"] for r in m.tables["per_seed"]} == {"gin", "random", "oracle",
                                                         "policy_learn"}
    # the null arm (random selection, this run) in Policy-Learn's place: zero gain, not holds
    # at either scale, whatever the control says
    null = {**m.metrics, "acc_gain": m.metrics["acc_random"] - m.metrics["acc_random"],
            "acc_policy_learn": m.metrics["acc_random"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert learned_vs_random_selection.verdict(null, scale) != "holds"
    # ... and with the control made true, the rule itself says fails
    assert learned_vs_random_selection.verdict({**null, "oracle_gain": 0.3},
                                               Scale.SMOKE) == "fails"


def test_cost_smoke_and_full_bag_null(check_smoke_claim, one_torch_thread):
    c = check_smoke_claim(cost_vs_full_bag, ["speedup", "null_speedup", "full_bag_ms",
                                              "policy_learn_ms", "random_ms", "pass_ratio"])
    assert c.metrics["pass_ratio"] > 1
    assert set(c.tables["repeats"][0]) == {"repeat", "policy_learn", "full_bag",
                                           "full_bag_null", "random"}
    # the second full bag (this run) in Policy-Learn's place: not holds
    null = {**c.metrics, "speedup": c.metrics["null_speedup"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert cost_vs_full_bag.verdict(null, scale) != "holds"


def test_selection_rule_and_control():
    rnd = [0.55, 0.61, 0.58]
    oracle = {"oracle_gain": _diff([0.95, 0.97, 0.96], rnd)}
    # the random policy passed as the method: zero gain over the whole interval
    assert learned_vs_random_selection.verdict({**oracle, "acc_gain": _diff(rnd, rnd)},
                                               Scale.SMALL) == "fails"
    # a method within seed noise of the baseline cannot hold
    noisy = {**oracle, "acc_gain": _diff([0.57, 0.60, 0.59], rnd)}
    assert learned_vs_random_selection.verdict(noisy, Scale.SMALL) == "inconclusive"
    clear = {**oracle, "acc_gain": _diff([0.90, 0.93, 0.95], rnd)}
    assert learned_vs_random_selection.verdict(clear, Scale.SMALL) == "holds"
    # an oracle no better than random: the test bed cannot show what selection buys
    flat = {"oracle_gain": _diff([0.56, 0.60, 0.57], rnd), "acc_gain": clear["acc_gain"]}
    judgement = learned_vs_random_selection.judge(flat, Scale.SMALL)
    assert judgement.verdict == "inconclusive" and "test bed cannot tell" in judgement.reason
    assert learned_vs_random_selection.verdict({"oracle_gain": -0.1, "acc_gain": 0.3},
                                               Scale.SMOKE) == "inconclusive"
    assert learned_vs_random_selection.verdict({"oracle_gain": 0.3, "acc_gain": float("nan")},
                                               Scale.SMOKE) == "inconclusive"


def test_cost_rule_and_control():
    rng = np.random.default_rng(0)
    t = 0.1 + 0.01 * rng.random(15)

    def ratio(a, b):
        return float(np.median(a) / np.median(b))

    # the full bag timed against itself
    itself = Estimate.bootstrap((t, t * (1 + 0.02 * rng.standard_normal(15))), ratio,
                                paired=True)
    fast = Estimate.bootstrap((t, t / 6), ratio, paired=True)
    assert cost_vs_full_bag.verdict({"speedup": itself, "null_speedup": itself},
                                    Scale.SMALL) == "fails"
    assert cost_vs_full_bag.verdict({"speedup": fast, "null_speedup": itself},
                                    Scale.SMALL) == "holds"
    # a harness that shows a 6x "speed-up" between identical models cannot tell
    assert cost_vs_full_bag.verdict({"speedup": fast, "null_speedup": fast},
                                    Scale.SMALL) == "inconclusive"


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
    with pytest.raises(TypeError, match="sampled"):
        distinct_component_fraction(_Fixed(same_component), graphs, sampled=1)


def test_distinct_component_fraction_sampled_uses_training_mode():
    graphs = make_csl_union_dataset(4, seed=1)
    modes = []

    class ModeSpy(_Fixed):
        def forward(self, batch):
            modes.append(self.training)
            return super().forward(batch)

    def first_two(c):
        return torch.stack([(c == 0).nonzero()[0, 0], (c == 1).nonzero()[0, 0]])

    spy = ModeSpy(first_two)
    spy.eval()
    assert distinct_component_fraction(spy, graphs, sampled=True) == 1.0
    assert distinct_component_fraction(spy, graphs) == 1.0
    assert modes == [True, False] and not spy.training  # the caller's mode is restored


def test_component_oracle_marks_one_random_node_per_component(one_torch_thread):
    from torch_geometric.loader import DataLoader

    graphs = make_csl_union_dataset(12, n=17, seed=3)
    batch = next(iter(DataLoader(graphs, batch_size=12)))
    cfg = CSLSelectionConfig(skips=(2, 3, 4, 5), n=17)
    oracle = build_arm("oracle", cfg, seed=0)
    assert isinstance(oracle, ComponentOracle)
    logits, sel = oracle(batch)
    assert logits.shape == (12, cfg.num_classes) and sel.shape == (12, 2)
    comp = batch.component[batch.ptr[:-1, None] + sel]
    assert torch.equal(comp, torch.tensor([[0, 1]] * 12))
    # uniform within the component: the picks vary across graphs and calls
    _, again = oracle(batch)
    assert not torch.equal(sel, again)
    assert distinct_component_fraction(oracle, graphs) == 1.0
    # T larger than the number of components cycles through them
    three = ComponentOracle(oracle.prediction, T=3, seed=0)
    _, sel3 = three(batch)
    comp3 = batch.component[batch.ptr[:-1, None] + sel3]
    assert torch.equal(comp3[:, 2], comp3[:, 0]) and bool((sel3[:, 2] != sel3[:, 0]).any())


def test_config_errors():
    with pytest.raises(ValueError, match="arms"):
        CSLSelectionConfig(arms=("gin", "osan"))
    with pytest.raises(ValueError, match="arms"):
        CSLSelectionConfig(arms=())
    with pytest.raises(ValueError, match="epochs"):
        CSLSelectionConfig(epochs=0)
    with pytest.raises(ValueError, match="num_train"):
        CSLSelectionConfig(num_train=2.5)
    assert CSLSelectionConfig().arms == ("gin", "random", "oracle", "policy_learn")


def test_component_oracle_errors():
    from iclr24.papers.policy_learn import DSGNN

    pred = DSGNN(1, 8, 2, out_dim=3)
    with pytest.raises(TypeError, match="prediction"):
        ComponentOracle(DSGNN(1, 8, 2), T=2)
    with pytest.raises(ValueError, match="T must"):
        ComponentOracle(pred, T=0)
    g = make_csl_union_dataset(1, n=17, seed=0)[0]
    del g.component
    with pytest.raises(ValueError, match="component"):
        ComponentOracle(pred, T=2)(g)


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
