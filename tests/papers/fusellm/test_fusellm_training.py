"""Top-k recording, bits per character and the FuseLLM trainer on tiny models."""

import math

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import ByteTokenizer, CausalTransformer, TransformerConfig
from iclr24.papers.fusellm import (
    FuseConfig,
    FuseLLMTrainer,
    SparseDist,
    TokenVocab,
    align_records,
    bits_per_char,
    build_vocab_mapping,
    domain_texts,
    fuse_corpus,
    record_topk,
)
from iclr24.papers.fusellm.synthetic_world import split_arith

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TEXTS = ["12+7=19.", "the red skelp of drevin paints two walls.", "x=1;y=x*3;print(y)#3"]


def _model(vocab=256, seed=0, d=16):
    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(vocab_size=vocab, d_model=d, n_layers=1,
                                               n_heads=2, context_length=64))


def test_record_topk_is_the_sorted_topk_of_the_model_and_its_ce():
    model, tok = _model(), ByteTokenizer()
    recs = record_topk(model, tok, TEXTS, k=5, batch_size=2)  # padding inside batches
    for text, rec in zip(TEXTS, recs):
        ids = torch.tensor([list(text.encode())])
        with torch.no_grad():
            logp = torch.log_softmax(model(model.shift_right(ids))[0], -1)
        top = torch.topk(logp, 5, -1)
        np.testing.assert_array_equal(rec.topk_ids, top.indices.numpy())
        np.testing.assert_allclose(rec.topk_logits, top.values.numpy(), rtol=1e-5, atol=1e-6)
        assert (np.diff(rec.topk_logits, axis=1) <= 0).all()
        ce = -logp.gather(1, ids[0][:, None]).mean()
        assert rec.seq_ce == pytest.approx(float(ce), rel=1e-5)
        assert len(rec) == len(text)


def test_record_topk_bad_inputs():
    model, tok = _model(), ByteTokenizer()
    for k in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="k must be an int >= 1"):
            record_topk(model, tok, TEXTS, k=k)
    with pytest.raises(ValueError, match="exceeds the model's vocabulary"):
        record_topk(model, tok, TEXTS, k=300)
    with pytest.raises(TypeError, match="not one str"):
        record_topk(model, tok, "abc")
    with pytest.raises(ValueError, match="empty"):
        record_topk(model, tok, ["ok", ""])
    with pytest.raises(TypeError, match="lm must be"):
        record_topk(object(), tok, TEXTS)


def test_bits_per_char_of_a_uniform_model_is_log2_v_per_token():
    model = _model()
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    texts = ["hello world", "abc"]
    # bytes = characters here: log2(256) = 8 bits per token and per character
    assert bits_per_char(model, ByteTokenizer(), texts) == pytest.approx(8.0, rel=1e-6)


def test_trainer_learns_reduces_bpc_and_is_deterministic():
    texts = domain_texts("grammar", 64, np.random.default_rng(0))
    tok = ByteTokenizer()
    cfg = FuseConfig(lam=1.0, steps=30, batch_size=16, lr=3e-3, seed=1)
    before = bits_per_char(_model(), tok, texts)
    runs = []
    for _ in range(2):
        m = _model()
        hist = FuseLLMTrainer(m, tok, cfg).fit(texts)
        runs.append((hist.losses, bits_per_char(m, tok, texts)))
    assert runs[0] == runs[1]
    assert runs[0][1] < before - 1.0


def test_fusion_toward_a_teacher_moves_the_student_to_it():
    """λ = 0 with the teacher's full distributions (k = V, aligned onto the same tokenizer):
    the student ends closer to the teacher (KL) than the same run with CLM alone (λ = 1); a
    position shift between fused rows and logits would break this."""
    rng = np.random.default_rng(0)
    texts = domain_texts("arith", 48, rng)
    tok = ByteTokenizer()
    vocab = TokenVocab.of(tok)
    teacher = _model(seed=3, d=32)
    FuseLLMTrainer(teacher, tok, FuseConfig(lam=1.0, steps=40, batch_size=16, lr=3e-3)).fit(
        domain_texts("arith", 400, rng))
    t_recs = record_topk(teacher, tok, texts, k=256)
    s_recs = record_topk(_model(seed=4), tok, texts, k=10)
    aligned = align_records(t_recs, vocab, vocab, s_recs, build_vocab_mapping(vocab, vocab))
    fused = fuse_corpus(s_recs, [aligned], [t_recs], include_target=False).fused
    assert all(d.transferred.all() for d in fused)  # same tokenizer: full coverage

    def kl_to_teacher(student):
        s = record_topk(student, tok, texts, k=256)
        kl = 0.0
        for tr, sr in zip(record_topk(teacher, tok, texts, k=256), s):
            p = np.zeros((len(tr), 256))
            q = np.zeros((len(sr), 256))
            np.put_along_axis(p, tr.topk_ids, np.exp(tr.topk_logits), 1)
            np.put_along_axis(q, sr.topk_ids, sr.topk_logits, 1)
            kl += float((p * (np.log(np.maximum(p, 1e-30)) - q)).sum())
        return kl

    kls = {}
    for lam in (1.0, 0.0):
        student = _model(seed=4)
        FuseLLMTrainer(student, tok, FuseConfig(lam=lam, steps=25, batch_size=16, lr=3e-3,
                                                seed=2)).fit(texts, fused)
        kls[lam] = kl_to_teacher(student)
    assert kls[0.0] < kls[1.0]


