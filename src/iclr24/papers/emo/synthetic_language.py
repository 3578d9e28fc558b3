"""A synthetic language whose true next-token distribution and token similarity are known.

EMO (Ren et al., ICLR 2024) argues that MLE ignores *which* wrong token gets probability and that
an earth mover objective with a semantic cost fixes this. Real text has no ground-truth
distribution, so the laptop-scale reproduction (spec "Laptop-scale reproduction") uses a language
where ``P*(· | prefix)`` is known exactly and where "semantically close" tokens exist by
construction:

* vocabulary = ``K`` clusters × ``S`` synonyms + one EOS token (id ``K·S``); token ``c·S + s``
  is synonym ``s`` of cluster ``c``;
* a first-order Markov chain over clusters: the next cluster depends on the previous token's
  cluster (rows ~ Dirichlet(0.1), sparsified by dropping entries below ``sparsify_below``);
  after a content token the sentence ends (EOS) with probability ``end_probability``; after EOS
  (or at the start) the cluster is drawn from a start distribution (also Dirichlet, sparsified);
* inside a cluster the synonym is drawn from a fixed Zipf(1.1) law over the ``S`` synonyms;
* every row is finally mixed with a uniform floor ``smoothing`` so that ``P* > 0`` everywhere and
  the reverse KL(Q‖P*) of any softmax model is finite.

Hence ``P*(x_t | x_<t) = table[x_{t-1}]``: a (V, V) transition table whose rows depend only on
the previous token's cluster. A fine-tuning domain is made with :meth:`SyntheticLanguage.shifted`
(a fraction of the cluster rows resampled from the same prior; spec: 30 %).

Sequences used by the EMO experiments start with the EOS token as context ("start of a
document"), so every predicted position has an exactly known true distribution.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["SyntheticLanguage", "make_language"]


def _check_positive_int(name: str, value: object) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _sparse_dirichlet(rng: np.random.Generator, alpha: float, size: int, rows: int,
                      threshold: float) -> np.ndarray:
    """Dirichlet(alpha) rows with entries < threshold zeroed (the arg-max always survives)."""
    probs = rng.dirichlet(np.full(size, alpha), size=rows)
    keep = probs >= threshold
    keep[np.arange(rows), probs.argmax(axis=1)] = True
    probs = np.where(keep, probs, 0.0)
    return probs / probs.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class SyntheticLanguage:
    """A clustered first-order Markov language with a known next-token distribution.

    Attributes
    ----------
    n_clusters, n_synonyms: K and S; ``vocab_size = K·S + 1`` (EOS last).
    cluster_transitions: (K, K) structured cluster transition rows (before EOS and smoothing).
    start_distribution: (K,) cluster distribution after EOS.
    synonym_distribution: (S,) the Zipf law of synonyms inside every cluster.
    end_probability: probability of EOS after a content token.
    smoothing: weight of the uniform floor mixed into every row.
    """

    n_clusters: int
    n_synonyms: int
    cluster_transitions: np.ndarray
    start_distribution: np.ndarray
    synonym_distribution: np.ndarray
    end_probability: float = 0.05
    smoothing: float = 1e-3

    def __post_init__(self) -> None:
        k, s = self.n_clusters, self.n_synonyms
        _check_positive_int("n_clusters", k)
        _check_positive_int("n_synonyms", s)
        if np.shape(self.cluster_transitions) != (k, k):
            raise ValueError(f"cluster_transitions must have shape ({k}, {k}), got "
                             f"{np.shape(self.cluster_transitions)}")
        if np.shape(self.start_distribution) != (k,):
            raise ValueError(f"start_distribution must have shape ({k},)")
        if np.shape(self.synonym_distribution) != (s,):
            raise ValueError(f"synonym_distribution must have shape ({s},)")
        for name in ("cluster_transitions", "start_distribution", "synonym_distribution"):
            arr = np.asarray(getattr(self, name), dtype=np.float64)
            if (arr < 0).any() or not np.allclose(arr.sum(axis=-1), 1.0, atol=1e-9):
                raise ValueError(f"{name} must hold probability vectors (non-negative, sum 1)")
        if not 0.0 <= self.end_probability < 1.0:
            raise ValueError(f"end_probability must be in [0, 1), got {self.end_probability!r}")
        if not 0.0 < self.smoothing < 1.0:
            raise ValueError(f"smoothing must be in (0, 1), got {self.smoothing!r}")

    # ------------------------------------------------------------------ structure
    @property
    def vocab_size(self) -> int:
        return self.n_clusters * self.n_synonyms + 1

    @property
    def eos_id(self) -> int:
        return self.n_clusters * self.n_synonyms

    @property
    def token_clusters(self) -> np.ndarray:
        """(V,) cluster id of each token; EOS gets its own cluster id ``K``."""
        return np.append(np.repeat(np.arange(self.n_clusters), self.n_synonyms), self.n_clusters)

    def structured_table(self) -> np.ndarray:
        """(V, V) next-token probabilities before the uniform floor (exact zeros kept)."""
        k, v = self.n_clusters, self.vocab_size
        syn = np.asarray(self.synonym_distribution, dtype=np.float64)
        # P(next token c'·S + s | previous cluster c) = (1 − p_end) T[c, c'] · Zipf(s)
        content = np.kron(np.asarray(self.cluster_transitions, dtype=np.float64), syn[None, :])
        rows_by_cluster = np.zeros((k + 1, v))
        rows_by_cluster[:k, :-1] = (1.0 - self.end_probability) * content
        rows_by_cluster[:k, -1] = self.end_probability
        # after EOS: a fresh sentence, cluster ~ start distribution, never EOS twice
        rows_by_cluster[k, :-1] = np.kron(np.asarray(self.start_distribution, np.float64), syn)
        return rows_by_cluster[self.token_clusters]

    def transition_table(self) -> np.ndarray:
        """(V, V) the true ``P*(x_t = j | x_{t-1} = i)`` with the uniform floor; rows sum to 1."""
        # P* = (1 − ε) · structured + ε / V
        return (1.0 - self.smoothing) * self.structured_table() + self.smoothing / self.vocab_size

    # ------------------------------------------------------------------ distributions
    def next_token_probs(self, sequences: torch.Tensor | np.ndarray) -> torch.Tensor:
        """True ``P*(· | x_<t)`` for t = 1..L-1 of each sequence.

        sequences: (B, L) token ids, L >= 2 -> (B, L-1, V) float64 probabilities.
        """
        seqs = self._check_sequences(sequences, "sequences")
        table = torch.as_tensor(self.transition_table(), device=seqs.device)
        return table[seqs[:, :-1]]

    def wrong_token_mask(self, sequences: torch.Tensor | np.ndarray) -> torch.Tensor:
        """(B, L-1, V) True where the structured (unsmoothed) P* is exactly zero: tokens of a
        cluster that cannot follow the prefix ("wrong cluster")."""
        seqs = self._check_sequences(sequences, "sequences")
        table = torch.as_tensor(self.structured_table() == 0.0, device=seqs.device)
        return table[seqs[:, :-1]]

    def log_likelihood(self, sequences: torch.Tensor | np.ndarray) -> torch.Tensor:
        """(B,) true log-probability of tokens 1..L-1 of each sequence given its first token."""
        seqs = self._check_sequences(sequences, "sequences")
        logp = torch.as_tensor(np.log(self.transition_table()), device=seqs.device)
        return logp[seqs[:, :-1], seqs[:, 1:]].sum(dim=1)

    # ------------------------------------------------------------------ sampling
    def sample(self, n_sequences: int, length: int, generator: np.random.Generator,
               first_token: int | None = None) -> torch.Tensor:
        """Draw ``n_sequences`` sequences of ``length`` tokens; token 0 is ``first_token``
        (default EOS: the start of a document) and tokens 1.. follow P*.

        Returns a (n_sequences, length) int64 tensor.
        """
        n = _check_positive_int("n_sequences", n_sequences)
        length = _check_positive_int("length", length)
        if not isinstance(generator, np.random.Generator):
            raise TypeError("generator must be a numpy.random.Generator")
        first = self.eos_id if first_token is None else int(first_token)
        if not 0 <= first < self.vocab_size:
            raise ValueError(f"first_token must be in [0, {self.vocab_size}), got {first_token}")
        cdf = np.cumsum(self.transition_table(), axis=1)
        cdf[:, -1] = 1.0
        out = np.empty((n, length), dtype=np.int64)
        out[:, 0] = first
        for t in range(1, length):
            u = generator.random(n)
            # inverse-CDF draw from row x_{t-1}
            out[:, t] = (u[:, None] >= cdf[out[:, t - 1]]).sum(axis=1)
        return torch.from_numpy(out)

    def sample_stream(self, n_tokens: int, generator: np.random.Generator,
                      n_chains: int = 32) -> torch.Tensor:
        """A 1-D token stream of ``n_tokens`` for window-based pre-training: ``n_chains`` long
        chains (each starting with EOS) concatenated. Only the ``n_chains − 1`` joins are not
        drawn from P* (the join always goes to EOS), a negligible fraction of the stream."""
        n_tokens = _check_positive_int("n_tokens", n_tokens)
        n_chains = min(_check_positive_int("n_chains", n_chains), n_tokens)
        per_chain = -(-n_tokens // n_chains)
        chains = self.sample(n_chains, per_chain, generator)
        return chains.reshape(-1)[:n_tokens]

    # ------------------------------------------------------------------ domains
    def shifted(self, fraction: float, generator: np.random.Generator,
                dirichlet_alpha: float = 0.1, sparsify_below: float = 0.02) -> SyntheticLanguage:
        """A related domain: ``round(fraction · K)`` cluster rows (and, if ``fraction > 0``, the
        start distribution with the same probability) resampled from the prior."""
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction!r}")
        k = self.n_clusters
        trans = np.array(self.cluster_transitions, dtype=np.float64, copy=True)
        n_new = round(fraction * k)
        rows = generator.choice(k, size=n_new, replace=False)
        if n_new:
            trans[rows] = _sparse_dirichlet(generator, dirichlet_alpha, k, n_new, sparsify_below)
        start = np.array(self.start_distribution, dtype=np.float64, copy=True)
        if fraction > 0 and generator.random() < fraction:
            start = _sparse_dirichlet(generator, dirichlet_alpha, k, 1, sparsify_below)[0]
        return SyntheticLanguage(k, self.n_synonyms, trans, start,
                                 np.array(self.synonym_distribution), self.end_probability,
                                 self.smoothing)

    def oracle_embedding(self, generator: torch.Generator | None = None,
                         noise: float = 0.1) -> torch.Tensor:
        """(V, K+1) cluster one-hot + N(0, noise²): a cost embedding that knows the synonyms
        (the spec's ablation of the cost embedding)."""
        onehot = torch.nn.functional.one_hot(torch.as_tensor(self.token_clusters),
                                             self.n_clusters + 1).to(torch.float64)
        return onehot + noise * torch.randn(onehot.shape, generator=generator,
                                            dtype=torch.float64)

    def _check_sequences(self, sequences: torch.Tensor | np.ndarray, name: str) -> torch.Tensor:
        seqs = torch.as_tensor(sequences)
        if seqs.dtype.is_floating_point or seqs.dtype == torch.bool or seqs.dim() != 2:
            raise TypeError(f"{name} must be a (batch, length) integer tensor")
        if seqs.shape[1] < 2:
            raise ValueError(f"{name} must have length >= 2, got {seqs.shape[1]}")
        if seqs.numel() and (int(seqs.min()) < 0 or int(seqs.max()) >= self.vocab_size):
            raise ValueError(f"{name} token ids must lie in [0, {self.vocab_size})")
        return seqs.long()


def make_language(n_clusters: int, n_synonyms: int, generator: np.random.Generator, *,
                  dirichlet_alpha: float = 0.1, sparsify_below: float = 0.02,
                  zipf_exponent: float = 1.1, end_probability: float = 0.05,
                  smoothing: float = 1e-3) -> SyntheticLanguage:
    """Draw a random :class:`SyntheticLanguage` (spec defaults: Dirichlet(0.1) rows, Zipf(1.1)
    synonyms). ``generator`` fixes the draw."""
    k = _check_positive_int("n_clusters", n_clusters)
    s = _check_positive_int("n_synonyms", n_synonyms)
    if not isinstance(generator, np.random.Generator):
        raise TypeError("generator must be a numpy.random.Generator")
    if dirichlet_alpha <= 0:
        raise ValueError(f"dirichlet_alpha must be > 0, got {dirichlet_alpha!r}")
    trans = _sparse_dirichlet(generator, dirichlet_alpha, k, k, sparsify_below)
    start = _sparse_dirichlet(generator, dirichlet_alpha, k, 1, sparsify_below)[0]
    # Zipf(a) over synonyms: p(s) ∝ (s + 1)^(−a)
    syn = (np.arange(1, s + 1, dtype=np.float64)) ** (-float(zipf_exponent))
    return SyntheticLanguage(k, s, trans, start, syn / syn.sum(), end_probability, smoothing)
