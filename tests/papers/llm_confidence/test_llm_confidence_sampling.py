"""Samplers and the elicitor against a scripted TextBackend (what was asked, what came back)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from iclr24.papers.llm_confidence import (
    HINT_PHRASES,
    ConfidenceElicitor,
    answer_token_probability,
    misleading_answer,
    sample,
    sample_batch,
)


class Scripted:
    """Replies ``reply(prompt, j)``; records each generate call."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, reply):
        self.reply = reply
        self.calls = []

    def generate(self, prompts, max_new_tokens, *, temperature=0.0, top_p=1.0, n=1, stop=None,
                 seed=None):
        self.calls.append({"prompts": list(prompts), "n": n, "temperature": temperature,
                           "seed": seed})
        return [[self.reply(p, j) for j in range(n)] for p in prompts]


def _q(prompt):
    return re.search(r"Question: (.*)", prompt).group(1)


def test_self_random_asks_once_with_n_samples():
    lm = Scripted(lambda p, j: f"Answer and Confidence (0-100): {j % 2}, {80 + j}%")
    rs = sample(lm, "What is 1 + 0?", m=5, temperature=0.7, seed=3)
    assert len(lm.calls) == 1 and lm.calls[0]["n"] == 5 and lm.calls[0]["temperature"] == 0.7
    assert lm.calls[0]["seed"] == 3 and len(lm.calls[0]["prompts"]) == 1
    assert [r.answer for r in rs] == ["0", "1", "0", "1", "0"]
    assert [r.confidence for r in rs] == pytest.approx([0.8, 0.81, 0.82, 0.83, 0.84])


def test_misleading_hints_in_order_and_response_zero_has_none():
    lm = Scripted(lambda p, j: "Answer and Confidence (0-100): 5, 90%")
    rs = sample(lm, "What is 2 + 3?", sampler="misleading", m=4, reference=5, seed=0)
    assert rs[0].hint is None and "Hint" not in rs[0].prompt
    for i, r in enumerate(rs[1:], start=1):
        assert r.hint.startswith(HINT_PHRASES[i - 1])
        assert r.prompt.endswith(r.hint) and "Note that the hint" in r.prompt
        assert 0 <= int(r.hint[len(HINT_PHRASES[i - 1]):]) <= 10  # |5| + U{-5..5}
    with pytest.raises(ValueError, match="references"):
        sample(lm, "Q?", sampler="misleading")
    with pytest.raises(ValueError, match="m must be <= 13"):
        sample(lm, "Q?", sampler="misleading", m=14, reference=1)


def test_misleading_answer_range_and_letters():
    rng = np.random.default_rng(0)
    draws = {int(misleading_answer(-4, "number", rng)) for _ in range(500)}
    assert draws == set(range(9))  # |a| + U{-|a|..|a|}, as the official code
    letters = {misleading_answer("A", "option letter", rng, n_options=3) for _ in range(200)}
    assert letters == {"A", "B", "C"}
    with pytest.raises(ValueError, match="numeric truth"):
        misleading_answer("x", "number", rng)


def test_paraphrase_sends_m_distinct_prompts():
    lm = Scripted(lambda p, j: "Answer and Confidence (0-100): 1, 50%")
    rs = sample(lm, "What is 1 + 0?", sampler="paraphrase", m=3)
    assert len(lm.calls[0]["prompts"]) == 3 and lm.calls[0]["n"] == 1
    assert len({_q(r.prompt) for r in rs}) == 3


def test_self_probing_is_a_second_fresh_query():
    def reply(p, j):
        if p.startswith("Question:"):
            return "It seems right. Confidence: 70%"
        return "Answer and Confidence (0-100): 9, 100%" if "4 + 5" in p else "no idea"

    lm = Scripted(reply)
    out = sample_batch(lm, ["What is 4 + 5?", "What is 1 + 1?"], strategy="self_probing", m=1)
    assert len(lm.calls) == 2 and len(lm.calls[1]["prompts"]) == 1  # only parsed answers
    assert "Possible Answer:9" in lm.calls[1]["prompts"][0]
    assert out[0][0].answer == "9" and out[0][0].confidence == 0.7
    assert out[1][0].answer is None and out[1][0].confidence is None


