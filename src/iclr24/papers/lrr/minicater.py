"""MiniCATER: procedural videos of sliding objects with containment, truth known per frame.

A laptop stand-in for CATER task 3 ("where is the snitch at the end?", 36 cells of a 6x6 grid;
Girdhar & Ramanan, ICLR 2020) as used by LRR (Sec. 4, CATER). CATER itself (Blender renders of
300x320 px, 300 frames) and its moving-camera split are out of reach here; this generator keeps
what makes the task need grounded tracking:

- a 6x6 grid, one object per cell; a *snitch* (small yellow square), 2-3 *cones* (large
  triangles, all the same colour, so a cone is told apart only by following it) and distractor
  *cubes* of other colours, 3-5 objects in all;
- one action per 3-frame segment: an object slides to a free cell within ``max_step`` cells
  (linear in pixels between the segment's end frames); a cone may slide onto the snitch's cell
  and *contain* it (drawn on top, the snitch disappears); a containing cone that slides
  *carries* the snitch (still hidden); a containing cone may be *lifted* away and reveal it;
- metadata per frame: every object's cell (fractional while moving), whether the snitch is
  visible and which cone contains it;
- about half of the videos end with the snitch contained (``p_contained_end``, drawn per video
  and met by rejection), the hard case in which the last frame shows only the cones.

Frames are ``(T, 3, H, W)`` float32 in [0, 1] with ``H = W = grid * cell_px`` (24 px by default).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["MiniCATERConfig", "MiniCATERVideo", "generate_minicater", "render_frame",
           "segment_bounds"]

SNITCH, CONE, CUBE = "snitch", "cone", "cube"
_SNITCH_RGB = (1.0, 0.9, 0.1)
_CONE_RGB = (0.85, 0.45, 0.2)
_CUBE_RGB = ((0.2, 0.45, 1.0), (0.2, 0.85, 0.3), (0.75, 0.3, 0.9), (0.9, 0.9, 0.9))


@dataclass(frozen=True)
class MiniCATERConfig:
    """Generator settings (defaults: the laptop-scale reproduction of the spec).

    n_frames: frames per video (>= 2); actions span frames [3k, min(3k + 3, T - 1)].
    grid: cells per side (the answer has grid**2 classes); cell_px: pixels per cell (>= 4,
    so a cone's triangle covers the snitch's 2x2 square).
    n_cones: (min, max) number of cones (>= 1; 2-3 keep the last frame ambiguous).
    n_objects: (min, max) objects in all, snitch and cones included.
    max_step: the farthest (Chebyshev, in cells) a slide goes.
    p_cover: probability that a segment's action is a cone covering the visible snitch.
    p_carry / p_lift: given the snitch is contained, probability that the containing cone
    slides with it / is lifted off it.
    p_contained_end: probability that a video is drawn to end with the snitch contained.
    """

    n_frames: int = 12
    grid: int = 6
    cell_px: int = 4
    segment: int = 3
    n_cones: tuple[int, int] = (2, 3)
    n_objects: tuple[int, int] = (3, 5)
    max_step: int = 2
    p_cover: float = 0.35
    p_carry: float = 0.3
    p_lift: float = 0.2
    p_contained_end: float = 0.5

    def __post_init__(self) -> None:
        for name in ("n_frames", "grid", "cell_px", "segment", "max_step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, got {v!r}")
        if self.n_frames < 2:
            raise ValueError(f"n_frames must be >= 2, got {self.n_frames}")
        if self.grid < 2:
            raise ValueError(f"grid must be >= 2, got {self.grid}")
        if self.cell_px < 4:
            raise ValueError(f"cell_px must be >= 4 (a cone must cover the snitch), "
                             f"got {self.cell_px}")
        if self.segment < 1 or self.max_step < 1:
            raise ValueError("segment and max_step must be >= 1")
        lo_c, hi_c = self.n_cones
        lo_o, hi_o = self.n_objects
        if not 1 <= lo_c <= hi_c:
            raise ValueError(f"n_cones must be (min, max) with 1 <= min <= max, got {self.n_cones}")
        if not lo_o <= hi_o or lo_o < 1 + lo_c or hi_o < 1 + hi_c:
            raise ValueError(f"n_objects={self.n_objects} cannot hold the snitch and "
                             f"n_cones={self.n_cones}")
        if hi_o > self.grid ** 2 - 1:
            raise ValueError(f"n_objects max {hi_o} leaves no free cell on a {self.grid}x"
                             f"{self.grid} grid (more objects than grid cells)")
        for name in ("p_cover", "p_carry", "p_lift", "p_contained_end"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {v!r}")
        if self.p_carry + self.p_lift > 1.0:
            raise ValueError("p_carry + p_lift must be <= 1")

    @property
    def frame_size(self) -> int:
        return self.grid * self.cell_px

    @property
    def n_cells(self) -> int:
        return self.grid ** 2


@dataclass
class MiniCATERVideo:
    """One video and its ground truth.

    frames: (T, 3, H, W) float32. kinds: object kinds, index 0 is the snitch, then cones, cubes.
    positions: (T, N, 2) float (row, col) in cells, fractional while an object slides.
    contained_by: (T,) int, index of the cone containing the snitch at frame t, -1 if visible.
    actions: one (kind of action, object index, from cell, to cell) per segment.
    """

    frames: np.ndarray
    kinds: list[str]
    positions: np.ndarray
    contained_by: np.ndarray
    actions: list[tuple[str, int, int, int]] = field(default_factory=list)
    grid: int = 6

    def snitch_cell(self, t: int) -> int:
        """The snitch's cell id (row * grid + col) at key frame t (an action boundary)."""
        r, c = np.rint(self.positions[t, 0]).astype(int)
        return int(r * self.grid + c)

    @property
    def final_cell(self) -> int:
        """CATER task 3's answer: the snitch's cell in the last frame."""
        return self.snitch_cell(len(self.contained_by) - 1)

    @property
    def contained_at_end(self) -> bool:
        return bool(self.contained_by[-1] >= 0)


