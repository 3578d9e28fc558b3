"""White-box access to a model's internals: per-head attention, hidden states, block hooks.

For probes that read a model's attention (SAT Probe's attention to constraint tokens), its
residual stream, or replace what a block writes (CALM's composition, activation patching):

- :func:`trace` runs one sequence and returns a :class:`Trace`: the attention probabilities of
  every layer and head (L, H, T, T), the hidden states (L + 1, T, d: entry i < L is block i's
  input, so entry 0 the embeddings; entry L the final normalised state the output layer
  reads, as Hugging Face's ``output_hidden_states``), and the next-token log-probabilities
  (T, V). Position 0 is the backend's start token and position j + 1 holds ``tokens[j]``, so
  row i of the log-probabilities is p(· | start, tokens[:i]) and the last row predicts what
  comes after all of ``tokens``.
- :func:`block_output_hook` is a context manager that passes block ``layer``'s output through
  ``fn(hidden) -> hidden | None`` on every full forward pass (``trace``, ``log_probs``,
  Hugging Face generation; our tiny model's cached one-token steps are not hooked).

Backends: :class:`~.backends.TransformerLM` (the tiny model: attention recomputed from each
block's own query/key projection of its input, captured by a hook) and
:class:`~.backends.HFCausalLM` (SmolLM2, a local Llama-style checkpoint: attention read from the
model with eager attention switched on for the call, since SDPA kernels do not return weights;
SmolLM2-135M has 30 layers of 9 heads).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .backends import HFCausalLM, TransformerLM, _token_list

__all__ = ["Trace", "block_output_hook", "n_layers", "trace"]


@dataclass(frozen=True)
class Trace:
    """What one forward pass over ``[start] + tokens`` showed (T = len(tokens) + 1).

    attentions: (L, H, T, T) float32, row i = where position i's query attends (rows sum to 1,
    zero above the diagonal); hidden_states: (L + 1, T, d) float32 (block inputs, then the
    final normalised state); log_probs: (T, V) float64.
    """

    tokens: list[int]
    attentions: np.ndarray
    hidden_states: np.ndarray
    log_probs: np.ndarray


def _blocks(lm: TransformerLM | HFCausalLM) -> Sequence[torch.nn.Module]:
    if isinstance(lm, TransformerLM):
        return lm.model.blocks
    if isinstance(lm, HFCausalLM):
        inner = getattr(lm.model, "model", None)
        layers = getattr(inner, "layers", None)
        if layers is None:
            raise ValueError(f"{type(lm.model).__name__} has no .model.layers: white-box access "
                             "supports Llama-style decoder checkpoints")
        return layers
    raise TypeError(f"lm must be a TransformerLM or HFCausalLM, got {type(lm).__name__}")


def n_layers(lm: TransformerLM | HFCausalLM) -> int:
    """The number of transformer blocks."""
    return len(_blocks(lm))


def _inputs(lm: TransformerLM | HFCausalLM, tokens: Sequence[int]) -> tuple[list[int],
                                                                             torch.Tensor]:
    toks = _token_list(tokens, lm.vocab_size)
    if isinstance(lm, TransformerLM):
        start, device, positions = (lm.model.config.bos_id, lm.model.head.weight.device,
                                    lm.model.config.context_length)
    else:
        start, device = lm.start_id, lm.device
        positions = None if lm.context_length is None else lm.context_length + 1
    if positions is not None and len(toks) + 1 > positions:
        raise ValueError(f"{len(toks)} tokens and the start token exceed the model's "
                         f"{positions} positions")
    return toks, torch.tensor([[start] + toks], dtype=torch.long, device=device)


def _trace_tiny(lm: TransformerLM, ids: torch.Tensor) -> tuple[list, list, torch.Tensor]:
    model = lm.model
    block_in: list[torch.Tensor] = []
    handles = [b.register_forward_pre_hook(lambda _m, args: block_in.append(args[0]))
               for b in model.blocks]
    try:
        with torch.no_grad():
            logits, final = model(ids, return_hidden=True)
            t = ids.shape[1]
            causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
            attn = []
            for block, x in zip(model.blocks, block_in):
                q, k, _ = block._split(x)
                # softmax(q kᵀ / sqrt(d_h)) under the causal mask, as the block's SDPA computes
                s = (q @ k.transpose(-1, -2)) / math.sqrt(block.head_dim)
                attn.append(torch.softmax(s.masked_fill(~causal, float("-inf")), dim=-1)[0])
            hidden = [x[0] for x in block_in] + [final[0]]
    finally:
        for h in handles:
            h.remove()
    return attn, hidden, logits[0]


def _trace_hf(lm: HFCausalLM, ids: torch.Tensor) -> tuple[list, list, torch.Tensor]:
    model = lm.model
    before = getattr(model.config, "_attn_implementation", None)
    switch = before not in (None, "eager") and hasattr(model, "set_attn_implementation")
    if switch:
        model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=True, output_hidden_states=True,
                        use_cache=False)
    finally:
        if switch:
            model.set_attn_implementation(before)
    if out.attentions is None or any(a is None for a in out.attentions):
        raise ValueError(f"{type(model).__name__} returned no attention weights")
    hidden = [h[0] for h in out.hidden_states]  # block inputs, then the final normed state
    return [a[0] for a in out.attentions], hidden, out.logits[0, :, :lm.vocab_size]


def trace(lm: TransformerLM | HFCausalLM, tokens: Sequence[int]) -> Trace:
    """Attention, hidden states and log-probabilities of ``[start] + tokens`` in one pass."""
    _blocks(lm)
    toks, ids = _inputs(lm, tokens)
    attn, hidden, logits = (_trace_tiny(lm, ids) if isinstance(lm, TransformerLM)
                            else _trace_hf(lm, ids))
    return Trace(tokens=toks,
                 attentions=torch.stack(attn).float().cpu().numpy(),
                 hidden_states=torch.stack(hidden).float().cpu().numpy(),
                 log_probs=torch.log_softmax(logits.float(), -1).double().cpu().numpy())


@contextlib.contextmanager
def block_output_hook(lm: TransformerLM | HFCausalLM, layer: int,
                      fn: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    """Within the block, block ``layer``'s output hidden states (B, T, d) go through ``fn``;
    a returned tensor (same shape) replaces them, ``None`` leaves them (a read-only probe)."""
    blocks = _blocks(lm)
    if isinstance(layer, bool) or not isinstance(layer, int) or not -len(blocks) <= layer \
            < len(blocks):
        raise ValueError(f"layer must be an int in [-{len(blocks)}, {len(blocks)}), got "
                         f"{layer!r}")

    def hook(_module, _args, output):
        hidden = output[0] if isinstance(output, tuple) else output
        new = fn(hidden)
        if new is None:
            return None
        if not isinstance(new, torch.Tensor) or new.shape != hidden.shape:
            raise ValueError(f"fn must return None or a tensor of shape {tuple(hidden.shape)}, "
                             f"got {getattr(new, 'shape', type(new).__name__)}")
        return (new, *output[1:]) if isinstance(output, tuple) else new

    handle = blocks[layer].register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()
