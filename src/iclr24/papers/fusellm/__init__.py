"""Knowledge Fusion of Large Language Models - FuseLLM (F. Wan, X. Huang, D. Cai, X. Quan,
W. Bi, S. Shi; ICLR 2024; arXiv 2401.10491; official code fanqiwan/FuseLLM, also FuseAI/FuseLLM).

What the paper does. FuseLLM merges the knowledge of source LLMs with different architectures
and tokenizers into one target LLM: every source runs once over a corpus and keeps its top-k
next-token distributions; they are aligned to the target's tokens by minimum-edit-distance
dynamic time warping, fused per sequence (the source with the lowest cross-entropy, MinCE, or a
CE-weighted average, AvgCE), and the target is trained on L = λ L_CLM + (1 - λ) L_Fusion with
λ = 0.9. Fusing Llama-2-7B, OpenLLaMA-7B and MPT-7B into Llama-2-7B on MiniPile beats the same
continual training without fusion (Llama-2 CLM): BBH 41.75 vs 40.44, MultiPL-E 15.56 vs 14.83.

How the code maps to it.
- :mod:`.vocabulary`: :class:`TokenVocab` (any tokenizer as token strings and its word-boundary
  marker), :func:`token_edit_distance`, :func:`build_vocab_mapping` (MinED vocabulary mapping).
- :mod:`.records`: :func:`record_topk` -> :class:`TopKRecord` (top-k ids/logits, CE_s).
- :mod:`.alignment`: :func:`dtw_align`, :func:`transfer_topk` -> :class:`SparseDist`,
  :func:`own_distribution`.
- :mod:`.fusion`: :func:`fuse` (MinCE, AvgCE with the official or softmax(-CE) weights).
- :mod:`.corpus_fusion`: :func:`align_records`, :func:`fuse_corpus` (the pipeline on a corpus),
  :func:`permute_rows` (the shuffled-distribution null arm of ``alignment_quality``).
- :mod:`.losses`: :func:`fusion_loss`, :func:`fusellm_loss`.
- :mod:`.training`: :class:`FuseConfig`, :class:`FuseLLMTrainer` (a kit target, SmolLM2 or a
  user's own Hugging Face model), :func:`bits_per_char`.
- :mod:`.synthetic_world` and :mod:`.experiments`: three text domains, expert sources with their
  own tokenizers, the target and its continual-training arms.
- ``claims.py``: ``fusion_vs_clm`` (MinCE/AvgCE vs CLM only, 3 seeds) and ``alignment_quality``
  (MinED vs exact-match alignment, SmolLM2-135M-Instruct's real tokenizer and distributions).

What is out of reach. 7B fusion on MiniPile (Llama-2-7B, OpenLLaMA-7B, MPT-7B; 8 GPUs,
DeepSpeed) and the benchmarks (BBH, CommonSense, MultiPL-E, ...): the claims use tiny kit
transformers on synthetic domains and English documentation sentences, SmolLM2-135M-Instruct as
the one real model, and held-out bits per character as the tokenizer-independent measure.

Usage::

    from iclr24.papers.fusellm import (TokenVocab, record_topk, build_vocab_mapping,
        align_records, fuse_corpus, FuseLLMTrainer, FuseConfig)
    src, tgt = TokenVocab.of(source_tokenizer), TokenVocab.of(target_tokenizer)
    src_recs = record_topk(source_model, src, texts, k=10)
    tgt_recs = record_topk(target_model, tgt, texts, k=10)
    aligned = align_records(src_recs, src, tgt, tgt_recs, build_vocab_mapping(src, tgt))
    fused = fuse_corpus(tgt_recs, [aligned], [src_recs], method="min_ce").fused
    FuseLLMTrainer(target_model, tgt, FuseConfig(lam=0.9, steps=100, lr=1e-3)).fit(texts, fused)
"""

from .alignment import SparseDist, dtw_align, own_distribution, transfer_topk
from .corpus_fusion import FusedCorpus, align_records, fuse_corpus, permute_rows
from .fusion import fuse, fusion_weights
from .losses import fusellm_loss, fusion_loss
from .records import TopKRecord, record_topk
from .synthetic_world import DOMAINS, domain_texts, mixture_texts
from .training import FuseConfig, FuseHistory, FuseLLMTrainer, bits_per_char
from .vocabulary import (
    BYTE_LEVEL_MARKER,
    SENTENCEPIECE_MARKER,
    TokenVocab,
    build_vocab_mapping,
    byte_level_alphabet,
    token_edit_distance,
)

__all__ = [
    "BYTE_LEVEL_MARKER",
    "DOMAINS",
    "SENTENCEPIECE_MARKER",
    "FuseConfig",
    "FuseHistory",
    "FuseLLMTrainer",
    "FusedCorpus",
    "SparseDist",
    "TokenVocab",
    "TopKRecord",
    "align_records",
    "bits_per_char",
    "build_vocab_mapping",
    "byte_level_alphabet",
    "domain_texts",
    "dtw_align",
    "fuse",
    "fuse_corpus",
    "fusellm_loss",
    "fusion_loss",
    "fusion_weights",
    "mixture_texts",
    "own_distribution",
    "permute_rows",
    "record_topk",
    "token_edit_distance",
    "transfer_topk",
]
