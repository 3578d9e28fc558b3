"""The synthetic language: exact distribution, sampling that follows it, domains, bad input."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.emo import SyntheticLanguage, make_language


def _lang(seed=0, k=5, s=3):
    return make_language(k, s, np.random.default_rng(seed))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 12), s=st.integers(1, 6))
def test_true_distribution_rows_sum_to_one_and_are_positive(seed, k, s):
    lang = _lang(seed, k, s)
    table = lang.transition_table()
    assert table.shape == (k * s + 1, k * s + 1)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, atol=1e-12)
    assert (table > 0).all()
    np.testing.assert_allclose(lang.structured_table().sum(axis=1), 1.0, atol=1e-12)


def test_structure_clusters_synonyms_and_eos():
    lang = _lang(1, k=4, s=3)
    st_ = lang.structured_table()
    eos = lang.eos_id
    assert eos == 12 and lang.vocab_size == 13
    # rows depend only on the previous token's cluster
    np.testing.assert_array_equal(st_[0], st_[2])
    # after EOS: never EOS again; after a content token: EOS with p_end
    assert st_[eos, eos] == 0.0
    assert st_[5, eos] == pytest.approx(lang.end_probability)
    # inside every cluster the synonyms follow the Zipf law
    row = st_[eos, :-1].reshape(4, 3)
    mass = row.sum(axis=1, keepdims=True)
    nz = mass[:, 0] > 0
    np.testing.assert_allclose(row[nz] / mass[nz], np.tile(lang.synonym_distribution, (nz.sum(), 1)))
    zipf = np.arange(1, 4) ** -1.1
    np.testing.assert_allclose(lang.synonym_distribution, zipf / zipf.sum())
    # the floor: P* = (1 − ε) structured + ε / V
    np.testing.assert_allclose(lang.transition_table(),
                               (1 - lang.smoothing) * st_ + lang.smoothing / 13)


def test_sampling_follows_the_table():
    lang = _lang(2, k=3, s=2)
    seqs = lang.sample(4000, 12, np.random.default_rng(0))
    assert seqs.shape == (4000, 12) and (seqs[:, 0] == lang.eos_id).all()
    prev, nxt = seqs[:, :-1].reshape(-1), seqs[:, 1:].reshape(-1)
    counts = np.zeros((7, 7))
    np.add.at(counts, (prev.numpy(), nxt.numpy()), 1)
    table = lang.transition_table()
    for i in range(7):
        n = counts[i].sum()
        if n > 2000:  # each well-visited row's empirical law matches P* (4-sigma band)
            sd = np.sqrt(table[i] * (1 - table[i]) / n)
            assert np.all(np.abs(counts[i] / n - table[i]) <= 4 * sd + 1e-3)


def test_sampling_is_deterministic_and_stream_has_requested_length():
    lang = _lang(3)
    a = lang.sample(10, 8, np.random.default_rng(5))
    b = lang.sample(10, 8, np.random.default_rng(5))
    assert torch.equal(a, b)
    s = lang.sample_stream(1001, np.random.default_rng(0), n_chains=4)
    assert s.shape == (1001,) and s[0] == lang.eos_id


def test_next_token_probs_and_log_likelihood():
    lang = _lang(4)
    seqs = lang.sample(6, 9, np.random.default_rng(1))
    probs = lang.next_token_probs(seqs)
    assert probs.shape == (6, 8, lang.vocab_size)
    torch.testing.assert_close(probs.sum(-1), torch.ones(6, 8, dtype=torch.float64))
    table = lang.transition_table()
    manual = np.log(table[seqs[:, :-1], seqs[:, 1:]]).sum(1)
    np.testing.assert_allclose(lang.log_likelihood(seqs).numpy(), manual)
    wrong = lang.wrong_token_mask(seqs)
    assert wrong.dtype == torch.bool
    assert (probs[wrong] < lang.smoothing).all()  # wrong tokens carry only the floor


def test_shifted_domain_resamples_the_requested_fraction_of_rows():
    lang = make_language(20, 2, np.random.default_rng(0))
    shifted = lang.shifted(0.3, np.random.default_rng(1))
    changed = (~np.isclose(lang.cluster_transitions, shifted.cluster_transitions).all(axis=1))
    assert changed.sum() == 6
    np.testing.assert_array_equal(lang.synonym_distribution, shifted.synonym_distribution)
    same = lang.shifted(0.0, np.random.default_rng(1))
    np.testing.assert_array_equal(same.cluster_transitions, lang.cluster_transitions)


def test_oracle_embedding_separates_clusters():
    lang = _lang(5, k=4, s=3)
    e = lang.oracle_embedding(torch.Generator().manual_seed(0), noise=0.0)
    assert e.shape == (13, 5)
    assert torch.equal(e[0], e[2]) and not torch.equal(e[0], e[3])


def test_bad_input():
    lang = _lang(6)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="n_clusters"):
        make_language(0, 3, rng)
    with pytest.raises(TypeError, match="generator"):
        make_language(3, 3, 0)
    with pytest.raises(ValueError, match="token ids must lie"):
        lang.next_token_probs(torch.tensor([[0, lang.vocab_size]]))
    with pytest.raises(ValueError, match="length >= 2"):
        lang.next_token_probs(torch.tensor([[0]]))
    with pytest.raises(TypeError, match="integer"):
        lang.next_token_probs(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="fraction"):
        lang.shifted(1.5, rng)
    with pytest.raises(ValueError, match="first_token"):
        lang.sample(2, 3, rng, first_token=99)
    with pytest.raises(ValueError, match="probability vectors"):
        SyntheticLanguage(2, 2, np.array([[0.5, 0.6], [0.5, 0.5]]), np.array([0.5, 0.5]),
                          np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="shape"):
        SyntheticLanguage(2, 2, np.eye(3), np.array([0.5, 0.5]), np.array([0.5, 0.5]))
