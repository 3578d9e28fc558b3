"""Language Modeling Is Compression (Delétang et al., ICLR 2024; arXiv 2309.10668).

A predictive model p(x_t | x_<t) plus arithmetic coding is a lossless compressor whose output is
−Σ log2 p(x_t | x_<t) bits (+ ≤ 2 bits per message), and any compressor defines a predictive
model. The paper compares language models with gzip / LZMA2 / PNG / FLAC on text, image and
audio bytes, shows that counting the model's own size ("adjusted rate") reverses the scaling
picture, and samples from gzip as a generative model.

How the code maps to the paper
------------------------------
``range_coding``        the coding engine: ``constriction``'s range coder (Rust) fed a batch of
                        ε-floored pdfs per call (Sec. 2: the paper's ε-floor on every pdf).
``arithmetic_coding``   the reference: a readable Python port of the official 32-bit base-2
                        arithmetic coder (integer frequencies); the tests check both engines
                        give code lengths within 0.5% of each other and of the ideal.
``model_coding``        compress / decompress with *any* predictive model (kit backends: tiny
                        transformer, n-gram, SmolLM2 through its tokenizer): chunks advance in
                        lockstep through one batched (KV-cached) session and share one stream;
                        chunked real coding with ideal code lengths beside (``code_chunks``); a
                        self-describing, CRC-checked, versioned container whose default for
                        the n-gram codes lanes of one file with shared counts, and which keeps
                        per group the shortest of the model, its adaptive variant and the raw
                        bytes (never expands beyond its header).
``ngram``               an adaptive order-k byte model (Witten–Bell interpolation, online counts;
                        vectorised over the chunks of a batch).
``command_line``        the body of ``iclr24 compress`` / ``iclr24 decompress``.
``rates``               adjusted rate (model size paid), the paper's ASCII masks and rescaling.
``compressor_sampling`` a compressor as a generative model: p(b | x) ∝ 2^{−ℓ_C(x b)}.
Shared pieces (transformer, trainer, corpora, classical compressors, SmolLM2 loader) live in
``iclr24.kits.language_models``.

Usage::

    from iclr24.kits.language_models import pydoc_topics_corpus
    from iclr24.papers.lm_compression import AdaptiveNGramModel, compress, decompress
    model = AdaptiveNGramModel(order=3).fit(pydoc_topics_corpus().train)
    blob = compress(b"Return the absolute value of a number.", model)
    assert decompress(blob, model) == b"Return the absolute value of a number."

What is scaled down or differs
------------------------------
* Data: CPython's ``pydoc_data.topics`` prose (held-out topics) instead of enwik9; scikit-learn's
  photos instead of ImageNet; synthetic audio instead of LibriSpeech (see the kit's corpora).
* Models: ≈45K–725K-parameter byte transformers trained for minutes on CPU and an n-gram model,
  instead of 200K–3.2M transformers trained on enwik8 and Chinchilla 1B–70B; SmolLM2-135M stands
  in for a pretrained LLM (token-level, coded through its BPE tokenizer, rate per original byte).
* Coding: encoder and decoder both use the model's incremental (KV-cached) path with the same
  batch shape on one torch thread, so the decoder sees bit-identical distributions; the batched
  path is used only for ideal code lengths. The engine is a range coder with 24-bit probability
  precision (``constriction``) rather than the official base-2 arithmetic coder (kept as the
  Python reference); the chunks of a lockstep group share one stream, which saves each chunk's
  flush (≤ 4 bytes) — ``separate_rate`` reports the paper's one-stream-per-chunk layout.
* The compressor (``compress``) goes beyond the paper for users: lanes with shared counts
  (speed on one long file), the adaptive variant and stored groups (never worse than the
  model's adaptive part, never expanding); the claims use independent chunks, as the paper.
* Chunks: the paper codes 2048-byte chunks with a 2048-byte context. Training a transformer on
  2048-byte windows costs ≈2.5× more per byte on CPU, so ``small`` uses 1024-byte chunks and
  contexts (512 in the adjusted-rate claim, which trains three models; SmolLM2 codes ≤1024-byte
  pieces cut at character boundaries) and ``full`` uses 2048. Shorter chunks make every coder's
  job harder (less context), gzip's most of all.
"""

from .arithmetic_coding import (
    FLOAT32_EPS,
    ArithmeticDecoder,
    ArithmeticEncoder,
    decode_symbols,
    encode_symbols,
    quantize_pdf,
)
from .compressor_sampling import (
    compressor_as_sampler,
    compressor_continuation_bits,
    compressor_log_probs,
)
from .model_coding import (
    FORMAT_VERSION,
    ModelCodingResult,
    code_chunks,
    code_length_bits,
    compress,
    decode_token_sequences,
    decompress,
    encode_token_sequences,
    max_decodable_tokens,
    supports_shared_counts,
    utf8_chunks,
)
from .ngram import AdaptiveNGramModel
from .range_coding import RangeDecoder, RangeEncoder, floor_pdf
from .rates import adjusted_rate, mask_rescale, right_shift_bytes, zero_msb_if_not_ascii

__all__ = [
    "FLOAT32_EPS",
    "FORMAT_VERSION",
    "AdaptiveNGramModel",
    "ArithmeticDecoder",
    "ArithmeticEncoder",
    "ModelCodingResult",
    "RangeDecoder",
    "RangeEncoder",
    "adjusted_rate",
    "code_chunks",
    "code_length_bits",
    "compress",
    "compressor_as_sampler",
    "compressor_continuation_bits",
    "compressor_log_probs",
    "decode_symbols",
    "decode_token_sequences",
    "decompress",
    "encode_symbols",
    "encode_token_sequences",
    "floor_pdf",
    "mask_rescale",
    "max_decodable_tokens",
    "quantize_pdf",
    "right_shift_bytes",
    "supports_shared_counts",
    "utf8_chunks",
    "zero_msb_if_not_ascii",
]