def segment_bounds(n_frames: int, segment: int = 3) -> list[tuple[int, int]]:
    """(start, end) frames of each action: [0, 3], [3, 6], ..., the last one cut at T - 1."""
    return [(s, min(s + segment, n_frames - 1)) for s in range(0, n_frames - 1, segment)]


def _sprites(px: int) -> dict[str, np.ndarray]:
    """(px, px) boolean masks: the snitch's 2x2 centre square, a cube's (px-1)^2 square and a
    cone's triangle (apex up) whose lower half fills the cell and covers the snitch's square."""
    half = px // 2
    snitch = np.zeros((px, px), dtype=bool)
    snitch[half - 1:half + 1, half - 1:half + 1] = True
    cube = np.zeros((px, px), dtype=bool)
    cube[:px - 1, :px - 1] = True
    cone = np.zeros((px, px), dtype=bool)
    for r in range(px):
        w = max(1, -(-(r + 1) * half // px))  # half-width ceil((r + 1) * half / px)
        cone[r, half - w:half + w] = True
    return {SNITCH: snitch, CUBE: cube, CONE: cone}


def render_frame(positions: np.ndarray, kinds: list[str], snitch_visible: bool,
                 colours: list[tuple[float, float, float]], config: MiniCATERConfig) -> np.ndarray:
    """One (3, H, W) frame: cubes, then the snitch (if visible), then cones on top.

    positions: (N, 2) (row, col) in cells inside the grid, fractional allowed (rounded to whole
    pixels).
    """
    px = config.cell_px
    sprites = _sprites(px)
    size = config.frame_size
    img = np.zeros((3, size, size), dtype=np.float32)
    order = [i for i, k in enumerate(kinds) if k == CUBE] + [0] + \
            [i for i, k in enumerate(kinds) if k == CONE]
    for i in order:
        if kinds[i] == SNITCH and not snitch_visible:
            continue
        y0, x0 = (int(np.rint(v * px)) for v in positions[i])
        patch = img[:, y0:y0 + px, x0:x0 + px]
        patch[:, sprites[kinds[i]]] = np.asarray(colours[i], dtype=np.float32)[:, None]
    return img


def _cells(positions: np.ndarray, grid: int) -> list[int]:
    rc = np.rint(positions).astype(int)
    return [int(r * grid + c) for r, c in rc]


def _free_targets(cell: int, occupied: set[int], config: MiniCATERConfig) -> list[int]:
    g, r0, c0 = config.grid, *divmod(cell, config.grid)
    out = []
    for r in range(max(0, r0 - config.max_step), min(g, r0 + config.max_step + 1)):
        for c in range(max(0, c0 - config.max_step), min(g, c0 + config.max_step + 1)):
            if r * g + c != cell and r * g + c not in occupied:
                out.append(r * g + c)
    return out


def _one_story(rng: np.random.Generator, config: MiniCATERConfig):
    """Objects, colours, positions (T, N, 2), container per frame and actions of one video."""
    g = config.grid
    n_cones = int(rng.integers(config.n_cones[0], config.n_cones[1] + 1))
    lo = max(config.n_objects[0], 1 + n_cones)
    n_obj = int(rng.integers(lo, config.n_objects[1] + 1))
    kinds = [SNITCH] + [CONE] * n_cones + [CUBE] * (n_obj - 1 - n_cones)
    colours = [_SNITCH_RGB] + [_CONE_RGB] * n_cones + \
              [_CUBE_RGB[j] for j in rng.permutation(len(_CUBE_RGB))[:n_obj - 1 - n_cones]]
    cells = [int(c) for c in rng.choice(g * g, size=n_obj, replace=False)]
    pos = np.array([divmod(c, g) for c in cells], dtype=np.float64)
    T = config.n_frames
    positions = np.zeros((T, n_obj, 2))
    positions[0] = pos
    contained = np.full(T, -1, dtype=np.int64)
    container = -1
    actions: list[tuple[str, int, int, int]] = []
    cones = [i for i, k in enumerate(kinds) if k == CONE]
    for start, end in segment_bounds(T, config.segment):
        cur = _cells(pos, g)
        occupied = set(cur)
        action = None
        u = rng.random()
        if container < 0 and u < config.p_cover:  # a cone slides onto the snitch: contain
            near = [i for i in cones if cur[0] in _free_targets(cur[i], set(), config)]
            if near:
                i = int(rng.choice(near))
                action = ("contain", i, cur[i], cur[0])
        elif container >= 0 and u < config.p_carry + config.p_lift:
            targets = _free_targets(cur[container], occupied, config)
            if targets:
                kind = "carry" if u < config.p_carry else "lift"
                action = (kind, container, cur[container], int(rng.choice(targets)))
        if action is None:  # an ordinary slide of any object that is not hidden
            movable = [i for i in range(n_obj) if not (i == 0 and container >= 0)]
            rng.shuffle(movable)
            for i in movable:
                targets = _free_targets(cur[i], occupied, config)
                if targets:
                    kind = "carry" if i == container else "slide"
                    action = (kind, int(i), cur[i], int(rng.choice(targets)))
                    break
        new = pos.copy()
        if action is not None:
            kind, i, _, dest = action
            new[i] = divmod(dest, g)
            if kind == "carry":
                new[0] = new[i]
            actions.append(action)
        for t in range(start + 1, end + 1):
            a = (t - start) / (end - start)
            positions[t] = (1 - a) * pos + a * new  # linear slide between key frames
            if action is not None and action[0] == "carry":
                positions[t, 0] = positions[t, action[1]]
            contained[t] = container
        if action is not None:
            if action[0] == "contain":
                contained[end] = container = action[1]
            elif action[0] == "lift":
                container = -1
                contained[start + 1:end + 1] = -1
        pos = new
    return kinds, colours, positions, contained, actions


def generate_minicater(n_videos: int, config: MiniCATERConfig | None = None, *,
                       seed: int | np.random.Generator = 0) -> list[MiniCATERVideo]:
    """``n_videos`` videos; each is drawn to end contained with probability
    ``config.p_contained_end`` and resampled until it does (so the split is balanced)."""
    if isinstance(n_videos, bool) or not isinstance(n_videos, (int, np.integer)) or n_videos < 1:
        raise ValueError(f"n_videos must be a positive int, got {n_videos!r}")
    config = config or MiniCATERConfig()
    if not isinstance(config, MiniCATERConfig):
        raise TypeError(f"config must be a MiniCATERConfig, got {type(config).__name__}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    videos = []
    for _ in range(int(n_videos)):
        want = bool(rng.random() < config.p_contained_end)
        for _attempt in range(1000):
            kinds, colours, positions, contained, actions = _one_story(rng, config)
            if (contained[-1] >= 0) == want:
                break
        frames = np.stack([render_frame(positions[t], kinds, contained[t] < 0, colours, config)
                           for t in range(config.n_frames)])
        videos.append(MiniCATERVideo(frames, kinds, positions, contained, actions, config.grid))
    return videos
