"""History-based novelty rewards of curiosity-driven red teaming (Hong et al., ICLR 2024,
Sec. 3, "Novelty rewards"; official code Improbable-AI/curiosity_redteam, ``SelfBleuReward``
and the cosine-similarity reward).

- :class:`SelfBleuNovelty`: SelfBLEU_X(x, n), the BLEU of a new test case x (hypothesis)
  against ALL earlier test cases X (references), one BLEU per order n with uniform weights over
  1..n, averaged over the orders N = {2, 3, 4, 5}. The novelty reward is its negative,
  B_SelfBLEU(x) = −Σ_n SelfBLEU_X(x, n) (the paper), i.e. a negative coefficient times
  :meth:`SelfBleuNovelty.score` (the official code).
- :class:`EmbeddingNovelty`: mean_{x'∈X} cos(φ(x), φ(x')), B_Cos(x) = −that.
- :class:`HashingEmbedder`: φ for the synthetic world (word 1-2-gram hashing, L2-normalised);
  all-MiniLM-L6-v2 (``iclr24.kits.language_models.embed``) is the paper's φ and plugs in the
  same way.

Both scorers keep the history and are used score-then-append: :meth:`score` reads only what
:meth:`add` stored before, so the first batch (empty history) scores 0 and within-batch
duplicates are not penalised (as in the official code).

BLEU is NLTK's ``sentence_bleu`` with smoothing method 1 (what ``fast-bleu``, the official
library, implements). Scoring against a history of thousands of references is made cheap
without changing the result: BLEU reads, per hypothesis n-gram, only the largest count any
reference has, and the reference lengths. The history keeps, per n-gram, the references with
the largest counts and one reference per length, and NLTK is given just those (exactly the same
score as the full history; a test checks it). ``sample_size`` instead scores against a random
subset of the history (the official option). Tokeniser: NLTK's ``wordpunct_tokenize`` (the
official ``word_tokenize`` needs the punkt data, which is not shipped offline).
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import numpy as np

__all__ = [
    "EmbeddingNovelty",
    "HashingEmbedder",
    "SelfBleuNovelty",
    "mean_pairwise_cosine",
    "self_bleu_leave_one_out",
]


def _default_tokenizer() -> Callable[[str], list[str]]:
    from nltk.tokenize import wordpunct_tokenize

    return wordpunct_tokenize


def _check_texts(texts: Sequence[str], name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise TypeError(f"{name} must be a sequence of str, not one str (wrap it in a list)")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(t).__name__}")
    return out


def _check_sample_size(sample_size: int | None) -> int | None:
    if sample_size is not None and (isinstance(sample_size, bool)
                                    or not isinstance(sample_size, int) or sample_size < 1):
        raise ValueError(f"sample_size must be a positive int or None, got {sample_size!r}")
    return sample_size


def _ngrams(tokens: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return (tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


class _ReferenceIndex:
    """For each n-gram (n ≤ max_n), the ``keep`` references with the largest counts (distinct
    ids), and ``keep`` reference ids per length: everything BLEU reads from a reference set,
    with ``keep = 2`` also when one reference (the hypothesis itself) is left out."""

    def __init__(self, max_n: int, keep: int) -> None:
        self.max_n, self.keep = max_n, keep
        self.refs: list[list[str]] = []
        self.best: dict[tuple[str, ...], list[tuple[int, int]]] = {}
        self.by_length: dict[int, list[int]] = {}

    def add(self, tokens: list[str]) -> None:
        rid = len(self.refs)
        self.refs.append(tokens)
        for n in range(1, self.max_n + 1):
            for g, c in Counter(_ngrams(tokens, n)).items():
                top = self.best.setdefault(g, [])
                if len(top) < self.keep or c > top[-1][0]:
                    top.append((c, rid))
                    top.sort(key=lambda e: -e[0])
                    del top[self.keep:]
        ids = self.by_length.setdefault(len(tokens), [])
        if len(ids) < self.keep:
            ids.append(rid)

    def relevant(self, tokens: list[str], exclude: int | None = None) -> list[list[str]]:
        """The references that give the same BLEU for ``tokens`` as the whole set (minus
        ``exclude``)."""
        ids: set[int] = set()
        for n in range(1, self.max_n + 1):
            for g in set(_ngrams(tokens, n)):
                for _, rid in self.best.get(g, ()):
                    if rid != exclude:
                        ids.add(rid)
                        break
        for same_length in self.by_length.values():
            for rid in same_length:
                if rid != exclude:
                    ids.add(rid)
                    break
        return [self.refs[i] for i in sorted(ids)]


def _bleu_orders(references: list[list[str]], hypothesis: list[str],
                 orders: tuple[int, ...]) -> float:
    """Mean over n ∈ orders of BLEU-n (uniform weights over 1..n, smoothing method 1)."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    if not references or not hypothesis:
        return 0.0
    weights = [tuple([1.0 / n] * n) for n in orders]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NLTK warns when a hypothesis is shorter than n
        scores = sentence_bleu(references, hypothesis, weights=weights,
                               smoothing_function=SmoothingFunction().method1)
    return float(np.mean(scores))


