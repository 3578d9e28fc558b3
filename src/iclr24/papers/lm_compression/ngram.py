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
are its stored nonzero counts. Two additions for the compressor (not in the paper): a session's
rows may share one set of online counts (``session(B, shared_counts=True)``: lanes of one file
adapting together), and :meth:`AdaptiveNGramModel.adaptive_only` is the model without its
trained counts, which the compressor also tries on every group.
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
    """Trained counts of every order in one table: keys ``order << 56 | context`` (looked up
    through an open-addressing hash, ``tkeys``/``trow``), dense
    counts (N + 1, 256) as float32 (exact below 2^24; row N is all zeros, for contexts training
    never saw), the same rows in CSR form (``indptr``, ``indices``, ``values``: the mixture only
    visits nonzero counts), n(c) and u(c) per row."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray) -> None:
        self.keys = keys
        self.counts = np.vstack([counts, np.zeros((1, 256), np.float32)])
        self.n = self.counts.sum(axis=1, dtype=np.float32)
        self.u = (self.counts > 0).sum(axis=1).astype(np.float32)
        rows, cols = np.nonzero(self.counts)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows,
                                                                 minlength=len(self.counts)))])
        self.indices = cols.astype(np.int64)
        self.values = self.counts[rows, cols].astype(np.float64)
        from .numba_kernels import trained_hash

        self.tkeys, self.trow = trained_hash(keys)

    @property
    def size(self) -> int:
        return self.keys.size


class _NGramSession:
    """B sequences in lockstep, each with its own online counts (or, with ``shared_counts``,
    one set of online counts that every row reads and adds to), all orders at once.

    The trained table is shared and read-only; the online counts are sparse
    (``numba_kernels.OnlineCounts``), and one compiled call per step computes every row's
    mixture (``mixture_probs``) or counts the fed bytes (``update_counts``).
    """

    def __init__(self, model: AdaptiveNGramModel, batch_size: int,
                 shared_counts: bool = False) -> None:
        from .numba_kernels import OnlineCounts

        self.model = model
        self.batch_size = batch_size
        self.shared_counts = bool(shared_counts)
        orders = model.order + 1
        self._ctx = np.zeros((orders, batch_size), dtype=np.int64)    # last k bytes, per order
        self._masks = np.array([(1 << (8 * k)) - 1 for k in range(orders)], dtype=np.int64)
        self._hist = 0                                                 # bytes fed (all rows)
        self._online = OnlineCounts(capacity=64 * orders * batch_size)
        self._current: np.ndarray | None = None
        self._rows = np.zeros((orders, batch_size), dtype=np.int64)   # lookups of next_probs
        self._slots = np.zeros((orders, batch_size), dtype=np.int64)

    def _orders_with_context(self) -> int:
        return min(self.model.order, self._hist) + 1

    def next_probs(self) -> np.ndarray:
        """(B, 256) float64 next-byte probabilities of every row."""
        if self._current is not None:
            return self._current
        from .numba_kernels import mixture_probs

        m, t, o = self.model, self.model._counts, self._online
        out = np.empty((self.batch_size, 256))
        mixture_probs(out, self._rows, self._slots, self._ctx, self._orders_with_context(),
                      t.tkeys, t.trow, t.indptr, t.indices, t.values, t.n, t.u, o.hkeys,
                      o.hslot, o.sn, o.su, o.shead, o.sdense, o.dense, o.ebyte, o.ecount,
                      o.enext, m.smoothing == "witten_bell", m.alpha, self.shared_counts)
        self._current = out
        return out

    def next_log_probs(self) -> np.ndarray:
        return np.log(self.next_probs())

    def next_floored_probs(self, eps: float) -> np.ndarray:
        """``floor_pdf(next_probs())`` (B, 256) in one compiled call (the decoder's step)."""
        from .numba_kernels import floor_rows

        out, ok = floor_rows(self.next_probs(), eps)
        if not ok:
            raise ValueError("the n-gram mixture produced an invalid distribution")
        return out

    def block_probs(self, tokens: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """For the next K tokens of every row, known in advance (``tokens`` (K, B)): the
        ε-floored distributions (K, B, 256) that K rounds of ``floor_pdf(next_probs())`` and
        ``feed`` would give, and each token's unfloored probability (K, B); the session is left
        after feeding all K tokens. One compiled call instead of 3K Python-level calls (the
        encoder knows its tokens; the decoder cannot use this)."""
        from .numba_kernels import block_probs

        toks = np.ascontiguousarray(tokens, dtype=np.int64)
        if toks.ndim != 2 or toks.shape[1] != self.batch_size:
            raise ValueError(f"tokens must be (K, {self.batch_size}), got {toks.shape}")
        if toks.size and (toks.min() < 0 or toks.max() >= 256):
            raise ValueError("byte tokens must lie in [0, 256)")
        m, t, o = self.model, self.model._counts, self._online
        floored = np.empty((toks.shape[0], self.batch_size, 256))
        p_sym = np.empty(toks.shape)
        done = 0
        while done < toks.shape[0]:
            if m.adaptive:
                o.reserve((m.order + 1) * self.batch_size)  # room for at least one more step
            done = block_probs(floored, p_sym, toks, done, self._ctx, self._masks, self._hist,
                               m.order, m.adaptive, eps, t.tkeys, t.trow, t.indptr, t.indices,
                               t.values, t.n, t.u, t.counts, o.hkeys, o.hslot, o.sn, o.su,
                               o.shead, o.slen, o.sdense, o.dense, o.ebyte, o.ecount, o.enext,
                               o.used, m.smoothing == "witten_bell", m.alpha,
                               self.shared_counts)
            if done < 0:
                raise ValueError("the n-gram mixture produced an invalid distribution")
        self._hist += toks.shape[0]
        self._current = None
        return floored, p_sym

    def feed(self, tokens: Sequence[int] | np.ndarray) -> None:
        toks = np.ascontiguousarray(tokens, dtype=np.int64)
        if toks.shape != (self.batch_size,):
            raise ValueError(f"feed expects {self.batch_size} tokens, got {toks.size}")
        if toks.size and (toks.min() < 0 or toks.max() >= 256):
            raise ValueError("byte tokens must lie in [0, 256)")
        if self.model.adaptive:
            from .numba_kernels import update_counts

            t, o = self.model._counts, self._online
            k = self._orders_with_context()
            o.reserve(k * self.batch_size)
            update_counts(toks, self._ctx, k, t.tkeys, t.trow, self._rows, self._slots,
                          self._current is not None, t.counts, o.hkeys, o.hslot, o.sn, o.su,
                          o.shead, o.slen, o.sdense, o.dense, o.ebyte, o.ecount, o.enext,
                          o.used, self.shared_counts)  # n(c_k, b) += 1
        from .numba_kernels import advance_contexts

        advance_contexts(self._ctx, toks, self._masks)  # c_k <- last k bytes
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
        if not isinstance(adaptive, bool):
            raise TypeError(f"adaptive must be a bool, got {adaptive!r}")
        self.order = order
        self.smoothing = smoothing
        self.alpha = float(alpha)
        self.adaptive = adaptive
        self.vocab_size = 256
        self.context_length: int | None = None
        self.tokenizer = ByteTokenizer()
        self._counts = _Counts(np.zeros(0, dtype=np.int64), np.zeros((0, 256), np.float32))
        self.n_train_bytes = 0
        self._adaptive_only: AdaptiveNGramModel | None = None

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

    def session(self, batch_size: int = 1, *, shared_counts: bool = False) -> _NGramSession:
        """B rows in lockstep; ``shared_counts``: the rows adapt one set of online counts
        together (parts of one file), instead of each its own (independent chunks, the
        paper's protocol)."""
        if not isinstance(shared_counts, bool):
            raise TypeError(f"shared_counts must be a bool, got {shared_counts!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if batch_size * (self.order + 1) >= 1 << 15:  # online keys: (row, order) in 15 bits
            raise ValueError(f"batch_size must be < {(1 << 15) // (self.order + 1)} for order "
                             f"{self.order}, got {batch_size}")
        return _NGramSession(self, batch_size, shared_counts)

    def adaptive_only(self) -> AdaptiveNGramModel:
        """The same model without its trained counts: it learns only from the data it codes
        (the variant :func:`~.model_coding.compress` also tries, so that data unlike the
        training text is never coded worse than by the model's own adaptive part). An unfitted
        adaptive model is its own variant."""
        if self.n_train_bytes == 0 and self.adaptive:
            return self
        if self._adaptive_only is None:
            self._adaptive_only = AdaptiveNGramModel(self.order, self.smoothing, self.alpha,
                                                     adaptive=True)
        return self._adaptive_only

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray:
        """(T, 256): row t = log p(· | tokens[:t]) (computed exactly as a session does)."""
        toks = [int(t) for t in tokens]
        sess = self.session(1)
        rows = []
        for t in toks:
            rows.append(sess.next_log_probs()[0])
            sess.feed([t])
        return np.stack(rows) if rows else np.zeros((0, 256))
