"""The synthetic rigid-body benchmark: chains, native complexes and a dimer "predictor".

Real PDB complexes (the paper's 3–30-chain set) and AlphaFold-Multimer dimers are out of reach
here (no downloads, no AFM weights or GPU), so this module builds an analogue that keeps the
paper's formulation (spanning-tree assembly from given pairwise rigid transforms with noisy
confidences) and tests the search/policy part, GAPN's contribution, not structure prediction:

- a chain is a rigid cloud of n ∈ [20, 60] "Cα" points, uniform in a ball of radius
  2.84 n^0.38 Å (the ball whose radius of gyration matches R_g ≈ 2.2 n^0.38 Å), at least 3.8 Å
  apart (rejection sampling), centred at its centroid;
- the native: chain 0 at the origin; each next chain gets a random placed partner (another one
  if 50 draws find no clash-free pose on it), a random
  direction and rotation, and slides in until >= 10 cross pairs are within 8 Å of the partner
  with no pair < 3 Å to any placed chain (otherwise a fresh draw). Native contact graph = chain
  pairs with >= 5 pairs within 8 Å (it usually has cycles: several spanning trees are correct);
- dimers for every pair i < j: a pose T_ij of chain j in chain i's frame, a confidence and the
  number of interface contacts in that pose. ``mode="afm"``: a native contact gets the native
  T_ij perturbed (rotation ~ N(0, 5°) about a random axis, translation ~ 1 Å RMS) with
  confidence ~ U(0.7, 0.95), except that with probability 0.15 it gets a wrong interface with
  confidence ~ U(0.5, 0.8) (AFM-like failures); a non-contacting pair gets a plausible wrong
  pose (docked on a random surface patch) with confidence ~ U(0.2, 0.6). ``mode="gt"``: native
  contacts get the exact native transform, no wrong interfaces (non-contacting pairs still get
  a docked wrong pose: no ground-truth dimer exists for chains that do not touch).

``complex_from_native`` applies the contact rule and the dimer predictor to any native chains
(also those of a PDB file, see :mod:`.pdb_files`).

``AssemblyProblem`` holds only what a method may see (chains, dimers); ``SyntheticComplex``
adds the native poses and contacts used for scoring and for the discriminator's expert edges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial import cKDTree

from .rigid import Transform, apply_transform, compose, invert, random_rotation

__all__ = [
    "AssemblyProblem",
    "ComplexConfig",
    "Dimer",
    "SyntheticComplex",
    "complex_from_native",
    "generate_complex",
    "generate_complexes",
    "sample_chain",
]

CONTACT_CUTOFF = 8.0  # Å, Cα–Cα interface contact
CLASH_CUTOFF = 3.0    # Å, steric clash


def sample_chain(n_points: int, rng: np.random.Generator, *, min_spacing: float = 3.8,
                 max_tries: int = 200_000) -> np.ndarray:
    """(n_points, 3) points uniform in the ball of radius 2.84 n^0.38 Å, pairwise >= min_spacing
    apart, centred at their centroid."""
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 3:
        raise ValueError(f"n_points must be an int >= 3; got {n_points!r}")
    radius = 2.84 * n_points ** 0.38
    pts = np.empty((n_points, 3))
    count = tries = 0
    while count < n_points:
        tries += 1
        if tries > max_tries:
            raise RuntimeError(f"could not pack {n_points} points with spacing {min_spacing}")
        x = rng.normal(size=3)
        x *= radius * rng.random() ** (1.0 / 3.0) / np.linalg.norm(x)  # uniform in the ball
        if count and np.min(np.sum((pts[:count] - x) ** 2, axis=1)) < min_spacing ** 2:
            continue
        pts[count] = x
        count += 1
    return pts - pts.mean(axis=0)


@dataclass(frozen=True)
class Dimer:
    """A predicted dimer of chains (i, j), i < j: chain j's pose in chain i's frame
    (x_i = R x_j + t), its confidence in [0, 1] and the Cα contacts (< 8 Å) of that pose."""

    rotation: np.ndarray
    translation: np.ndarray
    confidence: float
    contacts: int

    @property
    def transform(self) -> Transform:
        return self.rotation, self.translation


@dataclass
class AssemblyProblem:
    """What an assembly method sees: the chains' local coordinates (each (n_k, 3), centred) and
    the dimers of all pairs, ``dimers[(i, j)]`` for i < j."""

    chains: list[np.ndarray]
    dimers: dict[tuple[int, int], Dimer]
    radii: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        if len(self.chains) < 2:
            raise ValueError(f"an assembly problem needs >= 2 chains; got {len(self.chains)}")
        self.chains = [np.asarray(c, dtype=float) for c in self.chains]
        for k, c in enumerate(self.chains):
            if c.ndim != 2 or c.shape[1] != 3 or len(c) < 3:
                raise ValueError(f"chain {k} must be (n, 3) with n >= 3; got {c.shape}")
        n = len(self.chains)
        missing = [(i, j) for i in range(n) for j in range(i + 1, n) if (i, j) not in self.dimers]
        if missing:
            raise ValueError(f"dimers must cover every pair i < j; missing {missing[:5]}")
        self.radii = np.array([np.sqrt(np.max(np.sum(c ** 2, axis=1))) for c in self.chains])

    @property
    def n_chains(self) -> int:
        return len(self.chains)

    def relative(self, i: int, j: int) -> Transform:
        """T_ij: chain j's pose in chain i's frame (the stored dimer, or its inverse for i > j)."""
        if i < j:
            return self.dimers[(i, j)].transform
        return invert(self.dimers[(j, i)].transform)

    def confidence(self) -> np.ndarray:
        """(N, N) symmetric dimer-confidence matrix, zero diagonal."""
        n = self.n_chains
        c = np.zeros((n, n))
        for (i, j), d in self.dimers.items():
            c[i, j] = c[j, i] = d.confidence
        return c

    def predicted_contacts(self) -> np.ndarray:
        """(N, N) symmetric matrix of the dimers' interface contact counts."""
        n = self.n_chains
        c = np.zeros((n, n))
        for (i, j), d in self.dimers.items():
            c[i, j] = c[j, i] = d.contacts
        return c


