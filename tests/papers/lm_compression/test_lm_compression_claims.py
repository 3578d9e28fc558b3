"""Every lm_compression claim runs at smoke scale and yields finite metrics its rule can read."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.lm_compression import claims as C

FAST = ["beats_gzip", "adjusted_rate_reversal", "off_domain"]


def _check(claim_obj, m):
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values()), m.metrics
    claim_obj.verdict(m.metrics, Scale.SMOKE)  # every metric the rule names exists


@pytest.mark.parametrize("name", FAST)
def test_smoke_claim_runs(name):
    claim_obj = getattr(C, name)
    m = claim_obj(Scale.SMOKE, 0)
    _check(claim_obj, m)
    assert m.tables


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_smoke_pretrained_lm_claim_runs():
    m = C.pretrained_lm_beats_gzip(Scale.SMOKE, 0)
    _check(C.pretrained_lm_beats_gzip, m)
    assert m.metrics["roundtrip_ok"] == 1.0
    assert m.metrics["smollm2_adjusted_rate_gguf"] > 1.0


def test_beats_gzip_smoke_reports_rate_against_training_bytes():
    m = C.beats_gzip(Scale.SMOKE, 0)
    curve = m.tables["rate_vs_training_bytes"]
    phases = [r["phase"] for r in curve]
    assert phases[0] == "short" and phases[-1] == "full" and phases == sorted(phases,
                                                                              reverse=True)
    seen = [r["train_bytes"] for r in curve]
    assert seen == sorted(seen) and seen[-1] == m.metrics["transformer_train_bytes"]
    assert all(0 < r["heldout_ideal_rate"] < 2 for r in curve)


def test_off_domain_smoke_compares_in_domain_models_and_simple_predictors():
    m = C.off_domain(Scale.SMOKE, 0)
    for dom in ("image", "audio"):
        assert m.metrics[f"in_domain_transformer_{dom}_rate"] > 0
        assert m.metrics[f"roundtrip_ok_{dom}"] == 1.0
    names = [r["predictor"] for r in m.tables["predictors"]]
    assert names[0] == "uniform" and m.tables["predictors"][0]["bits_per_byte"] == 8.0
    # the unigram of the training text is a real model: well under 8 bits on prose
    assert m.metrics["unigram_sampler_bits_per_byte"] < 6.0


# ------------------------------------------------------------------ negative controls
class _UniformBytes:
    """The null predictor: every byte equally likely (8 bits per byte), on the coder's
    backend interface, so that its rates are measured by real arithmetic coding."""

    vocab_size = 256
    context_length = None
    num_parameters = 0

    def __init__(self):
        from iclr24.kits.language_models import ByteTokenizer

        self.tokenizer = ByteTokenizer()

    def session(self, batch):
        return _UniformSession(batch)

    def log_probs(self, tokens):
        return np.full((len(tokens), 256), -np.log(256.0))


class _UniformSession:
    def __init__(self, batch):
        self.batch = batch

    def next_log_probs(self):
        return np.full((self.batch, 256), -np.log(256.0))

    def feed(self, tokens):
        assert len(tokens) == self.batch


def _rates(chunks, model):
    from iclr24.papers.lm_compression import code_chunks

    res = code_chunks(chunks, model)
    return res.rate, float(res.roundtrip_ok)


def _classical(chunks):
    from iclr24.kits.language_models import chunked_rate, classical_compressors

    return {f"{n}_rate": chunked_rate(chunks, c).rate
            for n, c in classical_compressors(("gzip", "lzma", "zstd")).items()}


def test_negative_controls_uniform_predictor_in_every_coding_claim():
    from iclr24.kits.language_models import pydoc_topics_corpus

    null = _UniformBytes()
    chunks = pydoc_topics_corpus().chunks("heldout", 512, max_chunks=4)
    rate, ok = _rates(chunks, null)
    assert rate > 1.0 and ok == 1.0                              # 8 bits + coder overhead
    cl = _classical(chunks)
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.beats_gzip.verdict({"ngram_rate": rate, "transformer_rate": rate,
                                     "roundtrip_ok": ok, **cl}, scale) == "fails"
    assert C.pretrained_lm_beats_gzip.verdict({"smollm2_rate": rate, "roundtrip_ok": ok, **cl},
                                              Scale.SMALL) == "fails"
    # the same (null) model in every size slot: no size effect, no reversal
    same = {f"{kind}_{size}": value for size in ("small", "medium", "large")
            for kind, value in (("raw_rate", rate), ("adjusted_rate", rate))}
    assert C.adjusted_rate_reversal.verdict(same, Scale.SMALL) == "fails"


def test_off_domain_negative_control_uniform_text_and_domain_models():
    from iclr24.kits.language_models import (
        FlacCompressor,
        PngCompressor,
        chunked_rate,
        image_patch_corpus,
        synthetic_audio_corpus,
    )

    null = _UniformBytes()
    images = image_patch_corpus((8, 64)).chunks("heldout", 512, max_chunks=2)
    audio = synthetic_audio_corpus(n_train_clips=1, n_heldout_clips=1).chunks(
        "heldout", 512, max_chunks=2)
    img_rate, _ = _rates(images, null)
    aud_rate, _ = _rates(audio, null)
    metrics = {
        "png_rate": chunked_rate(images, PngCompressor(width=64)).rate,
        "flac_rate": chunked_rate(audio, FlacCompressor()).rate,
        "transformer_image_rate": img_rate * 8 / 7, "transformer_audio_rate": aud_rate * 8 / 7,
        "transformer_image_rate_unmasked": img_rate, "transformer_audio_rate_unmasked": aud_rate,
        "in_domain_transformer_image_rate": img_rate, "in_domain_transformer_audio_rate": aud_rate,
    }
    # predictors of text: the null (uniform) model vs a unigram and gzip, measured
    from iclr24.kits.language_models import GzipCompressor, pydoc_topics_corpus
    from iclr24.papers.lm_compression import compressor_continuation_bits

    corpus = pydoc_topics_corpus()
    context, cont = corpus.heldout[1000:1256], corpus.heldout[1256:1268]
    counts = np.bincount(np.frombuffer(corpus.train, dtype=np.uint8), minlength=256) + 1.0
    seq = list(context + cont)
    lp = null.log_probs(seq)
    metrics.update(
        transformer_sampler_bits_per_byte=float(
            -lp[np.arange(256, len(seq)), seq[256:]].sum() / np.log(2) / len(cont)),
        unigram_sampler_bits_per_byte=float(
            -np.log2(counts / counts.sum())[np.frombuffer(cont, dtype=np.uint8)].mean()),
        gzip_sampler_bits_per_byte=compressor_continuation_bits(GzipCompressor(), context,
                                                                cont) / len(cont))
    assert metrics["transformer_sampler_bits_per_byte"] == pytest.approx(8.0)
    assert C.off_domain.verdict(metrics, Scale.SMALL) == "fails"
