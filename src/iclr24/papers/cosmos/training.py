"""Training and evaluation loops for the Cosmos world models.

- :func:`warm_start_autoencoder`: the autoencoder alone on entity reconstruction (paper: encoder
  and decoder are warm-started as an autoencoder before transitions are trained, so the first
  symbols are read off sensible decoded images).
- :func:`fit_world_model`: end-to-end training on next-state + reconstruction MSE (Adam).
- :func:`evaluate_world_model`: next-state pixel MSE and a read-back of the predicted image cell by
  cell (nearest of the empty cell and the 16 atom renders) giving per-object position accuracy
  and the fraction of scenes predicted exactly.

Both training loops refuse batches that hold a held-out combination, so test compositions can
never reach training or the warm start.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .autoencoder import SlotAutoencoder
from .perception import as_float_images
from .world_model import EntityBatch, WorldModel

__all__ = ["evaluate_world_model", "fit_world_model", "read_cells", "warm_start_autoencoder"]


def _refuse_heldout(data: EntityBatch, what: str) -> None:
    if not isinstance(data, EntityBatch):
        raise TypeError(f"data must be an EntityBatch (WorldModel.prepare), got "
                        f"{type(data).__name__}")
    if bool(data.heldout.any()):
        raise ValueError(f"{what}: data holds {int(data.heldout.sum())} transitions with "
                         "held-out combinations; train only on the training split")


def _check_budget(steps: int, batch_size: int) -> None:
    for name, v in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def warm_start_autoencoder(autoencoder: SlotAutoencoder, data: EntityBatch, *, steps: int,
                           batch_size: int = 32, lr: float = 2e-3, seed: int = 0) -> list[float]:
    """Train ``autoencoder`` in place on entity reconstruction; returns the loss curve."""
    _refuse_heldout(data, "warm_start_autoencoder")
    _check_budget(steps, batch_size)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(autoencoder.parameters(), lr=lr)
    autoencoder.train()
    curve = []
    for _ in range(steps):
        idx = torch.randint(len(data), (batch_size,), generator=gen)
        ent = data.entities[idx]
        _, recon = autoencoder(ent)
        loss = (recon - ent).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return curve


def fit_world_model(model: WorldModel, data: EntityBatch, *, steps: int, batch_size: int = 32,
                    lr: float = 2e-3, seed: int = 0,
                    progress: Callable[[float], None] | None = None) -> list[float]:
    """Train ``model`` end to end in place; returns the next-state MSE curve."""
    _refuse_heldout(data, "fit_world_model")
    _check_budget(steps, batch_size)
    if data.next_image is None:
        raise ValueError("data.next_image is required to fit a world model")
    gen = torch.Generator().manual_seed(seed)  # batches: the same for every model
    noise = torch.Generator().manual_seed(seed + 1)  # Gumbel noise of rule selection
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    model.train()
    curve = []
    for step in range(steps):
        idx = torch.randint(len(data), (batch_size,), generator=gen)
        loss, parts = model.loss(data.index(idx), generator=noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(parts["next_mse"])
        if progress is not None and step % 50 == 0:
            progress(step / steps)
    model.eval()
    return curve


def read_cells(images: np.ndarray | torch.Tensor, prototypes: np.ndarray, grid: int) -> np.ndarray:
    """Nearest prototype per cell: images (N, 3, H, W), prototypes (P, 3, c, c) -> (N, grid,
    grid) prototype indices."""
    # predictions may overshoot [0, 1] a little: only the dtype is checked (uint8 -> / 255)
    x = as_float_images(images, "images", check_range=False)
    p = as_float_images(prototypes, "prototypes", check_range=False)
    n, c = x.shape[0], p.shape[-1]
    if x.shape[-1] != grid * c:
        raise ValueError(f"image side {x.shape[-1]} != grid {grid} x cell {c}")
    cells = x.view(n, 3, grid, c, grid, c).permute(0, 2, 4, 1, 3, 5).reshape(n, grid, grid, -1)
    d = (cells[..., None, :] - p.reshape(1, 1, 1, p.shape[0], -1)).pow(2).sum(-1)
    return d.argmin(-1).numpy()


@torch.no_grad()
def evaluate_world_model(model: WorldModel, data: EntityBatch, atoms: np.ndarray,
                         next_cells: np.ndarray, prototypes: np.ndarray, *,
                         batch_size: int = 250) -> dict[str, float | np.ndarray]:
    """Next-state metrics on prepared ``data``.

    atoms, next_cells: (N, K, 2) ground-truth objects (shape, color) and their next cells;
    prototypes: :meth:`~.environment.BlockPushingEnv.cell_prototypes`.
    Returns ``mse`` (mean pixel MSE), ``mse_per_transition`` (N,), ``position_accuracy`` (object
    rendered as the right atom in its true next cell), ``scene_accuracy`` (every cell right).
    """
    if data.next_image is None:
        raise ValueError("data.next_image is required to evaluate")
    model.eval()
    preds = []
    for i in range(0, len(data), batch_size):
        sl = torch.arange(i, min(i + batch_size, len(data)))
        preds.append(model.predict(data.entities[sl], data.action[sl])["next_image"])
    pred = torch.cat(preds)
    per = (pred - data.next_image).pow(2).flatten(1).mean(1).numpy()
    grid = int(np.sqrt(pred.shape[-1] * pred.shape[-1] / prototypes.shape[-1] ** 2))
    got = read_cells(pred, prototypes, grid)
    true = read_cells(data.next_image, prototypes, grid)
    n, k = atoms.shape[:2]
    rows = np.arange(n)[:, None].repeat(k, 1)
    want = 1 + atoms[..., 0] * 4 + atoms[..., 1]
    pos_ok = got[rows, next_cells[..., 0], next_cells[..., 1]] == want
    return {"mse": float(per.mean()), "mse_per_transition": per,
            "position_accuracy": float(pos_ok.mean()),
            "scene_accuracy": float((got == true).reshape(n, -1).all(1).mean())}
