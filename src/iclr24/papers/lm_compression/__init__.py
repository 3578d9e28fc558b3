"""Language Modeling Is Compression (Delétang et al., ICLR 2024; arXiv 2309.10668).

A predictive model p(x_t | x_<t) plus arithmetic coding is a lossless compressor whose output is
−Σ log2 p(x_t | x_<t) bits (+ ≤ 2 bits per message), and any compressor defines a predictive
model. The paper compares language models with gzip / LZMA2 / PNG / FLAC on text, image and
audio bytes, shows that counting the model's own size ("adjusted rate") reverses the scaling
picture, and samples from gzip as a generative model.

How the code maps to the paper
------------------------------
``arithmetic_coding``   the 32-bit base-2 arithmetic coder with the paper's ε-floor on every
                        pdf; pdfs are quantised to integer frequencies (Sec. 2, official coder).
``model_coding``        compress / decompress with *any* predictive model (kit backends: tiny
                        transformer, n-gram, SmolLM2 through its tokenizer); chunked real coding
                        with ideal code lengths beside (``code_chunks``); a self-describing,
                        CRC-checked container (``compress``/``decompress``).
``ngram``               an adaptive order-k byte model (Witten–Bell interpolation, online counts).
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
  path is used only for ideal code lengths. Pdfs are quantised to integer frequencies summing to
  2^24 (the official coder works on float CDFs); the overhead is reported as ``ideal_rate``.
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
    ModelCodingResult,
    code_chunks,
    code_length_bits,
    compress,
    decode_token_sequences,
    decompress,
    encode_token_sequences,
    max_decodable_tokens,
    utf8_chunks,
)
from .ngram import AdaptiveNGramModel
from .rates import adjusted_rate, mask_rescale, right_shift_bytes, zero_msb_if_not_ascii

__all__ = [
    "FLOAT32_EPS",
    "AdaptiveNGramModel",
    "ArithmeticDecoder",
    "ArithmeticEncoder",
    "ModelCodingResult",
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
    "mask_rescale",
    "max_decodable_tokens",
    "quantize_pdf",
    "right_shift_bytes",
    "utf8_chunks",
    "zero_msb_if_not_ascii",
]
