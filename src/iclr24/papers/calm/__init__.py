"""LLM Augmented LLMs: Expanding Capabilities through Composition (CALM; R. Bansal, B. Samanta,
S. Dalmia, N. Gupta, S. Vashishth, S. Ganapathy, A. Bapna, P. Jain, P. Talukdar; ICLR 2024;
arXiv 2401.02412; no official code, unofficial port lucidrains/CALM-pytorch).

What the paper does. A frozen anchor m_B gains a frozen augmenting model m_A's knowledge through
a few new cross-attention blocks: selected anchor layers attend to projected hidden states of
selected m_A layers, and the result is added to the anchor's residual stream (Sec. 3). Only
those blocks are trained, on a small composition set D_C. PaLM2-S + PaLM2-XXS: up to +13%
absolute on low-resource-language translation and arithmetic, +40% relative on code; on a
synthetic key-value arithmetic task CALM reaches 84% on held-out keys where both models alone
score ~0%.

How the code maps to it.
- :mod:`.composer`: :class:`CrossAttentionComposer` (W_proj, W_Q/K/V/O, zero-initialised W_O,
  RMSNorm), :func:`cross_model_mask` (causal mask between two tokenisations from character
  spans), :func:`shared_tokenizer_mask`.
- :mod:`.composition`: :class:`CALM` (frozen eval-mode models, hooks that read m_A's blocks and
  add f_cross after the anchor's blocks, ``trainable_parameters``, ``generate``),
  :func:`select_layers`, :func:`match_layers`, :func:`default_blocks`.
- :mod:`.kv_data`: :func:`kv_arithmetic_data` -> :class:`KVData` (splits ``kv_sub``,
  ``arith``, ``kv_arith_train``, ``kv_arith_test``), :class:`CharVocab`.
- :mod:`.kv_experiment`: the KV experiment's arms (m_A, m_B, m_B + LoRA with a matched budget,
  CALM with an untrained m_A, CALM with oracle features, CALM) on the kit's tiny transformers,
  in a fixed-layout test bed of ours (3-letter keys in the slots of 3-digit numbers).
- :mod:`.kv_oracle`: :class:`KVOracle`, exact key -> value features in m_A's place (the KV
  claims' positive control).
- :mod:`.text_composition`: SmolLM2-135M-Instruct as the anchor with a character-level m_A.
- ``claims.py``: ``kv_arithmetic_composition``, ``anchor_preserved``,
  ``smollm2_kv_composition``.

Out of reach: PaLM2-S/XXS, the low-resource-language (NTL, FLORES-200, GSM8K translations) and
code corpora and experiments, and any Llama-2 7B–70B anchor. The KV task is scaled down (tiny
character models, small values, two operands).

Usage::

    from iclr24.papers.calm import CALM, select_layers, match_layers
    aug_layers = select_layers(n_layers=4, every=2)           # [1, 3]
    calm = CALM(anchor, augment, match_layers(aug_layers, 6), aug_layers, n_heads=4)
    out = calm(input_ids, labels=input_ids)                   # HF convention: shifted inside
    optimizer = torch.optim.AdamW(calm.trainable_parameters(), lr=1e-3)
"""

from .composer import CrossAttentionComposer, cross_model_mask, shared_tokenizer_mask
from .composition import CALM, CALMOutput, default_blocks, match_layers, select_layers
from .kv_data import VOCAB, CharVocab, KVData, kv_arithmetic_data
from .kv_experiment import (
    KVConfig,
    char_model,
    compare_arms,
    encode_examples,
    exact_match,
    lora_anchor,
    matched_lora_rank,
    pretrain_pair,
    train_on_examples,
)
from .kv_oracle import KVOracle, OracleConfig
from .text_composition import (
    TextBatch,
    char_tokenize,
    encode_text_batch,
    hf_tokenize,
    text_exact_match,
    train_text_composition,
)

__all__ = [
    "CALM",
    "VOCAB",
    "CALMOutput",
    "CharVocab",
    "CrossAttentionComposer",
    "KVConfig",
    "KVData",
    "KVOracle",
    "OracleConfig",
    "TextBatch",
    "char_model",
    "char_tokenize",
    "compare_arms",
    "cross_model_mask",
    "default_blocks",
    "encode_examples",
    "encode_text_batch",
    "exact_match",
    "hf_tokenize",
    "kv_arithmetic_data",
    "lora_anchor",
    "match_layers",
    "matched_lora_rank",
    "pretrain_pair",
    "select_layers",
    "shared_tokenizer_mask",
    "text_exact_match",
    "train_on_examples",
    "train_text_composition",
]
