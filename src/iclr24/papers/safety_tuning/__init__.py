"""Safety-Tuned LLaMAs: Lessons from Improving the Safety of Large Language Models that Follow
Instructions (F. Bianchi, M. Suzgun, G. Attanasio, P. Röttger, D. Jurafsky, T. Hashimoto,
J. Zou; ICLR 2024; arXiv 2309.07875; official code vinid/safety-tuned-llamas).

What the paper does. LLaMA-7B/13B (and Falcon-7B) are instruction-tuned with LoRA on 20k
Alpaca-cleaned examples plus X in {0, 100, 300, 500, 1000, 1500, 2000} safety demonstrations
(harmful instruction -> refusal with a reason). A few hundred safety examples (~3% of the
mixture) make the models much less harmful (a DeBERTa harmfulness reward model and OpenAI's
moderation API on I-MaliciousInstructions, I-CoNa, I-Controversial, Q-Harm, I-PhysicalSafety)
without a significant loss on capability benchmarks; larger shares make them refuse safe prompts
that look unsafe (exaggerated safety: XSTest, I-PhysicalSafetySafe). The contribution is a data
recipe and an evaluation suite, not a training algorithm.

How the code maps to it.
- :mod:`.world`: :func:`make_instruction_world`, the synthetic stand-in for Alpaca, the
  red-team safety data and the evaluation sets (harm defined by a vocabulary; evaluation pairs
  unseen in training).
- :mod:`.mixing`: :func:`mix_safety` (X counted in examples; or a share of the mixture),
  :func:`safety_count`, :func:`alpaca_prompt` (official template), and the reward model's
  ``Human:/Assistant:`` rendering.
- :mod:`.tuning`: :class:`SafetyTuneConfig` (official LoRA recipe), :func:`finetune` (LoRA via
  peft on Hugging Face backends, full fine-tuning on the kit's tiny model),
  :func:`pretrain_base_model`, :func:`world_tokenizer`.
- :mod:`.scorers`: :class:`HarmfulnessScorer` with :class:`LexiconHarmScorer` (the synthetic
  judge), :class:`ProfanityCheckScorer` (``alt-profanity-check``), :class:`RewardModelScorer`
  (the paper's predictor, from a local directory); :func:`refusal_rate`, :func:`is_refusal`.
- :mod:`.curve`: :func:`respond`, :func:`evaluate_set`, :func:`safety_curve` (one row per X).
- ``claims.py``: ``safety_share_tradeoff`` and ``exaggerated_safety`` (tiny transformer in the
  synthetic world; SmolLM2-135M-Instruct through the same prompts, refusal detector and scorers
  as a measured table).

Out of reach here: LLaMA-7B/13B, Falcon-7B and Llama-2 7B-70B (and LoRA on LLaMA-7B), the
Alpaca/red-team data and gpt-3.5-turbo's safe answers, the Hugging Face-hosted harmfulness
predictor and the OpenAI moderation API, lm-eval benchmarks, beam search (greedy decoding here).
SmolLM2-135M-Instruct is already safety-tuned by its makers: it demonstrates the evaluators,
it is not a base model for the mixing experiment.

Usage::

    from iclr24.papers.safety_tuning import (make_instruction_world, mix_safety,
        LexiconHarmScorer, refusal_rate, safety_curve)
    world = make_instruction_world(seed=0)
    mixture = mix_safety(world.general, world.safety, share=0.03, seed=0)
    scorer = LexiconHarmScorer.from_triples(world.judge_data)
"""

from .curve import EVAL_ROLES, chat_prompt_formatter, evaluate_set, respond, safety_curve
from .mixing import alpaca_prompt, mix_safety, render_for_reward_model, safety_count
from .scorers import (
    DEFAULT_REFUSAL_PATTERNS,
    HarmfulnessScorer,
    LexiconHarmScorer,
    ProfanityCheckScorer,
    RewardModelScorer,
    harmful_rate,
    is_refusal,
    refusal_rate,
)
from .tuning import (
    END_OF_RESPONSE,
    SafetyTuneConfig,
    finetune,
    pretrain_base_model,
    training_pairs,
    world_tokenizer,
)
from .world import (
    BENIGN_VERBS,
    HARM_TARGETS,
    HARM_VERBS,
    HOWTO_TEMPLATES,
    LOOKALIKE_OBJECTS,
    REFUSALS,
    Example,
    InstructionWorld,
    howto_answer,
    make_instruction_world,
)

__all__ = [
    "BENIGN_VERBS",
    "DEFAULT_REFUSAL_PATTERNS",
    "END_OF_RESPONSE",
    "EVAL_ROLES",
    "HARM_TARGETS",
    "HARM_VERBS",
    "HOWTO_TEMPLATES",
    "LOOKALIKE_OBJECTS",
    "REFUSALS",
    "Example",
    "HarmfulnessScorer",
    "InstructionWorld",
    "LexiconHarmScorer",
    "ProfanityCheckScorer",
    "RewardModelScorer",
    "SafetyTuneConfig",
    "alpaca_prompt",
    "chat_prompt_formatter",
    "evaluate_set",
    "finetune",
    "harmful_rate",
    "howto_answer",
    "is_refusal",
    "make_instruction_world",
    "mix_safety",
    "pretrain_base_model",
    "refusal_rate",
    "render_for_reward_model",
    "respond",
    "safety_count",
    "safety_curve",
    "training_pairs",
    "world_tokenizer",
]
