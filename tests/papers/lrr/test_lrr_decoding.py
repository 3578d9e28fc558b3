"""LRR: Look-Remember-Reason decoding keeps the generated Look answers in context; fit lowers
the answer loss; predict_final's teacher-forced and generated readings; errors."""

import numpy as np
import pytest
import torch

from iclr24.papers.lrr import (
    LRR,
    CrossAttentionLM,
    FitConfig,
    MiniCATERConfig,
    SurrogateProgram,
    TwoStreamVideoEncoder,
    Vocabulary,
    generate_minicater,
    videos_tensor,
)


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    videos = generate_minicater(16, MiniCATERConfig(n_frames=8), seed=1)
    vocab = Vocabulary(8, 36)
    prog = SurrogateProgram(vocab, (0, 3, 6))
    model = LRR(TwoStreamVideoEncoder(24, 8, 32, 1, 1, 4, 8),
                CrossAttentionLM(len(vocab), 32, 2, 4, 1, prog.length), vocab)
    return videos, vocab, prog, model


def test_generated_looks_stay_in_context(setup, one_torch_thread):
    videos, vocab, prog, model = setup
    frames = videos_tensor(videos[:4])
    seq = model.generate(frames, (0, 3, 6))
    assert seq.shape == (4, prog.length)
    memory = model.encoder(frames)
    with torch.no_grad():
        logits = model.lm(seq[:, :-1], memory)
    # every generated token is the greedy choice given everything before it, the model's own
    # earlier Look answers included
    # (constrained: among the relation words, then among the cells)
    for pos in [5, 6, 11, 12, 17, 18, prog.length - 1]:
        allowed = vocab.relation_ids if pos in (5, 11, 17) else vocab.cell_ids
        assert torch.equal(seq[:, pos], allowed[logits[:, pos - 1, allowed].argmax(-1)])
    text = vocab.decode(seq[0]).split()
    assert text[1:5] == ["look", "f0", "snitch", "?"] and text[-5:-1] == ["where", "snitch", "end", "?"]
    # the final answer depends on the Look answers in context: replacing them changes logits
    forced = seq.clone()
    forced[:, [6, 12, 18]] = (seq[:, [6, 12, 18]] + 1) % len(vocab)
    with torch.no_grad():
        assert not torch.allclose(model.lm(forced[:, :-1], memory)[:, -1], logits[:, -1])
    word = model.answer(videos[0], look_steps=(0, 3, 6))
    assert word == vocab.decode(seq[:1, -1])


def test_untrained_model_answers_a_cell(setup, one_torch_thread):
    """Issue 38: decoding is constrained to the answer grammar, so even an untrained model (here
    with the cell logits pushed far below a frame token's) answers a cell, never 'f8'."""
    videos, vocab, prog, _ = setup
    torch.manual_seed(1)
    model = LRR(TwoStreamVideoEncoder(24, 8, 32, 1, 1, 4, 8),
                CrossAttentionLM(len(vocab), 32, 1, 4, 1, prog.length), vocab)
    frames = videos_tensor(videos[:4])
    with torch.no_grad():
        model.lm.head.bias[vocab.index["f7"]] += 50.0  # the unconstrained argmax: a frame id
        model.lm.head.bias[vocab.cell_ids] -= 50.0
        tokens = torch.full((4, 1), vocab.index["<bos>"])
        assert (model.lm(tokens, model.encoder(frames))[:, -1].argmax(-1)
                == vocab.index["f7"]).all()
    word = model.answer(videos[0], look_steps=(0, 3, 6))
    assert word.startswith("c") and 0 <= vocab.cell_of(vocab.index[word]) < 36
    seq = model.generate(frames, (0, 3, 6))
    for k in range(3):
        assert set(seq[:, 6 * k + 5].tolist()) <= {vocab.index["at"], vocab.index["under"]}
        assert all(vocab.cell_of(i) >= 0 for i in seq[:, 6 * k + 6].tolist())
    for tf in (False, True):
        final, looks = model.predict_final(videos, prog, teacher_forced=tf)
        assert final.min() >= 0 and looks.min() >= 0


def test_fit_lowers_answer_loss_and_predictions(setup, one_torch_thread):
    videos, _, prog, model = setup
    losses = model.fit(videos, prog, FitConfig(steps=40, batch_size=8, lr=3e-3), seed=0)
    assert len(losses) == 40 and np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.5
    final, looks = model.predict_final(videos, prog)
    assert final.shape == (16,) and looks.shape == (16, 3)
    _, tf_looks = model.predict_final(videos, prog, teacher_forced=True)
    # the first Look sees the same context either way
    assert np.array_equal(looks[:, 0], tf_looks[:, 0])
    assert final.min() >= -1 and final.max() < 36


def test_errors(setup):
    videos, vocab, _, model = setup
    with pytest.raises(ValueError, match="lm.vocab_size"):
        LRR(model.encoder, CrossAttentionLM(10, 32, 1, 4, 1, 8), vocab)
    with pytest.raises(ValueError, match="memory_dim"):
        LRR(model.encoder, CrossAttentionLM(len(vocab), 16, 1, 4, 1, 8), vocab)
    with pytest.raises(TypeError, match="encoder"):
        LRR(None, model.lm, vocab)
    with pytest.raises(ValueError, match="program must be"):
        model.fit(videos, SurrogateProgram(Vocabulary(8, 36), (0, 3)), FitConfig(steps=1))
    with pytest.raises(ValueError, match="look frame 9"):
        model.generate(videos_tensor(videos[:1]), (0, 9))
    with pytest.raises(ValueError, match="video must be a MiniCATERVideo"):
        model.answer(torch.zeros(3, 24, 24))
    with pytest.raises(ValueError, match="steps must be a positive int"):
        FitConfig(steps=0)
    with pytest.raises(TypeError, match="videos must be a non-empty list"):
        videos_tensor([])
