"""A laptop-scale MINT agent: a tiny transformer trained on transcripts of a
scripted teacher acting in the real environment (our stand-in for the paper's 20 evaluated
LLMs, 7B-70B open models, GPT-3.5/4 and Claude, none of which runs here).

Teacher (:class:`ScriptedTeacher`, numeric tasks only). With a budget of one turn, or without
the tool, it answers "in the head": the exact answer half of the time, else one 10-50% off.
Otherwise it writes Python for the task; its first program crashes 30% of the time (a
misspelt variable: a real ``NameError`` traceback comes back) and is silently wrong 15% of the
time (a mis-copied digit); after a traceback, a wrong-answer message or "This is BAD." it
writes the correct program; after a clean output (and GOOD or no feedback) it proposes the
printed number, on the last turn too; on a last turn without one it answers in the head. Its
episodes run through :class:`~.environment.InteractionEnv` itself, so
every observation, count-down and feedback line is the environment's own text; only the code
is not executed: :class:`TeacherREPL` returns what the teacher's (known) program prints, in
the interpreter's exact format (checked against the real REPL in the tests).

Agent. :func:`train_tiny_agent` fine-tunes a kit :class:`CausalTransformer` (2 layers,
d = 64, byte-level BPE of 512 ids; the spec's 4-layer d = 192 char model does not fit our CPU
budget) on (prompt, turn) pairs: the prompt is :meth:`~.environment.State.task_view` with the
latest turn only (budget sentence, ``Task:``, the last agent turn and its observation), the
target the teacher's turn, prompt tokens masked. Budgets k = 1..5,
with and without feedback (binary, ground truth), with and without the tool, are mixed. At
test time it acts at temperature 0.7 with the real REPL and checkers; its own sampling errors
(a mis-copied number, a broken block) are what it must recover from.

Batching. The kit's ``LocalTextModel`` runs prompts of equal token length in lockstep; the
tiny model has no padding mask, so :class:`PaddedTextModel` left-pads prompts with NUL bytes to a
common length and the agent is trained with random NUL padding to ignore them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .environment import InteractionEnv, State
from .feedback import ScriptedFeedback
from .repl import NO_OUTPUT
from .tasks import NumericReasoningTask, make_mint_tasks

__all__ = ["PaddedTextModel", "ScriptedTeacher", "TeacherAgent", "TeacherREPL",
           "TinyAgentConfig", "teacher_examples", "train_tiny_agent"]

PAD = "\x00"
TURN_END = "\n\nObservation:"  # the agent's turns end where the environment's message begins

_NUMBERS = re.compile(r"-?\d+")


def _operands(task: NumericReasoningTask) -> list[int]:
    return [int(x) for x in _NUMBERS.findall(task.prompt)]


def _program(task: NumericReasoningTask, nums: list[int], crash: bool) -> tuple[str, str]:
    """(code, what it prints) of the teacher's program for a numeric task."""
    var = "reslt" if crash else "result"
    if task.kind == "product":
        code, value = f"result = {nums[0]} * {nums[1]}\nprint({var})", nums[0] * nums[1]
    elif task.kind == "sum":
        code = f"numbers = [{', '.join(map(str, nums))}]\nresult = sum(numbers)\nprint({var})"
        value = sum(nums)
    elif task.kind == "modpow":
        code = f"result = pow({nums[0]}, {nums[1]}, {nums[2]})\nprint({var})"
        value = pow(nums[0], nums[1], nums[2])
    elif task.kind == "average":
        nums = nums[:-1]  # the trailing 2 of "rounded to 2 decimal places"
        code = (f"numbers = [{', '.join(map(str, nums))}]\n"
                f"result = round(sum(numbers) / len(numbers), 2)\nprint({var})")
        value = round(sum(nums) / len(nums), 2)
    else:
        raise ValueError(f"the teacher solves numeric tasks only, got kind {task.kind!r}")
    if crash:
        last = code.count("\n") + 1
        return code, ('Traceback (most recent call last):\n  File "<cell>", line '
                      f"{last}, in <module>\nNameError: name 'reslt' is not defined")
    return code, str(value)


def _perturb(text: str, rng: np.random.Generator) -> str:
    """The reference with one digit changed (not the leading one)."""
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if len(digits) < 2:
        return str(int(rng.integers(0, 10)))
    i = digits[int(rng.integers(1, len(digits)))]
    new = str((int(text[i]) + int(rng.integers(1, 10))) % 10)
    return text[:i] + new + text[i + 1:]


