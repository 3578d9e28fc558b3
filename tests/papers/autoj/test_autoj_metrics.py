"""Agreement, consistency, tie-threshold search and best-of-N, checked by hand."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.autoj import best_of_n, pairwise_agreement, rating_agreement, rating_predictions


def test_pairwise_agreement_hand_computed():
    labels = [0, 1, 2, 0]
    pred = [0, 1, 2, 1]
    swapped = [0, 0, 2, 1]  # already mapped back
    m = pairwise_agreement(labels, pred, swapped, ["a", "a", "b", "b"])
    assert m["agreement"] == pytest.approx(2 / 4)  # pairs 0 and 2 correct in both orders
    assert m["agreement_first"] == pytest.approx(3 / 4)
    assert m["agreement_swapped"] == pytest.approx(2 / 4)
    assert m["consistency"] == pytest.approx(3 / 4)  # pair 1 disagrees
    assert m["per_group"]["a"]["agreement"] == 0.5 and m["per_group"]["b"]["consistency"] == 1.0
    assert m["per_group"]["b"]["n"] == 2


def test_unparsed_counts_wrong_and_inconsistent():
    m = pairwise_agreement([0, 2], [-1, -1], [-1, -1])
    assert m["agreement"] == 0 and m["consistency"] == 0 and m["parse_rate"] == 0
    m = pairwise_agreement([0, 1], [0, -1], [0, 1])
    assert m["parse_rate"] == pytest.approx(3 / 4)
    assert m["consistency"] == pytest.approx(1 / 2)


def test_matches_official_check_res_on_parsed_verdicts():
    """The official script: both_correct = pred == swapped == label; agree = pred == swapped."""
    rng = np.random.default_rng(0)
    y, p, s = (rng.integers(0, 3, 200) for _ in range(3))
    m = pairwise_agreement(y, p, s)
    assert m["agreement"] == pytest.approx(np.mean((p == s) & (p == y)))
    assert m["consistency"] == pytest.approx(np.mean(p == s))


def test_one_order_judge():
    m = pairwise_agreement([0, 1, 2], [0, 0, 2])
    assert m["agreement"] == pytest.approx(2 / 3) and np.isnan(m["consistency"])


def test_pairwise_agreement_bad_inputs():
    with pytest.raises(ValueError, match="pred"):
        pairwise_agreement([0, 1], [0])
    with pytest.raises(ValueError, match="labels"):
        pairwise_agreement([3], [0])
    with pytest.raises(ValueError, match="pred"):
        pairwise_agreement([0], [5])
    with pytest.raises(TypeError, match="labels"):
        pairwise_agreement([0.5], [0])
    with pytest.raises(ValueError, match="groups"):
        pairwise_agreement([0, 1], [0, 1], [0, 1], ["a"])
    with pytest.raises(ValueError, match="non-empty"):
        pairwise_agreement([], [])


def test_rating_predictions_and_threshold_search():
    s1, s2 = [8, 5, 6, 3], [5, 5, 6.5, 9]
    assert rating_predictions(s1, s2, 0).tolist() == [0, 2, 1, 1]
    assert rating_predictions(s1, s2, 0.5).tolist() == [0, 2, 2, 1]
    assert rating_predictions([np.nan], [1.0], 0).tolist() == [-1]
    tau, acc = rating_agreement(s1, s2, [0, 2, 2, 1])
    assert acc == 1.0 and tau == pytest.approx(0.5)  # the first tau reaching the best
    tau, acc = rating_agreement(s1, s2, [0, 2, 1, 1])
    assert tau == 0.0 and acc == 1.0
    with pytest.raises(ValueError, match="tau"):
        rating_predictions(s1, s2, -1)
    with pytest.raises(ValueError, match="taus"):
        rating_agreement(s1, s2, [0, 2, 2, 1], taus=[])
    with pytest.raises(ValueError, match="s1"):
        rating_agreement(s1[:2], s2[:2], [0, 2, 2, 1])


@given(st.lists(st.floats(0, 10), min_size=1, max_size=20), st.floats(0, 2))
def test_rating_predictions_swap_symmetry(scores, tau):
    a = np.array(scores)
    b = a[::-1].copy()
    p, q = rating_predictions(a, b, tau), rating_predictions(b, a, tau)
    assert (np.where(p == 2, 2, 1 - p) == q).all()


def test_best_of_n_hand_computed():
    ratings = [[1, 9, 5, np.nan], [7, 7, 10, 2]]
    quality = [[0.0, 1.0, 0.5, 0.5], [0.5, 1.0, 0.0, 1.0]]
    out = best_of_n(ratings, quality, [1, 2, 3, 4])
    assert out[1] == pytest.approx((0.0 + 0.5) / 2)
    assert out[2] == pytest.approx((1.0 + 0.5) / 2)  # tie 7/7 goes to the first
    assert out[3] == pytest.approx((1.0 + 0.0) / 2)
    assert out[4] == pytest.approx((1.0 + 0.0) / 2)  # NaN ranks last
    with pytest.raises(ValueError, match="ns"):
        best_of_n(ratings, quality, [5])
    with pytest.raises(ValueError, match="shape"):
        best_of_n([[1, 2]], quality, [1])


def test_best_of_n_oracle_ratings_reach_the_oracle():
    rng = np.random.default_rng(1)
    q = rng.random((50, 8))
    curve = best_of_n(q, q, [1, 2, 4, 8])
    assert curve[8] == pytest.approx(q.max(axis=1).mean())
    assert list(curve.values()) == sorted(curve.values())
