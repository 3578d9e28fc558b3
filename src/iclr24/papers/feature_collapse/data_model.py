"""The latent-concept sentence model of the paper (Sec. 2; official ``DataModel`` class).

n_c concepts each own s_c = n_w / n_c words; word (alpha, beta) has token id alpha * s_c + beta.
Within a concept, word beta has frequency mu_beta: uniform (1 / s_c) or Zipf (mu_beta ~ 1/beta).
K latent variables z_k in [n_c]^L are drawn once; a sentence of class k is
[(z_{k,1}, beta_1), ..., (z_{k,L}, beta_L)] with beta_l iid ~ mu. Train and test sentences come
from the *same* latents (fresh beta draws), so a learner generalises only by treating the words
of a concept as interchangeable.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["ConceptSentenceDataset"]


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


class ConceptSentenceDataset:
    """Sentences of L words over n_words = n_concepts * s_c words, K classes.

    Attributes: ``Z`` (K, L) latent concepts; ``mu`` (s_c,) within-concept word frequencies;
    ``concept_of_word`` (n_words,) alpha of every token id; ``word_frequency`` (n_words,)
    mu_beta of every token id.
    """

    def __init__(self, n_concepts: int = 3, n_words: int = 1200, L: int = 15, K: int = 1000,
                 word_freq: Literal["uniform", "zipf"] = "uniform", seed: int = 0):
        self.n_concepts = _positive_int(n_concepts, "n_concepts")
        self.n_words = _positive_int(n_words, "n_words")
        self.L = _positive_int(L, "L")
        self.K = _positive_int(K, "K")
        if self.n_words % self.n_concepts:
            raise ValueError(f"n_words ({n_words}) must be a multiple of n_concepts ({n_concepts})")
        if word_freq not in ("uniform", "zipf"):
            raise ValueError(f"word_freq must be 'uniform' or 'zipf', got {word_freq!r}")
        self.word_freq = word_freq
        self.words_per_concept = self.n_words // self.n_concepts
        rng = np.random.default_rng(seed)
        self.Z = rng.integers(0, self.n_concepts, size=(self.K, self.L))
        if word_freq == "zipf":
            mu = 1.0 / np.arange(1, self.words_per_concept + 1)  # mu_beta ~ 1 / beta
        else:
            mu = np.ones(self.words_per_concept)
        self.mu = mu / mu.sum()
        self.concept_of_word = np.repeat(np.arange(self.n_concepts), self.words_per_concept)
        self.word_frequency = np.tile(self.mu, self.n_concepts)

    def sample(self, n_per_class: int, rng: np.random.Generator | int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``n_per_class`` sentences per latent: tokens (K * n_per_class, L) int64 and labels
        (K * n_per_class,) int64, class-major (as the official ``repeat_interleave``)."""
        n_per_class = _positive_int(n_per_class, "n_per_class")
        rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        alpha = np.repeat(self.Z, n_per_class, axis=0)
        beta = rng.choice(self.words_per_concept, size=alpha.shape, p=self.mu)
        tokens = (alpha * self.words_per_concept + beta).astype(np.int64)  # id = alpha s_c + beta
        labels = np.repeat(np.arange(self.K), n_per_class).astype(np.int64)
        return tokens, labels
