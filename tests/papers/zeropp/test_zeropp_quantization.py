"""Block quantizers and bit packing: round trips, error bounds, byte counts, bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.zeropp import (
    BlockQuantCodec,
    CastCodec,
    QuantizedTensor,
    block_dequantize,
    block_quantize,
    pack_codes,
    quantized_nbytes,
    relative_quantization_error,
    unpack_codes,
)


@settings(max_examples=40, deadline=None)
@given(bits=st.integers(2, 8), numel=st.integers(0, 300), seed=st.integers(0, 2**16))
def test_pack_unpack_round_trip(bits, numel, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 1 << bits, (numel,), generator=g)
    packed = pack_codes(codes, bits)
    assert packed.dtype == torch.uint8
    assert packed.numel() == math.ceil(numel * bits / 8) if bits in (2, 4, 8) else True
    assert torch.equal(unpack_codes(packed, bits, numel), codes)


@pytest.mark.parametrize("bits,numel,nbytes", [(8, 10, 10), (6, 8, 6), (6, 9, 9), (4, 5, 3),
                                               (2, 9, 3)])
def test_packed_sizes(bits, numel, nbytes):
    assert pack_codes(torch.zeros(numel, dtype=torch.int64), bits).numel() == nbytes


@settings(max_examples=40, deadline=None)
@given(bits=st.sampled_from([2, 4, 6, 8]), numel=st.integers(1, 500),
       block=st.integers(1, 128), seed=st.integers(0, 2**16), scale=st.floats(1e-3, 1e3))
def test_quantization_error_within_half_a_step(bits, numel, block, seed, scale):
    x = torch.randn(numel, generator=torch.Generator().manual_seed(seed)) * scale
    qt = block_quantize(x, bits, block)
    y = block_dequantize(qt)
    qmax = 2 ** (bits - 1) - 1
    n_blocks = math.ceil(numel / block)
    pad = torch.cat([x, x.new_zeros(n_blocks * block - numel)]).view(n_blocks, block)
    step = pad.abs().amax(1) / qmax                       # s_b = max|x_b| / qmax
    bound = (step / 2).repeat_interleave(block)[:numel]
    assert torch.all((y - x).abs() <= bound * (1 + 1e-5) + 1e-30)
    assert qt.nbytes == quantized_nbytes(numel, bits, block) == qt.to_bytes().numel()
    back = QuantizedTensor.from_bytes(qt.to_bytes(), (numel,), bits, block)
    assert torch.equal(block_dequantize(back), y)


def test_exact_on_grid_values_and_zero_blocks():
    x = torch.tensor([0.0, 0.0, 0.0, 0.0, -2.0, 1.0, 2.0, 0.5])
    y = block_dequantize(block_quantize(x, 8, 4))
    assert torch.equal(y[:4], torch.zeros(4))             # all-zero block: no 0/0
    assert torch.allclose(y[4:], x[4:], atol=2 / 127 / 2)
    ternary = block_dequantize(block_quantize(torch.tensor([-3.0, 0.2, 3.0, 1.6]), 2, 4))
    assert torch.equal(ternary, torch.tensor([-3.0, 0.0, 3.0, 3.0]))  # 2-bit grid {-s, 0, s}


def test_shape_and_dtype_are_restored():
    x = torch.randn(3, 5, dtype=torch.float64)
    y = block_dequantize(block_quantize(x, 8, 4))
    assert y.shape == (3, 5) and y.dtype == torch.float64


def test_error_shrinks_with_more_bits_and_smaller_blocks():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8192, generator=g)
    errs = [relative_quantization_error(x, b, 256) for b in (2, 4, 6, 8)]
    assert errs == sorted(errs, reverse=True)
    x[0] = 1000.0  # one outlier ruins a single scale, but only its own block
    rest = slice(256, None)
    whole = block_dequantize(block_quantize(x, 8, 8192))
    blocked = block_dequantize(block_quantize(x, 8, 256))
    assert (blocked - x)[rest].norm() < (whole - x)[rest].norm() / 10
    assert relative_quantization_error(torch.zeros(7), 8, 4) == 0.0


def test_codecs_sizes_and_round_trip():
    x = torch.randn(1000)
    fp16 = CastCodec(torch.float16)
    assert fp16.nbytes(1000) == 2000 and fp16.encode(x).numel() == 2000
    assert torch.allclose(fp16.decode(fp16.encode(x), 1000), x, atol=1e-2)
    fp32 = CastCodec(torch.float32)
    assert torch.equal(fp32.decode(fp32.encode(x), 1000), x)
    q4 = BlockQuantCodec(4, 256)
    assert q4.encode(x).numel() == q4.nbytes(1000) == 500 + 4 * 4
    assert relative_quantization_error(x, 4, 256) < 0.2


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="bits"):
        block_quantize(torch.randn(4), 9, 4)
    with pytest.raises(ValueError, match="bits"):
        block_quantize(torch.randn(4), 1, 4)
    with pytest.raises(TypeError, match="bits"):
        block_quantize(torch.randn(4), 8.0, 4)
    with pytest.raises(ValueError, match="block_size"):
        block_quantize(torch.randn(4), 8, 0)
    with pytest.raises(TypeError, match="floating"):
        block_quantize(torch.arange(4), 8, 4)
    with pytest.raises(TypeError, match="torch.Tensor"):
        block_quantize([1.0, 2.0], 8, 4)
    with pytest.raises(ValueError, match="codes must lie"):
        pack_codes(torch.tensor([0, 16]), 4)
    with pytest.raises(ValueError, match="payload"):
        QuantizedTensor.from_bytes(torch.zeros(3, dtype=torch.uint8), (10,), 8, 4)
    with pytest.raises(ValueError, match="dtype"):
        CastCodec(torch.int8)
    with pytest.raises(TypeError, match="QuantizedTensor"):
        block_dequantize(torch.zeros(3))
