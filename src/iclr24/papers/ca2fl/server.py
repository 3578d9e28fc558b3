"""CA²FL's server: per-client update caches and the cache-calibrated global step.

Paper: Wang et al., "Tackling the Data Heterogeneity in Asynchronous Federated Learning with
Cached Update Calibration", ICLR 2024 (Algorithm 1, CA²FL; Sec. 5 MF-CA²FL).

The server keeps the latest update ``h_i`` received from every client i = 1..N (initialised to
zero) and the global cache ``h_t = (1/N) sum_i h_i``. A round collects M arrivals (a client may
arrive twice); each arrival (i, delta_i) adds ``delta_i - h_i`` (the cache *before* overwriting)
to an accumulator and then sets ``h_i <- delta_i``. When M have arrived:

    v_t     = h_t + (1/M) sum_{arrivals} (delta_i - h_i^old)        (calibrated update)
    x_{t+1} = x_t + eta * v_t
    h_{t+1} = (1/N) sum_i h_i                                         (with the new caches)

``h_t`` is the global cache as it was when round t began. Dividing by N (all clients, including
never-seen ones whose cache is still zero) shrinks early rounds toward zero; that is the paper's
initialisation, kept on purpose. If a round's buffer holds every client exactly once (M = N), the
caches cancel and v_t = mean_i delta_i: CA²FL equals FedBuff.

MF-CA²FL (memory-friendly) stores caches as int8 with one float scale per client
(``cache_dtype="int8"``); the correction then uses the dequantised caches.

``CA2FL`` implements the kit's ``AsyncAggregator`` protocol (``on_arrival``/``params``/
``version``), so it runs in :class:`iclr24.kits.federated.AsyncSimulator` and behind Flower
(:mod:`iclr24.papers.ca2fl.flower_server`) unchanged. ``ca2fl_round`` is the same step as a
pure function of (x, caches, global cache, arrivals).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Literal

import torch

from iclr24.kits.federated import check_update

__all__ = ["CA2FL", "ca2fl_round", "dequantize_int8", "quantize_int8"]


def _check_server_lr(server_lr: object) -> float:
    """eta must be a finite real number > 0 (NaN would pass a plain ``<= 0`` test and poison x)."""
    if isinstance(server_lr, bool) or not isinstance(server_lr, numbers.Real):
        raise TypeError(f"server_lr must be a real number, got {type(server_lr).__name__}")
    if not (math.isfinite(server_lr) and server_lr > 0):
        raise ValueError(f"server_lr must be a finite number > 0, got {server_lr!r}")
    return float(server_lr)


def quantize_int8(v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor symmetric int8 quantisation: ``v ~ q * scale`` with ``scale = max|v| / 127``."""
    scale = v.abs().max() / 127.0
    if float(scale) == 0.0:
        return torch.zeros_like(v, dtype=torch.int8), torch.ones((), dtype=v.dtype)
    q = torch.clamp(torch.round(v / scale), -127, 127).to(torch.int8)
    return q, scale.to(v.dtype)


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor, dtype: torch.dtype = torch.float32
                    ) -> torch.Tensor:
    """Inverse of :func:`quantize_int8` (up to rounding error <= scale / 2 per entry)."""
    return q.to(dtype) * scale.to(dtype)


