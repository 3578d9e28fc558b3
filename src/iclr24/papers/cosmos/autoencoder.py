"""The slot autoencoder of Cosmos (paper Sec. 3.1): an entity encoder maps each segmented entity
image to a neural slot; a spatial-broadcast decoder maps each slot back to its entity image; the
scene is the sum of the entity images (entities are disjoint).

Scaled down: the paper finetunes a ResNet on entity crops; here a small patchifying CNN reads the
masked full-size entity image (so the slot keeps the entity's position). The spatial-broadcast
decoder broadcasts the slot over the ``grid x grid`` cell lattice with two coordinate channels and
runs a per-location MLP that emits the ``cell x cell`` pixel patch of that location; a per-pixel
broadcast at full resolution costs ~10x more CPU and is not needed on a grid world.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["EntityEncoder", "SlotAutoencoder", "SpatialBroadcastDecoder"]


def _check_sizes(**kw: int) -> None:
    for name, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


class EntityEncoder(nn.Module):
    """(N, 3, grid*cell, grid*cell) entity images -> (N, slot_dim) slots."""

    def __init__(self, slot_dim: int = 32, grid: int = 5, cell: int = 4, width: int = 32,
                 hidden: int = 64) -> None:
        super().__init__()
        _check_sizes(slot_dim=slot_dim, grid=grid, cell=cell, width=width, hidden=hidden)
        self.image_size = grid * cell
        self.net = nn.Sequential(
            nn.Conv2d(3, width, cell, cell), nn.ReLU(),          # one feature vector per cell
            nn.Conv2d(width, width, 3, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(width * grid * grid, hidden), nn.ReLU(),
            nn.Linear(hidden, slot_dim))
        self.slot_dim = slot_dim

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if images.ndim != 4 or images.shape[1:] != (3, self.image_size, self.image_size):
            raise ValueError(f"images must be (N, 3, {self.image_size}, {self.image_size}), got "
                             f"{tuple(images.shape)}")
        return self.net(images)


class SpatialBroadcastDecoder(nn.Module):
    """(N, slot_dim) slots -> (N, 3, grid*cell, grid*cell) entity images.

    Spatial broadcast (Watters et al. 2019) on the cell lattice: h(x, y) = MLP([z, x, y]) at each
    cell centre (x, y) in [-1, 1]^2, output = a linear read-out of that cell's ``3 * cell**2``
    pixels. There is no sigmoid (the docstring said so before issue 38; the code never had
    one): outputs are unbounded and pulled towards the [0, 1] targets by the MSE only.
    """

    def __init__(self, slot_dim: int = 32, grid: int = 5, cell: int = 4, hidden: int = 64) -> None:
        super().__init__()
        _check_sizes(slot_dim=slot_dim, grid=grid, cell=cell, hidden=hidden)
        self.grid, self.cell, self.slot_dim = grid, cell, slot_dim
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, grid), torch.linspace(-1, 1, grid),
                                indexing="ij")
        self.register_buffer("coords", torch.stack([xs, ys], dim=-1))  # (grid, grid, 2)
        self.slot_in = nn.Linear(slot_dim, hidden)
        self.coord_in = nn.Linear(2, hidden, bias=False)  # [z, x, y] @ W split in two parts
        self.mid = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 3 * cell * cell)

    def forward(self, slots: torch.Tensor) -> torch.Tensor:
        if slots.ndim != 2 or slots.shape[1] != self.slot_dim:
            raise ValueError(f"slots must be (N, {self.slot_dim}), got {tuple(slots.shape)}")
        n, g, c = slots.shape[0], self.grid, self.cell
        h = torch.relu(self.slot_in(slots)[:, None, None, :] + self.coord_in(self.coords))
        patches = self.out(torch.relu(self.mid(h)))                  # (N, g, g, 3*c*c)
        img = patches.view(n, g, g, 3, c, c).permute(0, 3, 1, 4, 2, 5).reshape(n, 3, g * c, g * c)
        return img


class SlotAutoencoder(nn.Module):
    """``encoder``: (N, 3, H, W) -> (N, D); ``decoder``: (N, D) -> (N, 3, H, W).

    :meth:`encode` / :meth:`decode` work on entity batches (B, K, ...); :meth:`render` sums the
    decoded entities into scenes (B, 3, H, W).
    """

    def __init__(self, encoder: nn.Module, decoder: nn.Module) -> None:
        super().__init__()
        if not isinstance(encoder, nn.Module) or not isinstance(decoder, nn.Module):
            raise TypeError("encoder and decoder must be torch.nn.Modules")
        self.encoder, self.decoder = encoder, decoder

    def encode(self, entities: torch.Tensor) -> torch.Tensor:
        """entities: (B, K, 3, H, W) -> slots (B, K, D)."""
        if entities.ndim != 5:
            raise ValueError(f"entities must be (B, K, 3, H, W), got {tuple(entities.shape)}")
        b, k = entities.shape[:2]
        return self.encoder(entities.flatten(0, 1)).view(b, k, -1)

    def decode(self, slots: torch.Tensor) -> torch.Tensor:
        """slots: (B, K, D) -> entity images (B, K, 3, H, W)."""
        if slots.ndim != 3:
            raise ValueError(f"slots must be (B, K, D), got {tuple(slots.shape)}")
        b, k = slots.shape[:2]
        img = self.decoder(slots.flatten(0, 1))
        return img.view(b, k, *img.shape[1:])

    def render(self, slots: torch.Tensor) -> torch.Tensor:
        """slots: (B, K, D) -> scene images (B, 3, H, W), the sum of the entity images."""
        return self.decode(slots).sum(dim=1)

    def forward(self, entities: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """entities (B, K, 3, H, W) -> (slots (B, K, D), reconstructions (B, K, 3, H, W))."""
        slots = self.encode(entities)
        return slots, self.decode(slots)
