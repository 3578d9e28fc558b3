"""Collapse metrics on constructed embeddings, and the data model."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.feature_collapse import (
    ConceptSentenceDataset,
    classifier_block_ratio,
    layer_norm_rows,
    norm_frequency_spearman,
    norm_spread,
    pca_spectrum_ratio,
    within_concept_ratio,
)


def _collapsed(n_per=40, d=10, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((3, d))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    concept = np.repeat(np.arange(3), n_per)
    return centers[concept] + noise * rng.standard_normal((3 * n_per, d)), concept


def test_perfect_collapse_gives_zero():
    E, c = _collapsed()
    assert within_concept_ratio(E, c) == pytest.approx(0.0, abs=1e-12)
    assert pca_spectrum_ratio(E, 3) == pytest.approx(0.0, abs=1e-7)  # 3 points: a plane
    assert pca_spectrum_ratio(E, 2) > 0.01


def test_no_structure_gives_about_one():
    rng = np.random.default_rng(1)
    E = rng.standard_normal((3000, 20))
    c = rng.integers(0, 3, 3000)
    assert within_concept_ratio(E, c) == pytest.approx(1.0, abs=0.01)


def test_within_ratio_closed_form_small_case():
    # two concepts on a line: rows 0, 2 (concept 0) and 10, 12 (concept 1)
    E = np.array([[0.0], [2.0], [10.0], [12.0]])
    c = np.array([0, 0, 1, 1])
    within = 4 * 1.0  # each row is 1 from its concept mean
    total = 36 + 16 + 16 + 36  # distances to the global mean 6
    assert within_concept_ratio(E, c) == pytest.approx(within / total)


@settings(max_examples=30)
@given(seed=st.integers(0, 10**6), noise=st.floats(0.01, 3.0), scale=st.floats(0.1, 50.0))
def test_ratio_is_scale_and_translation_invariant_and_grows_with_noise(seed, noise, scale):
    E, c = _collapsed(seed=seed, noise=noise)
    r = within_concept_ratio(E, c)
    assert 0 < r <= 1 + 1e-12
    shift = np.random.default_rng(seed).standard_normal(E.shape[1])
    assert within_concept_ratio(scale * E + shift, c) == pytest.approx(r, rel=1e-9)
    assert within_concept_ratio(*_collapsed(seed=seed, noise=2 * noise)) > r * 0.99


def test_layer_norm_collapse_is_measured_on_normalised_rows():
    """Rows that differ only by scale (norm ~ frequency, the no-LN Zipf signature) are not
    collapsed as raw vectors but are after LayerNorm."""
    E, c = _collapsed(noise=0.0)
    freq = np.tile(1.0 / np.arange(1, 41), 3)
    scaled = E * (1 + 5 * freq)[:, None]
    assert within_concept_ratio(scaled, c) > 0.01
    assert within_concept_ratio(layer_norm_rows(scaled), c) == pytest.approx(0.0, abs=1e-8)
    assert norm_frequency_spearman(scaled, freq) == pytest.approx(1.0, abs=1e-3)  # ties
    exact = layer_norm_rows(scaled, eps=0.0)  # norms exactly sqrt(d): no rank order at all
    assert norm_frequency_spearman(exact, freq) == 0.0
    assert norm_spread(exact) < 1e-12 and norm_spread(scaled) > 0.1
    # with eps = 1e-5 the norms still vary by ~1e-5 relative; ranks see that, the spread does not
    assert norm_spread(layer_norm_rows(scaled)) < 1e-4
    import torch

    ref = torch.nn.functional.layer_norm(torch.as_tensor(scaled), (E.shape[1],)).numpy()
    assert np.allclose(layer_norm_rows(scaled), ref, atol=1e-6)


def test_classifier_block_ratio():
    rng = np.random.default_rng(2)
    K, L, d = 30, 5, 4
    Z = rng.integers(0, 3, (K, L))
    centers = rng.standard_normal((3, d))
    U = centers[Z].reshape(K, L * d)  # u_{k,l} depends only on z_{k,l}
    assert classifier_block_ratio(U, Z) == pytest.approx(0.0, abs=1e-12)
    assert classifier_block_ratio(U + rng.standard_normal(U.shape), Z) > 0.2
    with pytest.raises(ValueError, match="Z must be"):
        classifier_block_ratio(U, Z[:, :3])


def test_metric_errors():
    E, c = _collapsed()
    with pytest.raises(ValueError, match="one entry per row"):
        within_concept_ratio(E, c[:-1])
    with pytest.raises(ValueError, match="2-D"):
        within_concept_ratio(E[0], c)
    with pytest.raises(ValueError, match="identical"):
        within_concept_ratio(np.ones((4, 3)), np.array([0, 0, 1, 1]))
    with pytest.raises(ValueError, match="k must be"):
        pca_spectrum_ratio(E, 0)
    with pytest.raises(ValueError, match="one entry per row"):
        norm_frequency_spearman(E, np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        within_concept_ratio(np.full((3, 2), np.nan), np.array([0, 1, 1]))


def test_data_model():
    ds = ConceptSentenceDataset(3, 30, 6, 8, "zipf", seed=0)
    assert ds.Z.shape == (8, 6) and ds.mu.shape == (10,)
    assert ds.mu[0] == pytest.approx(ds.mu[4] * 5) and ds.mu.sum() == pytest.approx(1.0)
    tok, lab = ds.sample(4, rng=1)
    assert tok.shape == (32, 6) and lab.shape == (32,)
    assert np.array_equal(lab, np.repeat(np.arange(8), 4))
    # every word's concept is the latent's concept at that position
    assert np.array_equal(ds.concept_of_word[tok], np.repeat(ds.Z, 4, axis=0))
    tok2, _ = ds.sample(4, rng=1)
    assert np.array_equal(tok, tok2)
    test, _ = ds.sample(4, rng=2)
    assert not np.array_equal(tok, test)  # fresh beta draws, same latents
    assert np.array_equal(ds.concept_of_word[test], ds.concept_of_word[tok])
    big = ConceptSentenceDataset(3, 300, 15, 20, "zipf", seed=0).sample(200, rng=0)[0] % 100
    counts = np.bincount(big.ravel(), minlength=100)
    assert counts[0] > 20 * counts[99]  # Zipf: word 1 is 100x as frequent as word 100
    with pytest.raises(ValueError, match="multiple of n_concepts"):
        ConceptSentenceDataset(3, 31)
    with pytest.raises(ValueError, match="word_freq"):
        ConceptSentenceDataset(word_freq="pareto")
