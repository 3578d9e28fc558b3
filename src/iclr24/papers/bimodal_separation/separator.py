"""The bi-modal separator: text-queried masks on the mixture of mixtures and the weak losses
(paper Sec. 3; official ``main.py`` NetWrapper.forward).

Training batch: two natural mixtures M_1, M_2 with captions, summed to MoM = M_1 + M_2. Every
prediction is a mask on |STFT(MoM)| from the U-Net on log1p|STFT(MoM)|, queried by a text:

- L_unsup (mix-and-separate): M_hat_n from caption n, WL1(|M_hat_n|, |M_n|; w from |MoM|);
- L_cns: S_hat_{n,k} from phrase k of caption n, WL1(sum_k a_{n,k}|S_hat_{n,k}|, |M_n|; w from
  |M_n|);
- L_cnt: InfoNCE between the frozen audio-text model's embeddings of iSTFT(S_hat_{n,k}) (MoM
  phase) and of the phrases, over the batch's phrases of caption slot n.

L = 0.5 L_cnt + 5 (L_cns + L_unsup). ``terms`` selects which of them a run trains with: the
mix-and-separate baseline uses ``("unsup",)``; a supervised model is the same loss on mixtures
of single-source clips captioned with their class.

Captions are split into phrases on "and" and commas (:func:`parse_caption`); a caption with
fewer than ``n_sources`` phrases is padded by repeating phrases with presence weights 1/count,
as the official data loader does (deterministically here: cyclic instead of random repeats).
Repeated phrases give identical predictions, so L_cns is exact either way; the official InfoNCE
keeps the repeated rows (``include_padding=True``), the default here drops them (each distinct
phrase once). A caption with more phrases than ``n_sources`` is an error (the official loader
silently keeps a random subset, which breaks the consistency sum).

Differences from the paper: the audio-text model runs at the separator's rate (no resampling to
48 kHz; a mismatch is an error); the text encoder's pooled embedding conditions the U-Net by
FiLM (see ``unet.py``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .audio_text import AudioTextModel
from .losses import (
    bimodal_contrastive_loss,
    consistency_reconstruction_loss,
    loss_weight,
    weighted_l1,
)
from .spectrogram import istft_with_phase, stft
from .unet import Synthesizer, TextConditionedUNet

__all__ = ["TERMS", "BiModalSeparator", "MixtureBatch", "parse_caption"]

TERMS = ("unsup", "consistency", "contrastive")


def parse_caption(caption: str, n_sources: int) -> tuple[list[str], list[float], list[bool]]:
    """Split ``caption`` into ``n_sources`` phrase slots.

    Returns (phrases, presence weights a_k, first-occurrence flags): phrases beyond the
    caption's own are cyclic repeats, and the weights of each phrase's copies sum to 1.
    """
    if not isinstance(caption, str):
        raise TypeError(f"caption must be a str, got {type(caption).__name__}")
    phrases = [p.strip() for p in re.split(r",|\band\b", caption) if p.strip()]
    if not phrases:
        raise ValueError(f"caption {caption!r} names no sound")
    if len(phrases) > n_sources:
        raise ValueError(f"caption {caption!r} has {len(phrases)} phrases, more than "
                         f"n_sources = {n_sources}")
    slots = [phrases[i % len(phrases)] for i in range(n_sources)]
    counts = [slots.count(p) for p in slots]
    return slots, [1.0 / c for c in counts], [i < len(phrases) for i in range(n_sources)]


@dataclass(frozen=True)
class MixtureBatch:
    """A training batch: ``mixtures`` (B, 2, samples), the two mixtures to be summed into the
    mixture of mixtures, and ``captions``, B pairs of captions (one per mixture)."""

    mixtures: torch.Tensor
    captions: tuple[tuple[str, str], ...]
    sample_rate: int

    def __post_init__(self) -> None:
        m = self.mixtures
        if not isinstance(m, torch.Tensor) or m.dim() != 3 or m.shape[1] != 2:
            raise ValueError(f"mixtures must be a (batch, 2, samples) tensor, got "
                             f"{tuple(getattr(m, 'shape', ()))}")
        if not m.is_floating_point():
            raise TypeError(f"mixtures must be a floating-point tensor, got {m.dtype}")
        if m.shape[0] == 0 or m.shape[-1] == 0:
            raise ValueError(f"mixtures is empty (shape {tuple(m.shape)})")
        if not torch.isfinite(m).all():
            raise ValueError("mixtures must be finite (no NaN or inf)")
        if len(self.captions) != m.shape[0] or any(len(c) != 2 for c in self.captions):
            raise ValueError(f"captions must hold {m.shape[0]} pairs of strings")
        if not all(isinstance(t, str) for c in self.captions for t in c):
            raise TypeError("captions must hold strings")


class BiModalSeparator(nn.Module):
    """Text-queried separator trained with the weak bi-modal losses.

    unet, synthesizer: the mask network; audio_text_model: a frozen :class:`AudioTextModel`
    (not registered as a submodule, so it is never in ``parameters()`` or the state dict, but
    ``.to()`` / ``.double()`` move it with the separator); n_fft, hop: the STFT (hop <= n_fft);
    sample_rate: the rate of all audio (must equal the audio-text model's); n_sources: phrase
    slots per caption; lambda_rec, contrastive_weight (finite, >= 0): L = cw * L_cnt +
    lambda_rec * (L_cns + L_unsup); include_padding: keep repeated phrase rows in the InfoNCE
    (official) or not.

    Inputs: floating-point, finite audio of at least ``n_fft`` samples (``ValueError`` /
    ``TypeError`` otherwise, naming the argument); audio of another float dtype is computed in
    the separator's dtype and returned in its own.
    """

    def __init__(self, unet: TextConditionedUNet, synthesizer: Synthesizer,
                 audio_text_model: AudioTextModel, *, n_fft: int = 256, hop: int = 128,
                 sample_rate: int = 8000, n_sources: int = 3, lambda_rec: float = 5.0,
                 contrastive_weight: float = 0.5, include_padding: bool = False) -> None:
        super().__init__()
        if not isinstance(audio_text_model, AudioTextModel):
            raise TypeError("audio_text_model must implement AudioTextModel (sample_rate, "
                            "logit_scale, embed_audio, embed_text)")
        if unet.n_freq != n_fft // 2 + 1:
            raise ValueError(f"unet.n_freq must be n_fft // 2 + 1 = {n_fft // 2 + 1}, got "
                             f"{unet.n_freq}")
        if audio_text_model.sample_rate != sample_rate:
            raise ValueError(f"sample_rate ({sample_rate}) must equal the audio-text model's "
                             f"rate ({audio_text_model.sample_rate}); resampling is not built in")
        for name, v in (("n_sources", n_sources), ("n_fft", n_fft), ("hop", hop)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if hop > n_fft:
            raise ValueError(f"hop must be <= n_fft = {n_fft}, got {hop}")
        for name, v in (("lambda_rec", lambda_rec), ("contrastive_weight", contrastive_weight)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
        self.unet, self.synthesizer = unet, synthesizer
        self.__dict__["audio_text_model"] = audio_text_model  # frozen, kept out of parameters()
        self.n_fft, self.hop, self.sample_rate = n_fft, hop, sample_rate
        self.n_sources, self.lambda_rec = n_sources, float(lambda_rec)
        self.contrastive_weight, self.include_padding = float(contrastive_weight), include_padding

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True
               ) -> BiModalSeparator:
        """``.to()``, ``.cuda()``, ``.double()``... also move the frozen audio-text model (kept
        out of ``parameters()`` and the state dict, but it must live where the U-Net lives)."""
        super()._apply(fn, recurse)
        if isinstance(self.audio_text_model, nn.Module):
            self.audio_text_model._apply(fn, recurse)
        return self

    # -- pieces -----------------------------------------------------------------------------
    def _param(self) -> torch.Tensor:
        return next(self.unet.parameters())

    def _text(self, phrases: Sequence[str]) -> torch.Tensor:
        with torch.no_grad():
            return self.audio_text_model.embed_text(list(phrases))

    def _masks(self, skips: list[torch.Tensor], frames: int, text_emb: torch.Tensor
               ) -> torch.Tensor:
        return self.synthesizer(text_emb, self.unet.decode(skips, text_emb, frames))

    def _analyse(self, wave: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        spec = stft(wave, self.n_fft, self.hop)
        return spec, self.unet.encode(torch.log1p(spec.abs()).unsqueeze(1))

    def _check_rate(self, sample_rate: int) -> None:
        if sample_rate != self.sample_rate:
            raise ValueError(f"sample_rate must be {self.sample_rate} Hz (the separator's rate), "
                             f"got {sample_rate}")

    # -- public ------------------------------------------------------------------------------
    def separate(self, mixture: torch.Tensor, text: str | Sequence[str],
                 sample_rate: int) -> torch.Tensor:
        """Extract the sound named by ``text`` from ``mixture``.

        mixture: (samples,) or (B, samples); text: one phrase, or B phrases (one per row);
        returns the estimate with the mixture's shape (mask x |X|, iSTFT with the mixture's
        phase).
        """
        self._check_rate(sample_rate)
        if not isinstance(mixture, torch.Tensor):
            raise TypeError(f"mixture must be a torch.Tensor, got {type(mixture).__name__}")
        if mixture.dim() not in (1, 2):
            raise ValueError(f"mixture must be a (samples,) or (batch, samples) tensor, got "
                             f"shape {tuple(mixture.shape)}")
        if not mixture.is_floating_point():
            raise TypeError(f"mixture must be a floating-point tensor, got {mixture.dtype}")
        self._check_length("mixture", mixture)
        if not torch.isfinite(mixture).all():
            raise ValueError("mixture must be finite (no NaN or inf)")
        single = mixture.dim() == 1
        # computed in the separator's dtype (float64 audio into a float32 model is cast; the
        # estimate comes back in the mixture's dtype)
        wave = (mixture.unsqueeze(0) if single else mixture).to(self._param().dtype)
        texts = [text] * wave.shape[0] if isinstance(text, str) else list(text)
        if len(texts) != wave.shape[0]:
            raise ValueError(f"text must be one str or {wave.shape[0]} strings, got {len(texts)}")
        if not all(isinstance(t, str) for t in texts):
            raise TypeError("text must be one str or a sequence of str")
        spec, skips = self._analyse(wave)
        text_emb = self._text(texts).to(device=wave.device, dtype=wave.dtype)
        mask = self._masks(skips, spec.shape[-1], text_emb)
        # S_hat = iSTFT(mask * |X| * exp(i angle X))
        est = istft_with_phase(mask * spec.abs(), spec, self.n_fft, self.hop, wave.shape[-1])
        est = est.to(mixture.dtype)
        return est[0] if single else est

    def _check_length(self, name: str, wave: torch.Tensor) -> None:
        if wave.numel() == 0:
            raise ValueError(f"{name} is empty (shape {tuple(wave.shape)})")
        if wave.shape[-1] < self.n_fft:
            raise ValueError(f"{name} must have at least n_fft = {self.n_fft} samples, got "
                             f"{wave.shape[-1]}")

    def training_losses(self, batch: MixtureBatch, terms: Sequence[str] = TERMS
                        ) -> dict[str, torch.Tensor]:
        """The losses on one batch: ``{"unsup", "consistency", "contrastive", "total"}`` for the
        chosen ``terms`` (the total weights them as in the paper)."""
        if not isinstance(batch, MixtureBatch):
            raise TypeError(f"batch must be a MixtureBatch, got {type(batch).__name__}")
        bad = [t for t in terms if t not in TERMS]
        if bad or not terms:
            raise ValueError(f"terms must be a non-empty subset of {TERMS}, got {tuple(terms)}")
        self._check_rate(batch.sample_rate)
        self._check_length("batch.mixtures", batch.mixtures)
        mixes = batch.mixtures.to(self._param().dtype)
        b, _, length = mixes.shape
        mom = mixes.sum(dim=1)  # MoM = M_1 + M_2
        spec, skips = self._analyse(mom)
        mag = spec.abs()
        frames = spec.shape[-1]
        out: dict[str, torch.Tensor] = {}
        mix_mags = [stft(mixes[:, n], self.n_fft, self.hop).abs() for n in range(2)]
        if "unsup" in terms:
            w = loss_weight(mag)  # weights from |MoM|
            out["unsup"] = sum(
                weighted_l1(self._masks(skips, frames, self._text([c[n] for c in batch.captions])
                                        ) * mag, mix_mags[n], w)
                for n in range(2))
        if "consistency" in terms or "contrastive" in terms:
            cns, cnt = mag.new_zeros(()), mag.new_zeros(())
            for n in range(2):
                parsed = [parse_caption(c[n], self.n_sources) for c in batch.captions]
                k = self.n_sources
                # distinct phrases are decoded once; repeated slots point at their first copy
                rows, index = [], torch.empty(b, k, dtype=torch.long, device=mag.device)
                for i, (phrases, _, _) in enumerate(parsed):
                    for j, p in enumerate(phrases):
                        first = phrases.index(p)
                        if first == j:
                            index[i, j] = len(rows)
                            rows.append((i, p))
                        else:
                            index[i, j] = index[i, first]
                item = torch.tensor([i for i, _ in rows], device=mag.device)
                text = self._text([p for _, p in rows]).to(mag.dtype)
                masks = self._masks([s[item] for s in skips], frames, text)
                src_mags = masks * mag[item]  # |S_hat_{n,k}| = mask * |MoM|
                if "consistency" in terms:
                    presence = torch.tensor([a for _, a, _ in parsed], dtype=mag.dtype,
                                            device=mag.device)
                    cns = cns + consistency_reconstruction_loss(src_mags[index], presence,
                                                                mix_mags[n])
                if "contrastive" in terms:
                    sel = (index.flatten() if self.include_padding
                           else torch.arange(len(rows), device=mag.device))
                    waves = istft_with_phase(src_mags[sel], spec[item[sel]], self.n_fft,
                                             self.hop, length)
                    audio = self.audio_text_model.embed_audio(waves, self.sample_rate)
                    cnt = cnt + bimodal_contrastive_loss(audio, text[sel],
                                                         self.audio_text_model.logit_scale)
            if "consistency" in terms:
                out["consistency"] = cns
            if "contrastive" in terms:
                out["contrastive"] = cnt
        zero = mag.new_zeros(())
        # L = 0.5 L_cnt + lambda_rec (L_cns + L_unsup)
        out["total"] = (self.contrastive_weight * out.get("contrastive", zero)
                        + self.lambda_rec * (out.get("consistency", zero) + out.get("unsup", zero)))
        return out
