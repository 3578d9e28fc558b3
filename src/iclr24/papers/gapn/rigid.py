"""Rigid-body algebra, Kabsch superposition, RMSD and the TM-score with known correspondence.

A rigid transform is a pair ``(R, t)`` (rotation (3, 3), translation (3,)) acting as
``x -> R x + t`` on row vectors ``X -> X R^T + t``. Composition follows the assembly rule of
GAPN / MoLPC (paper Sec. 3, the transition): ``T_global(j) = T_global(i) ∘ T_ij``, with

    (R_a, t_a) ∘ (R_b, t_b) = (R_a R_b, R_a t_b + t_a).

``tm_score`` is the TM-score of Zhang & Skolnick (2004) normalised by the native length L,

    TM = max_{R, t} (1/L) Σ_k 1 / (1 + (d_k / d0)²),   d0 = 1.24 (L − 15)^{1/3} − 1.8,

with the residue correspondence known (predicted chain k ↔ native chain ``chain_map[k]``, point by
point), maximised over superpositions as the TMscore program does: Kabsch on seed fragments, then
iterative re-superposition on the points within ``d0_search`` (d0 clipped to [4.5, 8] Å). We seed
with the whole structure, each chain, and sliding windows of L/2 and L/4 points (the program also
uses shorter windows; for rigid chains these add nothing). MM-align, the paper's tool, also
searches the chain correspondence; here the correspondence is known, so it is not searched.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

__all__ = [
    "apply_transform",
    "compose",
    "invert",
    "kabsch",
    "kabsch_rmsd",
    "random_rotation",
    "tm_d0",
    "tm_score",
]

Transform = tuple[np.ndarray, np.ndarray]


def compose(a: Transform, b: Transform) -> Transform:
    """a ∘ b: apply b first, then a."""
    return a[0] @ b[0], a[0] @ b[1] + a[1]  # (R_a R_b, R_a t_b + t_a)


def invert(a: Transform) -> Transform:
    """The inverse transform (R^T, −R^T t)."""
    rt = a[0].T
    return rt, -rt @ a[1]


def apply_transform(a: Transform, points: np.ndarray) -> np.ndarray:
    """Points (n, 3) mapped by a: X R^T + t."""
    return points @ a[0].T + a[1]


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' formula: R = I + sin θ K + (1 − cos θ) K²."""
    x, y, z = axis
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def random_rotation(rng: np.random.Generator, angle_sd: float | None = None) -> np.ndarray:
    """A uniformly random rotation (Haar: a normalised Gaussian quaternion), or, with
    ``angle_sd`` (radians), a rotation about a uniform axis by an angle ~ N(0, angle_sd²)."""
    if angle_sd is None:
        w, x, y, z = rng.normal(size=4)
        n = np.sqrt(w * w + x * x + y * y + z * z)
        w, x, y, z = w / n, x / n, y / n, z / n
        return np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])
    axis = rng.normal(size=3)
    return _axis_angle(axis / np.linalg.norm(axis), float(rng.normal(0.0, angle_sd)))


def _as_points(x, name: str) -> np.ndarray:
    if isinstance(x, (list, tuple)):
        if not x:
            raise ValueError(f"{name} must hold at least one chain")
        x = np.concatenate([np.asarray(c, dtype=float) for c in x], axis=0)
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must be (n, 3) coordinates or a list of (n_k, 3) chains; got "
                         f"shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    return arr


def kabsch(mobile: np.ndarray, target: np.ndarray) -> Transform:
    """The rigid (R, t), det R = +1, minimising Σ |R mobile_k + t − target_k|² (Kabsch 1976).

    mobile, target: (n, 3) with n >= 3 (fewer points leave the rotation undetermined but a
    minimiser is still returned)."""
    mobile = _as_points(mobile, "mobile")
    target = _as_points(target, "target")
    if mobile.shape != target.shape:
        raise ValueError(f"mobile and target must have the same shape; got {mobile.shape} and "
                         f"{target.shape}")
    mc, tc = mobile.mean(0), target.mean(0)
    h = (mobile - mc).T @ (target - tc)  # covariance H = P^T Q
    u, _, vt = np.linalg.svd(h)
    d = np.sign(np.linalg.det(vt.T @ u.T)) or 1.0  # reflection guard
    r = vt.T @ np.diag([1.0, 1.0, d]) @ u.T
    return r, tc - r @ mc


