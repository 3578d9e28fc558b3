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


class _OrderTable:
    """Trained counts of one order: sorted context ids, dense counts (n_ctx + 1, 256) as float32
    (exact for counts < 2^24; the last row is all zeros, for contexts never seen), n(c), u(c)."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray) -> None:
        self.keys = keys
        self.counts = np.vstack([counts, np.zeros((1, 256), np.float32)])
        self.n = self.counts.sum(axis=1, dtype=np.float32)
        self.u = (self.counts > 0).sum(axis=1).astype(np.float32)

    @property
    def size(self) -> int:
        return self.keys.size


class _OnlineCounts:
    """The counts B rows see for one order, trained + what each row has coded so far.

    ``work`` holds the trained rows, the zero row, then per-(row, context) copies made on a
    row's first update of a context (copy-on-write), so one gather fetches any row's counts. A
    context gets a dense id (its trained row, or a new id past the trained ones for a context
    training never saw, through a dict: rare on in-domain data); ``slot[row, id]`` is the row of
    ``work`` holding that row's copy (0: none yet, read the trained row).
    """

    def __init__(self, table: _OrderTable, batch_size: int) -> None:
        self.size = table.size                      # index of the zero row
        self.novel: dict[int, int] = {}
        self.keys = table.keys
        self.slot = np.zeros((batch_size, table.size + 16), dtype=np.int64)
        extra = 8 * batch_size
        self.work = np.zeros((table.size + 1 + extra, 256), np.float32)
        self.work[:table.size + 1] = table.counts
        self.n = np.zeros(self.work.shape[0], np.float32)
        self.n[:table.size + 1] = table.n
        self.u = np.zeros(self.work.shape[0], np.float32)
        self.u[:table.size + 1] = table.u
        self.used = table.size + 1

    def rows(self, rows: np.ndarray, ctx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dense context ids, rows of ``work``) for each batch row's context (B,)."""
        if self.keys.size:
            ids = np.minimum(np.searchsorted(self.keys, ctx), self.keys.size - 1)
            ids = np.where(self.keys[ids] == ctx, ids, self.size)
        else:
            ids = np.full(ctx.shape, self.size, dtype=np.int64)
        unseen = np.flatnonzero(ids == self.size)
        if unseen.size:
            for j, c in zip(unseen.tolist(), ctx[unseen].tolist()):
                ids[j] = self.size + 1 + self.novel.setdefault(c, len(self.novel))
            if ids.max() >= self.slot.shape[1]:
                grown = np.zeros((self.slot.shape[0], 2 * int(ids.max()) + 1), dtype=np.int64)
                grown[:, :self.slot.shape[1]] = self.slot
                self.slot = grown
        slots = self.slot[rows, ids]
        return ids, np.where(slots > 0, slots, np.minimum(ids, self.size))

    def add(self, rows: np.ndarray, ids: np.ndarray, where: np.ndarray, sym: np.ndarray) -> None:
        """Count byte ``sym`` after each row's context (``ids``/``where`` from :meth:`rows`)."""
        new = np.flatnonzero(where <= self.size)    # still reading a trained (or zero) row
        if new.size:
            need = self.used + new.size
            if need > self.work.shape[0]:
                cap = max(need, self.work.shape[0] + 2 * (self.work.shape[0] - self.size))
                for name in ("work", "n", "u"):
                    old = getattr(self, name)
                    arr = np.zeros((cap,) + old.shape[1:], np.float32)
                    arr[:old.shape[0]] = old
                    setattr(self, name, arr)
            fresh = np.arange(self.used, need)
            for arr in (self.work, self.n, self.u):
                arr[fresh] = arr[where[new]]        # copy-on-write of the trained counts
            self.slot[rows[new], ids[new]] = fresh
            where = where.copy()
            where[new] = fresh
            self.used = need
        self.u[where] += self.work[where, sym] == 0  # a byte never seen after this context
        self.work[where, sym] += 1                   # online update: n(c_k, b) += 1
        self.n[where] += 1


