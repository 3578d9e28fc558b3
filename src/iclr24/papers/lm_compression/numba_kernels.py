"""Compiled (numba) kernels of the coder's hot path: the n-gram session's Witten–Bell mixture
for B rows and its online count update (one call each per coding step), and the ε-floor of a
(B, V) float64 batch (``floor_rows``, used by ``range_coding.floor_pdf``).

Counts are split in two: the trained table (shared, read-only: sorted keys ``order << 56 |
context`` and dense rows) and each batch row's *online* counts, kept sparse — a hash table maps
``(row, order, context)`` to a slot, and a slot holds n(c), u(c) and a short linked list of
(byte, count) entries; a slot whose list reaches ``PROMOTE`` distinct bytes (low orders: the
order-0 context, frequent order-1 contexts) moves to a dense 256-wide row, so no step walks a
long, cache-hostile list. With ``shared`` every row uses row 0's online counts (the
compressor's lanes: parts of one file coded in lockstep, adapting together; rows read the
counts of the steps before and are counted in row order, identically when decoding). The
mixture is computed from the lowest order up,

    p_{-1}(b) = 1/256,   p_k(b) = (n_train(c_k, b) + n_online(c_k, b) + u_k p_{k-1}(b)) / (n_k + u_k)

(an unseen context leaves p_{k-1} unchanged), which is the formula of ``ngram``'s docstring;
``mixture_probs`` evaluates it unrolled, visiting nonzero counts only.
Memory grows with the online entries (at most ``(order + 1)`` per row and step) and the few
dense rows, never by copying trained rows. Arrays that fill up are grown by the Python caller (``OnlineCounts``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["OnlineCounts", "advance_contexts", "block_probs", "floor_rows", "mixture_probs", "trained_hash",
           "update_counts"]

_EMPTY = -1
PROMOTE = 16


@njit(cache=True)
def _trained_row(tkeys: np.ndarray, trow: np.ndarray, key: np.int64) -> np.int64:
    """Row of ``key`` in the trained table through its hash (:func:`trained_hash`), or the
    all-zero row ``trow[-1]`` for a context training never saw."""
    mask = tkeys.size - 1
    h = _bucket(key, mask)  # power-of-two table, linear probing
    while True:
        k = tkeys[h]
        if k == key:
            return trow[h]
        if k == _EMPTY:
            return trow[tkeys.size]  # the all-zero row, for contexts training never saw
        h = (h + 1) & mask


@njit(cache=True)
def _fill_trained_hash(keys: np.ndarray, tkeys: np.ndarray, trow: np.ndarray) -> None:
    mask = tkeys.size - 1
    for i in range(keys.size):
        h = _bucket(keys[i], mask)
        while tkeys[h] != _EMPTY:
            h = (h + 1) & mask
        tkeys[h] = keys[i]
        trow[h] = i
    trow[tkeys.size] = keys.size


def trained_hash(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Open-addressing table over the trained keys (load factor <= 1/4): ``(tkeys, trow)``,
    ``trow[h]`` the row of ``tkeys[h]`` and ``trow[-1]`` the all-zero row (``len(keys)``).
    One probe per lookup, where a binary search over the sorted keys took ~log2(N) cache
    misses."""
    size = 1 << max(4 * int(keys.size) - 1, 63).bit_length()
    tkeys = np.full(size, _EMPTY, dtype=np.int64)
    trow = np.zeros(size + 1, dtype=np.int64)
    _fill_trained_hash(np.ascontiguousarray(keys, dtype=np.int64), tkeys, trow)
    return tkeys, trow


@njit(cache=True)
def _bucket(key: np.int64, mask: int) -> np.int64:
    """splitmix64's finaliser: every key bit reaches the low bits the table uses."""
    x = np.uint64(key)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return np.int64(x & np.uint64(mask))


@njit(cache=True)
def _find_slot(hkeys: np.ndarray, hslot: np.ndarray, key: np.int64) -> np.int64:
    mask = hkeys.size - 1
    h = _bucket(key, mask)  # power-of-two table, linear probing
    while True:
        k = hkeys[h]
        if k == key:
            return hslot[h]
        if k == _EMPTY:
            return -1
        h = (h + 1) & mask


@njit(cache=True)
def _insert_slot(hkeys: np.ndarray, hslot: np.ndarray, key: np.int64, slot: np.int64) -> None:
    mask = hkeys.size - 1
    h = _bucket(key, mask)
    while hkeys[h] != _EMPTY:
        h = (h + 1) & mask
    hkeys[h] = key
    hslot[h] = slot


