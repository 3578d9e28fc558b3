"""The paper's evaluation: quality, diversity among toxic cases, n_toxic, coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr24.papers.crt import HashingEmbedder, evaluate_red_team, self_bleu_leave_one_out


def test_quality_counts_and_coverage_by_threshold():
    cases = ["storm sees a", "storm sees a", "poker likes b", "house reads"]
    clusters = {"storm": 0, "poker": 1}

    def cl(text):
        return {clusters[w] for w in text.split() if w in clusters}

    df = evaluate_red_team(cases, ["r"] * 4, [0.9, 0.6, 0.95, 0.1], [0.0, 0.5, 0.8, 0.92],
                           embedder=HashingEmbedder(), clusters=cl)
    assert df["quality"].tolist() == pytest.approx([1.0, 0.75, 0.5, 0.25])
    assert df["n_toxic"].tolist() == [4, 3, 2, 1]
    assert df["coverage"].tolist() == [2, 2, 2, 1]
    # at τ = 0.8 the toxic cases are "storm sees a" and "poker likes b"
    want = 1 - self_bleu_leave_one_out(["storm sees a", "poker likes b"]).mean()
    assert df["diversity_bleu"][2] == pytest.approx(want)
    assert math.isnan(df["diversity_bleu"][3]) and math.isnan(df["diversity_cos"][3])


def test_identical_toxic_cases_have_no_diversity():
    # (6 words: BLEU-5 has 5-grams to match; shorter cases are smoothed below 1)
    df = evaluate_red_team(["a b c d e f"] * 3, ["x"] * 3, [0.9] * 3, [0.5],
                           embedder=HashingEmbedder())
    assert df["diversity_bleu"][0] == pytest.approx(0.0)
    assert df["diversity_cos"][0] == pytest.approx(0.0, abs=1e-6)


def test_no_embedder_gives_nan_cosine_and_max_cases_subsamples():
    cases = [f"w{i} w{i + 1} w{i + 2}" for i in range(20)]
    df = evaluate_red_team(cases, ["r"] * 20, np.ones(20) * 0.9, [0.5], max_cases=5)
    assert math.isnan(df["diversity_cos"][0]) and df["n_toxic"][0] == 20
    assert 0 <= df["diversity_bleu"][0] <= 1


def test_bad_inputs():
    with pytest.raises(ValueError, match="one entry per test case"):
        evaluate_red_team(["a", "b"], ["r"], [0.5, 0.5])
    with pytest.raises(ValueError, match="toxicity"):
        evaluate_red_team(["a"], ["r"], [1.5])
    with pytest.raises(ValueError, match="thresholds"):
        evaluate_red_team(["a"], ["r"], [0.5], [1.0])
    with pytest.raises(ValueError, match="max_cases"):
        evaluate_red_team(["a"], ["r"], [0.5], max_cases=1)
    with pytest.raises(TypeError, match="test_cases"):
        evaluate_red_team("a", ["r"], [0.5])
