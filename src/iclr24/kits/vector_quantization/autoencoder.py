"""A small VQ autoencoder (a VQGAN without the GAN and perceptual losses) and its training loop.

Encoder: a 3x3 conv to ``ch`` channels, then one residual block per level of ``ch_mult`` with a
stride-2 conv between levels (``2 ** (len(ch_mult) - 1)`` downsampling), GroupNorm + SiLU and a
1x1 ``quant_conv`` to ``code_dim`` channels. The decoder mirrors it with nearest-neighbour
upsampling. This keeps taming's structure (res-blocks per level, quant_conv / post_quant_conv
around a straight-through codebook) at the size a CPU trains in seconds: no attention at the
lowest resolution, no discriminator, no LPIPS.

Training (:func:`fit_vq_autoencoder`): L1 reconstruction + the codebook/commitment loss, Adam
with taming's betas (0.5, 0.9), the codebook initialised from k-means of the first encoder
outputs and dead codes restarted every ``restart_every`` steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from .codebook import VectorQuantizer, VQOutput

__all__ = ["VQAutoencoder", "VQFit", "fit_vq_autoencoder"]


def _norm(ch: int) -> nn.GroupNorm:
    return nn.GroupNorm(min(8, ch), ch)


class _ResBlock(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.body = nn.Sequential(_norm(cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1),
                                  _norm(cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.skip(x) + self.body(x)


class VQAutoencoder(nn.Module):
    """Conv encoder -> codebook -> conv decoder.

    in_ch:    image channels.
    ch:       base channels; level i has ``ch * ch_mult[i]``.
    ch_mult:  channel multipliers per level; ``len(ch_mult) - 1`` downsamplings.
    code_dim: channels of the latent grid (= the codebook's vector size).
    n_codes:  codebook entries.
    beta:     commitment weight.

    ``encode(x)`` (B, in_ch, H, W) -> z (B, code_dim, H/f, W/f); ``quantize(z)`` -> VQOutput;
    ``decode(zq)`` -> image; ``forward(x)`` -> (reconstruction, VQOutput).
    """

    def __init__(self, in_ch: int = 1, ch: int = 16, ch_mult: Sequence[int] = (1, 2, 2),
                 code_dim: int = 32, n_codes: int = 64, beta: float = 0.25) -> None:
        super().__init__()
        for arg, v in (("in_ch", in_ch), ("ch", ch), ("code_dim", code_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{arg} must be a positive int, got {v!r}")
        mult = tuple(ch_mult)
        if not mult or any(isinstance(m, bool) or not isinstance(m, int) or m < 1 for m in mult):
            raise ValueError(f"ch_mult must be a non-empty sequence of positive ints, got "
                             f"{ch_mult!r}")
        self.in_ch, self.code_dim, self.factor = in_ch, code_dim, 2 ** (len(mult) - 1)
        widths = [ch * m for m in mult]
        enc: list[nn.Module] = [nn.Conv2d(in_ch, widths[0], 3, padding=1)]
        for i, w in enumerate(widths):
            enc.append(_ResBlock(widths[i - 1] if i else widths[0], w))
            if i < len(widths) - 1:
                enc.append(nn.Conv2d(w, w, 3, stride=2, padding=1))
        enc += [_norm(widths[-1]), nn.SiLU(), nn.Conv2d(widths[-1], code_dim, 1)]
        self.encoder = nn.Sequential(*enc)
        self.quantizer = VectorQuantizer(n_codes, code_dim, beta)
        dec: list[nn.Module] = [nn.Conv2d(code_dim, widths[-1], 1)]
        rev = widths[::-1]
        for i, w in enumerate(rev):
            dec.append(_ResBlock(rev[i - 1] if i else rev[0], w))
            if i < len(rev) - 1:
                dec += [nn.Upsample(scale_factor=2, mode="nearest"),
                        nn.Conv2d(w, w, 3, padding=1)]
        dec += [_norm(rev[-1]), nn.SiLU(), nn.Conv2d(rev[-1], in_ch, 3, padding=1)]
        self.decoder = nn.Sequential(*dec)

    def _check(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError("x must be a floating-point torch.Tensor")
        if x.dim() != 4 or x.shape[1] != self.in_ch or x.shape[2] % self.factor \
                or x.shape[3] % self.factor:
            raise ValueError(f"x must have shape (B, {self.in_ch}, H, W) with H and W multiples "
                             f"of {self.factor}, got {tuple(x.shape)}")

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        return self.encoder(x)

    def quantize(self, z: torch.Tensor) -> VQOutput:
        return self.quantizer(z)

    def decode(self, zq: torch.Tensor) -> torch.Tensor:
        if not isinstance(zq, torch.Tensor) or zq.dim() != 4 or zq.shape[1] != self.code_dim:
            raise ValueError(f"zq must have shape (B, {self.code_dim}, h, w)")
        return self.decoder(zq)

    def decode_indices(self, indices: torch.Tensor) -> torch.Tensor:
        """Image from a (B, h, w) grid of code indices."""
        return self.decode(self.quantizer.lookup(indices))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, VQOutput]:
        out = self.quantize(self.encode(x))
        return self.decode(out.quantized), out


@dataclass
class VQFit:
    """Per-step history of :func:`fit_vq_autoencoder`."""

    recon: list[float] = field(default_factory=list)
    vq: list[float] = field(default_factory=list)
    perplexity: list[float] = field(default_factory=list)
    restarted: int = 0


def fit_vq_autoencoder(model: VQAutoencoder, images: torch.Tensor, *, steps: int,
                       batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
                       kmeans_init: bool = True, restart_every: int = 50) -> VQFit:
    """Train ``model`` in place on ``images`` (N, in_ch, H, W): L1 + VQ loss, Adam(0.5, 0.9).

    kmeans_init:   set the codebook from k-means of the encoder outputs of up to 512 images
                   before the first step.
    restart_every: restart codes unused over the last ``restart_every`` steps (0: never).
    """
    if not isinstance(model, VQAutoencoder):
        raise TypeError(f"model must be a VQAutoencoder, got {type(model).__name__}")
    model._check(images)
    for arg, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{arg} must be a positive int, got {v!r}")
    if isinstance(restart_every, bool) or not isinstance(restart_every, int) or restart_every < 0:
        raise ValueError(f"restart_every must be a non-negative int, got {restart_every!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    gen = torch.Generator(device=images.device).manual_seed(seed)
    torch.manual_seed(seed)  # weight init of anything built after this point stays seeded
    model.train()
    if kmeans_init:
        with torch.no_grad():
            sub = images[torch.randperm(len(images), generator=gen,
                                        device=images.device)[:512]]
            model.quantizer.init_kmeans(model.encode(sub), seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.5, 0.9))
    hist = VQFit()
    n = len(images)
    for step in range(1, steps + 1):
        batch = images[torch.randint(0, n, (min(batch_size, n),), generator=gen,
                                     device=images.device)]
        rec, out = model(batch)
        recon = (rec - batch).abs().mean()
        loss = recon + out.loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        hist.recon.append(float(recon.detach()))
        hist.vq.append(float(out.loss.detach()))
        hist.perplexity.append(float(out.perplexity))
        if restart_every and step % restart_every == 0 and step < steps:
            with torch.no_grad():
                hist.restarted += model.quantizer.restart_dead_codes(model.encode(batch), gen)
    model.eval()
    return hist
