"""FLOP model, timing helpers, order table and synthetic filters."""

import math

import pytest
import torch

from iclr24.papers.flashfftconv import (
    BEST_ORDER,
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    best_order,
    decaying_noise_filter,
    measure_best_orders,
    median_time,
    monarch_conv_flops,
    paired_median_times,
    paired_times,
    rfft_conv_flops,
    smooth_filter,
    white_noise_filter,
)


def test_flop_model_closed_form_order2():
    # factors (32, 32), N = 1024, stage 2 folded (no twiddle pass): stage 1 forward reads half
    # the columns (32·16 MACs per column block) and its inverse writes half the rows (16·32),
    # over N/32 = 32 column blocks; stage 2 is 32·32 MACs over 32 blocks each way; product N
    mod = MonarchFFTConv(1024, order=2, real_trick=False)
    assert mod._folded == [True, True]
    expected = 8 * 32 * (32 * 16 + 16 * 32) + 2 * 8 * 32 * 32 * 32 + 6 * 1024
    assert monarch_conv_flops(mod) == expected
    # the real-input trick carries two sequences per transform: half the flops per sequence
    assert monarch_conv_flops(MonarchFFTConv(1024, order=2)) == expected / 2


def test_flop_model_scaling():
    # order p costs ~ p·N·N^{1/p}: higher order, fewer flops at large N
    n = 2**16
    f = [monarch_conv_flops(MonarchFFTConv(n, order=p)) for p in (2, 3, 4)]
    assert f[0] > f[1] > f[2]
    # the real trick halves the work per sequence
    assert monarch_conv_flops(MonarchFFTConv(n, order=2)) == \
        0.5 * monarch_conv_flops(MonarchFFTConv(n, order=2, real_trick=False))
    # partial conv work grows with the number of blocks
    part = PartialFFTConv(4096, 256)
    assert monarch_conv_flops(part, 2048) == 2 * monarch_conv_flops(part, 1024)
    assert monarch_conv_flops(FrequencySparseFFTConv(4096, 0.25, order=2)) < \
        monarch_conv_flops(FrequencySparseFFTConv(4096, 0.5, order=2))
    assert rfft_conv_flops(1024) == 2 * 2.5 * 1024 * 10 + 6 * 513
    with pytest.raises(ValueError, match="fft_size"):
        rfft_conv_flops(1)


def test_timing_helpers_restore_threads():
    before = torch.get_num_threads()
    a = torch.randn(64, 64)
    t = median_time(lambda: a @ a, min_run_time=0.01, num_threads=1)
    assert t > 0 and torch.get_num_threads() == before
    ts = paired_median_times([lambda: a @ a, lambda: a + a], rounds=2, num_threads=1)
    assert len(ts) == 2 and all(x > 0 for x in ts) and torch.get_num_threads() == before
    ts = paired_median_times([lambda: a @ a], rounds=1, clock="thread")
    assert ts[0] >= 0 and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="clock"):
        paired_median_times([lambda: None], clock="cpu")
    with pytest.raises(ValueError, match="rounds"):
        paired_median_times([lambda: None], rounds=0)


def test_paired_times_shuffled_order_is_seeded_and_complete():
    """With shuffle_seed every function runs once per round, in an order that changes from
    round to round (so the baseline does not always follow the method) and repeats per seed."""

    def calls(seed):
        log = []
        fns = [lambda i=i: log.append(i) for i in range(4)]
        out = paired_times(fns, rounds=6, shuffle_seed=seed)
        assert [len(x) for x in out] == [6] * 4
        rounds = [log[4 + 4 * r: 8 + 4 * r] for r in range(6)]      # after the warm-up calls
        assert all(sorted(r) == [0, 1, 2, 3] for r in rounds)
        return rounds

    first = calls(7)
    assert first == calls(7) and len({tuple(r) for r in first}) > 1
    log = []
    paired_times([lambda i=i: log.append(i) for i in range(3)], rounds=2)
    assert log == [0, 1, 2] * 3                                          # fixed order by default


def test_measure_best_orders_rows():
    rows = measure_best_orders([64], work=2**10, rounds=1)
    assert {r["order"] for r in rows} == {2, 3, 4}
    assert all(r["fft_size"] == 64 and r["ms"] > 0 for r in rows)


def test_order_table_is_monotone_and_valid():
    sizes = sorted(BEST_ORDER)
    orders = [BEST_ORDER[s] for s in sizes]
    assert orders == sorted(orders)
    assert all(2 <= p <= 4 and p <= math.log2(s) for s, p in BEST_ORDER.items())
    assert best_order(4) == 2 and best_order(2**21) == 4
    for bad in (3, 0, 100, True):
        with pytest.raises(ValueError, match="transform_size"):
            best_order(bad)


def test_synthetic_filters():
    g = torch.Generator().manual_seed(0)
    k = decaying_noise_filter(4, 1000, g)
    assert k.shape == (4, 1000) and k.dtype == torch.float64
    assert k[-1, 500:].abs().max() < k[-1, :500].abs().max()   # faster decay in the last channel
    s = smooth_filter(4, 4096, g)
    spec = torch.fft.rfft(s).abs() ** 2
    assert spec[:, :256].sum() > 0.95 * spec.sum()                 # energy at low frequencies
    w = white_noise_filter(4, 4096, g)
    ws = torch.fft.rfft(w).abs() ** 2
    assert ws[:, :256].sum() < 0.2 * ws.sum()
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    torch.testing.assert_close(smooth_filter(2, 64, g1), smooth_filter(2, 64, g2))
    with pytest.raises(ValueError, match="length"):
        white_noise_filter(2, 0, g)
    with pytest.raises(TypeError, match="generator"):
        smooth_filter(2, 8, 0)