def test_elicitor_counts_unparsed_and_aggregates():
    replies = {"What is 1 + 1?": ["Answer and Confidence (0-100): 2, 90%"] * 2
               + ["garbage"] + ["Answer and Confidence (0-100): 3, 60%"],
               "What is 2 + 2?": ["I cannot say"] * 4}
    lm = Scripted(lambda p, j: replies[_q(p)][j])
    el = ConfidenceElicitor(lm, m=4, aggregator="consistency")
    answers, confs = el.predict(list(replies))
    assert answers == ["2", None] and confs == pytest.approx([2 / 3, 0.0])
    assert el.stats.responses == 8 and el.stats.parsed == 3 and el.stats.parse_rate == 3 / 8
    assert el.stats.unanswered_questions == 1
    el = ConfidenceElicitor(lm, m=4, aggregator="avg_conf")
    assert el.predict(["What is 1 + 1?"])[1] == pytest.approx([1.8 / 2.4])
    verbal = ConfidenceElicitor(lm, aggregator="verbalized", temperature=0.0)
    assert verbal.predict(["What is 1 + 1?"]) == (["2"], [0.9]) and lm.calls[-1]["n"] == 1


def test_elicitor_topk_pair_rank():
    lm = Scripted(lambda p, j: ["G1: 4\nP1: 60%\nG2: 5\nP2: 30%", "G1: 5\nP1: 50%\nG2: 4\nP2: 40%",
                                "G1: 4\nP1: 80%\nG2: 6\nP2: 10%"][j])
    el = ConfidenceElicitor(lm, strategy="topk", aggregator="pair_rank", m=3)
    answers, confs = el.predict(["What is 2 + 2?"])
    assert answers == ["4"] and 0.34 < confs[0] < 1.0
    with pytest.raises(ValueError, match="topk"):
        ConfidenceElicitor(lm, aggregator="pair_rank")
    with pytest.raises(ValueError, match="aggregator"):
        ConfidenceElicitor(lm, aggregator="vote")


def test_bad_input_and_white_box_refusal():
    lm = Scripted(lambda p, j: "")
    with pytest.raises(TypeError, match="TextBackend"):
        sample(object(), "Q?")
    with pytest.raises(ValueError, match="sampler"):
        sample(lm, "Q?", sampler="beam")
    with pytest.raises(ValueError, match="m must"):
        sample(lm, "Q?", m=0)
    with pytest.raises(ValueError, match="questions"):
        sample_batch(lm, [])
    with pytest.raises(ValueError, match="logprob"):
        answer_token_probability(lm, "Q: 1+1=", " 2,")


def test_elicitor_applies_the_official_parsed_sample_rule():
    # "1 + 1": one full parse of 4 (and one answer without a confidence, which does not count);
    # "2 + 2": 3 of 4, the official minimum M − 1
    replies = {"What is 1 + 1?": ["Answer and Confidence (0-100): 2, 90%",
                                  "Answer and Confidence (0-100): 2", "garbage", "garbage"],
               "What is 2 + 2?": ["Answer and Confidence (0-100): 4, 80%"] * 3 + ["garbage"]}
    lm = Scripted(lambda p, j: replies[_q(p)][j])
    el = ConfidenceElicitor(lm, m=4, aggregator="consistency")
    answers, confs = el.predict(list(replies))
    assert answers == [None, "4"] and confs == [0.0, 1.0]
    assert el.stats.unanswered_questions == 1 and el.stats.too_few_parsed == 1
    relaxed = ConfidenceElicitor(lm, m=4, aggregator="consistency", min_parsed=1)
    assert relaxed.predict(["What is 1 + 1?"]) == (["2"], [1.0])
    with pytest.raises(ValueError, match="min_parsed"):
        ConfidenceElicitor(lm, m=4, min_parsed=5)
    with pytest.raises(TypeError, match="min_parsed"):
        ConfidenceElicitor(lm, m=4, min_parsed="3")
    with pytest.raises(ValueError, match="m must"):
        ConfidenceElicitor(lm, m=0)
