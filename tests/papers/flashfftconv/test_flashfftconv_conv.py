"""MonarchFFTConv, PartialFFTConv and FrequencySparseFFTConv against torch.fft references."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.flashfftconv import (
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    best_order,
    fft_conv,
    fft_conv_complex_reference,
    fft_conv_reference,
    frequency_sparse_reference,
    monarch_conv_flops,
)

TOL = {torch.float32: 1e-5, torch.float64: 1e-12}


def rel_err(y, ref):
    return float((y.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-300))


def direct_causal_conv(u, k):
    """y[b,h,t] = Σ_{s<=t} k[h,s] u[b,h,t-s], by the definition."""
    _, h, length = u.shape
    kk = torch.zeros(h, length, dtype=u.dtype)
    kk[:, : min(length, k.shape[-1])] = k[:, :length]
    y = torch.zeros_like(u)
    for s in range(length):
        y[..., s:] += kk[:, s, None] * u[..., : length - s]
    return y


@st.composite
def conv_case(draw):
    n = draw(st.sampled_from([16, 32, 64, 128, 256, 512]))
    real_trick = draw(st.booleans())
    order = draw(st.integers(2, min(4, int(math.log2(n)))))
    length = draw(st.integers(1, n // 2))
    klen = draw(st.integers(1, n // 2))
    b, h = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    return n, real_trick, order, length, klen, b, h, dtype, draw(st.integers(0, 2**16))


@given(conv_case())
@settings(max_examples=60, deadline=None)
def test_exact_against_rfft_for_every_order_and_shape(case):
    n, real_trick, order, length, klen, b, h, dtype, seed = case
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(b, h, length, generator=g, dtype=torch.float64)
    k = torch.randn(h, klen, generator=g, dtype=torch.float64)
    mod = MonarchFFTConv(n, order=order, real_trick=real_trick, dtype=dtype)
    y = mod(u.to(dtype), k.to(dtype))
    assert y.shape == (b, h, length) and y.dtype == dtype
    assert rel_err(y, fft_conv_reference(u, k, n)) <= TOL[dtype]


@pytest.mark.parametrize("real_trick", [True, False])
@pytest.mark.parametrize("order", [2, 3, 4])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exact_at_paper_sizes(order, real_trick, dtype):
    g = torch.Generator().manual_seed(1)
    for n in (256, 2048, 2**14):
        u = torch.randn(2, 2, n // 2, generator=g, dtype=torch.float64)
        k = torch.randn(2, n // 2, generator=g, dtype=torch.float64)
        y = MonarchFFTConv(n, order=order, real_trick=real_trick, dtype=dtype)(u.to(dtype),
                                                                                 k.to(dtype))
        assert rel_err(y, fft_conv_reference(u, k)) <= TOL[dtype]


def test_matches_direct_definition_and_complex_baseline():
    g = torch.Generator().manual_seed(2)
    u = torch.randn(2, 3, 40, generator=g, dtype=torch.float64)
    k = torch.randn(3, 40, generator=g, dtype=torch.float64)
    y = MonarchFFTConv(128, dtype=torch.float64)(u, k)
    torch.testing.assert_close(y, direct_causal_conv(u, k), rtol=0, atol=1e-11)
    torch.testing.assert_close(fft_conv_complex_reference(u, k), fft_conv_reference(u, k),
                               rtol=0, atol=1e-11)


def test_gating_semantics_and_official_call_convention():
    g = torch.Generator().manual_seed(3)
    u, gi, go = (torch.randn(2, 4, 64, generator=g, dtype=torch.float64) for _ in range(3))
    k = torch.randn(4, 64, generator=g, dtype=torch.float64)
    mod = MonarchFFTConv(128, dtype=torch.float64)
    expected = fft_conv_reference(u * gi, k) * go                  # y = conv(u ⊙ g_in, k) ⊙ g_out
    torch.testing.assert_close(mod(u, k, gi, go), expected, rtol=0, atol=1e-11)
    torch.testing.assert_close(mod(u, k, in_gate=gi, out_gate=go), expected, rtol=0, atol=1e-11)
    torch.testing.assert_close(mod(u, k, pregate=gi), fft_conv_reference(u * gi, k),
                               rtol=0, atol=1e-11)
    torch.testing.assert_close(mod(u, k, postgate=go), fft_conv_reference(u, k) * go,
                               rtol=0, atol=1e-11)
    with pytest.raises(ValueError, match="pregate or in_gate"):
        mod(u, k, gi, in_gate=gi)
    with pytest.raises(ValueError, match="pregate must have"):
        mod(u, k, gi[:, :, :10])


def test_precomputed_spectrum_and_functional_api():
    g = torch.Generator().manual_seed(4)
    u = torch.randn(3, 2, 100, generator=g)
    k = torch.randn(2, 100, generator=g)
    mod = MonarchFFTConv(256)
    spec = mod.filter_spectrum(k)
    torch.testing.assert_close(mod.forward_spectrum(u, spec), mod(u, k))
    torch.testing.assert_close(fft_conv(u, k), fft_conv_reference(u.double(), k.double()).float(),
                               rtol=0, atol=1e-4)
    y64 = fft_conv(u.double(), k.double(), order=3, real_trick=False)
    assert y64.dtype == torch.float64
    assert rel_err(y64, fft_conv_reference(u.double(), k.double())) < 1e-12


def test_other_float_inputs_are_cast_and_returned_in_their_dtype():
    u = torch.randn(1, 2, 32).to(torch.bfloat16)
    k = torch.randn(2, 32).to(torch.bfloat16)
    y = MonarchFFTConv(64)(u, k)
    assert y.dtype == torch.bfloat16
    official_style = MonarchFFTConv(64, torch.bfloat16)          # FlashFFTConv(seqlen, dtype)
    assert official_style.dtype == torch.float32 and official_style.order == 2
    torch.testing.assert_close(official_style(u, k), y)
    ref = fft_conv_reference(u.double(), k.double())
    assert rel_err(y, ref) < 2e-2


def test_gradients_flow_through_the_matmuls():
    g = torch.Generator().manual_seed(5)
    u = torch.randn(1, 2, 8, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(2, 8, generator=g, dtype=torch.float64, requires_grad=True)
    for rt in (True, False):
        mod = MonarchFFTConv(16, order=2, real_trick=rt, dtype=torch.float64)
        assert torch.autograd.gradcheck(mod, (u, k))


def test_module_moves_with_to_and_has_no_state():
    mod = MonarchFFTConv(64, dtype=torch.float64)
    assert mod.state_dict() == {}
    mod = mod.to("cpu")
    assert all(b.device.type == "cpu" for b in mod.buffers())
    assert "order=" in repr(mod)


def test_order_none_uses_the_measured_table():
    assert MonarchFFTConv(2**10).order == best_order(2**10) == 2
    assert MonarchFFTConv(2**12).order == best_order(2**12) == 3
    assert MonarchFFTConv(2**18).order == 4
    assert MonarchFFTConv(2**12, real_trick=False).order == 3
    assert MonarchFFTConv(16).order == 2


# ------------------------------------------------------------------------------ partial
@pytest.mark.parametrize("real_trick", [True, False])
@pytest.mark.parametrize("n,filter_len,length", [(256, 16, 128), (256, 32, 100), (512, 64, 250),
                                                 (128, 64, 64), (1024, 8, 500)])
def test_partial_equals_conv_with_truncated_filter(n, filter_len, length, real_trick):
    g = torch.Generator().manual_seed(6)
    u = torch.randn(2, 3, length, generator=g, dtype=torch.float64)
    k = torch.randn(3, length, generator=g, dtype=torch.float64)
    mod = PartialFFTConv(n, filter_len, real_trick=real_trick, dtype=torch.float64)
    assert mod.blockwise == (2 * filter_len < n)
    ref = fft_conv_reference(u, k[:, :filter_len], n)               # the official semantics
    assert rel_err(mod(u, k), ref) < 1e-12
    gi = torch.randn(2, 3, length, generator=g, dtype=torch.float64)
    assert rel_err(mod(u, k, postgate=gi), ref * gi) < 1e-12


def test_partial_really_skips_work():
    dense = MonarchFFTConv(2**14)
    part = PartialFFTConv(2**14, 2**10)
    assert part.block == 2**11 and part.transform_size == 2**11
    # per output, the work grows with log N′ instead of log L: fewer flops at equal order
    for order in (2, 3):
        assert monarch_conv_flops(PartialFFTConv(2**14, 2**10, order=order)) < \
            0.6 * monarch_conv_flops(MonarchFFTConv(2**14, order=order))
    assert monarch_conv_flops(part) > 0 and dense.order == 4  # the order table: p = 4 above 2^12
    with pytest.raises(ValueError, match="filter_len"):
        PartialFFTConv(256, 24)
    with pytest.raises(ValueError, match="filter_len"):
        PartialFFTConv(256, 256)


# ------------------------------------------------------------------------- frequency sparse
@pytest.mark.parametrize("real_trick", [True, False])
@pytest.mark.parametrize("keep", [1.0, 0.75, 0.5, 0.25, 0.125])
@pytest.mark.parametrize("n,order", [(256, 2), (1024, 3), (4096, 4), (8192, None)])
def test_frequency_sparse_semantics(n, order, keep, real_trick):
    g = torch.Generator().manual_seed(7)
    u = torch.randn(2, 3, n // 2, generator=g, dtype=torch.float64)
    k = torch.randn(3, n // 2, generator=g, dtype=torch.float64)
    mod = FrequencySparseFFTConv(n, keep, order=order, real_trick=real_trick,
                                 dtype=torch.float64)
    assert mod.mask.shape == (n,) and mod.mask.dtype == torch.bool
    assert abs(mod.mask.double().mean().item() - mod.kept_fraction) <= 2 / n + 1e-12
    y = mod(u, k)
    assert rel_err(y, frequency_sparse_reference(u, k, mod.mask)) < 1e-12
    # Hermitian mask: exactly an rfft-domain low-pass, on both pipelines
    assert torch.equal(mod.mask[1:], mod.mask[1:].flip(0))
    rf = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n)
                         * mod.mask[: n // 2 + 1], n=n)[..., : n // 2]
    assert rel_err(y, rf) < 1e-12
    kept_bins = int(mod.mask[: n // 2 + 1].sum())
    assert mod.mask[:kept_bins].all()                # the lowest rfft bins, nothing else
    if keep == 1.0:
        assert mod.mask.all()
        assert rel_err(mod(u, k), fft_conv_reference(u, k)) < 1e-12


@pytest.mark.parametrize("real_trick", [True, False])
def test_frequency_sparse_mask_is_block_aligned_low_pass(real_trick):
    mod = FrequencySparseFFTConv(1024, 0.5, order=2, real_trick=real_trick)   # factors (32, 32)
    assert mod.factors == (32, 32) and mod.kept_fraction == 0.5
    blocks = mod.mask.view(32, 32)                                   # rows = top digit
    kept_rows = blocks.any(1).nonzero().flatten().tolist()
    assert kept_rows == list(range(8)) + list(range(24, 32))         # low |frequency|
    # whole blocks, except the one bin N − c·W whose mirror c·W lies in a dropped block
    assert blocks[kept_rows].sum() == 16 * 32 - 1 and not mod.mask[1024 - 8 * 32]
    # the default (paired) pipeline is the official low-pass, as the complex one
    assert torch.equal(mod.mask, FrequencySparseFFTConv(1024, 0.5, order=2,
                                                        real_trick=not real_trick).mask)
    # low-pass: the filter's high frequencies vanish from the output
    t = torch.arange(512, dtype=torch.float64)
    k = torch.cos(2 * math.pi * 256 * t / 1024)[None]                # frequency N/4 + ... -> cut
    u = torch.randn(1, 1, 512, dtype=torch.float64)
    low = FrequencySparseFFTConv(1024, 0.25, real_trick=real_trick, dtype=torch.float64)
    assert low(u, k).abs().max() < 0.5 * fft_conv_reference(u, k).abs().max()


@pytest.mark.parametrize("real_trick", [True, False])
def test_frequency_sparse_really_skips_work(real_trick):
    # order 3 (factors 16·16·32): the low-pass halves the last forward and the first inverse
    # stage, the largest of three, so the flops fall by over a quarter (0.71 measured); at
    # the default order 4 that stage is a quarter of the work and the saving is smaller
    dense = FrequencySparseFFTConv(8192, 1.0, real_trick=real_trick, order=3)
    half = FrequencySparseFFTConv(8192, 0.5, real_trick=real_trick, order=3)
    last = len(dense.factors) - 1
    fwd_h, fwd_d = getattr(half, f"fwd_mat_{last}"), getattr(dense, f"fwd_mat_{last}")
    inv_h, inv_d = getattr(half, f"inv_mat_{last}"), getattr(dense, f"inv_mat_{last}")
    assert fwd_h.shape[-2] == fwd_d.shape[-2] // 2 and inv_h.shape[-1] == inv_d.shape[-1] // 2
    assert monarch_conv_flops(half) < 0.75 * monarch_conv_flops(dense)
    assert monarch_conv_flops(dense) == monarch_conv_flops(
        MonarchFFTConv(8192, real_trick=real_trick, order=dense.order))
    with pytest.raises(ValueError, match="keep_fraction"):
        FrequencySparseFFTConv(256, 0.0)
    with pytest.raises(ValueError, match="keep_fraction"):
        FrequencySparseFFTConv(256, 1.5)
    with pytest.raises(ValueError, match="order"):
        FrequencySparseFFTConv(256, 0.5, order=7)
    with pytest.raises(TypeError, match="real_trick"):
        FrequencySparseFFTConv(256, 0.5, real_trick="yes")


# ------------------------------------------------------------------------------ bad input
def test_unsupported_lengths_and_settings():
    for bad in (100, 8, 2**23, 0, 256.0, True):
        with pytest.raises(ValueError, match="seqlen"):
            MonarchFFTConv(bad)
    with pytest.raises(ValueError, match="order"):
        MonarchFFTConv(256, order=5)
    with pytest.raises(TypeError, match="dtype"):
        MonarchFFTConv(256, dtype=torch.int32)
    with pytest.raises(TypeError, match="dtype"):
        MonarchFFTConv(256, dtype=torch.complex64)
    with pytest.raises(TypeError, match="real_trick"):
        MonarchFFTConv(256, real_trick=1)


def test_bad_call_arguments():
    mod = MonarchFFTConv(64)
    u, k = torch.randn(2, 3, 32), torch.randn(3, 32)
    with pytest.raises(ValueError, match=r"k.shape\[0\]"):
        mod(u, torch.randn(4, 32))
    with pytest.raises(ValueError, match=r"u must have shape \(B, H, L\)"):
        mod(u[0], k)
    with pytest.raises(ValueError, match=r"k must have shape \(H, L\)"):
        mod(u, k[None])
    with pytest.raises(ValueError, match="length <= 32"):
        mod(torch.randn(2, 3, 33), k)
    with pytest.raises(ValueError, match="k has length"):
        mod(u, torch.randn(3, 40))
    with pytest.raises(TypeError, match="u must be real"):
        mod(torch.randn(2, 3, 32, dtype=torch.complex64), k)
    with pytest.raises(TypeError, match="k must be real"):
        mod(u, torch.randn(3, 32, dtype=torch.complex64))
    with pytest.raises(TypeError, match="floating-point"):
        mod(torch.ones(2, 3, 32, dtype=torch.int64), k)
    with pytest.raises(TypeError, match="torch.Tensor"):
        mod(u.tolist(), k)
    with pytest.raises(ValueError, match="k_f"):
        mod.forward_spectrum(u, torch.randn(3, 32))
