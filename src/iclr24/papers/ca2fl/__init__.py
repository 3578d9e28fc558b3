"""CA²FL: cached update calibration for asynchronous federated learning.

Paper: Yujia Wang, Yuanpu Cao, Jingcheng Wu, Ruoyu Chen, Jinghui Chen, "Tackling the Data
Heterogeneity in Asynchronous Federated Learning with Cached Update Calibration", ICLR 2024
(OpenReview 4aywmeb97I). No official code exists; this follows the paper's Algorithm 1 as the
spec records it.

In buffered asynchronous FL (FedBuff) the server steps as soon as M updates arrive, so steps
are stale and, under non-IID data, biased toward whichever clients report most (the fast ones).
CA²FL keeps every client's latest update h_i on the server and steps along
``v_t = h_t + (1/M) sum_{arrivals} (delta_i - h_i^old)`` with ``h_t = (1/N) sum_i h_i``: the
average of everyone's latest update, corrected by the fresh arrivals (a SAGA-like calibration).

How the code maps to the paper
- :mod:`.server`: :class:`CA2FL` (the server of Algorithm 1, an ``AsyncAggregator``), the same
  step as the pure function :func:`ca2fl_round`, and MF-CA²FL's int8 caches
  (``cache_dtype="int8"``, :func:`quantize_int8`).
- Baselines FedBuff and FedAsync, the event-queue simulator (heterogeneous exponential job
  times) and local SGD come from :mod:`iclr24.kits.federated`.
- :mod:`.least_squares`: the convex two-cluster problem of claim ``bias_removal``.
- :mod:`.async_runs`: the experiment drivers (least squares; sklearn digits with Dirichlet
  label skew and speed correlated with skew) used by the claims.
- :mod:`.flower_server` (optional ``[flower]`` extra): CA²FL as a Flower ServerApp main loop on
  the low-level Grid messaging (Flower has no built-in asynchronous strategy).

Scaled down: ResNet-18 on CIFAR-10/100 and BERT fine-tuning are replaced by a convex least-squares
problem (40 clients) and an MLP 64-64-10 on sklearn's bundled digits (30 clients); the paper's
delay law was not retrieved, so job times are exponential with client-specific means (a parameter).

Usage::

    from iclr24.papers.ca2fl import CA2FL
    from iclr24.kits.federated import AsyncSimulator, ExponentialDelays
    agg = CA2FL(x0, num_clients=len(clients), buffer_size=3)
    hist = AsyncSimulator(clients, agg, concurrency=6, delays=ExponentialDelays(means),
                          seed=0).run(max_server_updates=300, eval_fn=evaluate)
"""

from .async_runs import AsyncConfig, make_aggregator, run_digits, run_least_squares
from .least_squares import LeastSquaresClient, LeastSquaresProblem, make_least_squares
from .server import CA2FL, ca2fl_round, dequantize_int8, quantize_int8

__all__ = [
    "CA2FL",
    "AsyncConfig",
    "LeastSquaresClient",
    "LeastSquaresProblem",
    "ca2fl_round",
    "dequantize_int8",
    "make_aggregator",
    "make_least_squares",
    "quantize_int8",
    "run_digits",
    "run_least_squares",
]
