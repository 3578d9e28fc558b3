"""MDM's denoiser and OmniControl's realism guidance branch (paper Sec. 3.3, Fig. 2).

- :class:`MotionDenoiser`: MDM's transformer encoder over frames. Each frame's features go
  through a linear layer; a token embedding of (timestep + condition) is prepended; sinusoidal
  positions; post-norm GELU encoder layers; a linear read-out per frame. It predicts x_0. The
  condition is a class label (MDM's action embedding) instead of CLIP text, with a learned null
  embedding replaced by zeros when dropped (MDM masks the condition to zero with p = 0.1 for
  classifier-free guidance). ``control`` adds a tensor to the output of each encoder layer.
- :class:`RealismBranch`: a trainable copy of the denoiser's input layer, embeddings and
  encoder (initialised from the base, as ControlNet). Its input tokens get a spatial encoding of
  the hint: per frame the flattened normalised hint (J*3, zeros where not controlled) passes 4
  linear layers, the last zero-initialised (the official ``HintBlock``: no activations between
  them), added only on frames that have a hint. Each copy layer's output goes through its own
  zero-initialised linear layer; the results are the per-layer controls.
- :class:`ControlledMDM`: the frozen base plus the branch's controls; at initialisation every
  zero layer outputs exactly 0, so it equals the base model (tested).

Scaled down. The class defaults are the spec's laptop model, d = 128, 4 layers, feed-forward
4 d (MDM: 512, 8 layers, 1024); the claims use smaller ones, d = 64, 2 layers, feed-forward 128
(:class:`~.experiment.ExperimentConfig`), to fit the CPU budget. Class labels replace text.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

__all__ = ["ControlledMDM", "HintEncoder", "MotionDenoiser", "RealismBranch"]


def _sinusoids(max_len: int, d: int) -> torch.Tensor:
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


def _check_xt(x: torch.Tensor, t: torch.Tensor, n_feats: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != n_feats:
        raise ValueError(f"x must be (batch, frames, {n_feats}), got "
                         f"{tuple(getattr(x, 'shape', ()))}")
    if not isinstance(t, torch.Tensor) or t.shape != (x.shape[0],):
        raise ValueError(f"t must be a (batch,) = ({x.shape[0]},) tensor of steps")


class _Embeddings(nn.Module):
    """Input layer, timestep MLP over sinusoids, class embedding (the parts the branch copies)."""

    def __init__(self, n_feats: int, n_classes: int, d: int, max_len: int) -> None:
        super().__init__()
        self.register_buffer("pe", _sinusoids(max_len, d), persistent=False)
        self.input = nn.Linear(n_feats, d)
        self.time = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
        self.label = nn.Embedding(n_classes, d)

    def condition(self, t: torch.Tensor, y: torch.Tensor | None,
                  drop: torch.Tensor | None) -> torch.Tensor:
        """(B, d) token: time embedding + (masked) class embedding."""
        emb = self.time(self.pe[t])
        if y is not None:
            lab = self.label(y)
            if drop is not None:
                lab = lab * (~drop)[:, None].to(lab.dtype)
            emb = emb + lab
        return emb

    def tokens(self, frames: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        """(B, N + 1, d): the condition token then the frames, plus positions."""
        seq = torch.cat([cond[:, None], frames], 1)
        return seq + self.pe[: seq.shape[1]]


class MotionDenoiser(nn.Module):
    """MDM-like x_0 denoiser. forward(x (B, N, D), t (B,), y (B,) labels or None, ...) ->
    (B, N, D). ``cond_drop``: probability of dropping the label in training (CFG)."""

    def __init__(self, n_feats: int, n_classes: int, *, d_model: int = 128, n_layers: int = 4,
                 n_heads: int = 4, ff_size: int | None = None, dropout: float = 0.1,
                 cond_drop: float = 0.1, max_len: int = 1024) -> None:
        super().__init__()
        for name, v in (("n_feats", n_feats), ("n_classes", n_classes), ("d_model", d_model),
                        ("n_layers", n_layers), ("n_heads", n_heads)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        if not 0 <= cond_drop < 1:
            raise ValueError(f"cond_drop must lie in [0, 1), got {cond_drop!r}")
        self.n_feats, self.n_classes, self.d_model, self.n_layers = (n_feats, n_classes,
                                                                     d_model, n_layers)
        self.cond_drop = cond_drop
        self.embed = _Embeddings(n_feats, n_classes, d_model, max_len)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, ff_size or 4 * d_model, dropout,
                                           activation="gelu", batch_first=True)
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(n_layers)])
        self.output = nn.Linear(d_model, n_feats)

    def drop_mask(self, batch: int, uncond: bool, generator: torch.Generator | None,
                  device: torch.device) -> torch.Tensor | None:
        """Which rows drop their label: all with ``uncond``, a random cond_drop share in
        training, none otherwise."""
        if uncond:
            return torch.ones(batch, dtype=torch.bool, device=device)
        if self.training and self.cond_drop > 0:
            u = torch.rand(batch, generator=generator,
                           device=generator.device if generator is not None else device)
            return (u < self.cond_drop).to(device)
        return None

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor | None = None, *,
                control: list[torch.Tensor] | None = None, uncond: bool = False,
                drop: torch.Tensor | None = None,
                generator: torch.Generator | None = None) -> torch.Tensor:
        _check_xt(x, t, self.n_feats)
        if drop is None:
            drop = self.drop_mask(x.shape[0], uncond, generator, x.device)
        h = self.embed.tokens(self.embed.input(x), self.embed.condition(t, y, drop))
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if control is not None:
                h = h + control[i]                       # ControlNet: add the branch's output
        return self.output(h[:, 1:])


class HintEncoder(nn.Module):
    """The official HintBlock: 4 linear layers (J*3 -> d -> d -> d -> d), the last zero-init."""

    def __init__(self, hint_dim: int, d: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(hint_dim, d), nn.Linear(d, d), nn.Linear(d, d),
                                    nn.Linear(d, d))
        nn.init.zeros_(self.layers[-1].weight)
        nn.init.zeros_(self.layers[-1].bias)

    def forward(self, hint: torch.Tensor) -> torch.Tensor:
        return self.layers(hint)


class RealismBranch(nn.Module):
    """Trainable copy of ``base``'s encoder with a hint encoder and zero-initialised layers.

    forward(x (B, N, D), t (B,), y, hint (B, N, J*3) normalised hint with zeros where not
    controlled, frames (B, N) bool: frames with any hint) -> per-layer controls, a list of
    n_layers tensors (B, N + 1, d).
    """

    def __init__(self, base: MotionDenoiser, hint_dim: int) -> None:
        super().__init__()
        if not isinstance(base, MotionDenoiser):
            raise TypeError(f"base must be a MotionDenoiser, got {type(base).__name__}")
        if isinstance(hint_dim, bool) or not isinstance(hint_dim, int) or hint_dim < 1:
            raise ValueError(f"hint_dim must be a positive int, got {hint_dim!r}")
        self.hint_dim = hint_dim
        self.embed = copy.deepcopy(base.embed)           # trainable copy (ControlNet)
        self.layers = copy.deepcopy(base.layers)
        for p in self.parameters():
            p.requires_grad_(True)
        self.hint_encoder = HintEncoder(hint_dim, base.d_model)
        self.zero_layers = nn.ModuleList([nn.Linear(base.d_model, base.d_model)
                                          for _ in range(base.n_layers)])
        for lin in self.zero_layers:
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor | None,
                hint: torch.Tensor, frames: torch.Tensor,
                drop: torch.Tensor | None = None) -> list[torch.Tensor]:
        if hint.shape != (*x.shape[:2], self.hint_dim):
            raise ValueError(f"hint must be (batch, frames, {self.hint_dim}) = "
                             f"{(*x.shape[:2], self.hint_dim)}, got {tuple(hint.shape)}")
        spatial = self.hint_encoder(hint) * frames[..., None].to(hint.dtype)
        h = self.embed.tokens(self.embed.input(x) + spatial, self.embed.condition(t, y, drop))
        controls = []
        for layer, zero in zip(self.layers, self.zero_layers):
            h = layer(h)
            controls.append(zero(h))
        return controls


class ControlledMDM(nn.Module):
    """OmniControl's model: frozen ``base`` + ``branch`` controls added layer by layer.

    forward(x, t, y, hint=None, frames=None, uncond=False): hint (B, N, J*3) normalised (zeros
    where not controlled) and frames (B, N) bool; without a hint the branch sees zeros (as the
    official model does).
    """

    def __init__(self, base: MotionDenoiser, branch: RealismBranch) -> None:
        super().__init__()
        if not isinstance(base, MotionDenoiser) or not isinstance(branch, RealismBranch):
            raise TypeError("ControlledMDM needs a MotionDenoiser and a RealismBranch")
        if len(branch.zero_layers) != base.n_layers:
            raise ValueError("branch and base have different numbers of layers")
        self.base, self.branch = base, branch
        for p in self.base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor | None = None,
                hint: torch.Tensor | None = None, frames: torch.Tensor | None = None, *,
                uncond: bool = False, generator: torch.Generator | None = None
                ) -> torch.Tensor:
        _check_xt(x, t, self.base.n_feats)
        if hint is None:
            hint = x.new_zeros(*x.shape[:2], self.branch.hint_dim)
            frames = torch.zeros(x.shape[:2], dtype=torch.bool, device=x.device)
        elif frames is None:
            raise ValueError("frames (batch, frames) is required with a hint")
        if uncond:
            drop = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
        elif self.branch.training and self.base.cond_drop > 0:   # CFG training of the branch
            u = torch.rand(x.shape[0], generator=generator,
                           device=generator.device if generator is not None else x.device)
            drop = (u < self.base.cond_drop).to(x.device)
        else:
            drop = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
        control = self.branch(x, t, y, hint, frames, drop)
        return self.base(x, t, y, control=control, drop=drop)

    def train(self, mode: bool = True) -> ControlledMDM:
        """Train mode for the branch only: the frozen base stays in eval mode."""
        super().train(mode)
        self.base.eval()
        return self
