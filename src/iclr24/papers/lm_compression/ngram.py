"""An adaptive byte n-gram model: the cheap predictive model of the spec's laptop reproduction.

Counts of (context, next byte) for context lengths 0..order are collected from training bytes
(:meth:`AdaptiveNGramModel.fit`) and then updated online while a sequence is coded (each
sequence starts again from the trained counts). The distribution interpolates the orders with
Witten–Bell weights (PPM method C's escape estimate, no free parameter)::

    p_{-1}(b) = 1/256
    p_k(b | c_k) = (n(c_k, b) + u(c_k) · p_{k-1}(b)) / (n(c_k) + u(c_k))      k = 0..order

where n(c_k, b) counts byte b after the last k bytes c_k, n(c_k) = Σ_b n(c_k, b) and u(c_k) is
the number of distinct bytes seen after c_k (an unseen context leaves p_{k-1} unchanged).
With ``smoothing="dirichlet"`` u(c_k) is replaced by a constant ``alpha`` (KT for 0.5 at order 0).

The model speaks the kit's backend interface (``log_probs``, ``session``, ``generate``), so it
plugs into the same coder as the transformer. Its "parameters" for the adjusted compression rate
are its stored nonzero counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from iclr24.kits.language_models import ByteTokenizer, LanguageModelBase

__all__ = ["AdaptiveNGramModel"]


def _context_ids(data: np.ndarray, k: int) -> np.ndarray:
    """Integer id of the k bytes before each position t ≥ k (big-endian base-256)."""
    n = data.size
    ids = np.zeros(n - k, dtype=np.int64)
    for j in range(k):
        ids = ids * 256 + data[j:n - k + j]
    return ids


class _NGramSession:
    def __init__(self, model: AdaptiveNGramModel, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        self._history: list[list[int]] = [[] for _ in range(batch_size)]
        # copy-on-write overlays of the trained counts, per row and order:
        # ctx -> [counts (256,), n(c) = Σ counts, u(c) = #nonzero counts]
        self._local: list[list[dict[int, list]]] = [
            [{} for _ in range(model.order + 1)] for _ in range(batch_size)]
        self._current: np.ndarray | None = None

    def _entry(self, row: int, k: int, ctx: int) -> list | None:
        local = self._local[row][k]
        if ctx in local:
            return local[ctx]
        return self.model._tables[k].get(ctx)

    def _ctx(self, hist: list[int], k: int) -> int | None:
        if len(hist) < k:
            return None
        ctx = 0
        for b in hist[len(hist) - k:]:
            ctx = ctx * 256 + b
        return ctx

    def _row_probs(self, row: int) -> np.ndarray:
        hist = self._history[row]
        p = np.full(256, 1.0 / 256)
        for k in range(self.model.order + 1):
            ctx = self._ctx(hist, k)
            if ctx is None:
                break
            entry = self._entry(row, k, ctx)
            if entry is None or entry[1] == 0:
                continue
            counts, n, u = entry
            if self.model.smoothing != "witten_bell":
                u = self.model.alpha
            p = (counts + u * p) / (n + u)  # p_k = (n(c,b) + u·p_{k-1}) / (n(c) + u)
        return p

    def next_log_probs(self) -> np.ndarray:
        if self._current is None:
            self._current = np.log(np.stack([self._row_probs(r) for r in
                                             range(self.batch_size)]))
        return self._current

    def feed(self, tokens: Sequence[int]) -> None:
        toks = [int(t) for t in tokens]
        if len(toks) != self.batch_size:
            raise ValueError(f"feed expects {self.batch_size} tokens, got {len(toks)}")
        if any(not 0 <= t < 256 for t in toks):
            raise ValueError("byte tokens must lie in [0, 256)")
        for row, b in enumerate(toks):
            hist = self._history[row]
            if self.model.adaptive:
                for k in range(self.model.order + 1):
                    ctx = self._ctx(hist, k)
                    if ctx is None:
                        break
                    local = self._local[row][k]
                    if ctx not in local:
                        base = self.model._tables[k].get(ctx)
                        local[ctx] = ([base[0].copy(), base[1], base[2]] if base is not None
                                      else [np.zeros(256, dtype=np.float64), 0.0, 0.0])
                    entry = local[ctx]
                    if entry[0][b] == 0:
                        entry[2] += 1.0  # a new distinct byte after this context
                    entry[0][b] += 1  # online update: n(c_k, b) += 1
                    entry[1] += 1.0
            hist.append(b)
            if len(hist) > self.model.order:
                del hist[0]
        self._current = None


class AdaptiveNGramModel(LanguageModelBase):
    """Byte n-gram predictor of ``order`` (context of ``order`` previous bytes).

    Parameters follow scikit-learn: hyper-parameters in ``__init__``, ``fit(data)`` counts.
    ``adaptive``: also count the bytes of the sequence being coded, as it is coded.
    """

    def __init__(self, order: int = 3, smoothing: Literal["witten_bell", "dirichlet"] =
                 "witten_bell", alpha: float = 0.5, adaptive: bool = True) -> None:
        if not isinstance(order, int) or isinstance(order, bool) or not 0 <= order <= 6:
            raise ValueError(f"order must be an int in [0, 6], got {order!r}")
        if smoothing not in ("witten_bell", "dirichlet"):
            raise ValueError(f"smoothing must be 'witten_bell' or 'dirichlet', got {smoothing!r}")
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha!r}")
        self.order = order
        self.smoothing = smoothing
        self.alpha = float(alpha)
        self.adaptive = adaptive
        self.vocab_size = 256
        self.context_length: int | None = None
        self.tokenizer = ByteTokenizer()
        # per order: ctx id -> (counts (256,), n(c), u(c))
        self._tables: list[dict[int, tuple]] = [{} for _ in range(order + 1)]
        self.n_train_bytes = 0

    def fit(self, data: bytes) -> AdaptiveNGramModel:
        """Count every (context, byte) pair of ``data`` for context lengths 0..order."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) == 0:
            raise ValueError("data must be non-empty to fit an n-gram model (empty corpus)")
        arr = np.frombuffer(bytes(data), dtype=np.uint8).astype(np.int64)
        self._tables = []
        for k in range(self.order + 1):
            table: dict[int, tuple] = {}
            if arr.size > k:
                keys = _context_ids(arr, k) * 256 + arr[k:]
                uniq, counts = np.unique(keys, return_counts=True)
                ctxs, syms = uniq // 256, uniq % 256
                bounds = np.flatnonzero(np.diff(ctxs)) + 1
                for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, uniq.size]):
                    row = np.zeros(256, dtype=np.float64)
                    row[syms[lo:hi]] = counts[lo:hi]
                    table[int(ctxs[lo])] = (row, float(counts[lo:hi].sum()), float(hi - lo))
            self._tables.append(table)
        self.n_train_bytes = len(data)
        return self

    @property
    def num_parameters(self) -> int:
        """Stored nonzero counts (each is one number the decoder must be shipped)."""
        return int(sum(e[2] for t in self._tables for e in t.values()))

    def session(self, batch_size: int = 1) -> _NGramSession:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        return _NGramSession(self, batch_size)

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray:
        """(T, 256): row t = log p(· | tokens[:t]) (computed exactly as a session does)."""
        toks = [int(t) for t in tokens]
        sess = self.session(1)
        rows = []
        for t in toks:
            rows.append(sess.next_log_probs()[0])
            sess.feed([t])
        return np.stack(rows) if rows else np.zeros((0, 256))