@dataclass
class SyntheticComplex:
    """A native complex and its assembly problem. ``native_poses[k]`` maps chain k's local
    coordinates to the native frame; ``native_contacts`` holds pairs (i < j) with >= 5 Cα pairs
    within 8 Å in the native."""

    problem: AssemblyProblem
    native_poses: list[Transform]
    native_contacts: frozenset[tuple[int, int]]
    mode: str

    @property
    def n_chains(self) -> int:
        return self.problem.n_chains

    def native_coordinates(self) -> list[np.ndarray]:
        """Per-chain native coordinates, each (n_k, 3)."""
        return [apply_transform(t, c) for t, c in zip(self.native_poses, self.problem.chains)]


@dataclass(frozen=True)
class ComplexConfig:
    """Generator settings (the spec's synthetic benchmark)."""

    min_points: int = 20
    max_points: int = 60
    dock_contacts: int = 10        # cross pairs within 8 Å when a chain is slid in
    native_contact_pairs: int = 5  # pairs within 8 Å that make a native contact
    rotation_noise_deg: float = 5.0
    translation_noise: float = 1.0  # Å, RMS of the 3-D translation error
    wrong_interface_p: float = 0.15
    slide_step: float = 0.5

    def __post_init__(self) -> None:
        if not 3 <= self.min_points <= self.max_points:
            raise ValueError(f"need 3 <= min_points <= max_points; got {self.min_points}, "
                             f"{self.max_points}")
        if not 0 <= self.wrong_interface_p <= 1:
            raise ValueError(f"wrong_interface_p must be in [0, 1]; got {self.wrong_interface_p}")


