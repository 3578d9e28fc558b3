"""How a float tensor travels: cast to the communication dtype, or block-quantize (qwZ / qgZ).

Every collective in this package moves ``uint8`` payloads. A :class:`WireCodec` turns a flat
fp32 tensor into such a payload and back, and says in advance how many bytes a tensor of
``numel`` elements takes (receivers must size their buffers before the bytes arrive):

* :class:`CastCodec` -- plain ZeRO-3: the fp16 (or bf16 / fp32) copy of the values;
* :class:`BlockQuantCodec` -- ZeRO++: cast to the communication dtype, then symmetric block
  quantization to ``bits`` (scales travel with the codes, see :mod:`.block_quantization`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from .block_quantization import (
    QuantizedTensor,
    block_dequantize,
    block_quantize,
    quantized_nbytes,
)

__all__ = ["BlockQuantCodec", "CastCodec", "WireCodec"]

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class WireCodec(ABC):
    """Encodes flat float tensors as uint8 payloads of a size known from ``numel`` alone."""

    @abstractmethod
    def nbytes(self, numel: int) -> int:
        """Payload bytes for a ``numel``-element tensor."""

    @abstractmethod
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """x: (numel,) float -> (nbytes(numel),) uint8."""

    @abstractmethod
    def decode(self, payload: torch.Tensor, numel: int) -> torch.Tensor:
        """(nbytes(numel),) uint8 -> (numel,) float32."""


class CastCodec(WireCodec):
    """Send the values in ``dtype`` (fp16 for ZeRO-3's communication, fp32 for exact checks)."""

    def __init__(self, dtype: torch.dtype = torch.float16) -> None:
        if dtype not in _FLOAT_DTYPES:
            raise ValueError(f"dtype must be one of {_FLOAT_DTYPES}, got {dtype!r}")
        self.dtype = dtype
        self.itemsize = torch.empty((), dtype=dtype).element_size()

    def nbytes(self, numel: int) -> int:
        return numel * self.itemsize

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return x.detach().reshape(-1).to(self.dtype).contiguous().view(torch.uint8)

    def decode(self, payload: torch.Tensor, numel: int) -> torch.Tensor:
        if payload.numel() != self.nbytes(numel):
            raise ValueError(f"payload has {payload.numel()} bytes, expected "
                             f"{self.nbytes(numel)} for {numel} {self.dtype} values")
        return payload.contiguous().view(self.dtype).to(torch.float32)

    def __repr__(self) -> str:
        return f"CastCodec({self.dtype})"


class BlockQuantCodec(WireCodec):
    """Cast to ``base_dtype`` (the fp16 copy ZeRO++ quantizes), then block-quantize to ``bits``."""

    def __init__(self, bits: int, block_size: int = 2048,
                 base_dtype: torch.dtype = torch.float16) -> None:
        quantized_nbytes(0, bits, block_size)  # validates bits and block_size
        if base_dtype not in _FLOAT_DTYPES:
            raise ValueError(f"base_dtype must be one of {_FLOAT_DTYPES}, got {base_dtype!r}")
        self.bits = bits
        self.block_size = block_size
        self.base_dtype = base_dtype

    def nbytes(self, numel: int) -> int:
        return quantized_nbytes(numel, self.bits, self.block_size)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.detach().reshape(-1).to(self.base_dtype)
        return block_quantize(flat, self.bits, self.block_size).to_bytes()

    def decode(self, payload: torch.Tensor, numel: int) -> torch.Tensor:
        qt = QuantizedTensor.from_bytes(payload, (numel,), self.bits, self.block_size)
        return block_dequantize(qt)

    def __repr__(self) -> str:
        return f"BlockQuantCodec(bits={self.bits}, block_size={self.block_size})"