def ca2fl_round(params: torch.Tensor, caches: torch.Tensor, global_cache: torch.Tensor,
                arrivals: Sequence[tuple[int, torch.Tensor]], server_lr: float = 1.0
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One CA²FL round as a pure function.

    params: (P,) x_t; caches: (N, P) h_i at the start of the round; global_cache: (P,) h_t;
    arrivals: the round's M arrivals (client id, delta (P,)) in arrival order.
    Returns (x_{t+1}, caches after the round, h_{t+1}). Inputs are not modified.
    """
    if caches.ndim != 2 or caches.shape[1] != params.shape[0]:
        raise ValueError(f"caches must have shape (N, {params.shape[0]}), got {tuple(caches.shape)}")
    if len(arrivals) == 0:
        raise ValueError("arrivals must hold at least one (client_id, delta) pair")
    server_lr = _check_server_lr(server_lr)
    h = caches.clone()
    acc = torch.zeros_like(params)
    for client, delta in arrivals:
        if not 0 <= client < h.shape[0]:
            raise ValueError(f"client id {client} out of range [0, {h.shape[0]})")
        delta = check_update(delta, params)
        acc += delta - h[client]  # delta_i - h_i (old cache)
        h[client] = delta  # h_i <- delta_i, after the correction
    v = global_cache + acc / len(arrivals)  # v_t = h_t + (1/M) sum (delta_i - h_i)
    return params + server_lr * v, h, h.mean(0)  # x_{t+1}; h_{t+1} = (1/N) sum_i h_i


class CA2FL:
    """CA²FL aggregator over flat parameters (an ``AsyncAggregator``).

    x0: (P,) initial model; num_clients: N (caches for all of them); buffer_size: M arrivals per
    global update; server_lr: eta; cache_dtype: ``"float32"``/``"float64"`` (exact caches) or
    ``"int8"`` (MF-CA²FL, per-client scale). ``max_cache_bytes`` guards the N x P memory.
    """

    def __init__(self, x0: torch.Tensor, num_clients: int, buffer_size: int,
                 server_lr: float = 1.0,
                 cache_dtype: Literal["float32", "float64", "int8"] | None = None,
                 max_cache_bytes: int = 2 * 1024**3) -> None:
        if not isinstance(x0, torch.Tensor) or x0.ndim != 1 or not x0.is_floating_point():
            raise TypeError("x0 must be a 1-D floating torch.Tensor (flat parameters)")
        if not isinstance(num_clients, int) or num_clients < 1:
            raise ValueError(f"num_clients must be a positive int, got {num_clients!r}")
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")
        server_lr = _check_server_lr(server_lr)
        cache_dtype = cache_dtype or str(x0.dtype).removeprefix("torch.")
        if cache_dtype not in ("float32", "float64", "int8"):
            raise ValueError(f"cache_dtype must be 'float32', 'float64' or 'int8', "
                             f"got {cache_dtype!r}")
        store = {"float32": torch.float32, "float64": torch.float64, "int8": torch.int8}[cache_dtype]
        nbytes = num_clients * x0.numel() * torch.empty((), dtype=store).element_size()
        if nbytes > max_cache_bytes:
            raise ValueError(f"caches need {nbytes / 2**20:.1f} MiB for {num_clients} clients x "
                             f"{x0.numel()} parameters (limit max_cache_bytes="
                             f"{max_cache_bytes / 2**20:.1f} MiB); use cache_dtype='int8' "
                             "(MF-CA²FL) or raise the limit")
        self._params = x0.detach().clone()
        self.num_clients = num_clients
        self.buffer_size = buffer_size
        self.server_lr = server_lr
        self.cache_dtype = cache_dtype
        self._caches = torch.zeros(num_clients, x0.numel(), dtype=store, device=x0.device)
        self._scales = torch.ones(num_clients, dtype=x0.dtype, device=x0.device)
        self._global_cache = torch.zeros_like(self._params)  # h_t, from the previous round
        self._acc = torch.zeros_like(self._params)
        self._arrived: list[int] = []
        self._version = 0

    # -- AsyncAggregator protocol
    @property
    def params(self) -> torch.Tensor:
        return self._params

    @property
    def version(self) -> int:
        return self._version

    # -- inspection
    def cache(self, client_id: int) -> torch.Tensor:
        """h_i for one client as a float tensor (dequantised for int8 caches)."""
        return self._cache_value(client_id).clone()

    @property
    def global_cache(self) -> torch.Tensor:
        """h_t: the mean cache as of the start of the current round."""
        return self._global_cache.clone()

    @property
    def pending(self) -> list[int]:
        """Client ids that arrived in the current (unfinished) round, in order, with repeats."""
        return list(self._arrived)

    def _cache_value(self, i: int) -> torch.Tensor:
        if self.cache_dtype == "int8":
            return dequantize_int8(self._caches[i], self._scales[i], self._params.dtype)
        return self._caches[i]

    def _all_caches(self) -> torch.Tensor:
        if self.cache_dtype == "int8":
            return self._caches.to(self._params.dtype) * self._scales[:, None]
        return self._caches

    def on_arrival(self, client_id: int, delta: torch.Tensor, staleness: int,
                   base: torch.Tensor | None = None) -> bool:
        """Feed one client update; returns True when it completed a round (model changed)."""
        if not isinstance(client_id, int) or not 0 <= client_id < self.num_clients:
            raise ValueError(f"client_id must be an int in [0, {self.num_clients}), "
                             f"got {client_id!r}")
        if staleness < 0:
            raise ValueError(f"staleness must be >= 0, got {staleness}")
        delta = check_update(delta, self._params)
        self._acc += delta - self._cache_value(client_id)  # A += delta_i - h_i (old cache)
        if self.cache_dtype == "int8":  # h_i <- delta_i (MF-CA²FL: stored as int8 + scale)
            q, s = quantize_int8(delta)
            self._caches[client_id] = q
            self._scales[client_id] = s
        else:
            self._caches[client_id] = delta
        self._arrived.append(client_id)
        if len(self._arrived) < self.buffer_size:
            return False
        v = self._global_cache + self._acc / self.buffer_size  # v_t = h_t + A / M
        self._params = self._params + self.server_lr * v  # x_{t+1} = x_t + eta v_t
        self._global_cache = self._all_caches().mean(0)  # h_{t+1} = (1/N) sum_i h_i
        self._acc.zero_()
        self._arrived.clear()
        self._version += 1
        return True