def _mental_slip(reference: str, rng: np.random.Generator) -> str:
    """A wrong answer "in the head": the reference off by 10-50% (either way), in its format.
    (A changed digit would often land inside the official check's 5% tolerance and pass.)"""
    value = float(reference)
    guess = value * (1 + rng.choice([-1.0, 1.0]) * rng.uniform(0.1, 0.5))
    if "." in reference:
        decimals = len(reference) - reference.index(".") - 1
        text = f"{guess:.{decimals}f}"
    else:
        text = str(round(guess))
    return text if text != reference else str(int(value) + 7)


class TeacherAgent:
    """The scripted teacher as an agent for :func:`~.evaluation.evaluate`: its programs run in
    the real REPL, its answers go through the real checks. The known-answer reference of the
    turn-budget claim: what an agent that uses its turns as the training transcripts do
    reaches (``use_tools`` must match the ``evaluate`` call)."""

    def __init__(self, seed: int, use_tools: bool = True) -> None:
        self.teacher = ScriptedTeacher(np.random.default_rng(seed))
        self.use_tools = bool(use_tools)

    def act(self, states: Sequence[State], seed: int = 0) -> list[str]:
        return [self.teacher.act(SimpleNamespace(state=s, task=s.task, max_steps=s.max_steps,
                                                 use_tools=self.use_tools), TeacherREPL())
                for s in states]


class TeacherREPL:
    """Stands in for the interpreter in teacher episodes: ``run`` returns the output the
    teacher queued for its program (the teacher's code is ours, never executed)."""

    def __init__(self) -> None:
        self.pending: str | None = None

    def run(self, code: str) -> str:
        out, self.pending = self.pending, None
        if out is None:
            raise RuntimeError("TeacherREPL.run without a queued output")
        return out or NO_OUTPUT

    def reset(self) -> None:
        self.pending = None

    def close(self) -> None:
        self.pending = None


class ScriptedTeacher:
    """The scripted policy described in the module docstring."""

    def __init__(self, rng: np.random.Generator, crash_rate: float = 0.3,
                 silent_rate: float = 0.15, mental_accuracy: float = 0.5) -> None:
        for name, v in (("crash_rate", crash_rate), ("silent_rate", silent_rate),
                        ("mental_accuracy", mental_accuracy)):
            if not 0 <= v <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        if crash_rate + silent_rate > 1:
            raise ValueError("crash_rate + silent_rate must be <= 1")
        self.rng, self.crash_rate, self.silent_rate = rng, crash_rate, silent_rate
        self.mental_accuracy = mental_accuracy

    def _mental(self, task: NumericReasoningTask) -> str:
        guess = task.reference if self.rng.random() < self.mental_accuracy \
            else _mental_slip(task.reference, self.rng)
        return f"<thought> I will answer directly. </thought>\nThe answer is <solution> {guess} </solution>."

    def act(self, env: InteractionEnv, repl: TeacherREPL) -> str:
        st, task = env.state, env.task
        steps_left = env.max_steps - st.turns
        last = st.history[-1]["content"] if len(st.history) > 1 else ""
        printed = re.search(r"Observation:\n(-?[\d.]+)\n", last)
        if env.use_tools and printed is not None and "This is BAD." not in last:
            return (f"<thought> The program printed the answer. </thought>\n"
                    f"The answer is <solution> {printed.group(1)} </solution>.")
        if not env.use_tools or env.max_steps == 1 or (steps_left <= 1 and len(st.history) > 1):
            return self._mental(task)
        nums = _operands(task)
        first = st.action_count["use_tool"] == 0
        u = self.rng.random()
        crash = first and u < self.crash_rate
        if first and self.crash_rate <= u < self.crash_rate + self.silent_rate:
            j = int(self.rng.integers(len(nums) - (1 if task.kind == "average" else 0)))
            nums = list(nums)
            nums[j] = int(_perturb(str(nums[j]), self.rng)) if nums[j] >= 10 else nums[j] + 1
        code, out = _program(task, nums, crash)
        repl.pending = out
        thought = "<thought> I will compute it with Python. </thought>" if first else \
            "<thought> I will fix the program and run it again. </thought>"
        return f"{thought}\n```python\n{code}\n```"


VIEW_TURNS = 1  # the tiny agent sees the budget, the task and the latest turn


