import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.federated import (
    AsyncSimulator,
    ConstantDelays,
    FedAvg,
    FedBuff,
    run_synchronous,
)
from iclr24.papers.ca2fl import (
    CA2FL,
    LeastSquaresClient,
    ca2fl_round,
    dequantize_int8,
    make_least_squares,
    quantize_int8,
    run_least_squares,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _deltas(k, p=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(p, generator=g, dtype=torch.float64) for _ in range(k)]


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 6), rounds=st.integers(1, 4), seed=st.integers(0, 1000))
def test_equals_fedbuff_when_every_client_arrives_once_per_round(n, rounds, seed):
    """Spec unit test (i): M = N, each client once per round -> identical x_{t+1}."""
    rng = np.random.default_rng(seed)
    x0 = torch.zeros(6, dtype=torch.float64)
    ca, fb = CA2FL(x0, n, n, server_lr=0.7), FedBuff(x0, n, server_lr=0.7)
    for r in range(rounds):
        ds = _deltas(n, seed=seed * 10 + r)
        for i in rng.permutation(n).tolist():
            ca.on_arrival(i, ds[i], 0)
            fb.on_arrival(i, ds[i], 0)
        assert ca.version == fb.version == r + 1
        assert torch.allclose(ca.params, fb.params, atol=1e-12)


def test_cache_bookkeeping_with_a_repeated_client():
    """Spec unit test (ii): a client arriving twice in one buffer is calibrated against the
    cache current at each arrival; caches and the global cache update after the round."""
    n, m = 3, 3
    x0 = torch.zeros(6, dtype=torch.float64)
    ca = CA2FL(x0, n, m)
    d1, d2, d3 = _deltas(3, seed=5)
    assert ca.on_arrival(0, d1, 0) is False
    assert torch.equal(ca.cache(0), d1)
    assert ca.on_arrival(0, d2, 0) is False
    assert ca.pending == [0, 0]
    assert ca.on_arrival(1, d3, 1) is True
    # A = (d1 - 0) + (d2 - d1) + (d3 - 0) = d2 + d3; v = h_0 (= 0) + A / M
    assert torch.allclose(ca.params, (d2 + d3) / 3)
    assert torch.equal(ca.cache(0), d2) and torch.equal(ca.cache(1), d3)
    assert torch.equal(ca.cache(2), torch.zeros(6, dtype=torch.float64))
    assert torch.allclose(ca.global_cache, (d2 + d3) / 3)  # divided by N, not by # seen
    # next round uses h_1 = (d2 + d3)/3 and the old caches
    d4, d5, d6 = _deltas(3, seed=6)
    ca.on_arrival(2, d4, 0)
    ca.on_arrival(1, d5, 0)
    ca.on_arrival(2, d6, 0)
    acc = (d4 - 0) + (d5 - d3) + (d6 - d4)
    assert torch.allclose(ca.params, (d2 + d3) / 3 + (d2 + d3) / 3 + acc / 3)


def test_pure_round_matches_the_object():
    n = 4
    x0 = torch.randn(6, dtype=torch.float64)
    ca = CA2FL(x0, n, 3, server_lr=0.5)
    caches = torch.zeros(n, 6, dtype=torch.float64)
    hbar = torch.zeros(6, dtype=torch.float64)
    x = x0.clone()
    for r in range(3):
        arrivals = list(zip([1, 3, 1], _deltas(3, seed=r)))
        for i, d in arrivals:
            ca.on_arrival(i, d, 0)
        x, caches, hbar = ca2fl_round(x, caches, hbar, arrivals, 0.5)
        assert torch.allclose(ca.params, x)
        assert torch.allclose(ca.global_cache, hbar)


def test_synchronous_limit_matches_fedavg():
    """Spec unit test (iii): zero delays, full participation -> synchronous FedAvg."""
    prob = make_least_squares(6, 4, 10, zeta=2.0, seed=1)
    clients = [LeastSquaresClient(prob, i) for i in range(6)]
    x0 = torch.zeros(4, dtype=torch.float64)
    sync = run_synchronous(x0, clients, FedAvg(weighted=False), 8)
    sim = AsyncSimulator(clients, CA2FL(x0, 6, 6), concurrency=6,
                         delays=ConstantDelays(0.0), dispatch="after_update", seed=3)
    hist = sim.run(max_server_updates=8)
    assert torch.allclose(hist.final_params, sync.final_params, atol=1e-12)


