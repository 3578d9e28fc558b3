"""MINT's simulated users: natural-language feedback after each unfinished turn (Wang et al.,
ICLR 2024, Sec. 2.3; official ``OpenAIFeedbackAgent`` / ``VLLMFeedbackAgent`` and the
``template_feedback_agent.txt`` prompt).

A provider answers ``feedback(state, observation, *, reference, in_context_example,
tool_desc) -> str``. The environment calls it only when the episode is not finished and passes
``reference=None`` unless the provider was built ``with_ground_truth=True``, so a provider in
no-ground-truth mode never holds the reference (the official "NOT GIVEN").

- :class:`NoFeedback`: "" (the no-feedback setting).
- :class:`LMFeedback`: the official feedback prompt (trajectory from ``Task:`` on, the
  in-context example with feedback turns, tool descriptions, "Correct solution (please DO NOT
  disclose the correct solution to the assistant): ..." or "NOT GIVEN") sent to a text
  backend; ``form="binary"`` keeps only the verdict of the first sentence ("This is GOOD." /
  "This is BAD."). A reply without GOOD/BAD in its first sentence gives "" and is counted in
  ``n_unparsed`` (the official agent raises and ends with an empty feedback). GPT-4, the
  paper's feedback model, is out of reach offline; any local model or an OpenAI-compatible
  endpoint can stand in.
- :class:`ScriptedFeedback`: a rule-based simulated user that replaces GPT-4 in our claims.
  With the ground truth it says GOOD when the latest observation reaches the reference answer
  (the reference number appears in the output, or the code passes the hidden tests) and BAD
  otherwise; without it, it can only judge the form (a traceback, a timeout, an invalid action
  or a wrong proposal is BAD). Textual form adds a sentence of guidance that never states the
  reference.
- :class:`RandomFeedback`: GOOD or BAD at random (seeded), the null arm of the feedback claim:
  a user whose feedback carries no information.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .examples import FEEDBACK_TEMPLATE

__all__ = ["FEEDBACK_STOP_WORDS", "FeedbackProvider", "LMFeedback", "NoFeedback", "RandomFeedback",
           "ScriptedFeedback", "binary_verdict", "feedback_prompt"]

FEEDBACK_STOP_WORDS = ("\nObservation:", "\nTask:", "\nAssistant:")


@runtime_checkable
class FeedbackProvider(Protocol):
    with_ground_truth: bool

    def feedback(self, state: Any, observation: str, *, reference: str | None,
                 in_context_example: str, tool_desc: str) -> str: ...


def _check_form(form: str) -> str:
    if form not in ("textual", "binary"):
        raise ValueError(f"form must be 'textual' or 'binary', got {form!r}")
    return form


class NoFeedback:
    """No simulated user: every turn's feedback is empty."""

    with_ground_truth = False

    def feedback(self, state: Any, observation: str, *, reference: str | None = None,
                 in_context_example: str = "", tool_desc: str = "") -> str:
        return ""


def binary_verdict(text: str) -> str | None:
    """The official binary parsing: "This is GOOD." / "This is BAD." from the first sentence
    (text up to the first period), or None when it names neither."""
    sentences = re.findall(r"([^.]*\.)", text)
    if not sentences:
        return None
    first = sentences[0]
    if "GOOD" in first:
        return "This is GOOD."
    if "BAD" in first:
        return "This is BAD."
    return None


def feedback_prompt(trajectory: str, observation: str, *, reference: str | None,
                    in_context_example: str, tool_desc: str) -> str:
    """The official feedback-agent prompt. ``trajectory``: the episode so far (everything
    before ``Task:`` is dropped, so the agent's instructions do not confuse the expert)."""
    gt = "NOT GIVEN" if reference is None else str(reference).strip()
    full = trajectory + "\n" + observation
    full = full[full.find("Task:"):] if "Task:" in full else full
    example = in_context_example[in_context_example.find("Task:"):] \
        if "Task:" in in_context_example else in_context_example
    return FEEDBACK_TEMPLATE.format(
        in_context_example=example, tool_desc=tool_desc, trajectory=full,
        correct_solution="Correct solution (please DO NOT disclose the correct solution to "
                         f"the assistant): {gt}\n")


