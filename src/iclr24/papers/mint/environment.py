"""MINT's interaction environment (Wang et al., ICLR 2024, Sec. 2.1 and 3.1; official
``mint/envs/general_env.py`` ``GeneralEnv`` and ``mint/datatypes.py``).

Episode protocol, step by step as in the official code:

1. :meth:`InteractionEnv.reset`: the first user message is the instruction template (with or
   without the tool), the tool descriptions, the task type's in-context example (its feedback
   variant when feedback is on), then ``Task:`` and the problem; the budget sentence says
   ``k`` interactions in total, at most ``p`` of them proposals.
2. :meth:`InteractionEnv.step` parses the agent's text (:func:`~.actions.parse_action`): code
   runs in the persistent :class:`~.repl.PythonREPL` (observation = its output); a solution is
   checked by the task (correct: the episode ends with success); anything else is answered
   by :data:`~.actions.INVALID_INPUT_MESSAGE` and counts as an invalid action.
3. Budget: if proposals reached ``p`` the episode fails (``max_propose_steps``); else if all
   actions (tool + proposals + invalid) reached ``k`` it fails (``max_steps``).
4. If not finished and feedback is on, the provider gets the trajectory and the observation
   (with the reference only in ground-truth mode).
5. The observation message: ``Observation:`` + output (``Your answer is wrong.`` after a wrong
   proposal) + with count-down ``You have {steps} steps left and {p} chances to propose
   solution left.`` + ``Expert feedback:`` and the feedback.

:func:`max_propose_for` gives the paper's p: 1 when k = 1, else 2. With ``use_tools=False``
(the answer-only baseline) the first message is the no-tool template and a code block is not
executed: it counts as an invalid action (our choice; the official no-tool runs still execute
code, their prompt just does not offer it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Self

from .actions import INVALID_INPUT_MESSAGE, parse_action
from .examples import TEMPLATE_WITH_TOOL, TEMPLATE_WITHOUT_TOOL
from .feedback import FeedbackProvider, NoFeedback
from .repl import PythonREPL, Tool, toolset_description
from .tasks import Task

__all__ = ["InteractionEnv", "State", "max_propose_for", "render_observation"]


def max_propose_for(k: int) -> int:
    """The paper's proposal limit p for a turn budget k: 1 when k = 1, else 2."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    return 1 if k == 1 else 2


def render_observation(observation: str | None, *, success: bool = False,
                       turn_info: tuple[int, int] | None = None, feedback: str = "") -> str:
    """The official ``StepOutput.to_str``: the user message after an agent turn."""
    out = "Observation:\n"
    if observation is not None:
        out += observation + "\n"
    elif not success:
        out += "Your answer is wrong.\n"
    if turn_info is not None:
        steps_left, proposals_left = turn_info
        out += (f"You have {steps_left} steps left and {proposals_left} chances to propose "
                "solution left.\n")
        if steps_left <= 1:
            out += "You should take the last step to propose a solution.\n"
    if feedback:
        out += "\nExpert feedback:\n" + feedback + "\n"
    return out


@dataclass
class State:
    """Everything about an episode so far.

    history: the messages, ``{"role": "user" | "assistant", "content": str}``; the first is the
        instruction prompt.
    action_count: ``propose_solution``, ``use_tool``, ``invalid_action`` (their sum is the
        number of turns used).
    success / exact_success: a proposal passed the task's official check / its exact variant.
    """

    task: Any
    max_steps: int
    max_propose: int
    history: list[dict[str, str]] = field(default_factory=list)
    finished: bool = False
    success: bool = False
    exact_success: bool = False
    terminate_reason: str | None = None
    action_count: dict[str, int] = field(default_factory=lambda: {
        "propose_solution": 0, "use_tool": 0, "invalid_action": 0})
    answers: list[str] = field(default_factory=list)
    feedbacks: list[str] = field(default_factory=list)
    last_code: str = ""

    @property
    def turns(self) -> int:
        return sum(self.action_count.values())

    def transcript(self) -> str:
        """The whole conversation as text (messages joined by newlines)."""
        return "\n".join(m["content"] for m in self.history)

    def task_view(self, last_turns: int | None = None) -> str:
        """The budget sentence, then the episode from ``Task:`` on, ending with an open
        ``Assistant:`` turn: the compact prompt of our tiny agents (the instructions and the
        in-context example are a constant prefix for them). ``last_turns``: keep only the
        last that many (agent turn, observation) pairs (None: all)."""
        if last_turns is not None and (isinstance(last_turns, bool)
                                       or not isinstance(last_turns, int) or last_turns < 0):
            raise ValueError(f"last_turns must be None or an int >= 0, got {last_turns!r}")
        first = self.history[0]["content"]
        budget = next((line for line in first.splitlines()
                       if line.startswith(("You have ", "You can only propose"))), "")
        body = first[first.rfind("Task:"):].rstrip("\n")
        later = self.history[1:]
        if last_turns is not None:
            later = later[max(0, len(later) - 2 * last_turns):]
        rest = "".join("\n\n" + m["content"].rstrip("\n") for m in later)
        return f"{budget}\n\n{body}{rest}\n\nAssistant:\n"


