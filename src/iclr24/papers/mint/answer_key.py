"""A known-answer text backend: the positive control of the MINT harness (not in Wang et al.,
ICLR 2024; our check that the prompts, the action parser, the environment and the official
checks let a correct reply count as a success).

:class:`AnswerKeyBackend` speaks the :class:`~iclr24.kits.language_models.TextBackend`
``generate`` interface like any model: for each prompt it finds which of its tasks the prompt
poses (the last ``Task:`` block, after the in-context example, in whatever chat format the
agent renders) and replies with that task's reference in the official solution tag,
``<solution> reference </solution>``. Through :func:`~.evaluation.evaluate` it must reach
SR_k = 1 at every k; anything less is a harness bug.
"""

from __future__ import annotations

from collections.abc import Sequence

from .tasks import Task

__all__ = ["AnswerKeyBackend"]


class AnswerKeyBackend:
    """tasks: the tasks whose prompts it will be asked about (each needs ``prompt`` and
    ``reference`` strings)."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, tasks: Sequence[Task]) -> None:
        tasks = list(tasks)
        if not tasks:
            raise ValueError("tasks must be a non-empty sequence of MINT tasks")
        for i, t in enumerate(tasks):
            if not isinstance(getattr(t, "prompt", None), str) or not isinstance(
                    getattr(t, "reference", None), str):
                raise TypeError(f"tasks[{i}] must be a MINT task with str prompt and reference, "
                                f"got {type(t).__name__}")
        self.tasks = tasks

    def answer(self, prompt: str) -> str:
        """The reply to one rendered prompt: the reference of the task it poses."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        # the task block that starts last in the prompt (the longest one on a tie: a task
        # whose text is the start of another's)
        pos, _, i = max((prompt.rfind("Task:\n" + t.prompt), len(t.prompt), i)
                        for i, t in enumerate(self.tasks))
        if pos < 0:
            raise ValueError("prompt poses none of this backend's tasks")
        return f"<solution> {self.tasks[i].reference} </solution>"

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` identical replies per prompt (the decoding arguments do not matter)."""
        if isinstance(prompts, str):
            raise TypeError("prompts must be a sequence of str, not one str")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        out = []
        for i, p in enumerate(prompts):
            try:
                out.append([self.answer(p)] * n)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"prompts[{i}]: {exc}") from None
        return out