@njit(cache=True)
def _online_key(row: int, k: int, orders: int, ctx: np.int64) -> np.int64:
    return (np.int64(row * orders + k) << 48) | ctx


@njit(cache=True)
def mixture_probs(out: np.ndarray, rows_out: np.ndarray, slots_out: np.ndarray,
                  ctx: np.ndarray, n_orders: int, tkeys: np.ndarray, trow: np.ndarray,
                  indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, tn: np.ndarray,
                  tu: np.ndarray, hkeys: np.ndarray, hslot: np.ndarray, sn: np.ndarray,
                  su: np.ndarray, shead: np.ndarray, sdense: np.ndarray, dense: np.ndarray,
                  ebyte: np.ndarray, ecount: np.ndarray, enext: np.ndarray, witten_bell: bool,
                  alpha: float, shared: bool) -> None:
    """out (B, 256) float64 <- next-byte probabilities of every row; ctx (orders, B).
    shared: every row reads (and ``update_counts`` writes) one set of online counts instead of
    its own.
    rows_out, slots_out (orders, B) <- the trained row and online slot (-1: none) of every
    context looked up, which ``update_counts`` reuses for the same contexts.

    The recursion unrolled from p_{-1} = 1/256 (w_k = 1/(n_k + u_k), v_k = u_k/(n_k + u_k), and
    w_k = 0, v_k = 1 for an unseen context):

        p(b) = (1/256) Π_k v_k + Σ_k w_k Π_{j>k} v_j · (n_train(c_k, b) + n_online(c_k, b))

    so only nonzero counts are visited (trained rows in CSR form, online lists or dense rows).
    """
    orders = ctx.shape[0]
    rows = np.empty(orders, dtype=np.int64)
    slots = np.empty(orders, dtype=np.int64)
    w = np.empty(orders)
    v = np.empty(orders)
    for b in range(out.shape[0]):
        for k in range(n_orders):
            c = ctx[k, b]
            row = _trained_row(tkeys, trow, (np.int64(k) << 56) | c)
            slot = _find_slot(hkeys, hslot, _online_key(0 if shared else b, k, orders, c))
            rows_out[k, b] = row
            slots_out[k, b] = slot
            n = tn[row]
            u = tu[row] if witten_bell else alpha
            if slot >= 0:
                n += sn[slot]
                if witten_bell:
                    u += su[slot]
            rows[k] = row
            slots[k] = slot
            if n > 0:
                w[k] = 1.0 / (n + u)
                v[k] = u * w[k]
            else:  # an unseen context leaves p_{k-1} unchanged
                w[k] = 0.0
                v[k] = 1.0
        after = 1.0  # Π_{j>k} v_j, walking k downwards
        for k in range(n_orders - 1, -1, -1):
            coef = w[k] * after
            after *= v[k]
            w[k] = coef
        base = after / 256.0
        for j in range(256):
            out[b, j] = base
        for k in range(n_orders):
            coef = w[k]
            if coef == 0.0:
                continue
            row = rows[k]
            for i in range(indptr[row], indptr[row + 1]):
                out[b, indices[i]] += coef * values[i]
            slot = slots[k]
            if slot < 0:
                continue
            d = sdense[slot]
            if d >= 0:
                for j in range(256):
                    out[b, j] += coef * dense[d, j]
            else:
                e = shead[slot]
                while e >= 0:
                    out[b, ebyte[e]] += coef * ecount[e]
                    e = enext[e]


