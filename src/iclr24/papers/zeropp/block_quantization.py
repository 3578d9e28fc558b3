"""Block-based symmetric quantization with int8/int6/int4/int2 bit packing (ZeRO++ §3.1, qwZ).

ZeRO++ quantizes the communicated copy of the weights (qwZ) and of the gradients (qgZ) block by
block: the flat tensor is cut into consecutive blocks of ``block_size`` elements and each block
gets its own scale, which keeps one outlier from wiping out the resolution of the whole tensor
(the paper's motivation for blocks over one scale per tensor).

Per block ``b`` with ``qmax = 2**(bits-1) - 1``::

    s_b = max|x_b| / qmax                      # symmetric scale (fp32, one per block)
    q   = clip(round(x / s_b), -qmax, qmax)    # integer code
    x^  = q * s_b                              # dequantized value, |x - x^| <= s_b / 2

An all-zero block gets ``s_b = 0`` and decodes to zeros (no 0/0). The codes are stored in
offset-binary (``q + qmax``) and packed into ``uint8``: 1 code per byte at 8 bits, 4 codes in 3
bytes at 6 bits, 2 per byte at 4 bits, 4 per byte at 2 bits (torch has no int4 dtype, and sending
int8 that holds int4 values would double the bytes). At 2 bits the symmetric grid is ternary
{-s, 0, s}, which wastes one of the four codes; DeepSpeed's CUDA kernels use an asymmetric
clamp instead. Any width from 2 to 8 bits packs; the paper uses 8, 6, 4 and 2.

``QuantizedTensor.to_bytes`` lays out ``[scales as raw fp32 bytes | packed codes]``: that byte
string is exactly what the engine sends, so the byte ledger counts the scales too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = [
    "QuantizedTensor",
    "block_dequantize",
    "block_quantize",
    "pack_codes",
    "quantized_nbytes",
    "relative_quantization_error",
    "unpack_codes",
]

_SUPPORTED_BITS = range(2, 9)


def _check_bits(bits: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise TypeError(f"bits must be an int in 2..8, got {bits!r}")
    if bits not in _SUPPORTED_BITS:
        raise ValueError(f"bits must be in 2..8 (the paper uses 8, 6, 4, 2), got {bits}")
    return bits


def _check_block_size(block_size: int) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int):
        raise TypeError(f"block_size must be a positive int, got {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    return block_size


def _codes_per_word(bits: int) -> tuple[int, int]:
    """(codes, bytes) in the smallest whole-byte word: lcm(bits, 8) bits."""
    word_bits = bits * 8 // math.gcd(bits, 8)
    return word_bits // bits, word_bits // 8


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack unsigned codes (values in [0, 2**bits)) into a flat uint8 tensor.

    codes: (numel,) integer tensor. Returns (ceil(numel / c) * b,) uint8 where (c, b) are the codes
    and bytes of one lcm(bits, 8)-bit word (c=1,b=1 at 8 bits; 4,3 at 6; 2,1 at 4; 4,1 at 2).
    """
    _check_bits(bits)
    if codes.is_floating_point() or codes.is_complex():
        raise TypeError(f"codes must be an integer tensor, got {codes.dtype}")
    flat = codes.reshape(-1)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= 1 << bits):
        raise ValueError(f"codes must lie in [0, {1 << bits}) for {bits}-bit packing")
    return _pack_unchecked(flat.to(torch.uint8), bits)


def _pack_unchecked(flat: torch.Tensor, bits: int) -> torch.Tensor:
    """pack_codes without validation; ``flat`` holds valid codes (uint8)."""
    flat = flat.reshape(-1)
    per_word, word_bytes = _codes_per_word(bits)
    pad = (-flat.numel()) % per_word
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    if word_bytes == 1:  # 8, 4, 2 bits: several codes per byte, pure uint8 arithmetic
        small = flat.to(torch.uint8).view(-1, per_word)
        out = small[:, 0].clone()
        for i in range(1, per_word):
            out |= small[:, i] << (i * bits)
        return out
    shifts = torch.arange(per_word, device=flat.device, dtype=torch.int64) * bits
    # one lcm(bits, 8)-bit word per row
    words = (flat.to(torch.int64).view(-1, per_word) << shifts).sum(dim=1)
    byte_shifts = torch.arange(word_bytes, device=flat.device, dtype=torch.int64) * 8
    out = (words.unsqueeze(1) >> byte_shifts) & 0xFF
    return out.reshape(-1).to(torch.uint8)