class InteractionEnv:
    """One task's multi-turn episode under a turn budget (see the module docstring).

    task: a :class:`~.tasks.Task`. tools: :class:`~.repl.Tool` functions for the REPL.
    max_steps: k, the total turn budget. max_propose: p (default :func:`max_propose_for`).
    count_down: tell the agent its remaining steps and proposals after every turn.
    feedback: a :class:`~.feedback.FeedbackProvider` (default: none).
    use_tools: False for the answer-only baseline (no tool in the prompt; code is not run).
    """

    def __init__(self, task: Task, tools: Sequence[Tool] = (), max_steps: int = 5,
                 max_propose: int | None = None, count_down: bool = True,
                 feedback: FeedbackProvider | None = None, *, use_tools: bool = True,
                 repl_timeout_s: float = 10.0) -> None:
        for attr in ("prompt", "reference", "success", "in_context_example", "task_type"):
            if not hasattr(task, attr):
                raise TypeError(f"task must follow the Task protocol (missing {attr!r}), got "
                                f"{type(task).__name__}")
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if max_propose is None:
            max_propose = max_propose_for(max_steps)
        if isinstance(max_propose, bool) or not isinstance(max_propose, int) \
                or not 1 <= max_propose <= max_steps:
            raise ValueError(f"max_propose must be an int in [1, max_steps={max_steps}], got "
                             f"{max_propose!r}")
        feedback = NoFeedback() if feedback is None else feedback
        if not hasattr(feedback, "feedback"):
            raise TypeError(f"feedback must be a FeedbackProvider, got {type(feedback).__name__}")
        self.task, self.tools = task, tuple(tools)
        self.max_steps, self.max_propose, self.count_down = max_steps, max_propose, count_down
        self.feedback_provider, self.use_tools = feedback, bool(use_tools)
        self.repl_timeout_s = repl_timeout_s
        self._repl: PythonREPL | None = None
        self._owns_repl = True
        self.state = State(task, max_steps, max_propose)

    @property
    def with_feedback(self) -> bool:
        return not isinstance(self.feedback_provider, NoFeedback)

    def first_message(self) -> str:
        template = TEMPLATE_WITH_TOOL if self.use_tools else TEMPLATE_WITHOUT_TOOL
        return template.format(
            max_total_steps=self.max_steps, max_propose_solution=self.max_propose,
            tool_desc=toolset_description(self.tools),
            in_context_example=self.task.in_context_example(self.use_tools, self.with_feedback),
            task_prompt="Task:\n" + self.task.prompt)

    def reset(self) -> State:
        """Start the episode: a fresh state and interpreter namespace."""
        if self._repl is not None:
            self._repl.reset()
        self.state = State(self.task, self.max_steps, self.max_propose,
                           history=[{"role": "user", "content": self.first_message()}])
        return self.state

    def attach_repl(self, repl: PythonREPL) -> None:
        """Run code in ``repl`` (a :class:`~.repl.PythonREPL`, or any object with ``run(code)
        -> str``, ``reset()`` and ``close()``; owned by the caller, who closes it; it is reset
        with the episode) instead of an interpreter of the environment's own."""
        if not all(callable(getattr(repl, m, None)) for m in ("run", "reset", "close")):
            raise TypeError(f"repl must have run(), reset() and close(), got "
                            f"{type(repl).__name__}")
        self.close()
        self._repl, self._owns_repl = repl, False

    def _run_code(self, code: str) -> str:
        if self._repl is None:  # started on first use: answer-only episodes spawn nothing
            self._repl = PythonREPL(self.repl_timeout_s, tools=self.tools)
            self._owns_repl = True
        return self._repl.run(code).strip()

    def step(self, agent_text: str) -> State:
        """Apply one agent turn; returns the updated :class:`State`."""
        if not isinstance(agent_text, str):
            raise TypeError(f"agent_text must be a str, got {type(agent_text).__name__}")
        st = self.state
        if not st.history:
            raise ValueError("call reset() before step()")
        if st.finished:
            raise ValueError("the episode is finished; call reset() to start another")
        content = agent_text if agent_text.lstrip().startswith("Assistant:") \
            else "Assistant:\n" + agent_text
        st.history.append({"role": "assistant", "content": content + "\n"})

        action = parse_action(agent_text)
        observation: str | None
        if action.kind == "solution":
            st.action_count["propose_solution"] += 1
            st.answers.append(action.content)
            st.exact_success = st.exact_success or self.task.exact_match(action.content)
            observation = None
            if self.task.success(action.content):
                st.finished, st.success, st.terminate_reason = True, True, "task_success"
        elif action.kind == "code" and self.use_tools:
            st.action_count["use_tool"] += 1
            st.last_code = action.content
            observation = self._run_code(action.content)
        else:  # invalid (a code block counts as invalid when the tool is disabled)
            key = "propose_solution" if action.consumes_proposal else "invalid_action"
            st.action_count[key] += 1
            observation = INVALID_INPUT_MESSAGE

        if not st.finished:  # official check_max_iteration
            if st.action_count["propose_solution"] >= self.max_propose:
                st.finished, st.terminate_reason = True, "max_propose_steps"
            elif st.turns >= self.max_steps:
                st.finished, st.terminate_reason = True, "max_steps"

        turn_info = ((self.max_steps - st.turns,
                      self.max_propose - st.action_count["propose_solution"])
                     if self.count_down else None)
        feedback = ""
        if not st.finished and self.with_feedback:
            pending = render_observation(observation, success=st.success, turn_info=turn_info)
            ref = self.task.reference if self.feedback_provider.with_ground_truth else None
            feedback = self.feedback_provider.feedback(
                st, pending, reference=ref,
                in_context_example=self.task.in_context_example(self.use_tools, True),
                tool_desc=toolset_description(self.tools))
            st.feedbacks.append(feedback)
        if not st.finished:  # the official log_output drops the message of a finished episode
            st.history.append({"role": "user", "content": render_observation(
                observation, success=st.success, turn_info=turn_info, feedback=feedback)})
        return st

    def close(self) -> None:
        """Stop the interpreter (if one was started)."""
        if self._repl is not None and self._owns_repl:
            self._repl.close()
        self._repl = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