def teacher_examples(n_episodes: int, seed: int, *, max_pad: int = 64
                     ) -> list[tuple[str, str]]:
    """(prompt, target) pairs from ``n_episodes`` teacher episodes over fresh numeric tasks:
    k uniform in 1..5, feedback (binary, ground truth) in half of them, the tool disabled in
    a fifth. Prompts are :meth:`State.task_view` with the latest :data:`VIEW_TURNS` turn,
    left-padded with 0..``max_pad`` NUL bytes."""
    rng = np.random.default_rng(seed)
    tasks = make_mint_tasks(n_episodes, seed=seed + 1)
    teacher, repl = ScriptedTeacher(rng), TeacherREPL()
    pairs: list[tuple[str, str]] = []
    for task in tasks:
        k = int(rng.integers(1, 6))
        use_tools = bool(rng.random() >= 0.2)
        fb = ScriptedFeedback("binary", with_ground_truth=True) if rng.random() < 0.5 else None
        env = InteractionEnv(task, max_steps=k, feedback=fb, use_tools=use_tools)
        env.attach_repl(repl)
        state = env.reset()
        while not state.finished:
            text = teacher.act(env, repl)
            pairs.append((PAD * int(rng.integers(0, max_pad + 1)) + state.task_view(VIEW_TURNS),
                          text + TURN_END))
            state = env.step(text)
    return pairs


@dataclass(frozen=True)
class TinyAgentConfig:
    """The tiny agent and its training (AdamW, prompt-masked next-token loss, byte-level BPE
    of ``vocab_size`` ids learnt on the teacher's text)."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    context_length: int = 512
    vocab_size: int = 512
    n_episodes: int = 1500
    steps: int = 300
    batch_size: int = 16
    lr: float = 3e-3


def train_tiny_agent(config: TinyAgentConfig, seed: int):
    """A :class:`TransformerLM` (BPE tokenizer) fine-tuned on :func:`teacher_examples`
    (seeded); returns ``(lm, final mean training loss)``."""
    import torch

    from iclr24.kits.language_models import (
        CausalTransformer,
        FinetuneConfig,
        TransformerConfig,
        TransformerLM,
        finetune,
        train_subword_tokenizer,
    )

    if not isinstance(config, TinyAgentConfig):
        raise TypeError(f"config must be a TinyAgentConfig, got {type(config).__name__}")
    pairs = teacher_examples(config.n_episodes, seed)
    # NUL never occurs in the tokenizer's corpus, so a padding byte is always its own token
    tok = train_subword_tokenizer([(p + t).lstrip(PAD) for p, t in pairs], config.vocab_size)
    torch.manual_seed(seed)
    model = CausalTransformer(TransformerConfig(
        vocab_size=tok.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
        n_heads=config.n_heads, context_length=config.context_length))
    lm = TransformerLM(model, tok)
    hist = finetune(lm, pairs, FinetuneConfig(steps=config.steps, batch_size=config.batch_size,
                                              lr=config.lr, warmup_steps=20, seed=seed))
    return lm, float(np.mean(hist.losses[-20:]))


class PaddedTextModel:
    """A text backend over a ``LocalTextModel`` whose tokenizer keeps every NUL byte a token of
    its own: it left-pads every prompt of a call with NULs to the longest one's token count,
    so that all rows run in one lockstep batch (the tiny agent was trained to ignore the
    padding)."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, local_text_model) -> None:
        if not hasattr(getattr(local_text_model, "lm", None), "tokenizer"):
            raise TypeError("local_text_model must be a LocalTextModel (with .lm.tokenizer)")
        self.inner = local_text_model

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        enc = self.inner.lm.tokenizer.encode
        ctx = self.inner.lm.context_length
        prompts = [self._fit(p, ctx - max_new_tokens, enc) for p in prompts]
        lengths = [len(enc(p.encode("utf-8"))) for p in prompts]
        width = max(lengths, default=0)
        padded = [PAD * (width - n_tok) + p for p, n_tok in zip(prompts, lengths)]
        return self.inner.generate(padded, max_new_tokens, temperature=temperature,
                                   top_p=top_p, n=n, stop=stop, seed=seed)

    @staticmethod
    def _fit(prompt: str, limit: int, enc) -> str:
        """A prompt over ``limit`` tokens keeps its head (budget and task) and as much of its
        tail (the latest turn) as fits, the middle replaced by an ellipsis line (a long
        observation, e.g. a huge printed number)."""
        if limit < 1:
            raise ValueError("max_new_tokens leaves no room for a prompt in the context")
        head_end = prompt.find("\n\nAssistant:")
        head = prompt[:head_end if head_end > 0 else min(len(prompt), 200)]
        tail = prompt[len(head):]
        while len(enc((head + tail).encode("utf-8"))) > limit and tail:
            tail = "\n...\n" + tail[max(len(tail) // 8, 8):].lstrip("\n.")
        return head + tail

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        raise NotImplementedError("PaddedTextModel serves generation only (white-box "
                                  "scores: use the inner LocalTextModel)")
