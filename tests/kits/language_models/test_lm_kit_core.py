"""Tests of the language-model kit: transformer, trainer, checkpoints, backends, corpora."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import (
    ByteTokenizer,
    CausalTransformer,
    NextTokenBackend,
    TrainConfig,
    TransformerConfig,
    TransformerLM,
    chunk_bytes,
    cosine_learning_rate,
    digits_corpus,
    image_patch_corpus,
    load_checkpoint,
    pcm16_to_uint8,
    pydoc_topics_corpus,
    random_bytes_corpus,
    save_checkpoint,
    sinusoidal_positions,
    stdlib_source_corpus,
    synthetic_audio_corpus,
    torch_threads,
    train_causal_lm,
)


def _tiny(seed: int = 0, **kw) -> CausalTransformer:
    cfg = {"d_model": 32, "n_layers": 2, "n_heads": 4, "context_length": 64}
    cfg.update(kw)
    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(**cfg)).eval()


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_forward_shapes_and_causality(positions):
    m = _tiny(positions=positions)
    x = torch.randint(0, 256, (3, 20))
    out = m(x)
    assert out.shape == (3, 20, 256)
    # changing a later token never changes an earlier position's logits
    y = x.clone()
    y[:, 12] = (y[:, 12] + 1) % 256
    out2 = m(y)
    torch.testing.assert_close(out[:, :12], out2[:, :12], rtol=0, atol=0)
    assert not torch.allclose(out[:, 12:], out2[:, 12:])


def test_sinusoidal_table_closed_form():
    pe = sinusoidal_positions(50, 6)
    assert pe.shape == (50, 6) and pe.dtype == torch.float32
    t = torch.arange(50, dtype=torch.float64)
    for i in range(3):
        omega = 10000.0 ** (-2 * i / 6)
        torch.testing.assert_close(pe[:, 2 * i].double(), torch.sin(t * omega), atol=1e-6,
                                   rtol=0)
        torch.testing.assert_close(pe[:, 2 * i + 1].double(), torch.cos(t * omega), atol=1e-6,
                                   rtol=0)
    # odd widths: the last sine column has no cosine partner
    assert sinusoidal_positions(4, 5).shape == (4, 5)
    m = _tiny(positions="sinusoidal")
    assert not hasattr(m, "pos") and "pos_table" not in m.state_dict()   # no parameters
    assert m.num_parameters == _tiny().num_parameters - 64 * 32
    with pytest.raises(ValueError, match="positions"):
        TransformerConfig(positions="rotary")


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_cached_and_batched_distributions_agree(positions):
    m = _tiny(positions=positions)
    lm = TransformerLM(m)
    tokens = list(np.random.default_rng(0).integers(0, 256, 40))
    batched = lm.log_probs(tokens)
    sess = lm.session(1)
    inc = []
    for t in tokens:
        inc.append(sess.next_log_probs()[0])
        sess.feed([t])
    inc = np.stack(inc)
    assert batched.shape == inc.shape == (40, 256)
    np.testing.assert_allclose(np.exp(batched).sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(batched, inc, atol=2e-5)


def test_session_is_deterministic_bit_for_bit():
    lm = TransformerLM(_tiny())
    toks = [[5, 6], [7, 8], [9, 10]]

    def run():
        s = lm.session(2)
        out = []
        for pair in toks:
            out.append(s.next_log_probs().copy())
            s.feed(pair)
        return np.stack(out)

    with torch_threads(1):
        a, b = run(), run()
    assert np.array_equal(a, b)


def test_batched_lockstep_rows_match_single_sequences():
    lm = TransformerLM(_tiny())
    seqs = [[1, 2, 3, 4], [200, 100, 50, 25]]
    s = lm.session(2)
    rows = []
    for t in range(4):
        rows.append(s.next_log_probs().copy())
        s.feed([seqs[0][t], seqs[1][t]])
    rows = np.stack(rows, axis=1)  # (2, 4, V)
    for i, seq in enumerate(seqs):
        np.testing.assert_allclose(rows[i], lm.log_probs(seq), atol=2e-5)


def test_context_longer_than_model_raises():
    lm = TransformerLM(_tiny(context_length=8))
    with pytest.raises(ValueError, match="context_length"):
        lm.log_probs(list(range(9)))
    s = lm.session(1)
    for t in range(8):
        s.next_log_probs()
        s.feed([t])
    with pytest.raises(ValueError, match="context_length"):
        s.next_log_probs()
    with pytest.raises(ValueError, match="context_length"):
        lm.model(torch.zeros(1, 9, dtype=torch.long))


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="d_model"):
        TransformerConfig(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="vocab_size"):
        TransformerConfig(vocab_size=0)
    m = _tiny()
    with pytest.raises(TypeError, match="integer tensor"):
        m(torch.zeros(1, 3))
    with pytest.raises(ValueError, match="input ids"):
        m(torch.full((1, 3), 999))
    lm = TransformerLM(m)
    with pytest.raises(ValueError, match="lie in"):
        lm.log_probs([1, 256])
    with pytest.raises(ValueError, match="feed expects"):
        lm.session(2).feed([1])


def test_empty_sequence_log_probs():
    lm = TransformerLM(_tiny())
    assert lm.log_probs([]).shape == (0, 256)
    assert lm.code_length_bits([]) == 0.0


def test_training_reduces_loss_and_is_deterministic():
    text = (b"the quick brown fox jumps over the lazy dog. " * 40)
    cfg = TrainConfig(steps=40, batch_size=8, seq_len=32, lr=3e-3, warmup_steps=4, seed=3)
    m1, m2 = _tiny(seed=1), _tiny(seed=1)
    with torch_threads(1):
        h1 = train_causal_lm(m1, text, cfg)
        h2 = train_causal_lm(m2, text, cfg)
    assert h1.losses == h2.losses  # same seed, same data order, same numbers
    assert np.mean(h1.losses[-5:]) < 0.6 * np.mean(h1.losses[:3])
    assert h1.losses[0] == pytest.approx(math.log(256), rel=0.05)  # untrained ≈ uniform
    # the trained model assigns the repeated text far fewer bits than 8 per byte
    lm = TransformerLM(m1)
    assert lm.code_length_bits(text[:60]) / 60 < 4.0


def test_training_progress_callback_and_token_level_vocab():
    calls = []
    m = _tiny(vocab_size=10)
    data = np.tile(np.arange(10), 30)
    train_causal_lm(m, data, TrainConfig(steps=20, batch_size=4, seq_len=16),
                    progress=lambda f, msg="": calls.append(f))
    assert calls and calls[-1] == pytest.approx(1.0)
    assert all(a < b for a, b in itertools.pairwise(calls))


def test_training_bad_input():
    m = _tiny()
    with pytest.raises(ValueError, match="empty corpus"):
        train_causal_lm(m, b"", TrainConfig(steps=1))
    with pytest.raises(ValueError, match="token ids"):
        train_causal_lm(_tiny(vocab_size=4), np.array([1, 2, 9, 1]), TrainConfig(steps=1))
    with pytest.raises(TypeError):
        train_causal_lm(m, 3.5, TrainConfig(steps=1))
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)


def test_cosine_schedule_shape():
    cfg = TrainConfig(steps=100, lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    lrs = [cosine_learning_rate(s, cfg) for s in range(100)]
    assert lrs[9] == pytest.approx(1.0)
    assert max(lrs) == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(lrs[10:]))
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)


def test_checkpoint_roundtrip(tmp_path):
    m = _tiny()
    path = save_checkpoint(m, tmp_path / "sub" / "model.pt", extra={"note": "hi"})
    m2, extra = load_checkpoint(path)
    assert extra == {"note": "hi"}
    assert m2.config == m.config
    x = torch.randint(0, 256, (2, 10))
    torch.testing.assert_close(m(x), m2(x), rtol=0, atol=0)
    with pytest.raises(FileNotFoundError):
        load_checkpoint(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")


def test_generate_is_seeded_and_backend_protocol():
    lm = TransformerLM(_tiny())
    assert isinstance(lm, NextTokenBackend)
    a = lm.generate([1, 2, 3], 10, temperature=1.0, seed=7)
    b = lm.generate([1, 2, 3], 10, temperature=1.0, seed=7)
    assert a == b and len(a) == 10 and all(0 <= t < 256 for t in a)
    greedy = lm.generate([1, 2, 3], 5, temperature=0.0)
    s = lm.session(1)
    for t in [1, 2, 3]:
        s.next_log_probs()
        s.feed([t])
    assert greedy[0] == int(np.argmax(s.next_log_probs()[0]))
    assert isinstance(lm.generate_bytes(b"ab", 4, seed=0), bytes)


def test_byte_tokenizer_roundtrip_all_bytes():
    tok = ByteTokenizer()
    data = bytes(range(256))
    assert tok.decode(tok.encode(data)) == data
    with pytest.raises(TypeError):
        tok.encode("text")


# ----------------------------------------------------------------------------- corpora

def test_pydoc_corpus_split_is_deterministic_and_disjoint():
    c = pydoc_topics_corpus()
    assert 0.15 < len(c.heldout) / (len(c.train) + len(c.heldout)) < 0.25
    assert pydoc_topics_corpus.__wrapped__() == c  # recomputed, not only cached
    chunk = c.heldout[1000:1200]
    assert chunk not in c.train
    c.heldout.decode("utf-8")
    chunks = c.chunks("heldout", 2048)
    assert all(len(x) == 2048 for x in chunks) and len(chunks) == len(c.heldout) // 2048
    with pytest.raises(ValueError, match="split"):
        c.chunks("test")


def test_other_corpora():
    img = image_patch_corpus()
    assert len(img.train) % 2048 == 0 and len(img.heldout) % 2048 == 0 and img.heldout
    assert len(img.train) // 2048 == (427 // 32) * (640 // 64)
    aud = synthetic_audio_corpus(2, 1, seconds=0.25, seed=1)
    assert len(aud.train) == 8000 and len(aud.heldout) == 4000
    assert aud == synthetic_audio_corpus(2, 1, seconds=0.25, seed=1)
    assert aud.train != synthetic_audio_corpus(2, 1, seconds=0.25, seed=2).train
    arr = np.frombuffer(aud.heldout, dtype=np.uint8)
    assert arr.min() < 100 and arr.max() > 156  # spans the 8-bit range around 128
    dig = digits_corpus()
    assert len(dig.train) + len(dig.heldout) == 1797 * 64
    src = stdlib_source_corpus(max_bytes=50_000)
    assert 0 < len(src.train) and len(src.train) + len(src.heldout) <= 50_000 + 100
    rnd = random_bytes_corpus(0, 1000, seed=3)
    assert len(rnd.heldout) == 1000 and rnd == random_bytes_corpus(0, 1000, seed=3)


def test_pcm16_to_uint8_matches_paper_conversion():
    x = np.array([-32768, -256, -1, 0, 255, 256, 32767], dtype=np.int16)
    out = np.frombuffer(pcm16_to_uint8(x), dtype=np.uint8)
    # (x >> 8) + 128, i.e. the high byte as unsigned
    assert out.tolist() == [0, 127, 127, 128, 128, 129, 255]
    with pytest.raises(TypeError):
        pcm16_to_uint8(np.zeros(3, dtype=np.float32))


def test_chunk_bytes():
    assert chunk_bytes(b"abcdefg", 3) == [b"abc", b"def"]
    assert chunk_bytes(b"abcdefg", 3, keep_tail=True) == [b"abc", b"def", b"g"]
    assert chunk_bytes(b"abcdefg", 3, max_chunks=1) == [b"abc"]
    with pytest.raises(ValueError, match="chunk_size"):
        chunk_bytes(b"abc", 0)
    with pytest.raises(TypeError):
        chunk_bytes("abc", 2)


def test_custom_loss_fn_and_hidden_states():
    m = _tiny(vocab_size=10)
    seen = []

    def loss_fn(logits, targets):
        seen.append((tuple(logits.shape), tuple(targets.shape)))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 10), targets.reshape(-1)) * 2

    data = np.tile(np.arange(10), 20)
    hist = train_causal_lm(m, data, TrainConfig(steps=3, batch_size=2, seq_len=8),
                           loss_fn=loss_fn)
    assert seen[0] == ((2, 8, 10), (2, 8)) and len(hist.losses) == 3
    assert hist.losses[0] == pytest.approx(2 * math.log(10), rel=0.05)
    logits, hidden = m(torch.zeros(1, 5, dtype=torch.long), return_hidden=True)
    assert hidden.shape == (1, 5, 32)
    torch.testing.assert_close(logits, m.head(hidden))


def test_untrained_byte_lm_is_seeded_and_leaves_the_global_rng_alone():
    from iclr24.kits.language_models import untrained_byte_lm

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a, b, c = untrained_byte_lm(64, seed=1), untrained_byte_lm(64, seed=1), untrained_byte_lm(64)
    assert torch.equal(torch.rand(3), expected)  # global stream untouched
    wa, wb, wc = (next(m.model.parameters()) for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)
    assert a.context_length == 64 and a.model.config.n_layers == 1
    assert np.isfinite(a.log_probs(b"abc")).all()
    for kwargs, match in (({"context_length": 4}, "context_length"), ({"d_model": 3}, "even"),
                          ({"d_model": True}, "d_model")):
        with pytest.raises(ValueError, match=match):
            untrained_byte_lm(**kwargs)
