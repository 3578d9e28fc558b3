"""Vocabulary and surrogate program: rendering, answer-only masks, errors; and the answer-only
loss (gradients reach answer positions only)."""

import numpy as np
import pytest
import torch

from iclr24.papers.lrr import SurrogateProgram, Vocabulary, answer_loss, generate_minicater


@pytest.fixture(scope="module")
def videos():
    return generate_minicater(20, seed=5)


def test_vocabulary_round_trip():
    vocab = Vocabulary(12, 36)
    assert len(vocab) == 9 + 12 + 36
    text = "look f3 snitch ? under c20"
    assert vocab.decode(vocab.encode(text)) == text
    assert vocab.cell_of(vocab.index["c35"]) == 35 and vocab.cell_of(vocab.index["f3"]) == -1
    with pytest.raises(ValueError, match="'c36' is not in the vocabulary"):
        vocab.encode("c36")
    with pytest.raises(TypeError, match="text must be a str"):
        vocab.encode(3)
    with pytest.raises(ValueError, match="n_cells"):
        Vocabulary(12, 0)


def test_render_and_mask(videos):
    vocab = Vocabulary(12, 36)
    prog = SurrogateProgram(vocab, (0, 3, 6, 9))
    for v in videos:
        tok, mask = prog.render(v)
        assert tok.shape == mask.shape == (prog.length,)
        words = vocab.decode(tok).split()
        assert words[0] == "<bos>" and words[-5:-1] == ["where", "snitch", "end", "?"]
        assert words[-1] == f"c{v.final_cell}"
        for k, t in enumerate((0, 3, 6, 9)):
            seg = words[1 + 6 * k: 7 + 6 * k]
            assert seg[:4] == ["look", f"f{t}", "snitch", "?"]
            assert seg[4] == ("under" if v.contained_by[t] >= 0 else "at")
            assert seg[5] == f"c{v.snitch_cell(t)}"
        # answer tokens only: relation + cell after each look question, and the final cell
        answers = {i for k in range(4) for i in (5 + 6 * k, 6 + 6 * k)} | {len(words) - 1}
        assert set(np.nonzero(mask)[0]) == answers
    final = SurrogateProgram(vocab, (0, 3, 6, 9), surrogates=False)
    tok, mask = final.render(videos[0])
    assert vocab.decode(tok) == f"<bos> where snitch end ? c{videos[0].final_cell}"
    assert mask.tolist() == [False] * 5 + [True]


def test_program_errors(videos):
    vocab = Vocabulary(12, 36)
    with pytest.raises(ValueError, match="look_frames must be increasing"):
        SurrogateProgram(vocab, (3, 0))
    with pytest.raises(ValueError, match="look_frames must be increasing"):
        SurrogateProgram(vocab, (0, 12))
    with pytest.raises(TypeError, match="vocab"):
        SurrogateProgram({"a": 1})
    with pytest.raises(ValueError, match="frames"):
        SurrogateProgram(Vocabulary(8, 36), (0, 3)).render(videos[0])


def test_answer_loss_covers_answer_tokens_only(videos):
    vocab = Vocabulary(12, 36)
    tok, mask = SurrogateProgram(vocab).render_batch(list(videos[:4]))
    tok, mask = torch.from_numpy(tok), torch.from_numpy(mask)
    logits = torch.randn(4, tok.shape[1] - 1, len(vocab), dtype=torch.float64, requires_grad=True)
    loss = answer_loss(logits, tok, mask)
    loss.backward()
    grad_rows = logits.grad.abs().sum(-1) > 0
    assert torch.equal(grad_rows, mask[:, 1:])  # only positions predicting answer tokens
    # closed form: mean of -log softmax at answer targets
    logp = torch.log_softmax(logits.detach(), -1)
    picked = logp.gather(-1, tok[:, 1:, None])[..., 0][mask[:, 1:]]
    assert torch.allclose(loss.detach(), -picked.mean())
    # changing question tokens' targets (non-answer positions) leaves the loss unchanged
    tok2 = tok.clone()
    tok2[~mask] = vocab.index["<pad>"]
    tok2[:, 0] = tok[:, 0]
    assert torch.allclose(answer_loss(logits.detach(), tok2, mask), loss.detach())
    with pytest.raises(ValueError, match="mask selects no answer token"):
        answer_loss(logits, tok, torch.zeros_like(mask))
    with pytest.raises(ValueError, match=r"\(B, L-1, V\)"):
        answer_loss(logits[:, :-1], tok, mask)
