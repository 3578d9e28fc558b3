"""A tiny decoder-only (causal) transformer with a batched and an incremental (KV-cached) path.

Modelled on the small byte-level transformer of "Language Modeling Is Compression" (Delétang et
al., ICLR 2024, Sec. 3: decoder-only, vocabulary 256) and made general enough for token-level use
(any ``vocab_size``). It differs from the official model (google-deepmind/
language_modeling_is_compression ``transformer.py``), which adds fixed sinusoidal positions and
normalises after each residual sum (post-LN): here blocks are pre-LayerNorm, ``x + Attn(LN(x))``
then ``x + MLP(LN(x))`` (stabler at the high learning rates of short CPU runs), and positions are
learned (``positions="learned"``, default) or the sinusoidal table of Vaswani et al.
(``positions="sinusoidal"``, no parameters, as in the official model). GELU MLP with width
``d_ff`` (default 4·d_model); untied output head.

Beginning of sequence. With ``bos=True`` (default) the input embedding has one extra row, id
``vocab_size``, so that the first token of a sequence has a distribution too: the model reads
``[BOS, x_0, …, x_{T-2}]`` and predicts ``[x_0, …, x_{T-1}]`` (T predictions need context T).

Two paths compute the same function:

* :meth:`CausalTransformer.forward` — all positions of ``(B, T)`` inputs in one causal pass
  (training, ideal code lengths);
* :meth:`CausalTransformer.forward_step` with a :class:`KVCache` — one new position per call,
  keys/values of earlier positions reused (decoding, arithmetic coding).

They agree to float rounding (≈1e-6), not bit for bit: a (T, d) matrix product and T separate
(1, d) products may accumulate in different orders on CPU BLAS. Code that needs bit-identical
distributions on both sides (an arithmetic coder) must therefore use *one* path, with the same
batch shape, for encoding and decoding; ``iclr24.papers.lm_compression`` uses the incremental path
for both.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["CausalTransformer", "KVCache", "TransformerConfig", "sinusoidal_positions"]


@dataclass(frozen=True)
class TransformerConfig:
    """Hyper-parameters of :class:`CausalTransformer`.

    vocab_size: number of output symbols (256 for bytes).
    context_length: the most input positions the model accepts (BOS included).
    d_ff: MLP width; ``None`` means ``4 * d_model``.
    bos: add a beginning-of-sequence input id (= ``vocab_size``).
    positions: ``"learned"`` (an embedding table) or ``"sinusoidal"`` (fixed
    ``PE[t, 2i] = sin(t/10000^{2i/d})``, ``PE[t, 2i+1] = cos(…)``).
    """

    vocab_size: int = 256
    d_model: int = 128
    n_layers: int = 2
    n_heads: int = 4
    context_length: int = 2048
    d_ff: int | None = None
    dropout: float = 0.0
    bos: bool = True
    positions: str = "learned"

    def __post_init__(self) -> None:
        if self.positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions must be 'learned' or 'sinusoidal', got "
                             f"{self.positions!r}")
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "context_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads "
                             f"({self.n_heads})")
        if self.d_ff is not None and (not isinstance(self.d_ff, int) or self.d_ff < 1):
            raise ValueError(f"d_ff must be a positive int or None, got {self.d_ff!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def input_vocab_size(self) -> int:
        return self.vocab_size + (1 if self.bos else 0)

    @property
    def bos_id(self) -> int | None:
        return self.vocab_size if self.bos else None

    def to_dict(self) -> dict:
        return asdict(self)


def sinusoidal_positions(length: int, d_model: int) -> Tensor:
    """The fixed table ``PE[t, 2i] = sin(t·ω_i)``, ``PE[t, 2i+1] = cos(t·ω_i)``,
    ``ω_i = 10000^{−2i/d}``: (length, d_model) float32."""
    t = torch.arange(length, dtype=torch.float64)[:, None]
    omega = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64)
                      / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(t * omega)
    table[:, 1::2] = torch.cos(t * omega)[:, : d_model // 2]
    return table.float()


class KVCache:
    """Pre-allocated keys/values for incremental decoding.

    keys[l], values[l]: (B, n_heads, context_length, head_dim); ``length`` positions are filled.
    Writing in place (not concatenating) keeps a step O(length) instead of O(length²) copies.
    """

    def __init__(self, config: TransformerConfig, batch_size: int, *,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        head_dim = config.d_model // config.n_heads
        shape = (batch_size, config.n_heads, config.context_length, head_dim)
        self.keys = [torch.zeros(shape, device=device, dtype=dtype)
                     for _ in range(config.n_layers)]
        self.values = [torch.zeros(shape, device=device, dtype=dtype)
                       for _ in range(config.n_layers)]
        self.length = 0
        self.batch_size = batch_size
        self.capacity = config.context_length


class _Block(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        d_ff = cfg.d_ff or 4 * cfg.d_model
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, d_ff), nn.GELU(),
                                 nn.Linear(d_ff, cfg.d_model))
        self.dropout = nn.Dropout(cfg.dropout)

    def _split(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        # (B, T, d) -> (B, H, T, d/H)
        return tuple(z.view(b, t, self.n_heads, self.head_dim).transpose(1, 2) for z in (q, k, v))

    def _merge(self, y: Tensor) -> Tensor:
        b, _, t, _ = y.shape
        return y.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self._split(x)
        # softmax(q kᵀ / sqrt(d_h) + causal mask) v
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.proj(self._merge(y)))
        return x + self.dropout(self.mlp(self.ln2(x)))

    def forward_step(self, x: Tensor, cache: KVCache, layer: int) -> Tensor:
        q, k, v = self._split(x)  # (B, H, 1, d_h)
        t = cache.length
        cache.keys[layer][:, :, t:t + 1] = k
        cache.values[layer][:, :, t:t + 1] = v
        keys = cache.keys[layer][:, :, :t + 1]
        values = cache.values[layer][:, :, :t + 1]
        # the new query sees every cached position: no mask needed
        y = F.scaled_dot_product_attention(q, keys, values)
        x = x + self.proj(self._merge(y))
        return x + self.mlp(self.ln2(x))


class CausalTransformer(nn.Module):
    """Decoder-only transformer: ``forward(inputs: (B, T) long) -> logits (B, T, vocab_size)``.

    ``inputs`` are input ids in ``[0, config.input_vocab_size)`` (the BOS id included when
    ``config.bos``). Use :meth:`shift_right` to build inputs from targets.
    """

    def __init__(self, config: TransformerConfig | None = None, **overrides) -> None:
        super().__init__()
        if config is None:
            config = TransformerConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a TransformerConfig or keyword overrides, not both")
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = config
        self.tok = nn.Embedding(config.input_vocab_size, config.d_model)
        if config.positions == "learned":
            self.pos = nn.Embedding(config.context_length, config.d_model)
        else:
            self.register_buffer("pos_table", sinusoidal_positions(config.context_length,
                                                                   config.d_model),
                                 persistent=False)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size)
        self.dropout = nn.Dropout(config.dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2 style init: N(0, 0.02), residual projections scaled by 1/sqrt(2·n_layers)."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
        for block in self.blocks:
            nn.init.normal_(block.proj.weight, std=0.02 / math.sqrt(2 * self.config.n_layers))
            nn.init.normal_(block.mlp[2].weight, std=0.02 / math.sqrt(2 * self.config.n_layers))

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def _check_inputs(self, inputs: Tensor, offset: int = 0) -> None:
        if not isinstance(inputs, Tensor) or inputs.dtype not in (torch.int64, torch.int32):
            raise TypeError("inputs must be an integer tensor of shape (batch, seq)")
        if inputs.dim() != 2:
            raise ValueError(f"inputs must have shape (batch, seq), got {tuple(inputs.shape)}")
        if offset + inputs.shape[1] > self.config.context_length:
            raise ValueError(
                f"context of {offset + inputs.shape[1]} positions exceeds the model's "
                f"context_length={self.config.context_length}")
        if inputs.numel() and (int(inputs.min()) < 0
                               or int(inputs.max()) >= self.config.input_vocab_size):
            raise ValueError(f"input ids must lie in [0, {self.config.input_vocab_size}), got "
                             f"range [{int(inputs.min())}, {int(inputs.max())}]")

    def shift_right(self, targets: Tensor) -> Tensor:
        """``[x_0..x_{T-1}] -> [BOS, x_0..x_{T-2}]`` (targets: (B, T) long)."""
        if not self.config.bos:
            raise ValueError("shift_right needs a model built with bos=True")
        bos = torch.full_like(targets[:, :1], self.config.bos_id)
        return torch.cat([bos, targets[:, :-1]], dim=1)

    def forward(self, inputs: Tensor, return_hidden: bool = False) -> Tensor | tuple[Tensor,
                                                                                    Tensor]:
        """All positions at once. inputs: (B, T) -> logits (B, T, vocab_size).

        With ``return_hidden`` also the final normalised hidden states (B, T, d_model), the
        input of the output layer ``self.head`` (whose weight (V, d_model) is the output
        embedding matrix, e.g. EMO's cost embedding).
        """
        self._check_inputs(inputs)
        t = inputs.shape[1]
        x = self.dropout(self.tok(inputs) + self._positions(0, t))
        for block in self.blocks:
            x = block(x)
        hidden = self.ln_f(x)
        logits = self.head(hidden)
        return (logits, hidden) if return_hidden else logits

    def _positions(self, start: int, length: int) -> Tensor:
        """Position vectors of positions start..start+length-1: (length, d_model)."""
        if self.config.positions == "learned":
            return self.pos(torch.arange(start, start + length, device=self.tok.weight.device))
        return self.pos_table[start:start + length]

    def new_cache(self, batch_size: int = 1) -> KVCache:
        """An empty :class:`KVCache` on this model's device and dtype."""
        p = self.head.weight
        return KVCache(self.config, batch_size, device=p.device, dtype=p.dtype)

    def forward_step(self, inputs: Tensor, cache: KVCache) -> Tensor:
        """One new position per sequence. inputs: (B,) or (B, 1) -> logits (B, vocab_size).

        Appends this position's keys/values to ``cache`` (advancing ``cache.length``).
        """
        if inputs.dim() == 1:
            inputs = inputs[:, None]
        if inputs.shape[0] != cache.batch_size:
            raise ValueError(f"inputs have batch {inputs.shape[0]}, cache has "
                             f"{cache.batch_size}")
        self._check_inputs(inputs, offset=cache.length)
        x = self.tok(inputs) + self._positions(cache.length, 1)
        for i, block in enumerate(self.blocks):
            x = block.forward_step(x, cache, i)
        cache.length += 1
        return self.head(self.ln_f(x))[:, 0]
