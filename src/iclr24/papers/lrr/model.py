"""LRR's two networks: the two-stream video encoder and the language model that reads it.

Paper (Bhattacharyya et al., ICLR 2024, Sec. 3): a pretrained decoder-only LM (OPT) with
cross-attention layers inserted so that text positions attend to visual tokens, and a video
encoder with a *spatial* stream (per-frame patch features: appearance, identity) and a *motion*
stream (spatiotemporal attention over patch features of neighbouring frames), trained end to end.

Here:
- :class:`TwoStreamVideoEncoder`: spatial stream = linear patch embedding of each frame + spatial
  and temporal position embeddings + transformer layers *within* a frame; motion stream = linear
  patch embedding of frame differences x_t - x_{t-1} + its own position embeddings + layers of
  *divided space-time attention* (attention over time per patch, then over space per frame,
  then an MLP; TimeSformer's factorisation). The memory is the concatenation of both streams'
  tokens, each tagged with a stream embedding. ``motion_layers=0`` drops the motion stream
  (the spatial-only ablation).
- :class:`CrossAttentionLM`: a pre-LayerNorm decoder (causal self-attention, cross-attention to
  the visual memory every ``cross_every`` layers, GELU MLP), trained from scratch.

What differs: OPT's pretrained weights (and its size) are out of reach offline on a CPU, so the
LM is a few-layer decoder from random initialisation; the encoder is a few layers over 24x24 px
frames, not a large ViT on real video.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = ["CrossAttentionLM", "TwoStreamVideoEncoder", "count_parameters", "patchify"]


def _positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _nonneg_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return value


class _Attention(nn.Module):
    """Multi-head attention, softmax(Q K^T / sqrt(d_h)) V (Vaswani et al.)."""

    def __init__(self, dim: int, heads: int, kv_dim: int | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(kv_dim or dim, 2 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: Tensor, context: Tensor | None = None, causal: bool = False) -> Tensor:
        b, n, d = x.shape
        ctx = x if context is None else context
        q = self.q(x).view(b, n, self.heads, d // self.heads).transpose(1, 2)
        k, v = self.kv(ctx).view(b, ctx.shape[1], 2, self.heads, d // self.heads).unbind(2)
        scores = q @ k.permute(0, 2, 3, 1) / math.sqrt(d // self.heads)  # Q K^T / sqrt(d_h)
        if causal:
            scores = scores.masked_fill(
                torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        y = scores.softmax(-1) @ v.transpose(1, 2)  # (small sequences: faster than SDPA on CPU)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class _MLP(nn.Sequential):
    def __init__(self, dim: int) -> None:
        super().__init__(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))


class _FrameBlock(nn.Module):
    """Spatial stream layer: self-attention among the patches of one frame, then an MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(dim), _Attention(dim, heads)
        self.ln2, self.mlp = nn.LayerNorm(dim), _MLP(dim)

    def forward(self, x: Tensor) -> Tensor:  # x: (B*T, P, d)
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class _DividedSpaceTimeBlock(nn.Module):
    """Motion stream layer: attention over time for each patch, over space for each frame, MLP."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.ln_t, self.time_attn = nn.LayerNorm(dim), _Attention(dim, heads)
        self.ln_s, self.space_attn = nn.LayerNorm(dim), _Attention(dim, heads)
        self.ln_m, self.mlp = nn.LayerNorm(dim), _MLP(dim)

    def forward(self, x: Tensor) -> Tensor:  # x: (B, T, P, d)
        b, t, p, d = x.shape
        xt = x.permute(0, 2, 1, 3).reshape(b * p, t, d)
        xt = xt + self.time_attn(self.ln_t(xt))  # z <- z + MSA_time(LN z)
        x = xt.view(b, p, t, d).permute(0, 2, 1, 3).reshape(b * t, p, d)
        x = x + self.space_attn(self.ln_s(x))  # z <- z + MSA_space(LN z)
        x = x + self.mlp(self.ln_m(x))
        return x.view(b, t, p, d)


def patchify(video: Tensor, patch: int) -> Tensor:
    """(B, T, C, H, W) -> (B, T, P, C * patch * patch), patches in row-major order."""
    b, t, c, h, w = video.shape
    x = video.reshape(b, t, c, h // patch, patch, w // patch, patch)
    return x.permute(0, 1, 3, 5, 2, 4, 6).reshape(b, t, (h // patch) * (w // patch),
                                                  c * patch * patch)


class TwoStreamVideoEncoder(nn.Module):
    """Spatial + motion streams over a video, concatenated as the LM's cross-attention memory.

    Args: frame_size (H = W, divisible by patch), patch, dim, spatial_layers (>= 1),
    motion_layers (0 = no motion stream), heads, max_frames, channels.
    Input: video (B, T, C, H, W) with T <= max_frames.
    Output: memory (B, S * T * P, dim) with P = (frame_size / patch)^2 and S = 2 streams
    (1 without the motion stream); spatial tokens first, frame-major.
    """

    def __init__(self, frame_size: int = 24, patch: int = 4, dim: int = 128,
                 spatial_layers: int = 2, motion_layers: int = 2, heads: int = 4,
                 max_frames: int = 16, channels: int = 3) -> None:
        super().__init__()
        for name, v in (("frame_size", frame_size), ("patch", patch), ("dim", dim),
                        ("spatial_layers", spatial_layers), ("heads", heads),
                        ("max_frames", max_frames), ("channels", channels)):
            _positive_int(v, name)
        _nonneg_int(motion_layers, "motion_layers")
        if frame_size % patch:
            raise ValueError(f"frame_size {frame_size} must be divisible by patch {patch}")
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.frame_size, self.patch, self.channels = frame_size, patch, channels
        self.max_frames, self.dim = max_frames, dim
        self.n_patches = (frame_size // patch) ** 2
        patch_dim = channels * patch * patch
        self.spatial_embed = nn.Linear(patch_dim, dim)
        self.spatial_pos = nn.Parameter(0.02 * torch.randn(self.n_patches, dim))
        self.spatial_time = nn.Parameter(0.02 * torch.randn(max_frames, dim))
        self.spatial_blocks = nn.ModuleList(_FrameBlock(dim, heads) for _ in range(spatial_layers))
        self.has_motion = motion_layers > 0
        if self.has_motion:
            self.motion_embed = nn.Linear(patch_dim, dim)
            self.motion_pos = nn.Parameter(0.02 * torch.randn(self.n_patches, dim))
            self.motion_time = nn.Parameter(0.02 * torch.randn(max_frames, dim))
            self.motion_blocks = nn.ModuleList(_DividedSpaceTimeBlock(dim, heads)
                                               for _ in range(motion_layers))
        self.stream = nn.Parameter(0.02 * torch.randn(2 if self.has_motion else 1, dim))
        self.norm = nn.LayerNorm(dim)

    def tokens_per_frame(self) -> int:
        return self.n_patches * (2 if self.has_motion else 1)

    def forward(self, video: Tensor) -> Tensor:
        if not isinstance(video, Tensor):
            raise TypeError(f"video must be a torch.Tensor, got {type(video).__name__}")
        if video.dim() != 5 or video.shape[2:] != (self.channels, self.frame_size,
                                                   self.frame_size):
            raise ValueError(f"video must have shape (B, T, {self.channels}, {self.frame_size}, "
                             f"{self.frame_size}), got {tuple(video.shape)}")
        b, t = video.shape[:2]
        if not 1 <= t <= self.max_frames:
            raise ValueError(f"video has {t} frames; the encoder takes 1..{self.max_frames}")
        x = self.spatial_embed(patchify(video, self.patch))  # (B, T, P, d)
        x = x + self.spatial_pos + self.spatial_time[:t, None]  # explicit frame order
        x = x.reshape(b * t, self.n_patches, self.dim)
        for blk in self.spatial_blocks:
            x = blk(x)
        streams = [x.reshape(b, t * self.n_patches, self.dim) + self.stream[0]]
        if self.has_motion:
            diff = torch.cat([torch.zeros_like(video[:, :1]), video[:, 1:] - video[:, :-1]], 1)
            m = self.motion_embed(patchify(diff, self.patch))  # x_t - x_{t-1}, zero at t = 0
            m = m + self.motion_pos + self.motion_time[:t, None]
            for blk in self.motion_blocks:
                m = blk(m)
            streams.append(m.reshape(b, t * self.n_patches, self.dim) + self.stream[1])
        return self.norm(torch.cat(streams, 1))


class _DecoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int, cross: bool, memory_dim: int) -> None:
        super().__init__()
        self.ln1, self.self_attn = nn.LayerNorm(dim), _Attention(dim, heads)
        self.cross = cross
        if cross:
            self.ln_x, self.cross_attn = nn.LayerNorm(dim), _Attention(dim, heads, memory_dim)
        self.ln2, self.mlp = nn.LayerNorm(dim), _MLP(dim)

    def forward(self, x: Tensor, memory: Tensor | None) -> Tensor:
        x = x + self.self_attn(self.ln1(x), causal=True)
        if self.cross and memory is not None:
            x = x + self.cross_attn(self.ln_x(x), memory)  # text queries, visual keys/values
        return x + self.mlp(self.ln2(x))


class CrossAttentionLM(nn.Module):
    """A causal decoder whose layers cross-attend to a visual memory.

    Args: vocab_size, dim, layers, heads, cross_every (cross-attention in layers
    i with i % cross_every == cross_every - 1; 1 = every layer), max_len, memory_dim
    (defaults to dim).
    forward(tokens (B, L) long, memory (B, M, memory_dim) or None) -> logits (B, L, vocab_size);
    logits[:, i] is the distribution of token i + 1 given tokens[:, :i + 1] and the memory.
    """

    def __init__(self, vocab_size: int, dim: int = 128, layers: int = 4, heads: int = 4,
                 cross_every: int = 1, max_len: int = 64, memory_dim: int | None = None) -> None:
        super().__init__()
        for name, v in (("vocab_size", vocab_size), ("dim", dim), ("layers", layers),
                        ("heads", heads), ("cross_every", cross_every), ("max_len", max_len)):
            _positive_int(v, name)
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        memory_dim = dim if memory_dim is None else _positive_int(memory_dim, "memory_dim")
        self.vocab_size, self.max_len, self.memory_dim = vocab_size, max_len, memory_dim
        self.embed = nn.Embedding(vocab_size, dim)
        self.pos = nn.Parameter(0.02 * torch.randn(max_len, dim))
        self.blocks = nn.ModuleList(
            _DecoderBlock(dim, heads, i % cross_every == cross_every - 1, memory_dim)
            for i in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab_size)

    def forward(self, tokens: Tensor, memory: Tensor | None) -> Tensor:
        if not isinstance(tokens, Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError("tokens must be a (B, L) torch.long tensor, got "
                             f"{getattr(tokens, 'shape', type(tokens).__name__)}")
        b, n = tokens.shape
        if not 1 <= n <= self.max_len:
            raise ValueError(f"tokens has length {n}; the LM takes 1..{self.max_len}")
        if tokens.min() < 0 or tokens.max() >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got "
                             f"[{int(tokens.min())}, {int(tokens.max())}]")
        if memory is not None and (memory.dim() != 3 or memory.shape[0] != b
                                   or memory.shape[2] != self.memory_dim):
            raise ValueError(f"memory must have shape ({b}, M, {self.memory_dim}), got "
                             f"{tuple(memory.shape)}")
        x = self.embed(tokens) + self.pos[:n]
        for blk in self.blocks:
            x = blk(x, memory)
        return self.head(self.norm(x))


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


