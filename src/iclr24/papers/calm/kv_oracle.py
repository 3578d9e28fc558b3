"""An oracle augmenting model for the KV-arithmetic test bed: exact features, no learning.

Not from the paper (Bansal et al., ICLR 2024, Sec. 4.1 uses a trained PaLM2-XXS as m_A). It is
the positive control of the KV claims: :class:`KVOracle` stands where m_A stands in
:class:`~.composition.CALM`, but its hidden state at every position states exactly the value of
the key whose last letter is there. If CALM cannot reach the bar on held-out keys even with
these features, the anchor and the composers cannot turn known values into arithmetic at this
size, and a low score of CALM with the trained m_A says nothing about composition.

Features at input position t (``ids[t]``; the kit's inputs are ``[BOS, text[:-1]]``):
``[one-hot(ids[t]) over the vocabulary + BOS | one-hot(value − low) if the maximal run of
letters ending at t is a key, else 0]``. The model reads causally (position t uses ids[..t]),
like any m_A under CALM's causal mask; with keys of several lengths a key that is the prefix of
another is flagged at its own last letter too, as a causal reader cannot know better.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .kv_data import VOCAB, CharVocab

__all__ = ["KVOracle", "OracleConfig"]


@dataclass(frozen=True)
class OracleConfig:
    """Width of the oracle's features (read by :class:`~.composition.CALM` as m_A's width)."""

    d_model: int


class KVOracle(nn.Module):
    """Exact key -> value features in the shape of a character model with ``n_layers`` blocks.

    values: key -> integer value (keys of lowercase letters); value_range: inclusive (low,
    high) containing every value; n_layers: identity blocks whose outputs CALM's hooks read;
    vocab: the character vocabulary (BOS id = ``len(vocab)``).
    ``forward(ids (B, T)) -> features (B, T, len(vocab) + 1 + high − low + 1)``.
    """

    def __init__(self, values: Mapping[str, int], value_range: tuple[int, int],
                 n_layers: int = 2, vocab: CharVocab = VOCAB) -> None:
        super().__init__()
        if not isinstance(values, Mapping) or not values:
            raise TypeError(f"values must be a non-empty mapping key -> int, got "
                            f"{type(values).__name__}")
        if not (isinstance(value_range, tuple) and len(value_range) == 2
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value_range)
                and value_range[0] <= value_range[1]):
            raise ValueError(f"value_range must be (low, high) ints with low <= high, got "
                             f"{value_range!r}")
        if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 1:
            raise ValueError(f"n_layers must be a positive int, got {n_layers!r}")
        lo, hi = value_range
        for key, value in values.items():
            if not isinstance(key, str) or not key or not key.isalpha() or not key.islower() \
                    or not key.isascii():
                raise ValueError(f"values keys must be non-empty lowercase ascii words, got "
                                 f"{key!r}")
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"values[{key!r}] must be an int in value_range {value_range}, "
                                 f"got {value!r}")
        vocab.encode("".join(values))  # every key letter must be in the vocabulary
        self.vocab = vocab
        self.values = dict(values)
        self.low = lo
        self.n_tokens = len(vocab) + 1
        self.config = OracleConfig(d_model=self.n_tokens + hi - lo + 1)
        self.blocks = nn.ModuleList(nn.Identity() for _ in range(n_layers))
        self._letters = {vocab.index[c] for c in "abcdefghijklmnopqrstuvwxyz"
                         if c in vocab.index}

    def features(self, ids: Tensor) -> Tensor:
        """ids: (B, T) integer ids in [0, len(vocab)] -> (B, T, d_model) float features."""
        if not isinstance(ids, Tensor) or ids.dtype.is_floating_point or ids.dim() != 2:
            raise TypeError(f"ids must be a (batch, seq) integer tensor, got "
                            f"{getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.n_tokens):
            raise ValueError(f"ids must lie in [0, {self.n_tokens}), got range "
                             f"[{int(ids.min())}, {int(ids.max())}]")
        b, t = ids.shape
        out = torch.zeros(b, t, self.config.d_model)
        out[torch.arange(b)[:, None], torch.arange(t)[None], ids] = 1.0  # token one-hot
        for r, row in enumerate(ids.tolist()):
            run = ""
            for j, token in enumerate(row):
                run = run + self.vocab.chars[token] if token in self._letters else ""
                value = self.values.get(run) if run else None
                if value is not None:
                    out[r, j, self.n_tokens + value - self.low] = 1.0  # the key's value
        return out

    def forward(self, ids: Tensor) -> Tensor:
        """The features passed through the identity blocks (so hooks on them see the
        features): (B, T, d_model)."""
        x = self.features(ids)
        for block in self.blocks:
            x = block(x)
        return x
