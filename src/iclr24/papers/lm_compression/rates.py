"""Rate accounting of "Language Modeling Is Compression": adjusted rates and ASCII masks.

* Compression rate = compressed bytes / raw bytes (lower is better).
* Adjusted compression rate (paper Sec. 3.3, Table 1): the decoder must be shipped too, so
      adjusted = (compressed bytes + n_params · bytes_per_param) / raw bytes,
  which for a big model on a small data set is far above 100%.
* Masks for byte models trained on ASCII text (paper ``utils.py`` behaviour): non-text data is
  right-shifted by one bit (``x >> 1``, 7 bits kept) and the compressed size is rescaled by
  num_bits / (num_bits − num_missed_bits) (= 8/7); text with non-ASCII bytes has their MSB
  zeroed (one missed bit per non-ASCII byte) and is rescaled by its missed-bit count. Our byte models have the full 256-symbol
  alphabet, so the claims report the unmasked rate and the masked (paper-style) one side by side.
"""

from __future__ import annotations

import numpy as np

__all__ = ["adjusted_rate", "mask_rescale", "right_shift_bytes", "zero_msb_if_not_ascii"]


def adjusted_rate(compressed_bytes: float, raw_bytes: float, n_params: int,
                  bytes_per_param: float = 4.0) -> float:
    """(compressed + n_params · bytes_per_param) / raw — the rate with the model paid for."""
    if raw_bytes <= 0:
        raise ValueError(f"raw_bytes must be > 0, got {raw_bytes!r}")
    if compressed_bytes < 0 or n_params < 0 or bytes_per_param < 0:
        raise ValueError("compressed_bytes, n_params and bytes_per_param must be >= 0")
    return (compressed_bytes + n_params * bytes_per_param) / raw_bytes


def right_shift_bytes(data: bytes) -> tuple[bytes, int]:
    """Every byte shifted right by one (keeps 7 bits); returns (masked, missed bits = len)."""
    arr = np.frombuffer(bytes(data), dtype=np.uint8)
    return (arr >> 1).astype(np.uint8).tobytes(), int(arr.size)


def zero_msb_if_not_ascii(data: bytes) -> tuple[bytes, int]:
    """Zero the MSB of every non-ASCII byte (>= 0x80); ASCII bytes pass unchanged.

    Returns (masked, missed bits) with one missed bit per non-ASCII byte, as the official
    ``zero_most_significant_bit_if_not_ascii_decodable`` counts them: ``C3 41`` -> ``43 41``, 1.
    """
    arr = np.frombuffer(bytes(data), dtype=np.uint8)
    high = arr >= 0x80
    return (arr & 0x7F).astype(np.uint8).tobytes(), int(high.sum())


def mask_rescale(compressed_bytes: float, raw_bytes: int, missed_bits: int) -> float:
    """compressed · num_bits / (num_bits − missed_bits): what the masked coder would have
    needed for all 8 bits (paper ``compress.py``)."""
    num_bits = 8 * raw_bytes
    if missed_bits >= num_bits:
        raise ValueError("missed_bits must be smaller than the number of bits")
    return compressed_bytes * num_bits / (num_bits - missed_bits)
