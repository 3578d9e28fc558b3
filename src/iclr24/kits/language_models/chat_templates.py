"""Prompt templates the evaluated papers fine-tune and prompt with, as plain strings (the
tokenizer-free form; ``HFCausalLM.chat`` uses a checkpoint's own template instead).

- LLaMA-2 chat (Meta's reference ``chat_completion`` layout): ``[INST] <<SYS>>`` blocks, one
  ``[INST] ... [/INST]`` pair per user turn, assistant turns closed by ``</s>``; Auto-J's judge
  is a LLaMA-2-13B-chat fine-tune prompted this way.
- Alpaca (Stanford Alpaca's instruction format, with and without an input field).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ALPACA_PROMPT", "ALPACA_PROMPT_WITH_INPUT", "alpaca_prompt", "llama2_chat_prompt"]

_B_INST, _E_INST = "[INST]", "[/INST]"
_B_SYS, _E_SYS = "<<SYS>>\n", "\n<</SYS>>\n\n"

ALPACA_PROMPT = ("Below is an instruction that describes a task. Write a response that "
                 "appropriately completes the request.\n\n### Instruction:\n{instruction}\n\n"
                 "### Response:\n")
ALPACA_PROMPT_WITH_INPUT = ("Below is an instruction that describes a task, paired with an "
                            "input that provides further context. Write a response that "
                            "appropriately completes the request.\n\n### Instruction:\n"
                            "{instruction}\n\n### Input:\n{input}\n\n### Response:\n")


def alpaca_prompt(instruction: str, input: str | None = None) -> str:
    """The Alpaca prompt for ``instruction`` (and ``input`` when given and non-empty)."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise ValueError("instruction must be a non-empty string")
    if input:
        return ALPACA_PROMPT_WITH_INPUT.format(instruction=instruction, input=input)
    return ALPACA_PROMPT.format(instruction=instruction)


def llama2_chat_prompt(messages: Sequence[dict[str, str]], *, bos: str = "<s>",
                       eos: str = "</s>") -> str:
    """LLaMA-2 chat text for ``messages`` ({"role": "system"|"user"|"assistant", "content"}).

    An optional first system message is folded into the first user turn; then user and
    assistant turns must alternate, starting and ending with a user turn (the model answers
    next). ``bos``/``eos`` are the literal markers (pass "" when the tokenizer adds them).
    """
    msgs = list(messages)
    if any(not isinstance(m, dict) or set(m) - {"role", "content"} or "role" not in m
           or not isinstance(m.get("content"), str) for m in msgs):
        raise ValueError("messages must be dicts with 'role' and a string 'content'")
    if msgs and msgs[0]["role"] == "system":
        if len(msgs) < 2 or msgs[1]["role"] != "user":
            raise ValueError("a system message must be followed by a user message")
        msgs = [{"role": "user", "content": _B_SYS + msgs[0]["content"] + _E_SYS
                 + msgs[1]["content"]}] + msgs[2:]
    roles = [m["role"] for m in msgs]
    if not roles or roles[-1] != "user" or any(
            r != ("user" if i % 2 == 0 else "assistant") for i, r in enumerate(roles)):
        raise ValueError("after the system message, turns must alternate user/assistant, "
                         f"starting and ending with user; got {roles}")
    out = []
    for i in range(0, len(msgs) - 1, 2):
        out.append(f"{bos}{_B_INST} {msgs[i]['content'].strip()} {_E_INST} "
                   f"{msgs[i + 1]['content'].strip()} {eos}")
    out.append(f"{bos}{_B_INST} {msgs[-1]['content'].strip()} {_E_INST}")
    return "".join(out)
