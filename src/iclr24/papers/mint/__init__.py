"""MINT: Evaluating LLMs in Multi-turn Interaction with Tools and Language Feedback (X. Wang,
Z. Wang, J. Liu, Y. Chen, L. Yuan, H. Peng, H. Ji; ICLR 2024; arXiv 2309.10691; official code
xingyaoww/mint-bench).

What the paper does. MINT is an evaluation framework: an LLM agent solves a task over up to k
turns, each turn either running Python in a persistent interpreter or proposing a solution
(at most p proposals), optionally followed by natural-language feedback from a simulated user
(GPT-4). Success rate as a function of k = 1..5, with and without feedback, measures tool use
and feedback use; over 20 LLMs it finds +1-8% absolute success per extra turn and +2-17% from
GPT-4's feedback.

How the code maps to it (the framework in full; the evaluated and feedback models swappable).
- :mod:`.actions`: :func:`parse_action` -> :class:`Action` (code / solution / invalid; the
  solution wins when both appear, as in the official agent), :data:`INVALID_INPUT_MESSAGE`.
- :mod:`.repl`: :class:`PythonREPL` (persistent namespace in a sandboxed child process on the
  kit's ``PythonSession``; timeout, truncation, tools injected by name), :class:`Tool`.
- :mod:`.tasks`: :class:`NumericReasoningTask`, :class:`MultipleChoiceTask`,
  :class:`CodeGenerationTask` with the official checks (5% tolerance / substring, option
  fallbacks, hidden tests in the sandbox) and an exact-match variant; :func:`make_mint_tasks`.
- :mod:`.examples`: the official instruction and feedback templates, our in-context examples.
- :mod:`.feedback`: :class:`NoFeedback`, :class:`LMFeedback` (the official feedback prompt on
  any text backend; binary or textual; with or without ground truth), :class:`ScriptedFeedback`,
  :class:`RandomFeedback` (an uninformative user: the feedback claim's null arm).
- :mod:`.environment`: :class:`InteractionEnv` (``reset`` / ``step``; the official budget
  rules), :class:`State`, :func:`max_propose_for` (p = 1 at k = 1, else 2).
- :mod:`.evaluation`: :class:`LMAgent` (prompt formats :data:`PROMPT_FORMATS`, a chat template,
  or the message list for a chat endpoint), :func:`run_episode`, :func:`evaluate` (lockstep
  batched episodes), :func:`success_rates`, :func:`improvement_slope`.
- :mod:`.tiny_agent`: the laptop-scale agent (a tiny transformer trained on transcripts of a
  scripted teacher acting in the real environment) and its padded batch backend.
- ``claims.py``: ``turn_budget`` (SR_k, k = 1..5, vs answer-only), ``feedback_gain`` (ΔF),
  ``smollm2_episodes`` (a plumbing check: the full MINT prompts on SmolLM2-135M-Instruct with
  the Python tool, beside the known-answer replies of :class:`AnswerKeyBackend`
  (:mod:`.answer_key`) and an untrained model).

What is out of reach and what differs. The 20 evaluated LLMs (7B-70B open models, GPT-3.5/4,
Claude) and GPT-4 as the feedback provider; MINT's data (586 curated instances of GSM8K,
HotpotQA, MATH, MMLU, TheoremQA, HumanEval, MBPP, ALFWorld; HotpotQA's Wikipedia tool). We use
seeded synthetic tasks with exact references, a tiny trained agent, SmolLM2-135M-Instruct and a
rule-based simulated user, so the numbers are not comparable to the paper's; the protocol is
the official one. TheoremQA's normaliser and ALFWorld are not implemented.

Usage::

    from iclr24.kits.language_models import LocalTextModel, load_smollm2
    from iclr24.papers.mint import LMAgent, chat_formatter, evaluate, make_mint_tasks, success_rates
    lm = load_smollm2()
    agent = LMAgent(LocalTextModel(lm), prompt_format=chat_formatter(lm.tokenizer.hf))
    df = evaluate(agent, make_mint_tasks(8), ks=[1, 3])    # one row per (task, k)
    success_rates(df)                                      # SR_k
"""

from .actions import INVALID_INPUT_MESSAGE, Action, parse_action
from .answer_key import AnswerKeyBackend
from .environment import InteractionEnv, State, max_propose_for, render_observation
from .evaluation import (
    AGENT_STOP_WORDS,
    PROMPT_FORMATS,
    LMAgent,
    chat_formatter,
    completion_prompt,
    evaluate,
    improvement_slope,
    run_episode,
    success_rates,
)
from .examples import (
    FEEDBACK_TEMPLATE,
    TEMPLATE_WITH_TOOL,
    TEMPLATE_WITHOUT_TOOL,
    in_context_example,
)
from .feedback import (
    FeedbackProvider,
    LMFeedback,
    NoFeedback,
    RandomFeedback,
    ScriptedFeedback,
    binary_verdict,
    feedback_prompt,
)
from .repl import NO_OUTPUT, TRUNCATED, PythonREPL, Tool, toolset_description
from .tasks import (
    CODE_FUNCTIONS,
    NUMERIC_KINDS,
    CodeGenerationTask,
    MultipleChoiceTask,
    NumericReasoningTask,
    Task,
    make_mint_tasks,
    reasoning_success,
)
from .tiny_agent import (
    PaddedTextModel,
    ScriptedTeacher,
    TeacherAgent,
    TeacherREPL,
    TinyAgentConfig,
    teacher_examples,
    train_tiny_agent,
)

__all__ = [
    "AGENT_STOP_WORDS",
    "CODE_FUNCTIONS",
    "FEEDBACK_TEMPLATE",
    "INVALID_INPUT_MESSAGE",
    "NO_OUTPUT",
    "NUMERIC_KINDS",
    "PROMPT_FORMATS",
    "TEMPLATE_WITHOUT_TOOL",
    "TEMPLATE_WITH_TOOL",
    "TRUNCATED",
    "Action",
    "AnswerKeyBackend",
    "CodeGenerationTask",
    "FeedbackProvider",
    "InteractionEnv",
    "LMAgent",
    "LMFeedback",
    "MultipleChoiceTask",
    "NoFeedback",
    "NumericReasoningTask",
    "PaddedTextModel",
    "PythonREPL",
    "RandomFeedback",
    "ScriptedFeedback",
    "ScriptedTeacher",
    "State",
    "Task",
    "TeacherAgent",
    "TeacherREPL",
    "TinyAgentConfig",
    "Tool",
    "binary_verdict",
    "chat_formatter",
    "completion_prompt",
    "evaluate",
    "feedback_prompt",
    "improvement_slope",
    "in_context_example",
    "make_mint_tasks",
    "max_propose_for",
    "parse_action",
    "reasoning_success",
    "render_observation",
    "run_episode",
    "success_rates",
    "teacher_examples",
    "toolset_description",
    "train_tiny_agent",
]