class LMFeedback:
    """Feedback written by a language model through any text backend (``generate``)."""

    def __init__(self, lm: Any, *, with_ground_truth: bool = False,
                 form: Literal["textual", "binary"] = "textual", max_new_tokens: int = 128,
                 temperature: float = 0.0, seed: int = 0) -> None:
        if not hasattr(lm, "generate"):
            raise TypeError(f"lm must be a text backend with generate(), got "
                            f"{type(lm).__name__}")
        if not isinstance(with_ground_truth, bool):
            raise TypeError(f"with_ground_truth must be a bool, got {with_ground_truth!r}")
        self.lm, self.with_ground_truth, self.form = lm, with_ground_truth, _check_form(form)
        self.max_new_tokens, self.temperature, self.seed = max_new_tokens, temperature, seed
        self.n_requests = 0
        self.n_unparsed = 0

    def feedback(self, state: Any, observation: str, *, reference: str | None,
                 in_context_example: str, tool_desc: str) -> str:
        prompt = feedback_prompt(state.transcript(), observation,
                                 reference=reference if self.with_ground_truth else None,
                                 in_context_example=in_context_example, tool_desc=tool_desc)
        self.n_requests += 1
        text = self.lm.generate([prompt], self.max_new_tokens, temperature=self.temperature,
                                stop=list(FEEDBACK_STOP_WORDS),
                                seed=self.seed + self.n_requests)[0][0].strip()
        if self.form == "textual":
            return text
        verdict = binary_verdict(text)
        if verdict is None:
            self.n_unparsed += 1
            return ""
        return verdict


class RandomFeedback:
    """An uninformative simulated user (our null arm, not in the paper): "This is GOOD." or
    "This is BAD." drawn uniformly at random, whatever happened, from a seeded generator. A
    gain from it is a gain from the presence of a feedback message, not from its content."""

    with_ground_truth = False

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.rng = np.random.default_rng(seed)

    def feedback(self, state: Any, observation: str, *, reference: str | None = None,
                 in_context_example: str = "", tool_desc: str = "") -> str:
        return "This is GOOD." if self.rng.random() < 0.5 else "This is BAD."


_ERROR = re.compile(r"(Traceback \(most recent call last\)|^\s*File \"<cell>\"|"
                    r"\w+Error: |TimeoutError|I don't understand your input)", re.MULTILINE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class ScriptedFeedback:
    """A rule-based simulated user (see the module docstring)."""

    def __init__(self, form: Literal["textual", "binary"] = "binary", *,
                 with_ground_truth: bool = True) -> None:
        if not isinstance(with_ground_truth, bool):
            raise TypeError(f"with_ground_truth must be a bool, got {with_ground_truth!r}")
        self.form, self.with_ground_truth = _check_form(form), with_ground_truth

    def _reaches_reference(self, state: Any, observation: str, reference: str) -> bool:
        task = state.task
        if task.task_type == "code_generation":
            code = state.last_code
            return bool(code) and task.success(code)
        ref = reference.strip()
        observation = observation.split("\nYou have ")[0]  # not the count-down's numbers
        return any(task.exact_match(n) for n in _NUMBER.findall(observation)) or \
            (not _NUMBER.fullmatch(ref) and ref.lower() in observation.lower())

    def feedback(self, state: Any, observation: str, *, reference: str | None = None,
                 in_context_example: str = "", tool_desc: str = "") -> str:
        reference = reference if self.with_ground_truth else None
        errored = bool(_ERROR.search(observation))
        wrong = "Your answer is wrong." in observation
        if reference is not None:
            good = not errored and self._reaches_reference(state, observation, reference)
        else:
            good = not (errored or wrong)
        verdict = "This is GOOD." if good else "This is BAD."
        if self.form == "binary":
            return verdict
        if good:
            hint = "You have what you need; submit it as your solution."
        elif errored:
            hint = "Read the error message and fix your code before running it again."
        elif wrong:
            hint = "Check how you computed the answer; running code can verify it."
        else:
            hint = "The output is not the answer yet; check the numbers you copied."
        return f"{verdict} {hint}"
