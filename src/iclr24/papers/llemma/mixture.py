"""Continued pretraining on a weighted mixture of sources: the Llemma recipe (Sec. 2) in
miniature.

Llemma continues Code Llama on Proof-Pile-2 with the data weights of the official GPT-NeoX
configuration (EleutherAI/math-lm, ``pretraining/data_mixture.yml``): arXiv 2, OpenWebMath 4,
AlgebraicStack 1, plus general data as regularisation, a Pile sample 0.147 and RedPajama code
0.221 (so 95% Proof-Pile-2, 5% general). :data:`LLEMMA_WEIGHTS` records them.

:class:`MixtureSampler` draws documents: a source with probability ``w_s / sum(w)`` (seeded),
then that source's next document in a per-source shuffled order (reshuffled each epoch, so a
small source repeats as an upsampled one does). :meth:`MixtureSampler.token_stream` concatenates
drawn documents, separated by a document delimiter, to a requested length.
:func:`continue_pretraining` feeds such a stream to the kit's
:func:`~iclr24.kits.language_models.train_causal_lm` (AdamW, warm-up + cosine decay) for a fixed
number of steps, starting from the given model's weights.

What differs: NeoX blends pre-tokenised, packed 4,096-token sequences by weight; here documents
are drawn by weight (weights are per *document*, not per token; :attr:`token_shares` reports
the realised token shares), the model is a tiny byte-level transformer and the budget a few
hundred steps instead of 200B tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["LLEMMA_WEIGHTS", "MixtureSampler", "PretrainingReport", "continue_pretraining"]

# official data_mixture.yml: arxiv-rp, open-web-math, code-with-proofsteps, pile-sample, code-rp
LLEMMA_WEIGHTS: dict[str, float] = {"arxiv": 2.0, "web": 4.0, "code": 1.0,
                                    "general_text": 0.147368, "general_code": 0.221053}


class MixtureSampler:
    """Seeded draws of documents from ``sources`` ({name: documents}) with ``weights``
    ({name: weight >= 0}, not all zero; normalised here)."""

    def __init__(self, sources: Mapping[str, Iterable[str]], weights: Mapping[str, float],
                 seed: int = 0) -> None:
        if not isinstance(sources, Mapping) or not sources:
            raise ValueError("sources must be a non-empty mapping {name: documents}")
        if not isinstance(weights, Mapping):
            raise TypeError(f"weights must be a mapping {{name: weight}}, got "
                            f"{type(weights).__name__}")
        if set(weights) - set(sources):
            raise ValueError(f"weights name unknown sources: {sorted(set(weights) - set(sources))}")
        self.names = sorted(sources)
        self.docs: dict[str, list[str]] = {}
        for name in self.names:
            docs = [sources[name]] if isinstance(sources[name], str) else list(sources[name])
            if any(not isinstance(d, str) for d in docs):
                raise TypeError(f"sources[{name!r}] must hold strings")
            self.docs[name] = docs
        w = []
        for name in self.names:
            v = weights.get(name, 0.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise ValueError(f"weights[{name!r}] must be a number >= 0, got {v!r}")
            if v > 0 and not self.docs[name]:
                raise ValueError(f"sources[{name!r}] is empty but has weight {v}")
            w.append(float(v))
        total = sum(w)
        if total <= 0:
            raise ValueError("weights must not all be zero")
        self.probabilities = {n: v / total for n, v in zip(self.names, w)}
        self._p = np.array(w) / total
        self._rng = np.random.default_rng(seed)
        self._order: dict[str, list[int]] = {n: [] for n in self.names}
        self._counts = {n: 0 for n in self.names}
        self._chars = {n: 0 for n in self.names}

    def sample(self) -> tuple[str, str]:
        """(source name, document)."""
        name = self.names[int(self._rng.choice(len(self.names), p=self._p))]
        if not self._order[name]:  # a new epoch of this source
            self._order[name] = list(self._rng.permutation(len(self.docs[name])))
        doc = self.docs[name][self._order[name].pop()]
        self._counts[name] += 1
        self._chars[name] += len(doc)
        return name, doc

    def token_stream(self, n_bytes: int, separator: str = "\n\n") -> bytes:
        """UTF-8 bytes of drawn documents joined by ``separator``, cut to ``n_bytes``."""
        if isinstance(n_bytes, bool) or not isinstance(n_bytes, int) or n_bytes < 1:
            raise ValueError(f"n_bytes must be a positive int, got {n_bytes!r}")
        parts, size = [], 0
        while size < n_bytes:
            _, doc = self.sample()
            piece = (doc + separator).encode("utf-8")
            parts.append(piece)
            size += len(piece)
        return b"".join(parts)[:n_bytes]

    @property
    def document_counts(self) -> dict[str, int]:
        return dict(self._counts)

    @property
    def token_shares(self) -> dict[str, float]:
        """Realised share of characters per source among the documents drawn so far."""
        total = sum(self._chars.values()) or 1
        return {n: c / total for n, c in self._chars.items()}


@dataclass(frozen=True)
class PretrainingReport:
    """Per-step losses, the realised token shares and documents drawn per source."""

    losses: list[float]
    token_shares: dict[str, float]
    document_counts: dict[str, int]


def continue_pretraining(lm, sampler: MixtureSampler, steps: int, lr: float = 1e-3, *,
                         batch_size: int = 16, seq_len: int = 256, warmup_steps: int = 20,
                         seed: int = 0,
                         progress: Callable[..., None] | None = None) -> PretrainingReport:
    """Continue training ``lm`` (a :class:`~iclr24.kits.language_models.CausalTransformer`
    or a ``TransformerLM`` wrapping one, byte-level) in place for ``steps`` AdamW steps on a
    stream drawn from ``sampler`` (about two passes' worth of windows: steps x batch x seq_len
    bytes), with the kit's warm-up + cosine schedule. Returns a :class:`PretrainingReport`."""
    from iclr24.kits.language_models import CausalTransformer, TrainConfig, train_causal_lm

    model = getattr(lm, "model", lm)
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"lm must be a CausalTransformer or wrap one (.model), got "
                        f"{type(lm).__name__}")
    if not isinstance(sampler, MixtureSampler):
        raise TypeError(f"sampler must be a MixtureSampler, got {type(sampler).__name__}")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    n_bytes = max(steps * batch_size * seq_len // 2, 4 * seq_len)
    stream = sampler.token_stream(n_bytes)
    config = TrainConfig(steps=steps, batch_size=batch_size, seq_len=seq_len, lr=lr,
                         warmup_steps=min(warmup_steps, steps - 1), seed=seed)
    history = train_causal_lm(model, stream, config, progress=progress)
    return PretrainingReport(history.losses, sampler.token_shares, sampler.document_counts)