class _NGramSession:
    """B sequences in lockstep, each with its own online counts; every step is a few numpy
    operations on (B, 256) arrays per order."""

    def __init__(self, model: AdaptiveNGramModel, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        orders = model.order + 1
        self._ctx = np.zeros((orders, batch_size), dtype=np.int64)    # last k bytes, per order
        self._masks = [(1 << (8 * k)) - 1 for k in range(orders)]
        self._hist = 0                                                 # bytes fed (all rows)
        self._online = [_OnlineCounts(t, batch_size) for t in model._tables]
        self._rows = np.arange(batch_size)
        self._current: np.ndarray | None = None
        self._lookup: list[tuple[np.ndarray, np.ndarray]] = []

    def next_probs(self) -> np.ndarray:
        """(B, 256) float32 next-byte probabilities of every row (float32 arithmetic: counts
        below 2^24 are exact, and the halved memory traffic is most of the step's cost)."""
        if self._current is not None:
            return self._current
        m = self.model
        p = np.full((self.batch_size, 256), 1.0 / 256, np.float32)     # p_{-1} = uniform
        self._lookup = []
        for k in range(min(m.order, self._hist) + 1):
            online = self._online[k]
            ids, where = online.rows(self._rows, self._ctx[k])
            self._lookup.append((ids, where))
            n = online.n[where]                                        # n(c_k)
            u = online.u[where] if m.smoothing == "witten_bell" else \
                np.full(self.batch_size, m.alpha, np.float32)
            # p_k = (n(c,b) + u·p_{k-1}) / (n(c) + u); an unseen context (n = 0) keeps p_{k-1}
            seen = n > 0
            denom = np.where(seen, n + u, np.float32(1))
            p *= np.where(seen, u / denom, np.float32(1))[:, None]
            counts = online.work[where]
            counts *= np.where(seen, 1 / denom, np.float32(0))[:, None]
            p += counts
        self._current = p
        return p

    def next_log_probs(self) -> np.ndarray:
        return np.log(self.next_probs().astype(np.float64))

    def feed(self, tokens: Sequence[int]) -> None:
        toks = np.asarray([int(t) for t in tokens], dtype=np.int64)
        if toks.shape != (self.batch_size,):
            raise ValueError(f"feed expects {self.batch_size} tokens, got {toks.size}")
        if toks.size and (toks.min() < 0 or toks.max() >= 256):
            raise ValueError("byte tokens must lie in [0, 256)")
        m = self.model
        if m.adaptive:
            if self._current is None:
                self.next_probs()                          # fills the context look-ups
            for k, (ids, where) in enumerate(self._lookup):
                self._online[k].add(self._rows, ids, where, toks)
        for k in range(1, m.order + 1):
            self._ctx[k] = ((self._ctx[k] << 8) | toks) & self._masks[k]
        self._hist += 1
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
        empty = _OrderTable(np.zeros(0, dtype=np.int64), np.zeros((0, 256), np.float32))
        self._tables: list[_OrderTable] = [empty] * (order + 1)
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
            if arr.size > k:
                keys = _context_ids(arr, k) * 256 + arr[k:]
                uniq, counts = np.unique(keys, return_counts=True)
                ctxs, inv = np.unique(uniq // 256, return_inverse=True)
                table = np.zeros((ctxs.size, 256), dtype=np.float32)
                table[inv, uniq % 256] = counts
            else:
                ctxs, table = np.zeros(0, dtype=np.int64), np.zeros((0, 256), np.float32)
            self._tables.append(_OrderTable(ctxs, table))
        self.n_train_bytes = len(data)
        return self

    @property
    def num_parameters(self) -> int:
        """Stored nonzero counts (each is one number the decoder must be shipped)."""
        return int(sum(t.u.sum() for t in self._tables))

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
