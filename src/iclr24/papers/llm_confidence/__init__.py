"""Can LLMs Express Their Uncertainty? An Empirical Evaluation of Confidence Elicitation in LLMs
(Xiong, Hu, Lu, Li, Fu, He, Hooi; ICLR 2024; arXiv 2306.13063; official code
MiaoXiong2320/llm-uncertainty).

Black-box confidence elicitation as three interchangeable parts (Fig. 1), each a module here:

- prompting (:mod:`.prompts`, Sec. 3.1): :func:`build_prompt` for ``vanilla``, ``cot``,
  ``multistep``, ``topk`` and ``self_probing`` with the official instruction texts; the 12
  misleading hints; paraphrase frames;
- parsing (:mod:`.parsing`): :func:`parse_answer_confidence`, :func:`parse_topk`,
  :func:`parse_multistep`, :func:`parse_confidence` (None for what does not parse, counted by
  the caller, never raised);
- sampling (:mod:`.sampling`, Sec. 3.2): :func:`sample` / :func:`sample_batch` with
  ``self_random``, ``paraphrase`` and ``misleading``, on any kit ``TextBackend``;
- aggregation (:mod:`.aggregation`, Sec. 3.3): :func:`consistency`, :func:`avg_conf`,
  :func:`pair_rank` (``objective="paper"`` with the log-likelihood, or ``"official"`` without
  the log, as the released code), the Top-K Avg-Conf variants; a question keeps an answer
  only with the official M − 1 parsed samples (:func:`official_min_parsed`);
- metrics (:mod:`.metrics`, Sec. 4.1): ECE (10 equal-width bins, as netcal), failure-prediction
  AUROC, AUPRC-Positive/Negative, AURC, with a one-class guard; :func:`question_bootstrap`,
  a paired bootstrap over questions for intervals (not in the paper);
- :class:`ConfidenceElicitor` (:mod:`.elicitor`): the pipeline end to end, plus the white-box
  baseline :func:`answer_token_probability`; on SmolLM2 the claims batch through the
  language-model kit's :class:`~iclr24.kits.language_models.PrefixCachedTextModel`, which
  computes the prompts' shared few-shot prefix once.

Claims (:mod:`.claims`) and what is out of reach. The paper queries GPT-3/3.5/4, Vicuna and
LLaMA-2-Chat on GSM8K, SVAMP, StrategyQA, Sports/Date Understanding, Object Counting and two MMLU
subjects; none of that runs here. ``consistency_auroc`` runs the pipeline on a tiny character
transformer trained on graded arithmetic whose *verbalised confidence channel is simulated*
(stated confidences drawn from a human-like 80-100 distribution independent of correctness:
the paper's overconfidence by construction, :mod:`.simulated_channel`); its answers and
failures are real, so its vanilla AUROC of 0.5 is built in and only the ECE and white-box-gap
parts of the claim test the paper. ``pair_rank_recovery`` checks the Pair-Rank estimator
statistically on Plackett-Luce lists with known truth. ``smollm2_elicitation`` runs the real prompts, parsers,
sampler and metrics on SmolLM2-135M-Instruct (offline) over arithmetic and factual questions
written for this package (:mod:`.questions`), with three demonstration turns before each
zero-shot prompt (a 135M model does not follow the format without them) and reports parse
rate, ECE and AUROC of verbalised confidence vs Consistency, with intervals from a bootstrap
over the questions. Each claim measures a null arm in the same run (see :mod:`.claims`).
"""

from .aggregation import (
    Aggregate,
    avg_conf,
    consistency,
    official_min_parsed,
    pair_rank,
    pair_rank_batch,
    rank_matrix,
    topk_mean_probability,
    topk_top1_avg_conf,
)
from .elicitor import (
    AGGREGATORS,
    ConfidenceElicitor,
    ElicitationStats,
    answer_token_probability,
    chat_formatter,
)
from .metrics import (
    BootstrapInterval,
    auprc_negative,
    auprc_positive,
    aurc,
    confidence_metrics,
    expected_calibration_error,
    failure_auroc,
    question_bootstrap,
    reliability_bins,
)
from .parsing import (
    MultiStepParse,
    normalize_answer,
    parse_answer_confidence,
    parse_confidence,
    parse_multistep,
    parse_topk,
)
from .prompts import (
    ANSWER_TYPES,
    HINT_NOTE,
    HINT_PHRASES,
    PARAPHRASE_TEMPLATES,
    STRATEGIES,
    build_prompt,
    paraphrase,
)
from .questions import FACTUAL_QUESTIONS, Question, arithmetic_questions, factual_questions
from .sampling import SAMPLERS, Response, misleading_answer, sample, sample_batch

__all__ = [
    "AGGREGATORS",
    "ANSWER_TYPES",
    "FACTUAL_QUESTIONS",
    "HINT_NOTE",
    "HINT_PHRASES",
    "PARAPHRASE_TEMPLATES",
    "SAMPLERS",
    "STRATEGIES",
    "Aggregate",
    "BootstrapInterval",
    "ConfidenceElicitor",
    "ElicitationStats",
    "MultiStepParse",
    "Question",
    "Response",
    "answer_token_probability",
    "arithmetic_questions",
    "auprc_negative",
    "auprc_positive",
    "aurc",
    "avg_conf",
    "build_prompt",
    "chat_formatter",
    "confidence_metrics",
    "consistency",
    "expected_calibration_error",
    "factual_questions",
    "failure_auroc",
    "misleading_answer",
    "normalize_answer",
    "official_min_parsed",
    "pair_rank",
    "pair_rank_batch",
    "paraphrase",
    "parse_answer_confidence",
    "parse_confidence",
    "parse_multistep",
    "parse_topk",
    "question_bootstrap",
    "rank_matrix",
    "reliability_bins",
    "sample",
    "sample_batch",
    "topk_mean_probability",
    "topk_top1_avg_conf",
]
