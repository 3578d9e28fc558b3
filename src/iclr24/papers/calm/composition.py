"""CALM: a frozen anchor model m_B composed with a frozen augmenting model m_A (Sec. 3).

Paper: Bansal et al., "LLM Augmented LLMs: Expanding Capabilities through Composition", ICLR
2024 (arXiv 2401.02412). Sec. 3.1 picks n layers of each model, L_A = {l_A^1 < … < l_A^n} and
L_B = {l_B^1 < … < l_B^n} (every k-th layer of m_A, k = 4 in the paper; evenly spaced anchor
layers): :func:`select_layers`, :func:`match_layers`. Sec. 3.2: the input of anchor layer
l_B^j + 1 becomes H_B^j + f_cross(H̃_A^j, H_B^j) (one
:class:`~.composer.CrossAttentionComposer` per pair); the last anchor layer feeds the anchor's
own head. Sec. 3.3: only the composition parameters are trained, with the next-token loss on
the composition data D_C; both models stay frozen (and here in eval mode, so dropout is off).
``CALM.forward(..., labels=...)`` takes labels as a Hugging Face causal LM does (aligned with
the inputs, ``labels=input_ids``) and shifts them inside, so its loss is the anchor's own loss
at initialisation.

How it is wired. The augmenting model runs first (no gradients) and forward hooks read the
outputs of its blocks L_A; then the anchor runs with forward hooks on its blocks L_B that add
f_cross to their outputs (the residual stream entering the next block). Blocks are found by
``get_blocks`` (:func:`default_blocks`: the shared kit's ``CausalTransformer.blocks`` or a
Hugging Face decoder's ``model.model.layers``, e.g. SmolLM2-135M's 30 layers). Layer indices are
0-based block indices: "layer 2 of 4" in the paper's 1-based wording is index 1 here.

Out of reach here: the paper's PaLM2-S anchor with PaLM2-XXS augmenting models (low-resource
languages, code), and any Llama-2 7B–70B scale composition; our anchors are the kit's tiny
transformers and SmolLM2-135M-Instruct on CPU.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .composer import CrossAttentionComposer, shared_tokenizer_mask

__all__ = ["CALM", "CALMOutput", "default_blocks", "match_layers", "select_layers"]


def select_layers(n_layers: int, every: int = 4) -> list[int]:
    """Every ``every``-th block of an ``n_layers`` model (0-based): [every-1, 2·every-1, …].

    The paper composes every 4th layer of m_A (n = N_A / 4 composed pairs)."""
    for name, v in (("n_layers", n_layers), ("every", every)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if every > n_layers:
        raise ValueError(f"every ({every}) must be <= n_layers ({n_layers})")
    return list(range(every - 1, n_layers, every))


def match_layers(aug_layers: Sequence[int], n_anchor_layers: int) -> list[int]:
    """n evenly spaced anchor blocks for n augmenting layers, the last one the anchor's top:
    l_B^j = ⌊j · N_B / n + ½⌋ − 1, j = 1..n (0-based, halves round up), e.g. 2 layers of a
    6-layer anchor -> [2, 5]."""
    if isinstance(n_anchor_layers, bool) or not isinstance(n_anchor_layers, int) \
            or n_anchor_layers < 1:
        raise ValueError(f"n_anchor_layers must be a positive int, got {n_anchor_layers!r}")
    n = len(aug_layers)
    if n < 1:
        raise ValueError("aug_layers must name at least one layer")
    if n > n_anchor_layers:
        raise ValueError(f"cannot match {n} augmenting layers to an anchor of "
                         f"{n_anchor_layers} layers")
    return [(2 * j * n_anchor_layers + n) // (2 * n) - 1 for j in range(1, n + 1)]


def default_blocks(model: nn.Module) -> nn.ModuleList:
    """The decoder blocks of a kit ``CausalTransformer`` (``.blocks``) or a Hugging Face
    Llama-style causal LM (``.model.layers``)."""
    blocks = getattr(model, "blocks", None)
    if isinstance(blocks, nn.ModuleList):
        return blocks
    layers = getattr(getattr(model, "model", None), "layers", None)
    if isinstance(layers, nn.ModuleList):
        return layers
    raise TypeError(f"cannot find decoder blocks in {type(model).__name__}: expected .blocks "
                    "(kit CausalTransformer) or .model.layers (Hugging Face decoder); pass "
                    "get_blocks")


def _width(model: nn.Module) -> int:
    cfg = getattr(model, "config", None)
    for attr in ("d_model", "hidden_size", "n_embd"):
        if hasattr(cfg, attr):
            return int(getattr(cfg, attr))
    raise TypeError(f"cannot read the hidden width of {type(model).__name__} from its config")


def _check_layers(layers: Sequence[int], n: int, name: str) -> list[int]:
    if isinstance(layers, (str, bytes)) or not isinstance(layers, Sequence):
        raise TypeError(f"{name} must be a sequence of block indices, got "
                        f"{type(layers).__name__}")
    out = list(layers)
    if not out:
        raise ValueError(f"{name} must name at least one layer")
    for v in out:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
            raise ValueError(f"{name} entries must be ints in [0, {n}) (the model has {n} "
                             f"blocks), got {v!r}")
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"{name} must be strictly increasing, got {out}")
    return out


def _check_ids(ids: object, name: str) -> None:
    if not isinstance(ids, Tensor) or ids.dtype.is_floating_point or ids.dtype.is_complex \
            or ids.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor of shape (batch, seq), got "
                        f"{getattr(ids, 'dtype', type(ids).__name__)}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, seq), got {tuple(ids.shape)}")


@dataclass
class CALMOutput:
    """logits: (B, T, V) of the composed model; loss: mean next-token NLL of ``labels[:, 1:]``
    given ``logits[:, :-1]`` over labels != -100, as a Hugging Face causal LM computes it
    (None without labels)."""

    logits: Tensor
    loss: Tensor | None = None


class CALM(nn.Module):
    """Anchor ``anchor`` (m_B) composed with ``augment`` (m_A) at block pairs
    (``augment_layers[j]``, ``anchor_layers[j]``).

    Both models are frozen and kept in eval mode (also after ``.train()``); the only trainable
    parameters are the composers' (:meth:`trainable_parameters`). ``causal=True`` masks
    cross-attention so anchor position t sees augmenting positions s <= t when both read the
    same ids (pass ``cross_mask`` for two tokenisations, see
    :func:`~.composer.cross_model_mask`).
    """

    def __init__(self, anchor: nn.Module, augment: nn.Module, anchor_layers: Sequence[int],
                 augment_layers: Sequence[int], n_heads: int = 4, causal: bool = True,
                 get_blocks: Callable[[nn.Module], nn.ModuleList] = default_blocks,
                 zero_init: bool = True) -> None:
        super().__init__()
        for name, m in (("anchor", anchor), ("augment", augment)):
            if not isinstance(m, nn.Module):
                raise TypeError(f"{name} must be a torch nn.Module, got {type(m).__name__}")
        self.anchor, self.augment = anchor, augment
        self._anchor_blocks, self._aug_blocks = get_blocks(anchor), get_blocks(augment)
        self.anchor_layers = _check_layers(anchor_layers, len(self._anchor_blocks),
                                           "anchor_layers")
        self.augment_layers = _check_layers(augment_layers, len(self._aug_blocks),
                                            "augment_layers")
        if len(self.anchor_layers) != len(self.augment_layers):
            raise ValueError(f"anchor_layers and augment_layers must have the same length, got "
                             f"{len(self.anchor_layers)} and {len(self.augment_layers)}")
        self.causal = bool(causal)
        d_b, d_a = _width(anchor), _width(augment)
        self.composers = nn.ModuleList(
            CrossAttentionComposer(d_b, d_a, n_heads, zero_init=zero_init)
            for _ in self.anchor_layers)
        for m in (anchor, augment):
            m.requires_grad_(False)
            m.eval()
        ref = next(anchor.parameters(), None)
        if ref is not None:
            self.composers.to(device=ref.device)

    def train(self, mode: bool = True) -> CALM:
        """Train/eval mode for the composers only; m_A and m_B always stay in eval mode."""
        self.training = mode
        self.composers.train(mode)
        self.anchor.eval()
        self.augment.eval()
        return self

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The composition parameters {W_proj, W_Q, W_K, W_V, W_O, norms} of every pair."""
        return [p for p in self.composers.parameters() if p.requires_grad]

    @property
    def num_trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.trainable_parameters())

    def _run(self, model: nn.Module, ids: Tensor, attention_mask: Tensor | None) -> Tensor:
        if hasattr(model, "blocks"):  # kit CausalTransformer: ids already include its BOS
            return model(ids)
        return model(input_ids=ids, attention_mask=attention_mask, use_cache=False).logits

    @contextlib.contextmanager
    def _hooks(self, blocks: nn.ModuleList, layers: list[int],
               fn: Callable[[int, Tensor], Tensor | None]) -> Iterator[None]:
        def make(j: int):
            def hook(_m, _args, output):
                hidden = output[0] if isinstance(output, tuple) else output
                new = fn(j, hidden)
                if new is None:
                    return None
                return (new, *output[1:]) if isinstance(output, tuple) else new
            return hook

        handles = [blocks[layer].register_forward_hook(make(j)) for j, layer in enumerate(layers)]
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    def augment_states(self, aug_input_ids: Tensor,
                       aug_attention_mask: Tensor | None = None) -> list[Tensor]:
        """H_A^j for j = 1..n: the outputs of m_A's blocks L_A, each (B, S, D_A), no grad."""
        states: list[Tensor | None] = [None] * len(self.augment_layers)

        def read(j: int, hidden: Tensor) -> None:
            states[j] = hidden.detach()

        with torch.no_grad(), self._hooks(self._aug_blocks, self.augment_layers, read):
            self._run(self.augment, aug_input_ids, aug_attention_mask)
        return states  # type: ignore[return-value]

    def forward(self, input_ids: Tensor, aug_input_ids: Tensor | None = None,
                attention_mask: Tensor | None = None, labels: Tensor | None = None, *,
                aug_attention_mask: Tensor | None = None, cross_mask: Tensor | None = None
                ) -> CALMOutput:
        """input_ids: (B, T) the anchor's inputs; aug_input_ids: (B, S) the augmenting model's
        (default: the same ids, for models sharing a tokenizer); labels: (B, T) in the Hugging
        Face convention, i.e. aligned with ``input_ids`` (``labels=input_ids`` is language
        modelling) and shifted here: position t's logits are scored against ``labels[:, t+1]``
        (-100 = ignored). cross_mask: (B, T, S) bool (default with ``causal``: s <= t, which
        needs S == T). Returns :class:`CALMOutput`."""
        _check_ids(input_ids, "input_ids")
        aug_ids = input_ids if aug_input_ids is None else aug_input_ids
        _check_ids(aug_ids, "aug_input_ids")
        if aug_ids.shape[0] != input_ids.shape[0]:
            raise ValueError(f"aug_input_ids must be a ({input_ids.shape[0]}, seq) integer "
                             f"tensor, got {tuple(aug_ids.shape)}")
        if labels is not None:
            _check_ids(labels, "labels")
            if labels.shape != input_ids.shape:
                raise ValueError(f"labels must have shape {tuple(input_ids.shape)}, got "
                                 f"{tuple(labels.shape)}")
        t, s = input_ids.shape[1], aug_ids.shape[1]
        if cross_mask is None and self.causal:
            if s != t:
                raise ValueError(f"the anchor reads {t} positions and the augmenting model {s}: "
                                 "pass cross_mask (see cross_model_mask) for two tokenisations")
            cross_mask = shared_tokenizer_mask(t, device=input_ids.device)
        h_aug = self.augment_states(aug_ids, aug_attention_mask)

        def inject(j: int, h_b: Tensor) -> Tensor:
            # input of anchor layer l_B^j + 1:  H_B^j + f_cross(H̃_A^j, H_B^j)
            return h_b + self.composers[j](h_b, h_aug[j], cross_mask)

        with self._hooks(self._anchor_blocks, self.anchor_layers, inject):
            logits = self._run(self.anchor, input_ids, attention_mask)
        loss = None
        if labels is not None:
            # next-token NLL: logits at t predict token t+1 (the shift HF causal LMs apply)
            shifted = logits[:, :-1]
            loss = F.cross_entropy(shifted.reshape(-1, shifted.shape[-1]).float(),
                                   labels[:, 1:].reshape(-1), ignore_index=-100)
        return CALMOutput(logits=logits, loss=loss)

    @torch.no_grad()
    def generate(self, input_ids: Tensor, max_new_tokens: int, *, stop_id: int | None = None,
                 temperature: float = 0.0, generator: torch.Generator | None = None) -> Tensor:
        """Continue (B, T) ids shared by both models (one tokenizer) by ``max_new_tokens``
        tokens; greedy at temperature 0, else sampling from softmax(logits / temperature).
        Each step recomputes both models on the whole prefix (no KV cache). Returns (B, N)."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
                or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        ids, new = input_ids, []
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        for _ in range(max_new_tokens):
            logits = self(ids).logits[:, -1].float()
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                probs = F.softmax(logits / temperature, -1)
                nxt = torch.multinomial(probs, 1, generator=generator)[:, 0]
            if stop_id is not None:
                nxt = torch.where(done, torch.full_like(nxt, stop_id), nxt)
                done |= nxt == stop_id
            new.append(nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
            if stop_id is not None and bool(done.all()):
                break
        return torch.stack(new, 1)
