"""Attention Satisfies: A Constraint-Satisfaction Lens on Factual Errors of Language Models
(M. Yuksekgonul, V. Chandrasekaran, E. Jones, S. Gunasekar, R. Naik, H. Palangi, E. Kamar,
B. Nushi; ICLR 2024; arXiv 2309.15098; official code microsoft/mechanistic-error-probe).

What the paper does. A factual query is a constraint-satisfaction problem: the entity in the
prompt ("the basketball player Michael Jordan") is a constraint the answer must satisfy. How
strongly the attention heads at the last prompt token look at the constraint's tokens predicts
whether the answer will be right. SAT Probe, an L1 logistic regression on those L·H attention
weights, predicts errors about as well as the model's confidence, better than popularity; early
layers alone nearly suffice; multi-constraint queries get one probability per constraint.

How the code maps to it.
- :mod:`.constraints`: :func:`locate_constraint` (token span of a constraint by character
  offsets; multi-token constraints, the leading space), :func:`token_char_spans`.
- :mod:`.attention`: :func:`constraint_attention` -> :class:`SatRecord` (greedy completion,
  one traced pass, the attention row of the last prompt token to every constraint, the
  completion's token log-probs), :func:`collect_records` (batched generation),
  :func:`sat_features` (max over the constraint's tokens, (n, L·H)), :func:`is_correct`,
  :func:`answer_token_count` (|gt| for the confidence baseline).
- :mod:`.probe`: :class:`SATProbe` (StandardScaler + L1-LR, C = 0.05, liblinear; ``layers``
  for early-layer probes), :func:`risk_at` (Risk@Top/Bottom 20%), :func:`evaluate_predictors`
  (SAT Probe, Confidence, Popularity, Constant, Combined and extra probes on the official 50/50
  stratified split); for a deterministic model, :func:`cross_fitted_scores` (out-of-fold
  scores of the same predictors on every item) and :func:`bootstrap_aurocs` (a stratified,
  paired bootstrap over the items), which the paper does not use.
- :mod:`.recall_data`: :func:`recall_data` (the protocol over many queries -> features, control
  features, confidence, popularity, labels), :func:`attention_gap` (Mann-Whitney).
- :mod:`.fact_world`: :func:`make_fact_world` (synthetic entities with Zipfian training counts)
  and :func:`train_fact_model` (a BPE tokenizer and a tiny transformer trained on it).
- :mod:`.facts`: 288 authored facts (country->capital, element->symbol, book->author) for
  SmolLM2-135M-Instruct, :func:`token_popularity`.
- ``claims.py``: ``attention_predicts_errors`` and ``early_layers`` (tiny model, fact world),
  ``attention_predicts_errors_smollm2`` and ``early_layers_smollm2`` (SmolLM2-135M-Instruct,
  out-of-fold scores with a bootstrap over the facts; popularity there is a weak token-id
  proxy, reported only); each with the control-span probe as its null arm.

What is out of reach and what differs. Llama-2 7B/13B/70B (the paper's models; 70B in 8-bit)
and the paper's ten datasets (research-licence pickles, >40,000 prompts) are not available: the
claims use a tiny 4-layer transformer on a synthetic world (d = 64, 400 entities, not the spec's
d = 128 and 2,000, for the CPU budget) and SmolLM2-135M-Instruct (30 layers × 9 heads) on 288
facts we wrote. The attention-contribution norm (the paper's secondary analysis feature) and
the multi-constraint datasets (Books, Nobel winners, Words) are not implemented; the API takes
several constraints per prompt and returns one feature block per constraint. Correctness is a
normalised string-prefix match (see :func:`is_correct`), not the official token match.

Usage::

    from iclr24.kits.language_models import load_smollm2
    from iclr24.papers.sat_probe import constraint_attention, sat_features, SATProbe
    lm = load_smollm2()
    rec = constraint_attention(lm, "User: Tell me the capital city of the country Peru.\\n"
                               "Assistant: The capital city is", ["Peru"])
    rec.completion, rec.attention[0].shape        # ' Lima.', (30, 9, 1)
"""

from .attention import (
    SatRecord,
    answer_token_count,
    collect_records,
    constraint_attention,
    is_correct,
    normalize_answer,
    sat_features,
)
from .constraints import locate_constraint, token_char_spans
from .fact_world import (
    CONTROL_WORD,
    QUERY_TEMPLATE,
    TEMPLATES,
    FactModelConfig,
    FactWorld,
    make_fact_world,
    train_fact_model,
)
from .facts import FACT_TEMPLATES, Fact, factual_queries, token_popularity
from .probe import (
    SATProbe,
    bootstrap_aurocs,
    cross_fitted_scores,
    evaluate_predictors,
    risk_at,
)
from .recall_data import RecallData, attention_gap, recall_data

__all__ = [
    "CONTROL_WORD",
    "FACT_TEMPLATES",
    "QUERY_TEMPLATE",
    "TEMPLATES",
    "Fact",
    "FactModelConfig",
    "FactWorld",
    "RecallData",
    "SATProbe",
    "SatRecord",
    "answer_token_count",
    "attention_gap",
    "bootstrap_aurocs",
    "collect_records",
    "constraint_attention",
    "cross_fitted_scores",
    "evaluate_predictors",
    "factual_queries",
    "is_correct",
    "locate_constraint",
    "make_fact_world",
    "normalize_answer",
    "recall_data",
    "risk_at",
    "sat_features",
    "token_char_spans",
    "token_popularity",
    "train_fact_model",
]
