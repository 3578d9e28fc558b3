"""Auto-J's two judging protocols and its scenario-classifier prompt (Li et al., ICLR 2024,
Sec. 3 and App. "Prompts"), verbatim from the official code (GAIR-NLP/auto-j
``codes/usage/constants_prompt.py``: ``pairwise_tie``, ``single``,
``PROMPT_INPUT_FOR_SCENARIO_CLS``).

- ``pairwise_tie``: compare two responses to one query; the judgment ends with a sentence that
  begins "So, the final decision is Response 1 / Response 2 / Tie".
- ``single``: critique one response and rate it 1-10 as ``Rating: [[5]]``.

The user message is wrapped in the judge's chat format. Auto-J is a LLaMA-2-13B-chat fine-tune
prompted as ``[INST] {message} [/INST]`` with no system prompt (``chat_format="llama2"``, the
kit's :func:`~iclr24.kits.language_models.llama2_chat_prompt` without literal BOS, which the
tokenizer adds); ``"none"`` gives the bare message (our tiny judges, trained on it wrapped as
LLaMA-2 all the same), and any callable ``message -> prompt`` applies another model's template
(SmolLM2's ChatML through its tokenizer). Which wrapper was used changes results: record it.
"""

from __future__ import annotations

from collections.abc import Callable

from iclr24.kits.language_models import llama2_chat_prompt

__all__ = ["PAIRWISE_TIE_TEMPLATE", "PROTOCOLS", "SCENARIO_CLASSIFIER_TEMPLATE",
           "SINGLE_TEMPLATE", "build_prompt", "build_scenario_prompt", "wrap_chat"]

PAIRWISE_TIE_TEMPLATE = """You are assessing two submitted responses on a given user's query and judging which response is better or they are tied. Here is the data:

[BEGIN DATA]
***
[Query]: {prompt}
***
[Response 1]: {response}
***
[Response 2]: {response_another}
***
[END DATA]

Here are the instructions to assess and compare the two responses:

1. Pinpoint the key factors to distinguish these two responses.
2. Conclude your comparison by providing a final decision on which response is better, or they are tied. Begin your final decision statement with "So, the final decision is Response 1 / Response 2 / Tie". Ensure that your decision aligns coherently with the comprehensive evaluation and comparison you've provided."""

SINGLE_TEMPLATE = """Write critiques for a submitted response on a given user's query, and grade the response:
  
[BEGIN DATA]
***
[Query]: {prompt}
***
[Response]: {response}
***
[END DATA]

Write critiques for this response. After that, you should give a final rating for the response on a scale of 1 to 10 by strictly following this format: "[[rating]]", for example: "Rating: [[5]]"."""

SCENARIO_CLASSIFIER_TEMPLATE = ("Identify the scenario for the user's query, output 'default' "
                                "if you are uncertain.\nQuery:\n{input}\nScenario:\n")

PROTOCOLS = ("pairwise_tie", "single")

ChatFormat = str | Callable[[str], str]


def wrap_chat(message: str, chat_format: ChatFormat = "llama2") -> str:
    """Wrap a user ``message`` in ``chat_format``: ``"llama2"`` -> ``[INST] message [/INST]``
    (Auto-J's wrapper, no system prompt), ``"none"`` -> the message itself, or a callable."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__}")
    if callable(chat_format):
        out = chat_format(message)
        if not isinstance(out, str):
            raise TypeError(f"chat_format must return a str, got {type(out).__name__}")
        return out
    if chat_format == "llama2":
        return llama2_chat_prompt([{"role": "user", "content": message}], bos="", eos="")
    if chat_format == "none":
        return message
    raise ValueError(f"chat_format must be 'llama2', 'none' or a callable, got {chat_format!r}")


def build_prompt(protocol: str, query: str, response: str, response_b: str | None = None,
                 chat_format: ChatFormat = "llama2") -> str:
    """The judge's prompt for ``query`` and its response(s).

    protocol: ``"pairwise_tie"`` (needs ``response_b``: Response 2) or ``"single"`` (must not
    get one). Fields are inserted as given (no stripping), as in the official
    ``build_autoj_input``.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    for name, value in (("query", query), ("response", response)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if protocol == "pairwise_tie":
        if not isinstance(response_b, str):
            raise ValueError("protocol 'pairwise_tie' needs response_b (Response 2) as a str, "
                             f"got {type(response_b).__name__}")
        message = PAIRWISE_TIE_TEMPLATE.format(prompt=query, response=response,
                                               response_another=response_b)
    else:
        if response_b is not None:
            raise ValueError("protocol 'single' rates one response: response_b must be None")
        message = SINGLE_TEMPLATE.format(prompt=query, response=response)
    return wrap_chat(message, chat_format)


def build_scenario_prompt(query: str, chat_format: ChatFormat = "llama2") -> str:
    """The scenario classifier's prompt (the answer is one scenario name, or ``default``)."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, got {type(query).__name__}")
    return wrap_chat(SCENARIO_CLASSIFIER_TEMPLATE.format(input=query), chat_format)
