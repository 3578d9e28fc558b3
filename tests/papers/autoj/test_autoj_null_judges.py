"""The input-shallow null judges and the null arms the claims measure with them."""

import numpy as np
import pytest

from iclr24.papers.autoj import (
    length_ratings,
    length_verdicts,
    make_judge_testbed,
    pairwise_agreement,
    swap_verdict,
)
from iclr24.papers.autoj.experiments import null_judge_metrics


def test_length_judge_known_answers():
    v = length_verdicts(["abcd", "", " xy ", "a"], ["ab", "b", "yz", "abc"])
    assert v.tolist() == [0, 1, 2, 1]  # stripped lengths: 4>2, 0<1, 2=2, 1<3
    assert length_ratings(["", " a ", "hello"]).tolist() == [0.0, 1.0, 5.0]
    # symmetric: the swapped pair mapped back gives the same verdict (consistent)
    swapped = length_verdicts(["ab", "b", "yz", "abc"], ["abcd", "", " xy ", "a"])
    assert swapped.tolist() == [1, 0, 2, 0]
    assert [swap_verdict(int(x)) for x in swapped] == v.tolist()


def test_length_judge_bad_inputs():
    with pytest.raises(TypeError, match="responses_1"):
        length_verdicts("ab", ["a", "b"])
    with pytest.raises(TypeError, match="responses_2"):
        length_verdicts(["a"], [3])
    with pytest.raises(ValueError, match="one entry per pair"):
        length_verdicts(["a", "b"], ["a"])
    with pytest.raises(TypeError, match="responses"):
        length_ratings("abc")


def test_null_arms_on_the_testbed():
    pairs = make_judge_testbed(10, seed=5)
    labels = np.array([p.label for p in pairs])
    arms = null_judge_metrics(pairs, seed=1)
    assert set(arms) == {"length", "constant_tie", "random"}
    # always-Tie: agrees on exactly the ties, and is consistent everywhere
    assert arms["constant_tie"]["agreement"] == pytest.approx(np.mean(labels == 2))
    assert arms["constant_tie"]["consistency"] == 1.0
    # longer-wins is consistent by construction, so both-order agreement = one-order accuracy
    assert arms["length"]["consistency"] == 1.0
    assert arms["length"]["agreement"] == arms["length"]["agreement_first"]
    want = pairwise_agreement(labels, length_verdicts([p.response_1 for p in pairs],
                                                      [p.response_2 for p in pairs]))
    assert arms["length"]["agreement_first"] == want["agreement"]
    # the random judge is seeded (same seed, same numbers) and near 1/9 in both orders
    assert null_judge_metrics(pairs, seed=1)["random"] == arms["random"]
    assert 0.0 <= arms["random"]["agreement"] < 0.3
