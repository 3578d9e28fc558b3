"""Short-time Fourier transforms with torch.stft / torch.istft (never torchaudio).

The separator works on the magnitude of the mixture's STFT and resynthesises every estimate with
the *mixture's* phase (paper Sec. 3; official ``realimag(pred_mag, cos, sin)`` then ISTFT):

    S_hat = iSTFT( mask * |X| * exp(i angle X) ).

A unit mask therefore returns the mixture itself (tested to float precision).
"""

from __future__ import annotations

import torch

__all__ = ["istft_with_phase", "stft"]


def _window(n_fft: int, like: torch.Tensor) -> torch.Tensor:
    return torch.hann_window(n_fft, dtype=like.dtype, device=like.device)


def stft(wave: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
    """Complex STFT of ``wave`` (batch, samples) -> (batch, n_fft // 2 + 1, frames), Hann window,
    centred frames."""
    if not isinstance(wave, torch.Tensor) or wave.dim() != 2:
        raise ValueError(f"wave must be a (batch, samples) tensor, got "
                         f"{getattr(wave, 'shape', type(wave).__name__)}")
    return torch.stft(wave, n_fft, hop_length=hop, window=_window(n_fft, wave), center=True,
                      return_complex=True)


def istft_with_phase(magnitude: torch.Tensor, reference: torch.Tensor, n_fft: int, hop: int,
                     length: int) -> torch.Tensor:
    """Waveform from ``magnitude`` (..., F, T) and the phase of the complex ``reference``
    (broadcastable to it) -> (..., length)."""
    phase = reference / reference.abs().clamp_min(1e-12)  # exp(i angle X); 0-bins get phase 1
    phase = torch.where(reference.abs() > 0, phase, torch.ones_like(phase))
    spec = magnitude.to(phase.dtype) * phase
    lead = spec.shape[:-2]
    flat = spec.reshape(-1, *spec.shape[-2:])
    wave = torch.istft(flat, n_fft, hop_length=hop, window=_window(n_fft, magnitude),
                       center=True, length=length)
    return wave.reshape(*lead, length)
