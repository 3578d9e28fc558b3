"""The network, its training (separate weight decay, frozen baseline) and input checks."""

import numpy as np
import pytest
import torch

from iclr24.papers.feature_collapse import (
    ConceptSentenceDataset,
    EmbedLinearClassifier,
    accuracy,
    train_collapse_model,
    within_concept_ratio,
)


def _model(ln=False, K=6, n_words=30, L=4, d=8, seed=0):
    return EmbedLinearClassifier(n_words, L, d, K, layer_norm=ln,
                                 generator=torch.Generator().manual_seed(seed))


def test_init_is_scaled_down_and_forward_matches_the_definition():
    m = _model()
    assert m.emb.weight.abs().max() < 0.01 and m.clf.weight.abs().max() < 1e-3
    tok = torch.tensor([[0, 5, 10, 29], [1, 1, 2, 3]])
    manual = m.emb.weight[tok].reshape(2, -1) @ m.clf.weight.T  # U vec(w_x1, ..., w_xL)
    assert torch.allclose(m(tok), manual)
    ln = _model(ln=True)
    w = ln.emb.weight[tok]
    normed = (w - w.mean(-1, keepdim=True)) / torch.sqrt(w.var(-1, unbiased=False, keepdim=True) + 1e-5)
    assert torch.allclose(ln(tok), normed.reshape(2, -1) @ ln.clf.weight.T, atol=1e-5)
    assert sum(p.numel() for p in ln.parameters()) == 30 * 8 + 6 * 4 * 8  # LN has no affine


def test_weight_decay_is_separate_per_group(one_torch_thread):
    """With lr * wd only (no data signal: the loss gradient is tiny at init), one SGD step
    shrinks W by (1 - lr wd_emb) and U by (1 - lr wd_clf)."""
    m = _model()
    tok = torch.zeros(2, 4, dtype=torch.long)
    W0, U0 = m.emb.weight.detach().clone(), m.clf.weight.detach().clone()
    train_collapse_model(m, tok, np.array([0, 1]), epochs=1, lr=0.1, wd_emb=0.5, wd_clf=0.0,
                         batch=2)
    unused = slice(1, 30)  # word 0 gets a (tiny) gradient; the others only weight decay
    assert torch.allclose(m.emb.weight[unused], W0[unused] * (1 - 0.05), atol=1e-9)
    assert not torch.allclose(m.clf.weight, U0 * 0.95)
    assert torch.allclose(m.clf.weight, U0, atol=1e-4)


def test_frozen_embedding_stays_random_normal(one_torch_thread):
    ds = ConceptSentenceDataset(3, 30, 4, 6, seed=0)
    tok, lab = ds.sample(5, rng=0)
    m = _model()
    train_collapse_model(m, tok, lab, epochs=3, freeze_embedding=True)
    W = m.emb.weight.detach()
    assert not W.requires_grad
    assert 0.7 < float(W.std()) < 1.3  # normal scale, not / 1000
    expected = torch.empty(30, 8).normal_(generator=torch.Generator().manual_seed(0))
    assert torch.equal(W, expected)  # the seeded N(0, 1) draw, untouched by training


def test_training_learns_and_collapses_on_a_tiny_task(one_torch_thread):
    ds = ConceptSentenceDataset(3, 30, 4, 6, seed=1)
    train, test = ds.sample(20, rng=1), ds.sample(20, rng=2)
    m = _model(K=6, n_words=30, L=4, d=8, seed=1)
    hist = train_collapse_model(m, *train, epochs=60, lr=0.5, test=test, eval_every=20)
    assert hist.train_loss[-1] < 0.5 * hist.train_loss[0]
    assert accuracy(m, *test) > 0.9
    assert within_concept_ratio(m.features().detach().numpy(), ds.concept_of_word) < 0.5
    assert [e for e, _ in hist.test_accuracy] == [20, 40, 60]
    again = _model(K=6, n_words=30, L=4, d=8, seed=1)
    hist2 = train_collapse_model(again, *train, epochs=60, lr=0.5)
    assert hist2.train_loss == hist.train_loss  # deterministic given the seeds


def test_input_errors():
    m = _model()
    tok = np.zeros((5, 4), dtype=int)
    with pytest.raises(ValueError, match="same length: 5 sentences but labels of shape \\(4,\\)"):
        train_collapse_model(m, tok, np.zeros(4, dtype=int), epochs=1)
    with pytest.raises(ValueError, match="same length"):
        accuracy(m, tok, np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="labels must be in"):
        train_collapse_model(m, tok, np.full(5, 6), epochs=1)
    with pytest.raises(ValueError, match="word ids"):
        train_collapse_model(m, tok + 30, np.zeros(5, dtype=int), epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        train_collapse_model(m, tok, np.zeros(5, dtype=int), epochs=0)
    with pytest.raises(ValueError, match="shape \\(batch, 4\\)"):
        m(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="positive int"):
        EmbedLinearClassifier(10, 0, 4, 3)


def test_fractional_ids_are_refused_not_truncated(one_torch_thread):
    m = _model()
    tok = np.zeros((5, 4))
    lab = np.zeros(5, dtype=int)
    frac = tok + 0.5
    with pytest.raises(TypeError, match="training tokens must be integer ids"):
        train_collapse_model(m, frac, lab, epochs=1)
    with pytest.raises(TypeError, match="training labels must be integer ids"):
        train_collapse_model(m, tok.astype(int), lab + 0.25, epochs=1)
    with pytest.raises(TypeError, match="evaluation tokens must be integer ids"):
        accuracy(m, torch.full((5, 4), 1.7), lab)
    with pytest.raises(TypeError, match="evaluation tokens must be integer ids"):
        accuracy(m, np.full((5, 4), np.nan), lab)
    with pytest.raises(TypeError, match="integer ids, got dtype"):
        accuracy(m, np.full((5, 4), "a"), lab)
    with pytest.raises(TypeError, match="tokens must be an integer tensor"):
        m(torch.zeros(2, 4))
    # integral floats are converted exactly: the same result as the int ids
    ints = np.array([[0, 5, 10, 29], [1, 1, 2, 3]])
    assert accuracy(m, ints.astype(float), [0, 1]) == accuracy(m, ints, [0, 1])


def test_empty_sets_and_zero_batch_are_refused():
    m = _model()
    tok, lab = np.zeros((5, 4), dtype=int), np.zeros(5, dtype=int)
    empty_tok, empty_lab = np.zeros((0, 4), dtype=int), np.zeros(0, dtype=int)
    with pytest.raises(ValueError, match="training set is empty"):
        train_collapse_model(m, empty_tok, empty_lab, epochs=1)
    with pytest.raises(ValueError, match="evaluation set is empty"):
        accuracy(m, empty_tok, empty_lab)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="batch must be a positive int"):
            train_collapse_model(m, tok, lab, epochs=1, batch=bad)
        with pytest.raises(ValueError, match="batch must be a positive int"):
            accuracy(m, tok, lab, batch=bad)
