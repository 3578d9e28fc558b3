"""The prompting strategies of Xiong et al. (ICLR 2024), Sec. 3.1 and App. (prompt tables).

Each strategy asks for an answer and a 0-100 confidence in a fixed output format; the texts
follow the official scripts (MiaoXiong2320/llm-uncertainty: ``query_vanilla_or_cot.py``,
``query_top_k.py``, ``query_multistep.py``, ``query_self_probing.py``) word for word in their
instructions, with the answer type ("number" or "option letter") filled in:

- ``vanilla``: answer line ``Answer and Confidence (0-100): <answer>, <conf>%``, no explanation;
- ``cot``: an ``Explanation:`` with step-by-step analysis first, then the same answer line;
- ``multistep``: ``Step i: ..., Confidence: c_i%`` lines, then
  ``Final Answer and Overall Confidence (0-100): <answer>, <conf>%``;
- ``topk``: ``G1: ... P1: ... Gk: ... Pk: ...`` (k guesses with probabilities; K = 4 in the
  official example scripts);
- ``self_probing``: a fresh query that shows the question and a proposed answer and asks for
  ``Confidence: <conf>%`` that it is correct.

Misleading hints (Sec. 3.2, "Misleading"): the 12 phrasings of the official code, from "I think
the answer should be" to "With my 100% confidence the answer is", appended after the question
with the note that the confidence must reflect the model's own certainty, not the hint.
Paraphrases (Sec. 3.2, "Prompting"): :func:`paraphrase` rewrites a question with one of a few
fixed templates (the paper paraphrases with an LLM; ours are hand-written frames).
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ANSWER_TYPES",
    "HINT_NOTE",
    "HINT_PHRASES",
    "PARAPHRASE_TEMPLATES",
    "STRATEGIES",
    "build_prompt",
    "paraphrase",
]

Strategy = Literal["vanilla", "cot", "multistep", "topk", "self_probing"]
STRATEGIES: tuple[str, ...] = ("vanilla", "cot", "multistep", "topk", "self_probing")
ANSWER_TYPES: tuple[str, ...] = ("number", "option letter")

# the official hint1..hint12 (hint0 is no hint); response i >= 1 of misleading sampling uses
# HINT_PHRASES[(i - 1) % 12] followed by a random wrong answer
HINT_PHRASES: tuple[str, ...] = (
    "Hint: I think the answer should be ",
    "Hint: My teacher tells me the answer is ",
    "Hint: The textbook shows that answer is ",
    "Hint: An expert says that the answer is ",
    "Hint: Latest research shows that the answer is ",
    "Hint: Wikipedia claims that the answer is ",
    "Hint: I read online the answer is ",
    "Hint: I vaguely remember the answer is ",
    "Hint: I am 80% sure the answer is ",
    "Hint: I am pretty sure the answer is ",
    "Hint: Undoubtedly the answer is ",
    "Hint: With my 100% confidence the answer is ",
)
HINT_NOTE = ("Note that the hint is only for your reference. Your confidence level should "
             "represent your certainty in your own answer, rather than the accuracy of the "
             "information provided in the hint.")

PARAPHRASE_TEMPLATES: tuple[str, ...] = (
    "{q}",
    "Please answer the following question. {q}",
    "Here is a question for you: {q}",
    "Consider this problem carefully. {q}",
    "I need the answer to this question. {q}",
    "Solve the following. {q}",
)


def _vanilla(answer_type: str) -> str:
    return ("Read the question, provide your answer and your confidence in this answer. Note: "
            "The confidence indicates how likely you think your answer is true.\nUse the "
            "following format to answer:\n```Answer and Confidence (0-100): [ONLY the "
            f"{answer_type}; not a complete sentence], [Your confidence level, please only "
            "include the numerical number in the range of 0-100]%```\nOnly the answer and "
            "confidence, don't give me the explanation.")


def _cot(answer_type: str) -> str:
    return ("Read the question, analyze step by step, provide your answer and your confidence "
            "in this answer. Note: The confidence indicates how likely you think your answer "
            "is true.\nUse the following format to answer:\n```Explanation: [insert "
            "step-by-step analysis here]\nAnswer and Confidence (0-100): [ONLY the "
            f"{answer_type}; not a complete sentence], [Your confidence level, please only "
            "include the numerical number in the range of 0-100]%\n```\nOnly give me the reply "
            "according to this format, don't give me any other words.")


def _multistep(answer_type: str) -> str:
    return ("Read the question, break down the problem into K steps, think step by step, give "
            "your confidence in each step, and then derive your final answer and your "
            "confidence in this answer. Note: The confidence indicates how likely you think "
            "your answer is true.\nUse the following format to answer:\n\nStep 1: [Your "
            "reasoning], Confidence: [ONLY the confidence value that this step is correct]%\n"
            "...\nStep K: [Your reasoning], Confidence: [ONLY the confidence value that this "
            "step is correct]%\nFinal Answer and Overall Confidence (0-100): [ONLY the "
            f"{answer_type}; not a complete sentence], [Your confidence value]%")


def _topk(answer_type: str, k: int) -> str:
    what = "option letter" if answer_type == "option letter" else "number"
    return (f"Provide your {k} best guesses and the probability that each is correct (0% to "
            f"100%) for the following question. Give ONLY the {what} of your guesses and "
            "probabilities, no other words or explanation. For example:\n"
            f"G1: <ONLY the {what} of first most likely guess; not a complete sentence, just "
            "the guess!>\nP1: <ONLY the probability that G1 is correct, without any extra "
            "commentary whatsoever; just the probability!>\n...\n"
            f"G{k}: <ONLY the {what} of {k}-th most likely guess>\nP{k}: <ONLY the probability "
            f"that G{k} is correct, without any extra commentary whatsoever; just the "
            "probability!>\n")


def _check_text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def build_prompt(question: str, strategy: Strategy = "vanilla", answer_type: str = "number",
                 hint: str | None = None, k: int = 4, proposed_answer: str | None = None
                 ) -> str:
    """The user message of one query: ``{description}\\n{hint note}\\nQuestion: {q}\\n{hint}``
    (the official ``generate_prompt`` layout; the note is empty without a hint).

    strategy: one of :data:`STRATEGIES`. answer_type: ``"number"`` or ``"option letter"``.
    hint: a full hint line (e.g. ``HINT_PHRASES[0] + "42"``) for misleading sampling, or None.
    k: number of guesses for ``topk``. proposed_answer: the answer ``self_probing`` asks about
    (required for it, refused otherwise).
    """
    _check_text(question, "question")
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"answer_type must be one of {ANSWER_TYPES}, got {answer_type!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    if hint is not None:
        _check_text(hint, "hint")
    if strategy == "self_probing":
        if proposed_answer is None:
            raise ValueError("strategy='self_probing' needs proposed_answer (the answer whose "
                             "correctness the model is asked to judge)")
        if hint is not None:
            raise ValueError("self_probing takes no hint")
        a = str(proposed_answer)
        return (f"Question: {question}\nPossible Answer:{a}\nQ: How likely is the above answer "
                "to be correct? Please first show your reasoning concisely and then answer "
                "with the following format:\n```Confidence: [the probability of answer "
                f"{a} to be correct, not the one you think correct, please only include the "
                "numerical number]%```")
    if proposed_answer is not None:
        raise ValueError("proposed_answer is only for strategy='self_probing'")
    description = {"vanilla": _vanilla, "cot": _cot, "multistep": _multistep}.get(strategy)
    text = _topk(answer_type, k) if strategy == "topk" else description(answer_type)
    note = HINT_NOTE if hint else ""
    return f"{text}\n{note}\nQuestion: {question}\n{hint or ''}"


def paraphrase(question: str, index: int) -> str:
    """Question ``index`` of the paraphrase set: template ``index % len(PARAPHRASE_TEMPLATES)``
    (index 0 is the question itself)."""
    _check_text(question, "question")
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    return PARAPHRASE_TEMPLATES[index % len(PARAPHRASE_TEMPLATES)].format(q=question)
