"""Every lm_compression claim at smoke, with its null arm (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers (holds / fails / control
false)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.lm_compression import claims as C

FAST = ["beats_gzip", "adjusted_rate_reversal", "off_domain"]


@functools.cache
def _smoke(name: str) -> Measurement:
    return getattr(C, name)(Scale.SMOKE, 0)


def _finite(m: Measurement) -> None:
    for k, v in m.metrics.items():
        assert math.isfinite(getattr(v, "value", v)), k


def _diff(values):
    return Estimate.mean_of(values)  # a paired difference is a mean over replicates


@pytest.mark.parametrize("name", FAST)
def test_smoke_claim_runs(name):
    claim_obj = getattr(C, name)
    m = _smoke(name)
    _finite(m)
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.tables and m.metrics["n_replicates"] == 1


def test_small_runs_three_replicates():
    assert C._replicate_seeds(Scale.SMALL, 2) == [2000, 2001, 2002]
    assert C._replicate_seeds(Scale.SMOKE, 2) == [2000]
    pool = [bytes([i]) for i in range(10)]
    a, b = C._sample(pool, 4, 1), C._sample(pool, 4, 2)
    assert len(a) == 4 and a == sorted(a) and a != b
    assert C._sample(pool, 40, 1) == pool


def test_beats_gzip_smoke_and_order0_null():
    m = _smoke("beats_gzip")
    curve = m.tables["rate_vs_training_bytes"]
    phases = [r["phase"] for r in curve]
    assert phases[0] == "short" and phases[-1] == "full"
    seen = [r["train_bytes"] for r in curve]
    assert seen == sorted(seen) and seen[-1] == m.metrics["transformer_train_bytes"]
    assert m.metrics["roundtrip_ok"] == 1.0
    # the untrained network knows nothing: about 8 bits per byte
    assert m.metrics["untrained_transformer_ideal_rate"] > 0.9
    # the order-0 null (this run) in the n-gram's and the transformer's place
    o0 = m.metrics["order0_minus_085_gzip"]
    null = {**m.metrics, "ngram_minus_085_gzip": o0, "transformer_minus_085_gzip": o0,
            "transformer_minus_lzma": m.metrics["order0_rate"] - m.metrics["lzma_rate"],
            "transformer_minus_order0": 0.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.beats_gzip.verdict(null, scale) != "holds"


def test_beats_gzip_rule_and_control():
    good = {"transformer_minus_085_gzip": _diff([-0.05, -0.06, -0.04]),
            "transformer_minus_lzma": _diff([-0.03, -0.02, -0.04]),
            "ngram_minus_085_gzip": _diff([-0.08, -0.09, -0.07]),
            "order0_minus_085_gzip": _diff([0.2, 0.21, 0.19]),
            "transformer_minus_order0": _diff([-0.2, -0.22, -0.21]), "roundtrip_ok": 1.0}
    assert C.beats_gzip.verdict(good, Scale.SMALL) == "holds"
    assert C.beats_gzip.verdict({**good, "transformer_minus_085_gzip": _diff([0.05, 0.06, 0.04])},
                                Scale.SMALL) == "fails"
    assert C.beats_gzip.verdict({**good, "roundtrip_ok": 0.0}, Scale.SMALL) == "fails"
    # the null passes the bar / no context model can / the transformer learned no context
    for bad in ({"order0_minus_085_gzip": _diff([-0.01, -0.02, -0.03])},
                {"ngram_minus_085_gzip": _diff([0.01, 0.02, 0.03])},
                {"transformer_minus_order0": _diff([0.01, 0.0, 0.02])}):
        judged = C.beats_gzip.judge({**good, **bad}, Scale.SMALL)
        assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
    smoke = {"ngram_minus_085_gzip": -0.1, "order0_minus_085_gzip": 0.2, "roundtrip_ok": 1.0}
    assert C.beats_gzip.verdict(smoke, Scale.SMOKE) == "holds"
    assert C.beats_gzip.verdict({**smoke, "order0_minus_085_gzip": -0.01},
                                Scale.SMOKE) == "inconclusive"


def test_adjusted_rate_reversal_smoke_and_untrained_null():
    m = _smoke("adjusted_rate_reversal")
    assert m.metrics["params_small"] < m.metrics["params_medium"] < m.metrics["params_large"]
    for size in ("small", "medium", "large"):
        assert m.metrics[f"untrained_ideal_rate_{size}"] > 0.9
        assert m.metrics[f"roundtrip_ok_{size}"] == 1.0
    null = {**m.metrics,
            "raw_large_minus_best_smaller": m.metrics["untrained_large_minus_best_smaller"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.adjusted_rate_reversal.verdict(null, scale) != "holds"


def test_adjusted_rate_reversal_rule_and_control():
    good = {"raw_large_minus_best_smaller": _diff([-0.05, -0.04, -0.06]),
            "adjusted_large_minus_small": _diff([50.0, 52.0, 49.0]),
            "untrained_large_minus_best_smaller": _diff([0.01, -0.005, 0.02])}
    # the null's interval straddles 0: it does not pass, the control holds
    assert C.adjusted_rate_reversal.verdict(good, Scale.SMALL) == "holds"
    assert C.adjusted_rate_reversal.verdict(
        {**good, "raw_large_minus_best_smaller": _diff([0.02, 0.021, 0.019])}, Scale.SMALL) == "fails"
    assert C.adjusted_rate_reversal.verdict(
        {**good, "untrained_large_minus_best_smaller": _diff([-0.02, -0.021, -0.019])},
        Scale.SMALL) == "inconclusive"


def test_off_domain_smoke_and_untrained_null():
    m = _smoke("off_domain")
    for dom in ("image", "audio"):
        assert m.metrics[f"in_domain_transformer_{dom}_rate"] > 0
        assert m.metrics[f"untrained_{dom}_ideal_rate"] > 0.9
    assert m.metrics["roundtrip_ok"] == 1.0
    names = [r["predictor"] for r in m.tables["predictors"]]
    assert names[0] == "uniform" and m.tables["predictors"][0]["bits_per_byte"] == 8.0
    assert "untrained transformer (null)" in names
    # the unigram of the training text is a real model: well under 8 bits on prose
    assert m.metrics["unigram_sampler_bits_per_byte"] < 6.0
    # the untrained network (this run) as the in-domain model and as the text predictor
    null = {**m.metrics,
            "in_domain_minus_text_image": m.metrics["untrained_minus_text_image"],
            "in_domain_minus_text_audio": m.metrics["untrained_minus_text_audio"],
            "transformer_minus_unigram_bits": m.metrics["untrained_minus_unigram_bits"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.off_domain.verdict(null, scale) != "holds"


def test_off_domain_rule_and_control():
    good = {"text_minus_png": _diff([0.3, 0.35, 0.32]), "text_minus_flac": _diff([0.5, 0.4, 0.45]),
            "in_domain_minus_text_image": _diff([-0.2, -0.25, -0.22]),
            "in_domain_minus_text_audio": _diff([-0.3, -0.28, -0.35]),
            "transformer_minus_unigram_bits": _diff([-1.0, -1.2, -0.9]),
            "transformer_minus_gzip_bits": _diff([-3.0, -2.5, -3.1]),
            "untrained_minus_text_image": _diff([0.1, 0.12, 0.09]),
            "untrained_minus_text_audio": _diff([-0.1, -0.12, -0.09]),
            "untrained_minus_unigram_bits": _diff([3.0, 3.1, 2.9])}
    assert C.off_domain.verdict(good, Scale.SMALL) == "holds"
    assert C.off_domain.verdict({**good, "text_minus_png": _diff([-0.1, -0.12, -0.09])},
                                Scale.SMALL) == "fails"
    # an untrained network also beats the text model on both domains: cannot tell
    assert C.off_domain.verdict({**good, "untrained_minus_text_image": _diff([-0.1, -0.11, -0.12])},
                                Scale.SMALL) == "inconclusive"
    assert C.off_domain.verdict({**good, "untrained_minus_unigram_bits": _diff([-0.1, -0.11, -0.12])},
                                Scale.SMALL) == "inconclusive"


def test_pretrained_lm_rule_and_control():
    good = {"smollm2_minus_085_gzip": _diff([-0.2, -0.21, -0.19]),
            "smollm2_minus_lzma": _diff([-0.15, -0.16, -0.17]),
            "smollm2_minus_zstd": _diff([-0.15, -0.16, -0.17]),
            "token_unigram_minus_085_gzip": _diff([0.02, 0.021, 0.019]), "roundtrip_ok": 1.0}
    assert C.pretrained_lm_beats_gzip.verdict(good, Scale.SMALL) == "holds"
    assert C.pretrained_lm_beats_gzip.verdict({**good, "smollm2_minus_lzma": _diff([0.1, 0.11, 0.12])},
                                              Scale.SMALL) == "fails"
    judged = C.pretrained_lm_beats_gzip.judge(
        {**good, "token_unigram_minus_085_gzip": _diff([-0.02, -0.03, -0.01])}, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pretrained_lm_smoke_and_token_unigram_null():
    m = C.pretrained_lm_beats_gzip(Scale.SMOKE, 0)
    _finite(m)
    assert m.metrics["roundtrip_ok"] == 1.0
    assert m.metrics["smollm2_adjusted_rate_gguf"] > 1.0
    assert 0 < m.metrics["token_unigram_rate"] < 1.5
    null = {**m.metrics, "smollm2_minus_085_gzip": m.metrics["token_unigram_minus_085_gzip"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.pretrained_lm_beats_gzip.verdict(null, scale) != "holds"


def test_token_unigram_null_is_add_one_frequencies():
    from iclr24.kits.language_models import ByteTokenizer

    class Tiny:
        vocab_size = 256
        tokenizer = ByteTokenizer()

    class Tok(ByteTokenizer):
        def encode(self, data, check_roundtrip=True):
            return super().encode(data)

    Tiny.tokenizer = Tok()
    bits = C._token_unigram_bits(Tiny(), b"aab")
    # counts a: 2 + 1, b: 1 + 1, others 1; total 3 + 256
    assert bits[ord("a")] == pytest.approx(-np.log2(3 / 259))
    assert bits[ord("z")] == pytest.approx(-np.log2(1 / 259))


# ------------------------------------------------------------------ the uniform predictor
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


def test_uniform_predictor_in_place_of_every_coder_fails():
    from iclr24.kits.language_models import (
        chunked_rate,
        classical_compressors,
        pydoc_topics_corpus,
    )
    from iclr24.papers.lm_compression import code_chunks

    chunks = pydoc_topics_corpus().chunks("heldout", 512, max_chunks=4)
    res = code_chunks(chunks, _UniformBytes())
    assert res.rate > 1.0 and res.roundtrip_ok                 # 8 bits + coder overhead
    cl = {n: chunked_rate(chunks, c).rate
          for n, c in classical_compressors(("gzip", "lzma", "zstd")).items()}
    bar, o0 = res.rate - 0.85 * cl["gzip"], 0.3
    metrics = {"transformer_minus_085_gzip": bar, "ngram_minus_085_gzip": bar,
               "transformer_minus_lzma": res.rate - cl["lzma"], "order0_minus_085_gzip": o0,
               "transformer_minus_order0": 0.4, "roundtrip_ok": 1.0,
               "smollm2_minus_085_gzip": bar, "smollm2_minus_lzma": res.rate - cl["lzma"],
               "smollm2_minus_zstd": res.rate - cl["zstd"], "token_unigram_minus_085_gzip": o0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert C.beats_gzip.verdict(metrics, scale) != "holds"
    assert C.pretrained_lm_beats_gzip.verdict(metrics, Scale.SMALL) == "fails"