def test_int8_cache_is_close_to_exact_cache():
    n = 5
    x0 = torch.zeros(50, dtype=torch.float64)
    exact, q8 = CA2FL(x0, n, 2), CA2FL(x0, n, 2, cache_dtype="int8")
    g = torch.Generator().manual_seed(0)
    for t in range(20):
        i = int(torch.randint(0, n, (1,), generator=g))
        d = torch.randn(50, generator=g, dtype=torch.float64)
        exact.on_arrival(i, d, 0)
        q8.on_arrival(i, d, 0)
    rel = (exact.params - q8.params).norm() / exact.params.norm()
    assert rel < 0.05
    assert q8._caches.dtype == torch.int8


def test_quantize_int8_error_bound():
    v = torch.randn(1000, dtype=torch.float64)
    q, s = quantize_int8(v)
    assert q.dtype == torch.int8
    assert (dequantize_int8(q, s, torch.float64) - v).abs().max() <= s / 2 + 1e-12
    q0, s0 = quantize_int8(torch.zeros(3))
    assert torch.equal(dequantize_int8(q0, s0), torch.zeros(3))


def test_ca2fl_bad_input():
    x0 = torch.zeros(4)
    ca = CA2FL(x0, 2, 2)
    with pytest.raises(ValueError, match="shape"):
        ca.on_arrival(0, torch.zeros(5), 0)
    with pytest.raises(ValueError, match="client_id"):
        ca.on_arrival(2, torch.zeros(4), 0)
    with pytest.raises(ValueError, match="int8"):
        CA2FL(torch.zeros(1000), 1000, 2, max_cache_bytes=10_000)
    with pytest.raises(ValueError, match="cache_dtype"):
        CA2FL(x0, 2, 2, cache_dtype="float16")
    with pytest.raises(ValueError, match="buffer_size"):
        CA2FL(x0, 2, 0)


@pytest.mark.parametrize("lr", [0.0, -1.0, float("nan"), float("inf")])
def test_server_lr_must_be_finite_and_positive(lr):
    """Issue 38: NaN passed the old ``<= 0`` test and turned the model into NaN."""
    with pytest.raises(ValueError, match="server_lr must be a finite number > 0"):
        CA2FL(torch.zeros(2), 2, 1, server_lr=lr)
    with pytest.raises(ValueError, match="server_lr"):
        ca2fl_round(torch.zeros(2), torch.zeros(2, 2), torch.zeros(2), [(0, torch.ones(2))],
                    server_lr=lr)
    for bad in (True, "1.0", None):
        with pytest.raises(TypeError, match="server_lr must be a real number"):
            CA2FL(torch.zeros(2), 2, 1, server_lr=bad)
    assert CA2FL(torch.zeros(2), 2, 1, server_lr=np.float32(0.5)).server_lr == 0.5


def test_least_squares_minimiser_is_stationary():
    prob = make_least_squares(8, 5, 30, zeta=3.0, seed=2)
    w = prob.x_star.clone().requires_grad_(True)
    r = torch.einsum("knd,d->kn", prob.A, w) - prob.b
    (0.5 * r.pow(2).mean(1).mean()).backward()
    assert w.grad.abs().max() < 1e-10
    assert prob.global_loss(prob.x_star) < prob.global_loss(prob.x_star + 0.01)
    with pytest.raises(ValueError):
        make_least_squares(1, 5)


def test_least_squares_run_is_deterministic():
    a = run_least_squares("ca2fl", 1.0, seed=4, server_updates=15)
    b = run_least_squares("ca2fl", 1.0, seed=4, server_updates=15)
    assert a.records == b.records and a.staleness == b.staleness
    assert all(math.isfinite(v) for v in a.column("error"))