def test_trainer_bad_inputs():
    tok = ByteTokenizer()
    with pytest.raises(ValueError, match="lam"):
        FuseConfig(lam=1.2)
    with pytest.raises(ValueError, match="steps"):
        FuseConfig(steps=0)
    with pytest.raises(TypeError, match="CausalTransformer"):
        FuseLLMTrainer(object(), tok)
    trainer = FuseLLMTrainer(_model(), tok, FuseConfig(lam=0.9, steps=1, batch_size=2))
    with pytest.raises(ValueError, match="fused targets are needed"):
        trainer.fit(TEXTS)
    wrong = [SparseDist.one_hot(list(t.encode())[:-1]) for t in TEXTS]  # one row short
    with pytest.raises(ValueError, match=r"fused\[0\] has 7 rows but text 0 has 8"):
        trainer.fit(TEXTS, wrong)
    with pytest.raises(ValueError, match="fused has 2 entries for 3 texts"):
        trainer.fit(TEXTS, wrong[:2])


def test_learning_rate_schedule():
    cfg = FuseConfig(steps=100, lr=1.0, warmup_ratio=0.1, min_lr_ratio=0.0)
    assert cfg.learning_rate(0) == pytest.approx(0.1)
    assert cfg.learning_rate(9) == pytest.approx(1.0)
    assert cfg.learning_rate(10) == pytest.approx(1.0)
    assert cfg.learning_rate(55) == pytest.approx(0.5 * (1 + math.cos(math.pi * 0.5)))
    assert cfg.learning_rate(100) == pytest.approx(0.0, abs=1e-12)


def test_split_arith():
    assert split_arith("17+25=42.") == ("17+25=", "42")
    with pytest.raises(ValueError):
        split_arith("no fact")


@pytest.fixture(scope="module")
def tiny_llama():
    """A maker of random one-layer Llamas with a byte-level BPE tokenizer trained here."""
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from iclr24.kits.language_models import HFCausalLM, train_subword_tokenizer

    sub = train_subword_tokenizer(TEXTS * 4, 300)
    hf = PreTrainedTokenizerFast(tokenizer_object=sub.tk, bos_token="<eos>", eos_token="<eos>")

    def make(seed=0):
        torch.manual_seed(seed)
        cfg = LlamaConfig(vocab_size=len(hf), hidden_size=32, intermediate_size=64,
                          num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                          max_position_embeddings=160)
        return HFCausalLM(LlamaForCausalLM(cfg), hf)

    return make, hf


def test_trainer_first_loss_is_the_hugging_face_models_nll(tiny_llama):
    """The trainer's first loss (before any update) equals the mean NLL that the records'
    scoring path computes: the start token, the shift and the padding mask agree."""
    from iclr24.papers.fusellm.records import sequence_log_probs

    make, _ = tiny_llama
    lm = make()
    texts = domain_texts("grammar", 12, np.random.default_rng(0))
    vocab = TokenVocab.of(lm.tokenizer)
    toks = [vocab.encode(t) for t in texts]
    logps = sequence_log_probs(lm, toks)
    nll = sum(-float(lp.gather(1, torch.tensor(t)[:, None]).sum()) for lp, t in zip(logps, toks))
    nll /= sum(len(t) for t in toks)
    hist = FuseLLMTrainer(lm, lm.tokenizer, FuseConfig(lam=1.0, steps=1, batch_size=len(texts),
                                                       lr=1e-3)).fit(texts)
    assert hist.losses[0] == pytest.approx(nll, rel=1e-4)


def test_trainer_fits_a_hugging_face_target_with_fused_targets(tiny_llama):
    make, hf = tiny_llama
    texts = domain_texts("grammar", 48, np.random.default_rng(1))
    lm = make(1)
    before = bits_per_char(lm, lm.tokenizer, texts)
    FuseLLMTrainer(lm, lm.tokenizer, FuseConfig(lam=1.0, steps=30, batch_size=16,
                                                lr=3e-3)).fit(texts)
    after = bits_per_char(lm, lm.tokenizer, texts)
    assert after < 0.8 * before
    # λ = 0.9 with another Llama's own distributions as the fused target, given as a raw
    # transformers model and its tokenizer
    teacher = make(2)
    recs = record_topk(teacher, teacher.tokenizer, texts, k=5)
    fused = fuse_corpus(recs, [], []).fused
    raw = make(3).model
    start = {k: v.clone() for k, v in raw.state_dict().items()}
    trainer = FuseLLMTrainer(raw, hf, FuseConfig(lam=0.9, steps=3, batch_size=8, lr=1e-3))
    hist = trainer.fit(texts, fused)
    assert len(hist.losses) == 3 and all(np.isfinite(hist.losses))
    assert any(not torch.equal(v, start[k]) for k, v in raw.state_dict().items())
    assert np.isfinite(bits_per_char(trainer.model, hf, texts[:4]))


def test_trainer_hugging_face_bad_inputs(tiny_llama):
    make, hf = tiny_llama
    lm = make()
    with pytest.raises(TypeError, match="Hugging Face tokenizer"):
        FuseLLMTrainer(lm.model, TokenVocab.of(hf))
    with pytest.raises(ValueError, match="outputs"):
        FuseLLMTrainer(lm, TokenVocab(tuple(f"t{i}" for i in range(len(hf) + 5)), "",
                                      lambda s: [0]))
    with pytest.raises(TypeError, match="model must be"):
        FuseLLMTrainer("HuggingFaceTB/SmolLM2-135M", hf)