def kabsch_rmsd(pred, native) -> float:
    """RMSD after optimal rigid superposition of pred onto native (same point order).

    pred, native: (n, 3) arrays or lists of per-chain (n_k, 3) arrays."""
    p, q = _as_points(pred, "pred"), _as_points(native, "native")
    if p.shape != q.shape:
        raise ValueError(f"pred and native must have the same number of points; got {len(p)} and "
                         f"{len(q)}")
    t = kabsch(p, q)
    return float(np.sqrt(np.mean(np.sum((apply_transform(t, p) - q) ** 2, axis=1))))


def tm_d0(length: int) -> float:
    """d0(L) = 1.24 (L − 15)^{1/3} − 1.8, floored at 0.5 Å as in the TMscore program."""
    if length <= 21:
        return 0.5
    return max(0.5, 1.24 * (length - 15) ** (1.0 / 3.0) - 1.8)


def _seeds(length: int, bounds: Sequence[int]) -> list[np.ndarray]:
    seeds = [np.arange(length)]
    seeds += [np.arange(a, b) for a, b in itertools.pairwise(bounds) if b - a >= 3]
    for w in (length // 2, length // 4):
        if w >= 4:
            seeds += [np.arange(s, s + w) for s in range(0, length - w + 1, max(w // 2, 1))]
    return seeds


def tm_score(pred, native, chain_map: Sequence[int] | None = None, *,
             max_iterations: int = 20) -> float:
    """TM-score of a predicted complex against the native, normalised by the native length.

    pred, native: lists of per-chain (n_k, 3) coordinates (or single (L, 3) arrays, one chain);
    chain_map[k] = the native chain that predicted chain k corresponds to (default identity).
    Chains must have matching point counts under the map. Returns a value in (0, 1]; 1 means a
    rigid copy of the native."""
    pred_chains = [pred] if isinstance(pred, np.ndarray) else list(pred)
    nat_chains = [native] if isinstance(native, np.ndarray) else list(native)
    if chain_map is None:
        chain_map = list(range(len(nat_chains)))
    chain_map = [int(c) for c in chain_map]
    if len(chain_map) != len(pred_chains) or sorted(chain_map) != list(range(len(nat_chains))):
        raise ValueError(f"chain_map must be a permutation of the {len(nat_chains)} native chains "
                         f"with one entry per predicted chain; got {chain_map}")
    nat_list = [_as_points(nat_chains[c], "native") for c in chain_map]
    p_list = [_as_points(c, "pred") for c in pred_chains]
    for k, (a, b) in enumerate(zip(p_list, nat_list)):
        if a.shape != b.shape:
            raise ValueError(f"predicted chain {k} has {len(a)} points but native chain "
                             f"{chain_map[k]} has {len(b)}")
    p, q = np.concatenate(p_list), np.concatenate(nat_list)
    length = len(q)
    d0 = tm_d0(length)
    d_search = min(max(d0, 4.5), 8.0)
    bounds = np.cumsum([0] + [len(c) for c in p_list])
    best = 0.0
    for idx in _seeds(length, bounds):
        for _ in range(max_iterations):
            t = kabsch(p[idx], q[idx])
            d = np.linalg.norm(apply_transform(t, p) - q, axis=1)
            best = max(best, float(np.sum(1.0 / (1.0 + (d / d0) ** 2)) / length))  # TM
            cut = d_search
            new = np.flatnonzero(d < cut)
            while len(new) < 3:  # widen the cut until a superposition is defined
                cut += 0.5
                new = np.flatnonzero(d < cut)
            if np.array_equal(new, idx):
                break
            idx = new
    return best