@njit(cache=True)
def update_counts(tokens: np.ndarray, ctx: np.ndarray, n_orders: int, tkeys: np.ndarray,
                  trow: np.ndarray, rows_in: np.ndarray, slots_in: np.ndarray, looked_up: bool,
                  counts: np.ndarray, hkeys: np.ndarray, hslot: np.ndarray, sn: np.ndarray,
                  su: np.ndarray, shead: np.ndarray, slen: np.ndarray, sdense: np.ndarray,
                  dense: np.ndarray, ebyte: np.ndarray, ecount: np.ndarray, enext: np.ndarray,
                  used: np.ndarray, shared: bool) -> None:
    """Count ``tokens`` (B,) after each row's current contexts of orders < n_orders (into one
    set of counts for all rows if ``shared``, in row order).

    used = [slots, entries, dense rows used]; the caller guarantees room for orders·B more of
    each. looked_up: ``rows_in``/``slots_in`` hold ``mixture_probs``' lookups of these very
    contexts (a slot of -1 is absent: rows have distinct keys, so it is created without a
    search, unless ``shared``: an earlier row of this step may have created it); otherwise every
    context is looked up here.
    """
    orders = ctx.shape[0]
    for b in range(tokens.size):
        sym = tokens[b]
        for k in range(n_orders):
            c = ctx[k, b]
            okey = _online_key(0 if shared else b, k, orders, c)
            if looked_up:
                row = rows_in[k, b]
                slot = slots_in[k, b]
                if slot < 0 and shared:
                    slot = _find_slot(hkeys, hslot, okey)
            else:
                row = _trained_row(tkeys, trow, (np.int64(k) << 56) | c)
                slot = _find_slot(hkeys, hslot, okey)
            if slot < 0:
                slot = used[0]
                used[0] += 1
                sn[slot] = 0.0
                su[slot] = 0.0
                shead[slot] = -1
                slen[slot] = 0
                sdense[slot] = -1
                _insert_slot(hkeys, hslot, okey, slot)
            d = sdense[slot]
            if d >= 0:
                if dense[d, sym] == 0 and counts[row, sym] == 0:
                    su[slot] += 1.0
                dense[d, sym] += 1.0
                sn[slot] += 1.0
                continue
            e = shead[slot]
            while e >= 0 and ebyte[e] != sym:
                e = enext[e]
            if e < 0:
                e = used[1]
                used[1] += 1
                ebyte[e] = sym
                ecount[e] = 0.0
                enext[e] = shead[slot]
                shead[slot] = e
                slen[slot] += 1
                if counts[row, sym] == 0:
                    su[slot] += 1.0  # a byte never seen after this context: u(c) += 1
            ecount[e] += 1.0  # n(c, b) += 1
            sn[slot] += 1.0   # n(c) += 1
            if slen[slot] >= PROMOTE:  # move the list to a dense row
                d = used[2]
                used[2] += 1
                dense[d, :] = 0.0
                e = shead[slot]
                while e >= 0:
                    dense[d, ebyte[e]] = ecount[e]
                    e = enext[e]
                sdense[slot] = d


@njit(cache=True)
def floor_rows(p: np.ndarray, eps: float) -> tuple[np.ndarray, bool]:
    """(B, V) float64 -> its ε-floored rows (1 − 2Vε)·p/Σp + ε, and False if a row is not
    finite and non-negative with positive mass (the caller raises)."""
    out = np.empty_like(p)
    v = p.shape[1]
    for b in range(p.shape[0]):
        s = 0.0
        lowest = 0.0
        for j in range(v):  # branch-free: a NaN or inf entry makes s NaN or inf
            x = p[b, j]
            s += x
            lowest = min(lowest, x)
        if lowest < 0.0 or not (s > 0.0) or s == np.inf:
            return out, False
        scale = (1.0 - 2.0 * v * eps) / s
        for j in range(v):
            out[b, j] = p[b, j] * scale + eps  # pdf ← (1 − 2Vε)·pdf/Σpdf + ε
    return out, True


@njit(cache=True)
def _rehash(hkeys: np.ndarray, hslot: np.ndarray, new_keys: np.ndarray,
            new_slots: np.ndarray) -> None:
    for i in range(hkeys.size):
        if hkeys[i] != _EMPTY:
            _insert_slot(new_keys, new_slots, hkeys[i], hslot[i])


