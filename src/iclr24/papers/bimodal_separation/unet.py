"""The text-conditioned mask network: a U-Net on log(1 + |X|) and a Sound-of-Pixels synthesizer.

Paper Sec. 3 / official ``models/cond_unet_attn.py`` + ``models/synthesizer_net.py``: a U-Net
(7 down-levels, 32 channels) maps the log-magnitude spectrogram of the input mixture to 32
feature maps, conditioned on the text through cross-attention blocks; the pooled text embedding
goes through a linear layer 512 -> 32 (init N(0, 1e-4)) and a sigmoid, and weights the 32
feature maps in an inner product (per-channel scale, one bias) whose sigmoid is the mask:

    m(f, t) = sigmoid( sum_c scale_c * sigmoid(W e_text + b)_c * feat_c(f, t) + bias ).

Scaled down: the spectrogram is first folded ``fold`` x ``fold`` (default 4) into channels
(pixel-unshuffle, as a patch embedding; the output is unfolded back to full time-frequency
resolution by pixel-shuffle), then ``num_downs`` (default 2) stride-2 levels at widths 16-32-32,
and ``channels`` (default 8) output maps; conditioning by FiLM (per-channel scale and shift
from the text embedding) in the bottleneck and every decoder level instead of cross-attention
(the tiny CLAP's phrases are single tokens, so attention over them is a constant), and no
batch norm. The encoder does not see the text, so :class:`TextConditionedUNet` exposes
``encode`` (once per mixture) and ``decode`` (once per query); ``forward`` composes them.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Synthesizer", "TextConditionedUNet"]


class _FiLM(nn.Module):
    """h * (1 + gamma(e)) + beta(e), zero-initialised so it starts as the identity."""

    def __init__(self, cond_dim: int, channels: int) -> None:
        super().__init__()
        self.lin = nn.Linear(cond_dim, 2 * channels)
        nn.init.zeros_(self.lin.weight)
        nn.init.zeros_(self.lin.bias)

    def forward(self, h: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        gamma, beta = self.lin(cond)[:, :, None, None].chunk(2, dim=1)
        return h * (1 + gamma) + beta


class TextConditionedUNet(nn.Module):
    """U-Net from a log-magnitude spectrogram to ``channels`` text-dependent feature maps.

    n_freq: frequency bins of the input (checked on every call); channels: output feature maps;
    num_downs: stride-2 levels; width: channels of the top level (level i has
    ``width * min(2**i, 2)``); cond_dim: size of the text embedding; fold: the input is padded
    to a multiple of ``fold * 2 ** num_downs`` and folded ``fold`` x ``fold`` into channels
    before the first level.
    forward(log_mag (B, 1, n_freq, T), cond (B, cond_dim)) -> (B, channels, n_freq, T).
    """

    def __init__(self, n_freq: int, channels: int = 8, num_downs: int = 2,
                 cond_dim: int = 64, *, width: int = 16, fold: int = 4) -> None:
        super().__init__()
        for name, v, lo in (("n_freq", n_freq, 2), ("channels", channels, 1),
                            ("num_downs", num_downs, 1), ("cond_dim", cond_dim, 1),
                            ("width", width, 1), ("fold", fold, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
        self.n_freq, self.channels, self.num_downs, self.cond_dim = (n_freq, channels,
                                                                     num_downs, cond_dim)
        self.fold = fold
        widths = [width * min(2 ** i, 2) for i in range(num_downs + 1)]
        self.inc = nn.Conv2d(fold * fold, widths[0], 3, padding=1)  # on the folded input
        self.downs = nn.ModuleList(nn.Conv2d(widths[i], widths[i + 1], 3, stride=2, padding=1)
                                   for i in range(num_downs))
        self.mid = nn.Conv2d(widths[-1], widths[-1], 3, padding=1)
        self.mid_film = _FiLM(cond_dim, widths[-1])
        self.ups = nn.ModuleList(nn.ConvTranspose2d(widths[i + 1], widths[i], 2, stride=2)
                                 for i in reversed(range(num_downs)))
        self.merges = nn.ModuleList(nn.Conv2d(2 * widths[i], widths[i], 3, padding=1)
                                    for i in reversed(range(num_downs)))
        self.films = nn.ModuleList(_FiLM(cond_dim, widths[i]) for i in reversed(range(num_downs)))
        self.out = nn.Conv2d(widths[0], fold * fold * channels, 1)  # unfolded by pixel_shuffle

    def encode(self, log_mag: torch.Tensor) -> list[torch.Tensor]:
        """log_mag (B, 1, n_freq, T) -> skip tensors (text-independent), deepest last."""
        if not isinstance(log_mag, torch.Tensor) or log_mag.dim() != 4 or log_mag.shape[1] != 1 \
                or log_mag.shape[2] != self.n_freq:
            raise ValueError(f"log_mag must be (batch, 1, {self.n_freq}, frames), got "
                             f"{tuple(getattr(log_mag, 'shape', ()))}")
        size = self.fold * 2 ** self.num_downs
        f, t = log_mag.shape[-2:]
        pad_f, pad_t = -f % size, -t % size
        x = F.pad(log_mag, (0, pad_t, 0, pad_f), mode="replicate")
        skips = [F.leaky_relu(self.inc(F.pixel_unshuffle(x, self.fold)), 0.2)]
        for down in self.downs:
            skips.append(F.leaky_relu(down(skips[-1]), 0.2))
        return skips

    def decode(self, skips: list[torch.Tensor], cond: torch.Tensor, frames: int) -> torch.Tensor:
        """Feature maps for ``cond`` (B, cond_dim) from ``encode``'s skips (batch B, or batch 1
        broadcast to B) -> (B, channels, n_freq, frames) (``frames`` undoes encode's padding)."""
        if cond.dim() != 2 or cond.shape[1] != self.cond_dim:
            raise ValueError(f"cond must be (batch, {self.cond_dim}), got {tuple(cond.shape)}")
        b = cond.shape[0]
        skips = [s.expand(b, *s.shape[1:]) if s.shape[0] == 1 else s for s in skips]
        h = F.leaky_relu(self.mid_film(self.mid(skips[-1]), cond), 0.2)
        for up, merge, film, skip in zip(self.ups, self.merges, self.films,
                                         reversed(skips[:-1])):
            h = torch.cat([up(h), skip], dim=1)
            h = F.leaky_relu(film(merge(h), cond), 0.2)
        return F.pixel_shuffle(self.out(h), self.fold)[..., :self.n_freq, :frames]

    def forward(self, log_mag: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        return self.decode(self.encode(log_mag), cond, log_mag.shape[-1])


class Synthesizer(nn.Module):
    """Sound-of-Pixels inner-product synthesizer: text embedding x feature maps -> mask.

    forward(text_emb (B, cond_dim), feats (B, channels, F, T)) -> mask (B, F, T) in (0, 1).
    """

    def __init__(self, channels: int, cond_dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(cond_dim, channels)
        nn.init.normal_(self.fc.weight, 0.0, 1e-4)  # official: fc.weight ~ N(0, 1e-4)
        self.scale = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, text_emb: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.fc(text_emb))  # cond_activation = sigmoid
        z = torch.einsum("bc,bcft->bft", g * self.scale, feats) + self.bias
        return torch.sigmoid(z)  # output_activation = sigmoid