class SelfBleuNovelty:
    """SelfBLEU of new test cases against the history of earlier ones.

    orders: BLEU orders N averaged (official: (2, 3, 4, 5) for instruction tasks, (3, 4, 5)
    by default); tokenizer: str -> tokens; sample_size: score against a random subset of this
    many history entries (``None``: all of it, exactly); seed: the subset's generator.
    """

    def __init__(self, orders: Sequence[int] = (2, 3, 4, 5),
                 tokenizer: Callable[[str], list[str]] | None = None,
                 sample_size: int | None = None, seed: int = 0) -> None:
        orders = tuple(orders)
        if not orders or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                             for n in orders):
            raise ValueError(f"orders must be a non-empty sequence of positive ints, got "
                             f"{orders!r}")
        if tokenizer is not None and not callable(tokenizer):
            raise TypeError(f"tokenizer must be callable (str -> list of str), got {tokenizer!r}")
        self.orders = orders
        self.tokenizer = tokenizer or _default_tokenizer()
        self.sample_size = _check_sample_size(sample_size)
        self._rng = np.random.default_rng(seed)
        self._index = _ReferenceIndex(max(orders), keep=1)

    def __len__(self) -> int:
        return len(self._index.refs)

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """SelfBLEU_X(x) of each text against the stored history: (n,) in [0, 1]; zeros when
        the history is empty. Does not change the history."""
        items = _check_texts(texts)
        out = np.zeros(len(items))
        refs_all = self._index.refs
        if not refs_all:
            return out
        subset = None
        if self.sample_size is not None and self.sample_size < len(refs_all):
            pick = self._rng.choice(len(refs_all), self.sample_size, replace=False)
            subset = [refs_all[i] for i in pick]
        cache: dict[str, float] = {}
        for i, text in enumerate(items):
            if text not in cache:
                tokens = self.tokenizer(text)
                refs = subset if subset is not None else self._index.relevant(tokens)
                cache[text] = _bleu_orders(refs, tokens, self.orders)
            out[i] = cache[text]
        return out

    def add(self, texts: Sequence[str]) -> None:
        """Append texts to the history (after scoring their batch)."""
        for text in _check_texts(texts):
            self._index.add(self.tokenizer(text))


