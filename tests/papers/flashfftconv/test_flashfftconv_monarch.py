"""The Monarch DFT against closed forms and torch.fft."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.flashfftconv import (
    dft_matrix,
    monarch_dft_matrices,
    monarch_factors,
    monarch_fft,
    monarch_ifft,
    monarch_order_to_natural,
    monarch_permutation,
    natural_to_monarch_order,
    twiddle_factors,
)

factor_lists = st.lists(st.sampled_from([2, 4, 8, 16]), min_size=1, max_size=4)


@given(factors=factor_lists, seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_monarch_fft_matches_torch_fft_in_natural_order(factors, seed):
    n = math.prod(factors)
    g = torch.Generator().manual_seed(seed)
    x = torch.complex(torch.randn(3, n, generator=g, dtype=torch.float64),
                      torch.randn(3, n, generator=g, dtype=torch.float64))
    X = monarch_fft(x, factors)
    torch.testing.assert_close(monarch_order_to_natural(X, factors), torch.fft.fft(x),
                               rtol=0, atol=1e-10 * n)
    torch.testing.assert_close(monarch_ifft(X, factors), x, rtol=0, atol=1e-12 * n)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("n,order", [(2**12, 2), (2**15, 3), (2**16, 4)])
def test_large_sizes_accuracy(n, order, dtype, tol):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, n, generator=g, dtype=dtype)
    fac = monarch_factors(n, order)
    X = monarch_order_to_natural(monarch_fft(x, fac), fac)
    ref = torch.fft.fft(x.double())
    assert float((X - ref).abs().max() / ref.abs().max()) < tol
    assert X.dtype == (torch.complex64 if dtype == torch.float32 else torch.complex128)


def test_factors_balanced_and_product():
    assert monarch_factors(8192, 3) == (16, 16, 32)
    assert monarch_factors(1024, 2) == (32, 32)
    assert monarch_factors(2**21, 4) == (32, 32, 32, 64)
    for n in (4, 64, 2**20):
        for p in range(1, int(math.log2(n)) + 1):
            f = monarch_factors(n, p)
            assert math.prod(f) == n and len(f) == p and min(f) >= 2
            assert max(f) <= 2 * min(f)


def test_dft_matrix_closed_form_and_unitarity():
    n = 8
    F = dft_matrix(n, torch.complex128)
    k = torch.arange(n, dtype=torch.float64)
    expected = torch.exp(-2j * math.pi * torch.outer(k, k) / n)
    torch.testing.assert_close(F, expected, rtol=0, atol=1e-14)
    torch.testing.assert_close(F @ dft_matrix(n, torch.complex128, inverse=True) / n,
                               torch.eye(n, dtype=torch.complex128), rtol=0, atol=1e-14)
    T = twiddle_factors(4, 8, torch.complex128)
    assert T.shape == (4, 8)
    torch.testing.assert_close(T[3, 5], torch.tensor(complex(math.cos(-2 * math.pi * 15 / 32),
                                                             math.sin(-2 * math.pi * 15 / 32)),
                                                     dtype=torch.complex128))


def test_twiddles_built_from_integer_products_at_large_n():
    # ω_N^{k r} at N = 2^22 via float64 integer angles: |T| == 1 and exact periodicity
    T = twiddle_factors(2048, 2048, torch.complex64)
    assert torch.allclose(T.abs(), torch.ones(()), atol=1e-6)
    mats = monarch_dft_matrices((16, 16), torch.complex64)
    assert mats[0][1].shape == (16, 16) and mats[1][1] is None


def test_permutation_is_a_permutation_and_orders_round_trip():
    fac = (4, 8, 2)
    perm = monarch_permutation(fac)
    assert sorted(perm.tolist()) == list(range(64))
    # the last stage's output digit is the most significant natural digit: position 1 holds
    # frequency 1·(4·8) = 32; position 2 (next k2) holds 4
    assert perm[0] == 0 and perm[1] == 32 and perm[2] == 4
    x = torch.randn(2, 64, dtype=torch.complex128)
    torch.testing.assert_close(monarch_order_to_natural(natural_to_monarch_order(x, fac), fac), x)


def test_bad_input():
    with pytest.raises(ValueError, match="power of two"):
        monarch_factors(96, 2)
    with pytest.raises(ValueError, match="order"):
        monarch_factors(8, 4)
    with pytest.raises(ValueError, match="factor"):
        monarch_fft(torch.randn(12), (3, 4))
    with pytest.raises(ValueError, match="prod"):
        monarch_fft(torch.randn(2, 15), (4, 4))
    with pytest.raises(TypeError, match="x must be"):
        monarch_fft([1.0] * 16, (4, 4))
    with pytest.raises(TypeError, match="floating or complex"):
        monarch_fft(torch.arange(16), (4, 4))
    with pytest.raises(ValueError, match="non-empty"):
        monarch_ifft(torch.randn(16), ())
