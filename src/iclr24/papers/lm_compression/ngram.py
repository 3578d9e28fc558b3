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


_ORDER_SHIFT = 56          # table key = order << 56 | context id (contexts of <= 6 bytes)


class _Counts:
    """Trained counts of every order in one table: sorted keys ``order << 56 | context``, dense
    counts (N + 1, 256) as float32 (exact below 2^24; row N is all zeros, for contexts never
    seen), n(c) and u(c) per row."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray) -> None:
        self.keys = keys
        self.counts = np.vstack([counts, np.zeros((1, 256), np.float32)])
        self.n = self.counts.sum(axis=1, dtype=np.float32)
        self.u = (self.counts > 0).sum(axis=1).astype(np.float32)

    @property
    def size(self) -> int:
        return self.keys.size


class _NGramSession:
    """B sequences in lockstep, each with its own online counts, all orders at once.

    ``work`` holds the trained rows, the zero row, then per-(batch row, context) copies made on
    a row's first update of a context (copy-on-write), so one gather fetches every order's
    counts for every batch row. A context gets a dense id (its trained row, or an id past the
    trained ones for a context training never saw, through a dict: rare on in-domain data);
    ``slot[row, id]`` is the row of ``work`` holding that batch row's copy (0: none yet).
    """

    def __init__(self, model: AdaptiveNGramModel, batch_size: int) -> None:
        self.model = model
        self.batch_size = batch_size
        t = model._counts
        self._size = t.size
        orders = model.order + 1
        self._ctx = np.zeros((orders, batch_size), dtype=np.int64)    # last k bytes, per order
        self._masks = np.array([(1 << (8 * k)) - 1 for k in range(orders)], dtype=np.int64)
        self._order_keys = (np.arange(orders, dtype=np.int64) << _ORDER_SHIFT)[:, None]
        self._hist = 0                                                 # bytes fed (all rows)
        self._novel: dict[int, int] = {}
        self._slot = np.zeros((batch_size, t.size + 64), dtype=np.int64)
        rows = t.size + 1 + 8 * batch_size * orders
        self._work = np.zeros((rows, 256), np.float32)
        self._work[:t.size + 1] = t.counts
        self._n = np.zeros(rows, np.float32)
        self._n[:t.size + 1] = t.n
        self._u = np.zeros(rows, np.float32)
        self._u[:t.size + 1] = t.u
        self._used = t.size + 1
        self._rows = np.tile(np.arange(batch_size), orders)
        self._current: np.ndarray | None = None
        self._lookup: tuple[np.ndarray, np.ndarray] | None = None

    def _ids(self, k: int) -> np.ndarray:
        """Dense ids (k·B,) of the current contexts of orders 0..k−1, order-major."""
        keys = (self._order_keys[:k] | self._ctx[:k]).ravel()
        table = self.model._counts.keys
        n = self._size
        if n:
            ids = np.minimum(np.searchsorted(table, keys), n - 1)
            ids = np.where(table[ids] == keys, ids, n)
        else:
            ids = np.full(keys.shape, n, dtype=np.int64)
        unseen = np.flatnonzero(ids == n)
        if unseen.size:
            for j, key in zip(unseen.tolist(), keys[unseen].tolist()):
                ids[j] = n + 1 + self._novel.setdefault(key, len(self._novel))
            if ids.max() >= self._slot.shape[1]:
                grown = np.zeros((self.batch_size, 2 * int(ids.max()) + 1), dtype=np.int64)
                grown[:, :self._slot.shape[1]] = self._slot
                self._slot = grown
        return ids

    def next_probs(self) -> np.ndarray:
        """(B, 256) float32 next-byte probabilities of every row (float32 arithmetic: counts
        below 2^24 are exact, and the halved memory traffic is most of the step's cost)."""
        if self._current is not None:
            return self._current
        m = self.model
        b = self.batch_size
        k = min(m.order, self._hist) + 1                   # orders with a full context
        ids = self._ids(k)
        slots = self._slot[self._rows[:k * b], ids]
        where = np.where(slots > 0, slots, np.minimum(ids, self._size))
        self._lookup = (ids, where)
        n = self._n[where]                                                 # n(c_k)
        u = self._u[where] if m.smoothing == "witten_bell" else np.full(k * b, m.alpha,
                                                                         np.float32)
        seen = n > 0                                # an unseen context leaves p_{k-1} as it is
        denom = np.where(seen, n + u, np.float32(1))
        w_counts = np.where(seen, 1 / denom, np.float32(0)).reshape(k, b)
        w_prev = np.where(seen, u / denom, np.float32(1)).reshape(k, b)
        # p_k = (n(c_k, ·) + u_k·p_{k-1}) / (n(c_k) + u_k), unrolled from p_{-1} = uniform:
        # p = p_{-1}·Π_k w_prev_k + Σ_k n(c_k, ·)·w_counts_k·Π_{j>k} w_prev_j
        after = np.ones((k + 1, b), np.float32)
        after[:k] = np.cumprod(w_prev[::-1], axis=0)[::-1]           # after[k'] = Π_{j>=k'}
        coef = w_counts * after[1:]
        counts = self._work[where].reshape(k, b, 256)
        counts *= coef[:, :, None]
        p = counts.sum(axis=0)
        p += (after[0] / np.float32(256))[:, None]
        self._current = p
        return p

    def next_log_probs(self) -> np.ndarray:
        return np.log(self.next_probs().astype(np.float64))

    def _grow(self, need: int) -> None:
        if need <= self._work.shape[0]:
            return
        cap = max(need, self._work.shape[0] + 2 * (self._work.shape[0] - self._size))
        for name in ("_work", "_n", "_u"):
            old = getattr(self, name)
            arr = np.zeros((cap,) + old.shape[1:], np.float32)
            arr[:old.shape[0]] = old
            setattr(self, name, arr)

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
            ids, where = self._lookup
            sym = np.tile(toks, ids.size // self.batch_size)
            new = np.flatnonzero(where <= self._size)      # still reading a trained row
            if new.size:
                need = self._used + new.size
                self._grow(need)
                fresh = np.arange(self._used, need)
                for arr in (self._work, self._n, self._u):
                    arr[fresh] = arr[where[new]]           # copy-on-write of the trained counts
                self._slot[self._rows[new], ids[new]] = fresh
                where = where.copy()
                where[new] = fresh
                self._used = need
            self._u[where] += self._work[where, sym] == 0  # a byte never seen after this context
            self._work[where, sym] += 1                    # online update: n(c_k, b) += 1
            self._n[where] += 1
        self._ctx = ((self._ctx << 8) | toks[None, :]) & self._masks[:, None]
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
        self._counts = _Counts(np.zeros(0, dtype=np.int64), np.zeros((0, 256), np.float32))
        self.n_train_bytes = 0

    def fit(self, data: bytes) -> AdaptiveNGramModel:
        """Count every (context, byte) pair of ``data`` for context lengths 0..order."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        if len(data) == 0:
            raise ValueError("data must be non-empty to fit an n-gram model (empty corpus)")
        arr = np.frombuffer(bytes(data), dtype=np.uint8).astype(np.int64)
        keys, tables = [], []
        for k in range(self.order + 1):
            if arr.size > k:
                pairs = _context_ids(arr, k) * 256 + arr[k:]
                uniq, counts = np.unique(pairs, return_counts=True)
                ctxs, inv = np.unique(uniq // 256, return_inverse=True)
                table = np.zeros((ctxs.size, 256), dtype=np.float32)
                table[inv, uniq % 256] = counts
                keys.append((np.int64(k) << _ORDER_SHIFT) | ctxs)
                tables.append(table)
        self._counts = _Counts(np.concatenate(keys), np.concatenate(tables))
        self.n_train_bytes = len(data)
        return self

    @property
    def num_parameters(self) -> int:
        """Stored nonzero counts (each is one number the decoder must be shipped)."""
        return int(self._counts.u.sum())

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
