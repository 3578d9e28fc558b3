"""MINT's action parser (Wang et al., ICLR 2024, Sec. 2.1; official ``GeneralEnv.parse_action``
and ``LMAgent.lm_output_to_action`` of xingyaoww/mint-bench).

Each agent turn is one of three actions:

- ``solution``: the text holds ``<solution> ... </solution>``; the answer is the stripped content
  of every such tag joined by newlines (the official regex ``<solution>(.*?)</solution>``).
- ``code``: no solution tag, but a code block; the code is every block's stripped content
  joined by newlines. Blocks are ```` ```python ... ``` ```` (the paper's prompt) or
  ``<execute> ... </execute>`` (the official code's later prompt); both are accepted.
- ``invalid``: neither. The environment answers with :data:`INVALID_INPUT_MESSAGE` and the
  turn still counts against the budget.

Precedence (a response holding both a code block and a solution tag): the solution wins, as in
the official agent, which classifies a turn as "propose solution" whenever the text contains
``<solution>`` before the environment parses it. A response that contains ``<solution>`` but
no closed, non-empty tag is ``invalid`` with ``consumes_proposal=True``: the official
environment counts it as a proposal (and shows the invalid-input message), so it uses up one of
the ``p`` proposals as well as a turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["INVALID_INPUT_MESSAGE", "Action", "parse_action"]

INVALID_INPUT_MESSAGE = (
    "I don't understand your input. \n"
    "If you want to execute code, please use ```python\nYOUR_CODE_HERE\n```.\n"
    "If you want to give me an answer, please use <solution> YOUR_SOLUTION_HERE </solution>.\n"
    "For example: The answer to the question is <solution> 42 </solution>. \n"
)

_SOLUTION = re.compile(r"<solution>(.*?)</solution>", re.DOTALL)
_CODE = (re.compile(r"```python(.*?)```", re.DOTALL), re.compile(r"<execute>(.*?)</execute>",
                                                                  re.DOTALL))


@dataclass(frozen=True)
class Action:
    """One parsed agent turn: ``kind`` and its ``content`` (the answer or the code; "" when
    invalid). ``consumes_proposal``: an invalid turn that tried to propose a solution."""

    kind: Literal["code", "solution", "invalid"]
    content: str
    consumes_proposal: bool = False


def parse_action(text: str) -> Action:
    """Classify and parse one agent response (see the module docstring for the rules)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    padded = "\n" + text + "\n"  # as the official parser, so a block at the very edge matches
    if "<solution>" in text:
        answer = "\n".join(m.strip() for m in _SOLUTION.findall(padded))
        if answer:
            return Action("solution", answer)
        return Action("invalid", "", consumes_proposal=True)
    for pattern in _CODE:
        blocks = pattern.findall(padded)
        code = "\n".join(b.strip() for b in blocks)
        if code:
            return Action("code", code)
    return Action("invalid", "")