def _count_pairs(a: np.ndarray, b: np.ndarray, cutoff: float) -> int:
    return int(cKDTree(a).count_neighbors(cKDTree(b), cutoff))


def _slide_intervals(moving: np.ndarray, fixed: np.ndarray, u: np.ndarray, cutoff: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """For moving points x_a + s u and fixed points y_b: the open s-intervals (lo, hi) in which
    |x_a + s u − y_b| < cutoff, for the pairs where that interval is non-empty."""
    w = moving[:, None, :] - fixed[None, :, :]                   # (n, m, 3)
    b = w @ u                                                    # w·u
    disc = b * b - np.einsum("nmk,nmk->nm", w, w) + cutoff * cutoff
    ok = disc > 0
    root = np.sqrt(disc[ok])
    return -b[ok] - root, -b[ok] + root   # roots of s² + 2 s (w·u) + |w|² − r² = 0


def _dock(partner: np.ndarray, others: list[np.ndarray], moving: np.ndarray,
          rng: np.random.Generator, config: ComplexConfig, max_attempts: int = 200) -> Transform:
    """A pose for ``moving`` (local coords) touching ``partner`` (>= dock_contacts pairs within
    8 Å) with no pair < 3 Å to the partner or any of ``others`` (all in the same frame).

    The chain slides in along a random direction u from s0 = r_partner + r_moving + 8 Å in steps
    of ``slide_step``; the first step with enough contacts is taken unless a clash came first.
    Contact and clash counts along the line come in closed form (each point pair is within a
    cutoff on an interval of s); a clash anywhere on the path, not only at a step, stops the
    slide."""
    centre = partner.mean(axis=0)
    r_partner = np.sqrt(np.max(np.sum((partner - centre) ** 2, axis=1)))
    r_moving = np.sqrt(np.max(np.sum(moving ** 2, axis=1)))
    blockers = np.concatenate([partner, *others]) if others else partner
    s0 = r_partner + r_moving + CONTACT_CUTOFF
    grid = s0 - config.slide_step * np.arange(int(s0 / config.slide_step) + 1)
    grid = grid[grid > 0]
    for _ in range(max_attempts):
        rot = random_rotation(rng)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        base = moving @ rot.T + centre
        _, clash_hi = _slide_intervals(base, blockers, u, CLASH_CUTOFF)
        first_clash = clash_hi.max() if clash_hi.size else -np.inf
        lo, hi = _slide_intervals(base, partner, u, CONTACT_CUTOFF)
        # contacts(s) = #{lo < s} − #{hi <= s}
        counts = (np.searchsorted(np.sort(lo), grid, side="left")
                  - np.searchsorted(np.sort(hi), grid, side="right"))
        hit = np.flatnonzero((counts >= config.dock_contacts) | (grid < first_clash))
        if hit.size and grid[hit[0]] >= first_clash and counts[hit[0]] >= config.dock_contacts:
            s = grid[hit[0]]
            return rot, centre + s * u
    raise RuntimeError("docking failed: no clash-free pose with enough contacts")


def generate_complex(n_chains: int, rng: np.random.Generator, *, mode: str = "afm",
                     config: ComplexConfig = ComplexConfig()) -> SyntheticComplex:
    """One synthetic native complex of ``n_chains`` chains with its predicted dimers."""
    if isinstance(n_chains, bool) or not isinstance(n_chains, (int, np.integer)) or n_chains < 2:
        raise ValueError(f"n_chains must be an int >= 2; got {n_chains!r}")
    if mode not in ("afm", "gt"):
        raise ValueError(f"mode must be 'afm' or 'gt'; got {mode!r}")
    chains = [sample_chain(int(rng.integers(config.min_points, config.max_points + 1)), rng)
              for _ in range(n_chains)]
    eye: Transform = (np.eye(3), np.zeros(3))
    poses: list[Transform] = [eye]
    placed = [chains[0]]
    for k in range(1, n_chains):
        for partner in rng.permutation(k):  # a random placed partner; a buried one is skipped
            others = [placed[m] for m in range(k) if m != partner]
            try:
                pose = _dock(placed[partner], others, chains[k], rng, config, max_attempts=50)
                break
            except RuntimeError:
                continue
        else:
            raise RuntimeError(f"no placed chain can take chain {k} without clashes")
        poses.append(pose)
        placed.append(apply_transform(pose, chains[k]))
    return complex_from_native(chains, poses, rng, mode=mode, config=config)


def complex_from_native(chains: list[np.ndarray], poses: list[Transform],
                        rng: np.random.Generator, *, mode: str = "afm",
                        config: ComplexConfig = ComplexConfig()) -> SyntheticComplex:
    """The complex of given native chains: native contacts from the poses, and the dimer
    "predictor" of the module docstring (GT or AFM-like) for every pair.

    chains: local coordinates, each (n_k, 3); poses: T_k mapping chain k to the native frame.
    Used by ``generate_complex`` and by ``load_pdb_complex`` (chains of a real PDB file)."""
    if mode not in ("afm", "gt"):
        raise ValueError(f"mode must be 'afm' or 'gt'; got {mode!r}")
    if len(chains) != len(poses):
        raise ValueError(f"chains and poses must have the same length; got {len(chains)} and "
                         f"{len(poses)}")
    n_chains = len(chains)
    placed = [apply_transform(t, c) for t, c in zip(poses, chains)]
    contacts = frozenset(
        (i, j) for i in range(n_chains) for j in range(i + 1, n_chains)
        if _count_pairs(placed[i], placed[j], CONTACT_CUTOFF) >= config.native_contact_pairs)
    dimers: dict[tuple[int, int], Dimer] = {}
    for i in range(n_chains):
        for j in range(i + 1, n_chains):
            native_rel = compose(invert(poses[i]), poses[j])  # T_ij = T_i^{-1} ∘ T_j
            if (i, j) in contacts and (mode == "gt" or rng.random() >= config.wrong_interface_p):
                if mode == "gt":
                    rel, conf = native_rel, rng.uniform(0.7, 0.95)
                else:
                    noise = random_rotation(rng, angle_sd=np.deg2rad(config.rotation_noise_deg))
                    shift = rng.normal(0.0, config.translation_noise / np.sqrt(3.0), size=3)
                    # rotate chain j about its own centre, then shift it
                    rel = (native_rel[0] @ noise, native_rel[1] + shift)
                    conf = rng.uniform(0.7, 0.95)
            else:
                rel = _dock(chains[i], [], chains[j], rng, config)
                conf = rng.uniform(0.5, 0.8) if (i, j) in contacts else rng.uniform(0.2, 0.6)
            n_contacts = _count_pairs(chains[i], apply_transform(rel, chains[j]), CONTACT_CUTOFF)
            dimers[(i, j)] = Dimer(rel[0], rel[1], float(conf), n_contacts)
    return SyntheticComplex(AssemblyProblem(chains, dimers), list(poses), contacts, mode)


def generate_complexes(count: int, chain_range: tuple[int, int], seed: int, *,
                       mode: str = "afm", config: ComplexConfig = ComplexConfig()
                       ) -> list[SyntheticComplex]:
    """``count`` complexes with chain numbers uniform in ``chain_range`` (inclusive), from
    ``numpy.random.default_rng(seed)``; disjoint seeds give disjoint sets."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive int; got {count!r}")
    lo, hi = chain_range
    if not 2 <= lo <= hi:
        raise ValueError(f"chain_range must satisfy 2 <= low <= high; got {chain_range}")
    rng = np.random.default_rng(seed)
    return [generate_complex(int(rng.integers(lo, hi + 1)), rng, mode=mode, config=config)
            for _ in range(count)]
