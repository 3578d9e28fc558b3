"""The simulated arithmetic world: exact answers, the digit bound, and a stated confidence that
is independent of the answer (the channel is simulated by construction)."""

import numpy as np
import pytest

from iclr24.papers.llm_confidence.parsing import parse_answer_confidence
from iclr24.papers.llm_confidence.simulated_channel import (
    ANSWER_HEAD,
    HUMAN_CONFIDENCES,
    arithmetic_qa,
    qa_prompt,
    training_examples,
)


@pytest.mark.parametrize("max_digits", [1, 2, 3])
def test_questions_have_exact_answers_within_the_digit_bound(max_digits):
    items = arithmetic_qa(300, np.random.default_rng(0), max_digits=max_digits)
    assert {it.kind for it in items} == {"a+b", "a*b", "a+b+c"}
    for it in items:
        sep = "*" if it.kind == "a*b" else "+"
        nums = [int(x) for x in it.expression.split(sep)]
        assert all(0 <= x < 10 ** max_digits for x in nums)
        assert it.answer == (nums[0] * nums[1] if sep == "*" else sum(nums))


def test_training_replies_parse_and_confidence_ignores_the_answer():
    items = arithmetic_qa(3000, np.random.default_rng(1), max_digits=1)
    pairs = training_examples(items, np.random.default_rng(2))
    confs = []
    for it, (prompt, reply) in zip(items, pairs):
        assert prompt == qa_prompt(it) and prompt.endswith(ANSWER_HEAD) and reply.endswith("\n")
        answer, conf = parse_answer_confidence(ANSWER_HEAD + reply.rstrip("\n"))
        assert answer == str(it.answer)
        confs.append(conf)
    confs = np.array(confs)
    assert set(np.round(confs * 100).astype(int)) == set(HUMAN_CONFIDENCES)
    big = np.array([it.answer >= 10 for it in items])
    assert abs(confs[big].mean() - confs[~big].mean()) < 0.01  # independent of the answer


def test_arithmetic_qa_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n must be"):
        arithmetic_qa(-1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="max_digits"):
        arithmetic_qa(3, np.random.default_rng(0), max_digits=0)
