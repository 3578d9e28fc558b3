"""Generative Judge for Evaluating Alignment, Auto-J (J. Li, S. Sun, W. Yuan, R.-Z. Fan,
H. Zhao, P. Liu; ICLR 2024; arXiv 2310.05470; official code GAIR-NLP/auto-j).

What the paper does. Auto-J is LLaMA-2-13B-chat fine-tuned to judge chat responses: given a
query it compares two responses (a written comparison ending "So, the final decision is
Response 1 / Response 2 / Tie") or critiques one and rates it 1-10 ("Rating: [[k]]"). The
framework around the model is the contribution: a 58-scenario taxonomy in 8 groups, GPT-4
judgments of real user queries as training data (kept only when they agree with the human
label), and a meta-evaluation testbed balanced over scenarios: pairwise agreement with humans
in both response orders (Auto-J 54.96 agreement / 83.41 consistency vs LLaMA-2-13B-chat
29.81 / 48.56, reward models ~51-54 on one order), critique quality judged by GPT-4, and
best-of-N selection.

How the code maps to it.
- :mod:`.scenarios`: :data:`SCENARIO_GROUPS` (58 scenarios, 8 groups), :func:`scenario_group`.
- :mod:`.prompts`: the official ``pairwise_tie`` / ``single`` / scenario-classifier templates,
  :func:`build_prompt` (LLaMA-2 ``[INST]`` wrapper, none, or any chat template).
- :mod:`.parsing`: :func:`parse_pairwise_verdict`, :func:`parse_rating` (last anchor; NaN when
  unparsed or off the 1-10 scale, ``official_compat`` for the official 0.0),
  :func:`swap_verdict` (0 <-> 1).
- :mod:`.judge`: :class:`GenerativeJudge` over any text backend (two-order comparisons,
  the model's own chat template by default: :func:`model_chat_format`,
  ratings, counted parse failures).
- :mod:`.metrics`: :func:`pairwise_agreement`, :func:`rating_agreement` (tie-threshold
  search), :func:`rating_predictions`, :func:`best_of_n`.
- :mod:`.null_judges`: :func:`length_verdicts`, :func:`length_ratings` (input-shallow null
  arms of the claims).
- :mod:`.testbed`: :func:`make_judge_testbed` (synthetic pairs with computable truth over six
  taxonomy scenarios), :func:`make_bon_testbed`.
- :mod:`.judgments`: rule-written teacher judgments and :func:`make_judge_sft_examples`
  (swap augmentation, the paper's agree-with-label filter).
- :mod:`.tiny_judge`: the tiny LLaMA-architecture judge, its corpus BPE, SFT via the kit's
  :func:`finetune`, and the Bradley-Terry :class:`RewardModel`.
- ``claims.py``: ``judge_agreement``, ``best_of_n``, ``smollm2_judge``.

Out of reach and scaled down. The 13B judge (and the 13B scenario classifier), GPT-4's
training judgments and its ratings of critiques and best-of-N picks, ChatGPT reference
critiques, the real 1,392-pair testbed and human labels, and the reward models compared in
the paper. Here: a ~0.2-0.5M-parameter judge trained for seconds on rule-written judgments over
a synthetic testbed, and SmolLM2-135M-Instruct zero-shot. Critique-quality evaluation (a
GPT-4 comparison) and the TF-IDF scenario classifier are not implemented.

Usage::

    from iclr24.kits.language_models import LocalTextModel, load_smollm2
    from iclr24.papers.autoj import GenerativeJudge
    judge = GenerativeJudge(LocalTextModel(load_smollm2()), max_new_tokens=256)
    j = judge.compare("What is 2 + 2?", "4", "5")      # both orders
    j.verdict, j.verdict_swapped, j.consistent

The default ``chat_format="auto"`` picks SmolLM2's own template here. A user's checkpoint on a
GPU: ``LocalTextModel(load_hf_checkpoint(folder, device="cuda"))`` (a tokenizer without a
chat template gets the LLaMA-2 wrapper; for Auto-J's own ``GAIR/autoj-13b`` pass
``chat_format="llama2"`` to get exactly the wrapper it was trained with); a chat-only
server: ``OpenAICompatibleClient(url, name, endpoint="chat")`` (the judge sends the bare
message, the server applies the template).
"""

from .judge import (
    GenerativeJudge,
    JudgeStats,
    PairwiseJudgment,
    RatingJudgment,
    model_chat_format,
)
from .judgments import (
    make_judge_sft_examples,
    pairwise_judgment,
    rating_for_quality,
    single_judgment,
)
from .metrics import best_of_n, pairwise_agreement, rating_agreement, rating_predictions
from .null_judges import length_ratings, length_verdicts
from .parsing import parse_pairwise_verdict, parse_rating, swap_verdict
from .prompts import (
    PAIRWISE_TIE_TEMPLATE,
    SCENARIO_CLASSIFIER_TEMPLATE,
    SINGLE_TEMPLATE,
    build_prompt,
    build_scenario_prompt,
    wrap_chat,
)
from .scenarios import SCENARIO_GROUPS, SCENARIOS, scenario_group
from .testbed import (
    KIND_QUALITY,
    TESTBED_SCENARIOS,
    JudgePair,
    JudgeTask,
    make_bon_testbed,
    make_judge_testbed,
    make_task,
    sample_candidates,
)
from .tiny_judge import (
    RewardModel,
    TinyJudgeConfig,
    judge_tokenizer,
    new_tiny_lm,
    train_reward_model,
)

__all__ = [
    "KIND_QUALITY",
    "PAIRWISE_TIE_TEMPLATE",
    "SCENARIOS",
    "SCENARIO_CLASSIFIER_TEMPLATE",
    "SCENARIO_GROUPS",
    "SINGLE_TEMPLATE",
    "TESTBED_SCENARIOS",
    "GenerativeJudge",
    "JudgePair",
    "JudgeStats",
    "JudgeTask",
    "PairwiseJudgment",
    "RatingJudgment",
    "RewardModel",
    "TinyJudgeConfig",
    "best_of_n",
    "build_prompt",
    "build_scenario_prompt",
    "judge_tokenizer",
    "length_ratings",
    "length_verdicts",
    "make_bon_testbed",
    "make_judge_sft_examples",
    "make_judge_testbed",
    "make_task",
    "model_chat_format",
    "new_tiny_lm",
    "pairwise_agreement",
    "pairwise_judgment",
    "parse_pairwise_verdict",
    "parse_rating",
    "rating_agreement",
    "rating_for_quality",
    "rating_predictions",
    "sample_candidates",
    "scenario_group",
    "single_judgment",
    "swap_verdict",
    "train_reward_model",
    "wrap_chat",
]
