"""One replicate of the paper's comparison (Sec. 5): Cosmos vs Aligned NPS vs GNN on the held-out
compositions of one block-pushing setting.

Per replicate: a fresh environment (its seed fixes the held-out combinations), a training and a
test split, one autoencoder warm-started on the training split's entities, then each transition
model trained end to end from a copy of that warm start (same data, same batches, same steps),
and evaluated on the test split. The labeler (the foundation-model stand-in) is shared by the
replicates, as one foundation model would be.

Two references measured beside the models (issue 38), neither trained:

- copy-the-frame: predict the next image as the current one (MSE and position accuracy by the
  same read-back as the models); the learning floor a world model must beat;
- an in-distribution test set: ``n_test`` fresh transitions from the *training* distribution
  (no held-out combination), on which every model is evaluated too, so that a model's error on
  held-out compositions can be compared with its error on seen ones (its generalisation gap).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from .autoencoder import EntityEncoder, SlotAutoencoder, SpatialBroadcastDecoder
from .environment import BlockPushingEnv, Transitions
from .perception import AttributeLabeler
from .training import (
    evaluate_world_model,
    fit_world_model,
    read_cells,
    warm_start_autoencoder,
)
from .transitions import AlignedNPS, GNNTransition, NeurosymbolicTransition
from .world_model import WorldModel

__all__ = ["MODELS", "ComparisonConfig", "copy_frame_metrics", "run_comparison", "team_subset"]

MODELS = ("cosmos", "aligned_nps", "gnn")


@dataclass(frozen=True)
class ComparisonConfig:
    """Sizes of one replicate (paper defaults where it gives them; laptop sizes otherwise)."""

    composition: str = "team"
    n_train: int = 3000
    n_test: int = 500
    warm_start_steps: int = 400
    steps: int = 600
    batch_size: int = 32
    warm_start_lr: float = 5e-3
    lr: float = 2e-3
    slot_dim: int = 32
    symbol_dim: int = 16
    n_rules: int = 4
    hidden: int = 64
    cell: int = 4


def _transition(name: str, cfg: ComparisonConfig) -> torch.nn.Module:
    if name == "cosmos":
        return NeurosymbolicTransition(cfg.n_rules, cfg.slot_dim, cfg.symbol_dim,
                                       hidden=cfg.hidden)
    if name == "aligned_nps":
        return AlignedNPS(cfg.n_rules, cfg.slot_dim, hidden=cfg.hidden)
    return GNNTransition(cfg.slot_dim, hidden=cfg.hidden)


def team_subset(data: Transitions, grid: int) -> np.ndarray:
    """(N,) bool: transitions whose actor shares its color with another object (where the Team
    relation moves more than the actor)."""
    cells = data.cells[..., 0] * grid + data.cells[..., 1]
    actor_idx = (cells == data.actions[:, :1]).argmax(1)
    actor_color = data.atoms[np.arange(len(data)), actor_idx, 1]
    return (data.atoms[..., 1] == actor_color[:, None]).sum(1) > 1


def copy_frame_metrics(data: Transitions, prototypes: np.ndarray, grid: int
                       ) -> dict[str, float | np.ndarray]:
    """The copy-the-frame predictor (next image := current image) scored as
    :func:`~.training.evaluate_world_model` scores a model: ``mse``, ``mse_per_transition``,
    ``position_accuracy`` (objects that did not move are right), ``scene_accuracy``."""
    per = ((data.images - data.next_images) ** 2).reshape(len(data), -1).mean(1)
    got = read_cells(data.images, prototypes, grid)
    true = read_cells(data.next_images, prototypes, grid)
    rows = np.arange(len(data))[:, None]
    want = 1 + data.atoms[..., 0] * 4 + data.atoms[..., 1]
    pos_ok = got[rows, data.next_cells[..., 0], data.next_cells[..., 1]] == want
    return {"mse": float(per.mean()), "mse_per_transition": per,
            "position_accuracy": float(pos_ok.mean()),
            "scene_accuracy": float((got == true).reshape(len(data), -1).all(1).mean())}


def run_comparison(cfg: ComparisonConfig, seed: int, labeler: AttributeLabeler,
                   progress: Callable[[float, str], None] | None = None) -> dict[str, object]:
    """Train and test the three models on one replicate.

    Returns ``{"metrics": {model: evaluate_world_model dict + "train_mse"}, "indist": {model:
    evaluate_world_model dict on the in-distribution set}, "copy": copy_frame_metrics on the
    test split, "copy_indist": the same on the in-distribution set, "symbol_accuracy": float,
    "team_subset": (N_test,) bool, "indist_team_subset": (N_test,) bool}`` where the team
    subsets mark transitions whose actor shares its color with another object
    (:func:`team_subset`).
    """
    progress = progress or (lambda f, m: None)
    env = BlockPushingEnv(composition=cfg.composition, seed=seed, cell=cfg.cell)
    train, test = env.splits(cfg.n_train, cfg.n_test, seed=seed)
    # seen compositions, scenes drawn independently of the training split (another stream)
    indist = env.transitions(cfg.n_test, "train", seed=seed + 100_000)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        autoencoder = SlotAutoencoder(EntityEncoder(cfg.slot_dim, env.grid, cfg.cell),
                                      SpatialBroadcastDecoder(cfg.slot_dim, env.grid, cfg.cell,
                                                              hidden=cfg.hidden))
        reader = WorldModel(autoencoder, GNNTransition(cfg.slot_dim), grid=env.grid)
        train_b = reader.prepare(train.images, train.actions, train.next_images, train.heldout)
        test_b = reader.prepare(test.images, test.actions, test.next_images, test.heldout)
        indist_b = reader.prepare(indist.images, indist.actions, indist.next_images,
                                  indist.heldout)
        warm_start_autoencoder(autoencoder, train_b, steps=cfg.warm_start_steps,
                               batch_size=cfg.batch_size, lr=cfg.warm_start_lr, seed=seed)
        protos = env.cell_prototypes()
        out: dict[str, object] = {"metrics": {}, "indist": {}}
        for i, name in enumerate(MODELS):
            progress(i / len(MODELS), f"seed {seed}: training {name}")
            torch.manual_seed(seed * 1000 + 17)  # same transition init stream for every model
            model = WorldModel(copy.deepcopy(autoencoder), _transition(name, cfg), labeler,
                               grid=env.grid)
            curve = fit_world_model(model, train_b, steps=cfg.steps, batch_size=cfg.batch_size,
                                    lr=cfg.lr, seed=seed)
            ev = evaluate_world_model(model, test_b, test.atoms, test.next_cells, protos)
            ev["train_mse"] = float(np.mean(curve[-max(1, cfg.steps // 10):]))
            out["metrics"][name] = ev
            out["indist"][name] = evaluate_world_model(model, indist_b, indist.atoms,
                                                       indist.next_cells, protos)
            if name == "cosmos":
                with torch.no_grad():
                    labels = model.predict(test_b.entities, test_b.action)["labels"].numpy()
                got = np.sort(labels[..., 0] * 4 + labels[..., 1], axis=1)
                want = np.sort(test.atoms[..., 0] * 4 + test.atoms[..., 1], axis=1)
                out["symbol_accuracy"] = float((got == want).mean())
    out["copy"] = copy_frame_metrics(test, protos, env.grid)
    out["copy_indist"] = copy_frame_metrics(indist, protos, env.grid)
    out["team_subset"] = team_subset(test, env.grid)
    out["indist_team_subset"] = team_subset(indist, env.grid)
    return out
