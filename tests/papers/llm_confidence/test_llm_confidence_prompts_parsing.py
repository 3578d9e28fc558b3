"""Prompts carry the official texts and layout; parsers read them back and count failures."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.llm_confidence import (
    HINT_NOTE,
    HINT_PHRASES,
    build_prompt,
    normalize_answer,
    paraphrase,
    parse_answer_confidence,
    parse_confidence,
    parse_multistep,
    parse_topk,
)


def test_vanilla_prompt_is_the_official_layout():
    p = build_prompt("What is 2 + 3?", "vanilla", "number")
    assert p.startswith("Read the question, provide your answer and your confidence")
    assert "Answer and Confidence (0-100): [ONLY the number; not a complete sentence]" in p
    assert p.endswith("\n\nQuestion: What is 2 + 3?\n")  # empty note line, no hint
    letter = build_prompt("Q?", "vanilla", "option letter")
    assert "[ONLY the option letter;" in letter


def test_hint_layout_and_phrases():
    hint = HINT_PHRASES[0] + "17"
    p = build_prompt("What is 2 + 3?", "vanilla", "number", hint=hint)
    assert p.endswith(f"{HINT_NOTE}\nQuestion: What is 2 + 3?\n{hint}")
    assert len(HINT_PHRASES) == 12
    assert HINT_PHRASES[0] == "Hint: I think the answer should be "
    assert HINT_PHRASES[-1] == "Hint: With my 100% confidence the answer is "


def test_other_strategies():
    assert "Explanation:" in build_prompt("Q?", "cot")
    assert "Step K:" in build_prompt("Q?", "multistep")
    t = build_prompt("Q?", "topk", k=3)
    assert "Provide your 3 best guesses" in t and "G3:" in t and "P3:" in t
    s = build_prompt("What is 2 + 3?", "self_probing", proposed_answer="5")
    assert s.startswith("Question: What is 2 + 3?\nPossible Answer:5\n")
    assert "Confidence: [the probability of answer 5 to be correct" in s
    assert paraphrase("Q?", 0) == "Q?" and paraphrase("Q?", 1) != "Q?"


def test_prompt_errors():
    with pytest.raises(ValueError, match="strategy"):
        build_prompt("Q?", "guess")
    with pytest.raises(ValueError, match="answer_type"):
        build_prompt("Q?", answer_type="word")
    with pytest.raises(ValueError, match="question"):
        build_prompt("  ")
    with pytest.raises(ValueError, match="proposed_answer"):
        build_prompt("Q?", "self_probing")
    with pytest.raises(ValueError, match="proposed_answer"):
        build_prompt("Q?", "vanilla", proposed_answer="3")
    with pytest.raises(ValueError, match="k must"):
        build_prompt("Q?", "topk", k=0)
    with pytest.raises(ValueError, match="index"):
        paraphrase("Q?", -1)


@given(st.integers(-10**7, 10**7), st.integers(0, 100), st.booleans())
def test_answer_confidence_roundtrip(answer, conf, commas):
    a = f"{answer:,}" if commas else str(answer)
    text = f"Some words.\nAnswer and Confidence (0-100): {a}, {conf}%\nmore"
    assert parse_answer_confidence(text, "number") == (str(answer), conf / 100)


@pytest.mark.parametrize("text, expected", [
    ("Answer and Confidence (0-100): 42, 90%", ("42", 0.9)),
    ("Answer and Confidence (0-100): 42 90%", ("42", 0.9)),
    ("Answer and Confidence (1-100): $3.50, 100%", ("3.5", 1.0)),
    ("Final Answer and Overall Confidence (0-100): 7, 80%", ("7", 0.8)),
    ("Answer and Confidence (0-100): 42, 90", ("42", 0.9)),  # cut at a stop string
    ("Answer and Confidence (0-100): 1945,", ("1945", None)),  # no confidence: not "194", 5
    ("Answer and Confidence (0-100): 1, 2 days", ("1", None)),
    ("Answer and Confidence (0-100): 12, 150%", ("12", None)),  # above 100: unparsable
    ("The answer is 12 and I am sure.", (None, None)),
    (("Answer and Confidence (0-100): [ONLY the number], [conf]%\n"
      "Answer and Confidence (0-100): 5, 60%"), ("5", 0.6)),  # the last complete line wins
])
def test_parse_answer_confidence_cases(text, expected):
    assert parse_answer_confidence(text, "number") == expected


def test_parse_letters_topk_multistep_probing():
    assert parse_answer_confidence("Answer and Confidence (0-100): (b), 60%",
                                   "option letter") == ("B", 0.6)
    assert parse_answer_confidence("Answer and Confidence (0-100): Option C, 5%",
                                   "option letter") == ("C", 0.05)
    g, p = parse_topk("G1: 12\nP1: 60%\nG2: thirteen\nP2: 30%\nG3: 14\nG5: 1\nP5: 1%")
    assert g == ["12", None, "14"] and p == [0.6, 0.3, None]  # G4 missing ends the list
    assert parse_topk("G1: 1\nP1: 50%\nG2: 2\nP2: 50%", k=1) == (["1"], [0.5])
    ms = parse_multistep("Step 1: add, Confidence: 90%\nStep 2: carry, Confidence: 50%\n"
                         "Final Answer and Overall Confidence (0-100): 11, 95%")
    assert ms.answer == "11" and ms.steps == (0.9, 0.5) and ms.stated == 0.95
    assert ms.confidence == pytest.approx(0.45)  # product of the step confidences
    assert parse_multistep("nothing").confidence is None
    assert parse_confidence("reasoning... Confidence: 70%") == 0.7
    assert parse_confidence("no number here") is None
    assert normalize_answer("-0", "number") == "0" and normalize_answer("x", "number") is None
    with pytest.raises(TypeError, match="text"):
        parse_answer_confidence(None, "number")
    with pytest.raises(ValueError, match="answer_type"):
        parse_answer_confidence("x", "word")