def self_bleu_leave_one_out(texts: Sequence[str], orders: Sequence[int] = (2, 3, 4, 5),
                            tokenizer: Callable[[str], list[str]] | None = None) -> np.ndarray:
    """SelfBLEU of each text against all the others (the evaluation's diversity, 1 − mean of
    this): (n,); zeros for fewer than 2 texts."""
    items = _check_texts(texts)
    orders = tuple(orders)
    tok = tokenizer or _default_tokenizer()
    out = np.zeros(len(items))
    if len(items) < 2:
        return out
    index = _ReferenceIndex(max(orders), keep=2)
    tokens = [tok(t) for t in items]
    for t in tokens:
        index.add(t)
    first: dict[str, int] = {}
    for i, text in enumerate(items):
        first.setdefault(text, i)
    # copies of a text share one score: leaving out the first copy keeps the others
    value = {text: _bleu_orders(index.relevant(tokens[i], exclude=i), tokens[i], orders)
             for text, i in first.items()}
    out[:] = [value[text] for text in items]
    return out


class HashingEmbedder:
    """φ(x) for the synthetic world: word 1-2-gram counts hashed into ``n_features`` buckets,
    L2-normalised (scikit-learn's ``HashingVectorizer``; stateless, so history and new batches
    share one space). Call: texts -> (n, n_features) float32."""

    def __init__(self, n_features: int = 4096, ngram_range: tuple[int, int] = (1, 2)) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer

        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 2:
            raise ValueError(f"n_features must be an int >= 2, got {n_features!r}")
        self._vec = HashingVectorizer(n_features=n_features, ngram_range=ngram_range,
                                      alternate_sign=False, norm="l2",
                                      token_pattern=r"(?u)\b\w+\b")

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        items = _check_texts(texts)
        return self._vec.transform(items).astype(np.float32).toarray()


def _unit_rows(x: np.ndarray, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"{name} must return a 2-D array (n_texts, dim), got shape {x.shape}")
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)


def mean_pairwise_cosine(vectors: np.ndarray) -> float:
    """Mean cos(φ_i, φ_j) over pairs i ≠ j of the rows of ``vectors`` (n, d); 0 for n < 2."""
    e = _unit_rows(vectors, "vectors")
    n = len(e)
    if n < 2:
        return 0.0
    s = e.sum(axis=0)
    # Σ_{i≠j} e_i·e_j = |Σ e|² − Σ |e_i|²
    return float((s @ s - (e * e).sum()) / (n * (n - 1)))


class EmbeddingNovelty:
    """Mean cosine similarity of new test cases to the history, mean_{x'∈X} cos(φ(x), φ(x')).

    embedder: callable texts -> (n, d) array (rows are normalised here); sample_size: compare
    with a random subset of the history instead of all of it; seed: the subset's generator.
    """

    def __init__(self, embedder: Callable[[Sequence[str]], np.ndarray],
                 sample_size: int | None = None, seed: int = 0) -> None:
        if not callable(embedder):
            raise TypeError(f"embedder must be callable (texts -> (n, d) array), got "
                            f"{embedder!r}")
        self.embedder = embedder
        self.sample_size = _check_sample_size(sample_size)
        self._rng = np.random.default_rng(seed)
        self._rows: list[np.ndarray] = []
        self._sum: np.ndarray | None = None
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _embed(self, items: list[str]) -> np.ndarray:
        return _unit_rows(self.embedder(items), "embedder")

    def score(self, texts: Sequence[str]) -> np.ndarray:
        """mean cos to the stored history: (n,); zeros when the history is empty."""
        items = _check_texts(texts)
        if self._n == 0 or not items:
            return np.zeros(len(items))
        e = self._embed(items)
        if self.sample_size is not None and self.sample_size < self._n:
            hist = np.concatenate(self._rows)
            pick = self._rng.choice(self._n, self.sample_size, replace=False)
            return e @ hist[pick].mean(axis=0)
        # mean_{x'} φ(x)·φ(x') = φ(x)·(Σ φ(x'))/|X| (unit vectors)
        return e @ self._sum / self._n

    def add(self, texts: Sequence[str]) -> None:
        """Append texts to the history (after scoring their batch)."""
        items = _check_texts(texts)
        if not items:
            return
        e = self._embed(items)
        self._sum = e.sum(axis=0) if self._sum is None else self._sum + e.sum(axis=0)
        if self.sample_size is not None:
            self._rows.append(e)
        self._n += len(items)