def unpack_codes(packed: torch.Tensor, bits: int, numel: int) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: the first ``numel`` codes as int64, shape (numel,)."""
    _check_bits(bits)
    if packed.dtype != torch.uint8:
        raise TypeError(f"packed must be uint8, got {packed.dtype}")
    per_word, word_bytes = _codes_per_word(bits)
    needed = -(-numel // per_word) * word_bytes
    if packed.numel() != needed:
        raise ValueError(f"packed holds {packed.numel()} bytes; {numel} codes at {bits} bits "
                         f"need {needed}")
    return _unpack_unchecked(packed, bits, numel).to(torch.int64)


def _unpack_unchecked(packed: torch.Tensor, bits: int, numel: int) -> torch.Tensor:
    """unpack_codes without validation; uint8 codes at 8/4/2 bits, int64 otherwise."""
    per_word, word_bytes = _codes_per_word(bits)
    if word_bytes == 1:  # 8, 4, 2 bits
        if per_word == 1:
            return packed[:numel]
        shifts = torch.arange(per_word, device=packed.device, dtype=torch.uint8) * bits
        codes = (packed.unsqueeze(1) >> shifts) & ((1 << bits) - 1)
        return codes.reshape(-1)[:numel]
    raw = packed.to(torch.int64).view(-1, word_bytes)
    byte_shifts = torch.arange(word_bytes, device=packed.device, dtype=torch.int64) * 8
    words = (raw << byte_shifts).sum(dim=1)
    shifts = torch.arange(per_word, device=packed.device, dtype=torch.int64) * bits
    codes = (words.unsqueeze(1) >> shifts) & ((1 << bits) - 1)
    return codes.reshape(-1)[:numel]


def quantized_nbytes(numel: int, bits: int, block_size: int) -> int:
    """Bytes of the wire format of a ``numel``-element tensor: fp32 scales + packed codes."""
    _check_bits(bits)
    _check_block_size(block_size)
    if numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    per_word, word_bytes = _codes_per_word(bits)
    n_blocks = -(-numel // block_size)
    return 4 * n_blocks + -(-numel // per_word) * word_bytes


@dataclass(frozen=True)
class QuantizedTensor:
    """A block-quantized tensor.

    data:   (packed_bytes,) uint8, offset-binary codes packed ``bits`` wide;
    scales: (n_blocks,) float32, one symmetric scale per block (0 for an all-zero block);
    shape:  the original shape; bits, block_size: the quantizer's parameters;
    dtype:  the floating dtype :func:`block_dequantize` returns.
    """

    data: torch.Tensor
    scales: torch.Tensor
    shape: tuple[int, ...]
    bits: int
    block_size: int
    dtype: torch.dtype = torch.float32

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire: packed codes plus 4 bytes per block scale."""
        return self.data.numel() + 4 * self.scales.numel()

    def to_bytes(self) -> torch.Tensor:
        """The wire format: ``[scales (raw fp32 bytes) | packed codes]`` as one uint8 tensor."""
        return torch.cat([self.scales.contiguous().view(torch.uint8), self.data])

    @classmethod
    def from_bytes(cls, payload: torch.Tensor, shape: tuple[int, ...] | int, bits: int,
                   block_size: int, dtype: torch.dtype = torch.float32) -> QuantizedTensor:
        """Parse :meth:`to_bytes` output back, given the metadata both ends know."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        numel = math.prod(shape)
        expected = quantized_nbytes(numel, bits, block_size)
        if payload.dtype != torch.uint8 or payload.numel() != expected:
            raise ValueError(f"payload must be {expected} uint8 bytes for {numel} elements at "
                             f"{bits} bits, block {block_size}; got {payload.numel()} "
                             f"{payload.dtype}")
        n_blocks = -(-numel // block_size)
        scales = payload[: 4 * n_blocks].clone().view(torch.float32)
        return cls(payload[4 * n_blocks:], scales, shape, bits, block_size, dtype)


def block_quantize(x: torch.Tensor, bits: int = 8, block_size: int = 2048) -> QuantizedTensor:
    """Symmetric per-block quantization of ``x`` (any shape, flattened row-major).

    x: floating tensor of any shape; bits in 2..8; block_size >= 1 (the last block may be short).
    Use ``block_size >= x.numel()`` for the one-scale-per-tensor baseline.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating tensor, got {x.dtype}")
    _check_bits(bits)
    _check_block_size(block_size)
    flat = x.detach().reshape(-1).to(torch.float32)
    numel = flat.numel()
    qmax = (1 << (bits - 1)) - 1
    n_blocks = -(-numel // block_size)
    pad = n_blocks * block_size - numel
    blocks = torch.cat([flat, flat.new_zeros(pad)]).view(n_blocks, block_size)
    scales = blocks.abs().amax(dim=1) / qmax                       # s_b = max|x_b| / qmax
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))  # all-zero block: no 0/0
    q = torch.clamp(torch.round(blocks / safe.unsqueeze(1)), -qmax, qmax)  # q = round(x / s)
    codes = (q.reshape(-1)[:numel] + qmax).to(torch.uint8)          # offset binary in [0, 2qmax]
    return QuantizedTensor(_pack_unchecked(codes, bits), scales, tuple(x.shape), bits,
                           block_size, x.dtype)


def block_dequantize(qt: QuantizedTensor) -> torch.Tensor:
    """x^ = q * s per block; returns a tensor of ``qt.shape`` and ``qt.dtype``."""
    if not isinstance(qt, QuantizedTensor):
        raise TypeError(f"qt must be a QuantizedTensor, got {type(qt).__name__}")
    numel = qt.numel
    qmax = (1 << (qt.bits - 1)) - 1
    q = _unpack_unchecked(qt.data, qt.bits, numel).to(torch.float32) - qmax
    n_blocks = qt.scales.numel()
    pad = n_blocks * qt.block_size - numel
    q = torch.cat([q, q.new_zeros(pad)]).view(n_blocks, qt.block_size)
    x = (q * qt.scales.unsqueeze(1)).reshape(-1)[:numel]              # x^ = q * s
    return x.reshape(qt.shape).to(qt.dtype)


def relative_quantization_error(x: torch.Tensor, bits: int, block_size: int) -> float:
    """||x - Q(x)||_2 / ||x||_2 for block quantization at ``bits`` (0 for a zero tensor)."""
    xf = x.detach().to(torch.float32)
    err = torch.linalg.vector_norm(block_dequantize(block_quantize(xf, bits, block_size)) - xf)
    norm = torch.linalg.vector_norm(xf)
    return float(err / norm) if float(norm) > 0 else 0.0
