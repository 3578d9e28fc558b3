"""The 2D block-pushing domain of Cosmos (paper Sec. 5; project page "Types of Compositions"),
with entity-composition (EC) and relational-composition (RC: Team, Sticky) splits.

A scene is ``n_objects`` distinct *atoms* (shape x color) on a ``grid x grid`` board. An action
moves one object one cell north/east/south/west. Each shape has a weight (square 3, circle 2,
triangle 1, cross 0); a mover pushes a strictly lighter object one cell if the cell behind it is
free and on the board, otherwise nothing moves; walls block.

- ``composition="entity"`` (EC): standard pushing. The test scenes are atom *triples* that never
  occur in training (every single atom does).
- ``composition="team"`` (RC-Team): every object sharing the actor's color moves in the same
  direction (front-most first, each respecting walls and weights).
- ``composition="sticky"`` (RC-Sticky): as Team, but only same-colored objects 4-adjacent to the
  actor move with it.
  For RC the held-out combinations are same-color *shape pairs*: for each color two of the six
  shape pairs never co-occur in a training scene (each pair is seen in other colors), so the
  team relation must be applied to pairs it was never trained on.

Rendering: ``cell`` pixels per grid cell (a multiple of 4); each shape is a 3x3 pattern scaled by
``cell // 4`` and drawn in the top-left ``3/4`` of its cell, so objects in neighbouring cells
never touch (a connected-component segmenter separates them). The paper renders larger images
(and its own shapes/colors); the claims use ``cell=4`` (20x20 images) to fit CPU budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = [
    "COLORS",
    "DIRECTIONS",
    "SHAPES",
    "SHAPE_WEIGHTS",
    "BlockPushingEnv",
    "Scene",
    "Transitions",
]

SHAPES = ("square", "circle", "triangle", "cross")
SHAPE_WEIGHTS = {"square": 3, "circle": 2, "triangle": 1, "cross": 0}
COLORS = ("red", "green", "blue", "yellow")
_RGB = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0),
        "yellow": (1.0, 1.0, 0.0)}
# (row, col) steps of north, east, south, west
DIRECTIONS = ((-1, 0), (0, 1), (1, 0), (0, -1))
_PATTERNS = {
    "square": ("XXX", "XXX", "XXX"),
    "circle": (".X.", "X.X", ".X."),
    "triangle": ("..X", ".XX", "XXX"),
    "cross": ("X.X", ".X.", "X.X"),
}
_COMPOSITIONS = ("entity", "team", "sticky")


@dataclass(frozen=True)
class Scene:
    """One state: ``atoms[i] = (shape index, color index)``, ``cells[i] = (row, col)``."""

    atoms: tuple[tuple[int, int], ...]
    cells: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Transitions:
    """A set of transitions (one split).

    images, next_images: (N, 3, H, W) float32 in [0, 1];
    actions:  (N, 2) int64, ``(cell index row * grid + col of the actor, direction 0..3)``;
    atoms:    (N, K, 2) int64 (shape, color) of each object, in the scene's object order;
    cells, next_cells: (N, K, 2) int64 grid positions before / after;
    heldout:  (N,) bool, True where the scene holds a held-out combination;
    split:    "train" or "test".
    """

    images: np.ndarray
    actions: np.ndarray
    next_images: np.ndarray
    atoms: np.ndarray
    cells: np.ndarray
    next_cells: np.ndarray
    heldout: np.ndarray
    split: str

    def __len__(self) -> int:
        return int(self.images.shape[0])


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


class BlockPushingEnv:
    """Procedural block pushing with compositional splits.

    grid:        board side (cells).
    n_objects:   objects per scene (distinct atoms); at most ``grid**2`` and at most 16.
    composition: "entity" | "team" | "sticky" (see the module docstring).
    seed:        fixes the held-out combinations (and is the default seed of :meth:`splits`).
    cell:        pixels per cell, a multiple of 4 (image side = grid * cell).
    """

    def __init__(self, grid: int = 5, n_objects: int = 3, composition: str = "entity",
                 seed: int = 0, cell: int = 4) -> None:
        self.grid = _check_int("grid", grid, 2)
        self.n_objects = _check_int("n_objects", n_objects, 1)
        self.seed = _check_int("seed", seed, 0)
        self.cell = _check_int("cell", cell, 4)
        if self.cell % 4:
            raise ValueError(f"cell must be a multiple of 4 pixels, got {cell}")
        if self.n_objects > self.grid * self.grid:
            raise ValueError(f"n_objects={n_objects} is more objects than grid cells "
                             f"({self.grid}x{self.grid} = {self.grid * self.grid})")
        n_atoms = len(SHAPES) * len(COLORS)
        if self.n_objects > n_atoms:
            raise ValueError(f"n_objects={n_objects} exceeds the {n_atoms} distinct atoms")
        if composition not in _COMPOSITIONS:
            raise ValueError(f"composition must be one of {_COMPOSITIONS}, got {composition!r}")
        if composition != "entity" and self.n_objects < 2:
            raise ValueError("relational compositions need n_objects >= 2")
        self.composition = composition
        self.image_size = self.grid * self.cell
        self._atom_ids = [(s, c) for s in range(len(SHAPES)) for c in range(len(COLORS))]
        self.heldout_pairs: frozenset[frozenset[tuple[int, int]]] = frozenset()
        self.heldout_sets = self._choose_heldout()

    # ----------------------------------------------------------------- held-out combinations
    def _choose_heldout(self) -> frozenset[frozenset[tuple[int, int]]]:
        rng = np.random.default_rng(self.seed)
        if self.composition == "entity":
            combos = [frozenset(c) for c in combinations(self._atom_ids, self.n_objects)]
            order = rng.permutation(len(combos))
            held = {combos[i] for i in order[: max(1, len(combos) // 4)]}
            return frozenset(held)
        # RC: per color, two of the six shape pairs never co-occur in training.
        pairs = list(combinations(range(len(SHAPES)), 2))
        order = rng.permutation(len(pairs))
        held_pairs = set()
        for color in range(len(COLORS)):
            for j in range(2):
                a, b = pairs[order[(2 * color + j) % len(pairs)]]
                held_pairs.add(frozenset({(a, color), (b, color)}))
        self.heldout_pairs = frozenset(held_pairs)
        return frozenset()

    def is_heldout(self, atoms: object) -> bool:
        """True if a scene with these atoms ``[(shape, color), ...]`` is a held-out combination."""
        key = frozenset(tuple(int(v) for v in a) for a in atoms)
        if self.composition == "entity":
            return key in self.heldout_sets
        return any(pair <= key for pair in self.heldout_pairs)

    # ----------------------------------------------------------------------------- physics
    def _team(self, scene: Scene, actor: int) -> list[int]:
        color = scene.atoms[actor][1]
        if self.composition == "entity":
            return [actor]
        same = [i for i, a in enumerate(scene.atoms) if a[1] == color]
        if self.composition == "team":
            return same
        r, c = scene.cells[actor]
        return [i for i in same if i == actor
                or abs(scene.cells[i][0] - r) + abs(scene.cells[i][1] - c) == 1]

    def step(self, scene: Scene, action: tuple[int, int]) -> Scene:
        """The next scene after ``action = (object index, direction)``."""
        obj, direction = int(action[0]), int(action[1])
        if not 0 <= obj < len(scene.atoms):
            raise ValueError(f"action object must be in [0, {len(scene.atoms)}), got {obj}")
        if not 0 <= direction < 4:
            raise ValueError(f"action direction must be in 0..3, got {direction}")
        dr, dc = DIRECTIONS[direction]
        cells = [list(c) for c in scene.cells]
        team = self._team(scene, obj)
        # front-most team members move first, so a member directly behind another can follow it
        team.sort(key=lambda i: -(cells[i][0] * dr + cells[i][1] * dc))

        def inside(r: int, c: int) -> bool:
            return 0 <= r < self.grid and 0 <= c < self.grid

        for i in team:
            tr, tc = cells[i][0] + dr, cells[i][1] + dc
            if not inside(tr, tc):
                continue
            occupant = next((j for j, cj in enumerate(cells) if cj == [tr, tc]), None)
            if occupant is None:
                cells[i] = [tr, tc]
                continue
            heavier = (SHAPE_WEIGHTS[SHAPES[scene.atoms[i][0]]]
                       > SHAPE_WEIGHTS[SHAPES[scene.atoms[occupant][0]]])
            br, bc = tr + dr, tc + dc
            behind_free = inside(br, bc) and all(cj != [br, bc] for cj in cells)
            if heavier and behind_free:
                cells[occupant] = [br, bc]
                cells[i] = [tr, tc]
        return Scene(scene.atoms, tuple((r, c) for r, c in cells))

    # --------------------------------------------------------------------------- rendering
    def atom_patch(self, shape: int, color: int) -> np.ndarray:
        """The (3, cell, cell) rendering of one atom in its cell."""
        f = self.cell // 4
        mask = np.array([[ch == "X" for ch in row] for row in _PATTERNS[SHAPES[shape]]], float)
        mask = np.kron(mask, np.ones((f, f)))
        patch = np.zeros((3, self.cell, self.cell), np.float32)
        rgb = np.asarray(_RGB[COLORS[color]], np.float32)[:, None, None]
        patch[:, : 3 * f, : 3 * f] = rgb * mask[None]
        return patch

    def render(self, scene: Scene) -> np.ndarray:
        """(3, H, W) float32 image of ``scene``."""
        img = np.zeros((3, self.image_size, self.image_size), np.float32)
        for (s, c), (r, col) in zip(scene.atoms, scene.cells):
            y, x = r * self.cell, col * self.cell
            img[:, y:y + self.cell, x:x + self.cell] = self.atom_patch(s, c)
        return img

    # ------------------------------------------------------------------------------ splits
    def random_scene(self, rng: np.random.Generator, heldout: bool) -> Scene:
        """A scene whose atom set is (``heldout=True``) or is not a held-out combination."""
        for _ in range(100_000):
            idx = rng.choice(len(self._atom_ids), size=self.n_objects, replace=False)
            atoms = tuple(self._atom_ids[i] for i in idx)
            if self.is_heldout(atoms) == heldout:
                flat = rng.choice(self.grid * self.grid, size=self.n_objects, replace=False)
                cells = tuple((int(k) // self.grid, int(k) % self.grid) for k in flat)
                return Scene(atoms, cells)
        raise RuntimeError("could not sample a scene of the requested split")

    def transitions(self, n: int, split: str, seed: int) -> Transitions:
        """``n`` transitions of ``split`` ("train": no held-out combination; "test": only
        held-out ones), uniform actions, from generator ``seed``."""
        n = _check_int("n", n, 1)
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        rng = np.random.default_rng([self.seed, _check_int("seed", seed, 0),
                                     0 if split == "train" else 1])
        k, side = self.n_objects, self.image_size
        out = {"images": np.zeros((n, 3, side, side), np.float32),
               "next_images": np.zeros((n, 3, side, side), np.float32),
               "actions": np.zeros((n, 2), np.int64), "atoms": np.zeros((n, k, 2), np.int64),
               "cells": np.zeros((n, k, 2), np.int64), "next_cells": np.zeros((n, k, 2), np.int64),
               "heldout": np.zeros(n, bool)}
        for t in range(n):
            scene = self.random_scene(rng, heldout=split == "test")
            obj, direction = int(rng.integers(k)), int(rng.integers(4))
            nxt = self.step(scene, (obj, direction))
            r, c = scene.cells[obj]
            out["images"][t] = self.render(scene)
            out["next_images"][t] = self.render(nxt)
            out["actions"][t] = (r * self.grid + c, direction)
            out["atoms"][t] = scene.atoms
            out["cells"][t] = scene.cells
            out["next_cells"][t] = nxt.cells
            out["heldout"][t] = self.is_heldout(scene.atoms)
        return Transitions(split=split, **out)

    def splits(self, n_train: int, n_test: int, seed: int | None = None
               ) -> tuple[Transitions, Transitions]:
        """(train, test) transitions; the test scenes are all held-out combinations."""
        seed = self.seed if seed is None else seed
        return self.transitions(n_train, "train", seed), self.transitions(n_test, "test", seed)

    def single_object_renders(self) -> tuple[np.ndarray, np.ndarray]:
        """Every atom alone in every cell: images (16 * grid**2, 3, H, W) and their
        (shape, color) labels (16 * grid**2, 2), the separate data the labeler stand-in is
        trained on (it contains no scene, so no combination)."""
        images, labels = [], []
        for s, c in self._atom_ids:
            for r in range(self.grid):
                for col in range(self.grid):
                    images.append(self.render(Scene(((s, c),), ((r, col),))))
                    labels.append((s, c))
        return np.stack(images), np.asarray(labels, np.int64)

    def cell_prototypes(self) -> np.ndarray:
        """(1 + 16, 3, cell, cell): the empty cell, then every atom (index 1 + shape * 4 +
        color); the reference for reading a predicted image back cell by cell."""
        protos = [np.zeros((3, self.cell, self.cell), np.float32)]
        protos += [self.atom_patch(s, c) for s, c in self._atom_ids]
        return np.stack(protos)
