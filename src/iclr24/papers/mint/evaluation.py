"""Running MINT episodes and measuring them (Wang et al., ICLR 2024, Sec. 3.1-3.2; official
``mint/main.py`` and the agents of ``mint/agents``).

- :class:`LMAgent`: an agent over any text backend (``generate(prompts, max_new_tokens,
  temperature, top_p, n, stop, seed)``: a tiny local model, SmolLM2-135M-Instruct through
  ``LocalTextModel``, an OpenAI-compatible server). Its prompt is one of: ``"task_view"``
  (:meth:`~.environment.State.task_view`: the budget sentence and the episode from ``Task:``
  on, or only its last ``view_turns`` turns; our tiny agents), ``"completion"`` (the official non-chat layout ``\\n\\nHuman: ...
  \\n\\nAssistant: ...``), a callable ``messages -> str`` such as :func:`chat_formatter`
  (a chat template; the official chat mode), or ``"messages"``: the message list itself goes
  to a chat endpoint (``OpenAICompatibleClient(..., endpoint="chat").chat``), whose server
  applies the model's template (the official chat mode on a chat-only server). Generation
  stops at the official stop words.
- :func:`run_episode`: one episode to the end. :func:`evaluate`: many tasks for each turn
  budget k, episodes advanced in lockstep so that each turn is one batched ``generate`` call;
  one row per (task, k).
- Metrics: :func:`success_rates` (SR_k, micro-averaged over instances; per task kind too),
  :func:`improvement_slope` (least-squares slope of SR_k on k, the paper's "improvement per
  additional turn"), and the feedback effect ΔF = SR_5(feedback) - SR_5(no feedback) is the
  difference of two :func:`success_rates`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .environment import InteractionEnv, State
from .feedback import FeedbackProvider
from .repl import PythonREPL, Tool
from .tasks import Task

__all__ = ["AGENT_STOP_WORDS", "PROMPT_FORMATS", "LMAgent", "chat_formatter", "completion_prompt",
           "evaluate", "improvement_slope", "run_episode", "success_rates"]

# the official agent must not write the environment's or the expert's messages
AGENT_STOP_WORDS = ("\nObservation:", "\nExpert feedback:", "\nTask:", "\n---", "\nHuman:")
PROMPT_FORMATS = ("task_view", "completion", "messages")


def completion_prompt(messages: Sequence[dict[str, str]]) -> str:
    """The official non-chat prompt (``VLLMAgent.format_prompt``)."""
    out = ""
    for m in messages:
        out += f"\n\n{'Human' if m['role'] == 'user' else 'Assistant'}: {m['content']}"
    return out + "\n\nAssistant:"


def chat_formatter(hf_tokenizer: Any) -> Callable[[Sequence[dict[str, str]]], str]:
    """``messages -> prompt`` through a Hugging Face tokenizer's chat template (generation
    prompt added): the official chat mode, for instruction-tuned models such as SmolLM2."""
    if not hasattr(hf_tokenizer, "apply_chat_template"):
        raise TypeError("hf_tokenizer must have apply_chat_template (a Hugging Face tokenizer)")

    def fmt(messages: Sequence[dict[str, str]]) -> str:
        return hf_tokenizer.apply_chat_template(list(messages), tokenize=False,
                                                add_generation_prompt=True)
    return fmt


class LMAgent:
    """An agent that writes each turn with a text backend (see the module docstring)."""

    def __init__(self, lm: Any, *, prompt_format: str | Callable[[Sequence[dict[str, str]]],
                                                                  str] = "completion",
                 max_new_tokens: int = 256, temperature: float = 0.0, top_p: float = 1.0,
                 stop: Sequence[str] = AGENT_STOP_WORDS, view_turns: int | None = None) -> None:
        if not hasattr(lm, "generate"):
            raise TypeError(f"lm must be a text backend with generate(), got "
                            f"{type(lm).__name__}")
        if not (callable(prompt_format) or prompt_format in PROMPT_FORMATS):
            raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS} or a callable "
                             f"messages -> str, got {prompt_format!r}")
        if prompt_format == "messages" and not callable(getattr(lm, "chat", None)):
            raise TypeError("prompt_format='messages' needs a backend with chat(conversations,"
                            f" ...) such as OpenAICompatibleClient; {type(lm).__name__} has "
                            "none (render the messages with chat_formatter instead)")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
                or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        self.lm, self.prompt_format = lm, prompt_format
        self.max_new_tokens, self.temperature, self.top_p = max_new_tokens, temperature, top_p
        self.stop, self.view_turns = list(stop), view_turns

    def prompt(self, state: State) -> str:
        """The rendered prompt of the next turn (not for ``prompt_format="messages"``, where
        the message list itself goes to the server)."""
        if self.prompt_format == "task_view":
            return state.task_view(self.view_turns)
        if self.prompt_format == "completion":
            return completion_prompt(state.history)
        if self.prompt_format == "messages":
            raise ValueError("prompt_format='messages' sends the message list, not a prompt")
        return self.prompt_format(state.history)

    def act(self, states: Sequence[State], seed: int = 0) -> list[str]:
        """One turn for each state (one batched generation); texts are right-stripped."""
        if not states:
            return []
        kwargs = {"temperature": self.temperature, "top_p": self.top_p, "n": 1,
                  "stop": self.stop, "seed": seed}
        if self.prompt_format == "messages":
            outs = self.lm.chat([list(s.history) for s in states], self.max_new_tokens,
                                **kwargs)
        else:
            outs = self.lm.generate([self.prompt(s) for s in states], self.max_new_tokens,
                                    **kwargs)
        return [o[0].rstrip() for o in outs]


def run_episode(agent: LMAgent, env: InteractionEnv, seed: int = 0) -> State:
    """Reset ``env`` and let ``agent`` act until the episode ends."""
    if not hasattr(agent, "act"):
        raise TypeError(f"agent must have act(states, seed), got {type(agent).__name__}")
    state = env.reset()
    turn = 0
    while not state.finished:
        state = env.step(agent.act([state], seed=seed * 1000 + turn)[0])
        turn += 1
    return state


def _check_ks(ks: Iterable[int]) -> list[int]:
    ks = list(ks)
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be a non-empty sequence of positive ints, got {ks!r}")
    return ks


def evaluate(agent: LMAgent, tasks: Sequence[Task], ks: Iterable[int] = range(1, 6), *,
             feedback: FeedbackProvider | None = None, use_tools: bool = True,
             tools: Sequence[Tool] = (), count_down: bool = True, seed: int = 0,
             batch_size: int = 64, repl_timeout_s: float = 10.0) -> pd.DataFrame:
    """Episodes of every task for every turn budget k (p = 1 at k = 1, else 2).

    Returns one row per (task, k): ``task_id``, ``kind``, ``k``, ``success`` (official
    check), ``exact_success``, ``turns``, ``n_tool``, ``n_propose``, ``n_invalid``,
    ``terminate_reason``, and the ``transcript`` of the episode from ``Task:`` on. Up to
    ``batch_size`` episodes advance in lockstep (one ``generate`` call per turn); their
    interpreters are reused from task to task (namespaces reset).
    """
    ks = _check_ks(ks)
    tasks = list(tasks)
    if not tasks:
        raise ValueError("tasks must be a non-empty sequence of Task")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    rows: list[dict[str, Any]] = []
    pool: list[PythonREPL] = []
    try:
        for k in ks:
            for lo in range(0, len(tasks), batch_size):
                chunk = tasks[lo:lo + batch_size]
                envs = [InteractionEnv(t, tools, k, None, count_down, feedback,
                                       use_tools=use_tools, repl_timeout_s=repl_timeout_s)
                        for t in chunk]
                for j, env in enumerate(envs):
                    if use_tools:
                        if j == len(pool):
                            pool.append(PythonREPL(repl_timeout_s, tools=tools))
                        env.attach_repl(pool[j])
                states = [env.reset() for env in envs]
                turn = 0
                while active := [i for i, s in enumerate(states) if not s.finished]:
                    texts = agent.act([states[i] for i in active],
                                      seed=int(seed) * 7919 + k * 101 + lo * 13 + turn)
                    for i, text in zip(active, texts):
                        states[i] = envs[i].step(text)
                    turn += 1
                for t, s in zip(chunk, states):
                    first = s.history[0]["content"]
                    rows.append({
                        "task_id": t.task_id, "kind": t.kind, "k": k,
                        "success": bool(s.success), "exact_success": bool(s.exact_success),
                        "turns": s.turns, "n_tool": s.action_count["use_tool"],
                        "n_propose": s.action_count["propose_solution"],
                        "n_invalid": s.action_count["invalid_action"],
                        "terminate_reason": s.terminate_reason,
                        "transcript": first[first.rfind("Task:"):] + "".join(
                            "\n" + m["content"] for m in s.history[1:])})
    finally:
        for repl in pool:
            repl.close()
    return pd.DataFrame(rows)


def success_rates(results: pd.DataFrame, column: str = "success", by_kind: bool = False
                  ) -> pd.Series | pd.DataFrame:
    """SR_k: the mean of ``column`` over instances for each k (micro-average); with
    ``by_kind`` a (kind x k) table."""
    if not isinstance(results, pd.DataFrame) or not {"k", column} <= set(results.columns):
        raise ValueError(f"results must be a DataFrame from evaluate() with 'k' and {column!r}")
    if by_kind:
        return results.pivot_table(index="kind", columns="k", values=column, aggfunc="mean")
    return results.groupby("k")[column].mean()


def improvement_slope(sr_by_k: pd.Series | dict[int, float] | Sequence[float]) -> float:
    """Least-squares slope of SR_k on k (a Series/dict k -> SR, or SR_1, SR_2, ... in order):
    the paper's improvement per additional turn."""
    if isinstance(sr_by_k, pd.Series):
        ks, sr = np.asarray(sr_by_k.index, dtype=float), sr_by_k.to_numpy(dtype=float)
    elif isinstance(sr_by_k, dict):
        ks = np.asarray(list(sr_by_k), dtype=float)
        sr = np.asarray(list(sr_by_k.values()), dtype=float)
    else:
        sr = np.asarray(list(sr_by_k), dtype=float)
        ks = np.arange(1, sr.size + 1, dtype=float)
    if sr.ndim != 1 or sr.size < 2 or np.unique(ks).size < 2:
        raise ValueError("sr_by_k needs success rates at two or more distinct k")
    if not np.all(np.isfinite(sr)):
        raise ValueError("sr_by_k must be finite")
    return float(np.polyfit(ks, sr, 1)[0])  # SR_k ≈ a + slope * k