class OnlineCounts:
    """The sparse online counts of a session's B rows (arrays the kernels read and write)."""

    def __init__(self, capacity: int = 4096) -> None:
        cap = 1 << max(int(capacity) - 1, 63).bit_length()  # a power of two, >= 64
        self.sn = np.zeros(cap)
        self.su = np.zeros(cap)
        self.shead = np.full(cap, -1, dtype=np.int64)
        self.slen = np.zeros(cap, dtype=np.int64)
        self.sdense = np.full(cap, -1, dtype=np.int64)
        self.dense = np.zeros((64, 256))
        self.ebyte = np.zeros(cap, dtype=np.int64)
        self.ecount = np.zeros(cap)
        self.enext = np.full(cap, -1, dtype=np.int64)
        self.hkeys = np.full(4 * cap, _EMPTY, dtype=np.int64)   # load factor <= 1/4, 2^m buckets
        self.hslot = np.zeros(4 * cap, dtype=np.int64)
        self.used = np.zeros(3, dtype=np.int64)                 # slots, entries, dense rows

    def reserve(self, more: int) -> None:
        """Make room for ``more`` new slots, entries and dense rows (amortised doubling)."""
        need_s = int(self.used[0]) + more
        if need_s > self.sn.size:
            cap = 1 << (need_s - 1).bit_length()  # powers of two: the hash mask needs it
            for name in ("sn", "su", "shead", "slen", "sdense"):
                old = getattr(self, name)
                arr = np.full(cap, -1 if name in ("shead", "sdense") else 0, dtype=old.dtype)
                arr[:old.size] = old
                setattr(self, name, arr)
            new_keys = np.full(4 * cap, _EMPTY, dtype=np.int64)
            new_slots = np.zeros(4 * cap, dtype=np.int64)
            _rehash(self.hkeys, self.hslot, new_keys, new_slots)
            self.hkeys, self.hslot = new_keys, new_slots
        need_e = int(self.used[1]) + more
        if need_e > self.ebyte.size:
            cap = max(need_e, 2 * self.ebyte.size)
            for name, fill in (("ebyte", 0), ("ecount", 0), ("enext", -1)):
                old = getattr(self, name)
                arr = np.full(cap, fill, dtype=old.dtype)
                arr[:old.size] = old
                setattr(self, name, arr)
        need_d = int(self.used[2]) + more
        if need_d > self.dense.shape[0]:
            grown = np.zeros((max(need_d, 2 * self.dense.shape[0]), 256))
            grown[:self.dense.shape[0]] = self.dense
            self.dense = grown


@njit(cache=True)
def advance_contexts(ctx: np.ndarray, tokens: np.ndarray, masks: np.ndarray) -> None:
    """ctx (orders, B) <- each row's last k bytes after appending ``tokens`` (B,)."""
    for k in range(ctx.shape[0]):
        for b in range(ctx.shape[1]):
            ctx[k, b] = ((ctx[k, b] << 8) | tokens[b]) & masks[k]


@njit(cache=True)
def block_probs(floored: np.ndarray, p_sym: np.ndarray, tokens: np.ndarray, start: int,
                ctx: np.ndarray, masks: np.ndarray, hist: int, order: int, adaptive: bool,
                eps: float,
                tkeys: np.ndarray, trow: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                values: np.ndarray, tn: np.ndarray, tu: np.ndarray, counts: np.ndarray,
                hkeys: np.ndarray, hslot: np.ndarray, sn: np.ndarray, su: np.ndarray,
                shead: np.ndarray, slen: np.ndarray, sdense: np.ndarray, dense: np.ndarray,
                ebyte: np.ndarray, ecount: np.ndarray, enext: np.ndarray, used: np.ndarray,
                witten_bell: bool, alpha: float, shared: bool) -> int:
    """K rounds of (mixture_probs -> floor_rows -> update_counts -> advance) for B rows whose
    next K tokens are known (``tokens`` (K, B)): floored (K, B, 256) <- what the decoder's
    ``floor_pdf(next_probs())`` gives at each step, p_sym (K, B) <- the unfloored probability
    of each token. The same kernels in the same order as step-by-step coding, so the floats
    are identical. Starts at step ``start`` (``hist`` counts the bytes fed before step 0) and
    advances ``ctx`` in place. Returns the number of steps done: K, fewer when the online
    arrays need room first (the caller grows them and calls again from there), or -1 if a
    row was not a valid pdf."""
    orders = ctx.shape[0]
    b_rows = ctx.shape[1]
    rows = np.empty((orders, b_rows), dtype=np.int64)
    slots = np.empty((orders, b_rows), dtype=np.int64)
    out = np.empty((b_rows, 256))
    need = orders * b_rows
    for step in range(start, tokens.shape[0]):
        if adaptive and (used[0] + need > sn.size or used[1] + need > ebyte.size
                         or used[2] + need > dense.shape[0]):
            return step
        n_orders = min(order, hist + step) + 1
        mixture_probs(out, rows, slots, ctx, n_orders, tkeys, trow, indptr, indices, values,
                      tn, tu, hkeys, hslot, sn, su, shead, sdense, dense, ebyte, ecount, enext,
                      witten_bell, alpha, shared)
        fl, ok = floor_rows(out, eps)
        if not ok:
            return -1
        floored[step] = fl
        for b in range(b_rows):
            p_sym[step, b] = out[b, tokens[step, b]]
        if adaptive:
            update_counts(tokens[step], ctx, n_orders, tkeys, trow, rows, slots, True, counts,
                          hkeys, hslot, sn, su, shead, slen, sdense, dense, ebyte, ecount, enext,
                          used, shared)
        advance_contexts(ctx, tokens[step], masks)
    return tokens.shape[0]
