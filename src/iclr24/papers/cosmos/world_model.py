"""The Cosmos world model (paper Sec. 3, Fig. 3): segment -> encode slots -> decode and label each
slot -> embed symbols -> canonical order -> transition -> decode the next slots -> next image.

Objective (paper Sec. 3.4): next-state reconstruction MSE + autoencoder reconstruction MSE,

    L = || sum_k dec(T(s, lambda, a))_k - x_{t+1} ||^2  +  sum_k || dec(s_k) - e_k ||^2,

trained end to end (the labeler is frozen; the symbol vectors are learned). With a transition
that does not use symbols (Aligned NPS, GNN) the labeler is not needed and may be ``None``.

Action alignment: an action is ``(cell index, direction)``; the entity whose mask covers that
cell is the actor and its row of the per-entity action (B, K, 4) gets the one-hot direction.
Canonical order: entities are sorted by their labels (attribute by attribute, in the labeler's
attribute order) and the action rows follow, as the paper orders the symbolic encoding.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from .autoencoder import SlotAutoencoder
from .perception import (
    AttributeLabeler,
    ConnectedComponentSegmenter,
    EntitySegmenter,
    as_float_images,
)
from .transitions import SymbolEmbedding

__all__ = ["EntityBatch", "WorldModel"]

N_DIRECTIONS = 4


class EntityBatch(NamedTuple):
    """Segmented transitions: entities (B, K, 3, H, W), per-entity action (B, K, 4), next images
    (B, 3, H, W) or None, and held-out flags (B,) bool (what a training loop must refuse)."""

    entities: torch.Tensor
    action: torch.Tensor
    next_image: torch.Tensor | None
    heldout: torch.Tensor

    def __len__(self) -> int:
        return int(self.entities.shape[0])

    def index(self, idx: torch.Tensor) -> EntityBatch:
        return EntityBatch(self.entities[idx], self.action[idx],
                           None if self.next_image is None else self.next_image[idx],
                           self.heldout[idx])


class WorldModel(nn.Module):
    """Object-centric world model.

    autoencoder: a :class:`~.autoencoder.SlotAutoencoder`;
    transition:  a :class:`~.transitions.NeurosymbolicTransition` (Cosmos), ``AlignedNPS`` or
                 ``GNNTransition``;
    labeler:     an :class:`~.perception.AttributeLabeler` (needed iff the transition uses
                 symbols);
    segmenter:   an :class:`~.perception.EntitySegmenter` (default: connected components);
    grid:        board side in cells (to read action cells).
    """

    def __init__(self, autoencoder: SlotAutoencoder, transition: nn.Module,
                 labeler: AttributeLabeler | None = None, *,
                 segmenter: EntitySegmenter | None = None, grid: int = 5) -> None:
        super().__init__()
        if not isinstance(autoencoder, SlotAutoencoder):
            raise TypeError(f"autoencoder must be a SlotAutoencoder, got "
                            f"{type(autoencoder).__name__}")
        if not isinstance(transition, nn.Module):
            raise TypeError(f"transition must be an nn.Module, got {type(transition).__name__}")
        self.autoencoder, self.transition = autoencoder, transition
        self.uses_symbols = bool(getattr(transition, "uses_symbols", False))
        if self.uses_symbols:
            if not isinstance(labeler, AttributeLabeler):
                raise TypeError("a symbolic transition needs an AttributeLabeler as labeler, got "
                                f"{type(labeler).__name__}")
            n_attr = len(labeler.attributes)
            if transition.symbol_dim % n_attr:
                raise ValueError(f"transition.symbol_dim={transition.symbol_dim} must be a "
                                 f"multiple of the {n_attr} attributes")
            self.symbols = SymbolEmbedding([len(v) for v in labeler.attributes.values()],
                                           transition.symbol_dim // n_attr)
        self.labeler = labeler
        self.segmenter = segmenter if segmenter is not None else ConnectedComponentSegmenter()
        if isinstance(grid, bool) or not isinstance(grid, int) or grid < 1:
            raise ValueError(f"grid must be a positive int, got {grid!r}")
        self.grid = grid

    # -------------------------------------------------------------------------- perception
    def prepare(self, images: Any, actions: Any, next_images: Any = None,
                heldout: Any = None) -> EntityBatch:
        """Segment ``images`` (B, 3, H, W) and align ``actions`` (B, 2) ``(cell, direction)``
        with the entities. Images (and ``next_images``) are float RGB in [0, 1] or uint8 pixels
        (scaled by 1/255, see :func:`~.perception.as_float_images`); ``next_images`` must have
        the shape of ``images``."""
        images = as_float_images(images, "images")
        actions = torch.as_tensor(actions, dtype=torch.long)
        if images.ndim != 4 or images.shape[1] != 3 or images.shape[2] != images.shape[3]:
            raise ValueError(f"images must be (B, 3, H, H), got {tuple(images.shape)}")
        b, _, side, _ = images.shape
        if side % self.grid:
            raise ValueError(f"image side {side} is not a multiple of grid={self.grid}")
        if actions.shape != (b, 2):
            raise ValueError(f"actions must be (B, 2) = (cell index, direction) for B={b}, "
                             f"got {tuple(actions.shape)}")
        cells, dirs = actions[:, 0], actions[:, 1]
        if int(cells.min()) < 0 or int(cells.max()) >= self.grid ** 2:
            raise ValueError(f"action cells must be in [0, {self.grid ** 2})")
        if int(dirs.min()) < 0 or int(dirs.max()) >= N_DIRECTIONS:
            raise ValueError(f"action directions must be in [0, {N_DIRECTIONS})")
        cell = side // self.grid
        all_masks = [self.segmenter.segment(img) for img in images]
        k = all_masks[0].shape[0]
        if k == 0 or any(m.shape[0] != k for m in all_masks):
            raise ValueError("every image must hold the same, nonzero number of entities; got "
                             f"{sorted({int(m.shape[0]) for m in all_masks})}")
        masks = torch.stack(all_masks).to(images.dtype)                     # (B, K, H, W)
        entities = images[:, None] * masks[:, :, None]
        r, c = cells // self.grid, cells % self.grid
        ent_action = torch.zeros(b, k, N_DIRECTIONS)
        for i in range(b):
            block = masks[i, :, r[i] * cell:(r[i] + 1) * cell, c[i] * cell:(c[i] + 1) * cell]
            hit = block.flatten(1).sum(1) > 0
            if int(hit.sum()) != 1:
                raise ValueError(f"action {i}: cell {int(cells[i])} must hold exactly one "
                                 f"entity, found {int(hit.sum())}")
            ent_action[i, int(hit.nonzero()[0, 0]), int(dirs[i])] = 1.0
        nxt = None if next_images is None else as_float_images(next_images, "next_images")
        if nxt is not None and nxt.shape != images.shape:
            raise ValueError(f"next_images must have the shape of images {tuple(images.shape)}, "
                             f"got {tuple(nxt.shape)}")
        flags = torch.zeros(b, dtype=torch.bool) if heldout is None else torch.as_tensor(
            np.asarray(heldout), dtype=torch.bool)
        if flags.shape != (b,):
            raise ValueError(f"heldout must be (B,) = ({b},) flags, got {tuple(flags.shape)}")
        return EntityBatch(entities, ent_action, nxt, flags)

    def labels(self, decoded: torch.Tensor) -> torch.Tensor:
        """Labels (B, K, n_attributes) of decoded entity images (B, K, 3, H, W)."""
        b, k = decoded.shape[:2]
        flat = decoded.detach().flatten(0, 1)  # no gradient reaches the labeler
        cols = [self.labeler.label(flat, a).view(b, k) for a in self.labeler.attributes]
        return torch.stack(cols, dim=-1).long()

    # ------------------------------------------------------------------------- prediction
    def predict(self, entities: torch.Tensor, action: torch.Tensor,
                generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """entities (B, K, 3, H, W), aligned action (B, K, 4) -> dict with ``next_image``
        (B, 3, H, W), ``slots`` (B, K, D), ``recon`` (B, K, 3, H, W), and for symbolic
        transitions ``labels`` (B, K, n_attributes) and ``selection`` (B, K, n_rules)."""
        slots, recon = self.autoencoder(entities)
        out: dict[str, torch.Tensor] = {"slots": slots, "recon": recon}
        if self.uses_symbols:
            labels = self.labels(recon)
            # canonical entity order: sort by the label tuple, and permute the action the same way
            base = torch.tensor([int(np.prod([len(v) for v in list(
                self.labeler.attributes.values())[i + 1:]])) for i in range(labels.shape[-1])])
            order = (labels * base).sum(-1).argsort(dim=1, stable=True)
            take = order[..., None]
            slots_c = slots.gather(1, take.expand(-1, -1, slots.shape[-1]))
            action_c = action.gather(1, take.expand(-1, -1, action.shape[-1]))
            symbols = self.symbols(labels.gather(1, take.expand(-1, -1, labels.shape[-1])))
            nxt, sel = self.transition(slots_c, action_c, symbols, generator=generator)
            out.update(labels=labels, selection=sel)
        else:
            nxt, sel = self.transition(slots, action, generator=generator)
            if sel is not None:
                out["selection"] = sel
        out["next_slots"] = nxt
        out["next_image"] = self.autoencoder.render(nxt)
        return out

    def forward(self, image: Any, action: Any) -> torch.Tensor:
        """image (B, 3, H, W), action (B, 2) ``(cell index, direction)`` -> next image
        (B, 3, H, W)."""
        batch = self.prepare(image, action)
        return self.predict(batch.entities, batch.action)["next_image"]

    def loss(self, batch: EntityBatch, generator: torch.Generator | None = None
             ) -> tuple[torch.Tensor, dict[str, float]]:
        """Next-state MSE + autoencoder reconstruction MSE on a prepared batch."""
        if batch.next_image is None:
            raise ValueError("batch.next_image is required for the loss")
        out = self.predict(batch.entities, batch.action, generator=generator)
        next_mse = (out["next_image"] - batch.next_image).pow(2).mean()      # next-state term
        recon_mse = (out["recon"] - batch.entities).pow(2).mean()           # autoencoder term
        total = next_mse + recon_mse
        return total, {"next_mse": next_mse.item(), "recon_mse": recon_mse.item()}
