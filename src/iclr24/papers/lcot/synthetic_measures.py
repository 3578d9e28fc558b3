"""Synthetic circular data of the paper's official Experiment 2 (six classes of empirical measures).

Classes (angles in radians on [-pi, pi); every mode location is jittered by a draw from
vonMises(0, kappa = 40); mixture components are von Mises with kappa = 5 and equal weights):

0 ``von_mises``           one von Mises, kappa = 5, at 0;
1 ``skew_normal``         skew-normal, shape a = 100, scale 1 rad, location 0 (wrapped onto the
                          circle: the density is summed over the three nearest periods; the
                          official notebook evaluates it on [-pi, pi) without wrapping, which
                          differs by the ~0.2% of mass beyond pi);
2 ``bimodal_symmetric``   modes 0, pi;
3 ``bimodal_asymmetric``  modes pi/3, -pi/3;
4 ``trimodal_symmetric``  modes 0, pi/2, -200 deg;
5 ``trimodal_asymmetric`` modes 0, -pi/2, -270 deg.
(Names and angles are those of the official notebook, as listed in our spec; note -270 deg is
+90 deg, so class 5's modes are 0 and +-pi/2.)

Each measure: the density evaluated on a grid of ``grid_points`` angles (official: 1000) and
normalised to mass 1, then n ~ Uniform{50..100} samples drawn from the grid points with those
probabilities. Angles theta are returned as t = (theta + pi) / (2 pi) in [0, 1), with uniform
weights, which is the convention of the LCOT code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["EXPERIMENT2_CLASSES", "Experiment2Config", "angles_to_unit", "experiment2_measures"]

EXPERIMENT2_CLASSES: tuple[str, ...] = (
    "von_mises",
    "skew_normal",
    "bimodal_symmetric",
    "bimodal_asymmetric",
    "trimodal_symmetric",
    "trimodal_asymmetric",
)

_MODES: dict[str, tuple[float, ...]] = {
    "von_mises": (0.0,),
    "bimodal_symmetric": (0.0, np.pi),
    "bimodal_asymmetric": (np.pi / 3, -np.pi / 3),
    "trimodal_symmetric": (0.0, np.pi / 2, np.deg2rad(-200.0)),
    "trimodal_asymmetric": (0.0, -np.pi / 2, np.deg2rad(-270.0)),
}


@dataclass(frozen=True)
class Experiment2Config:
    """Parameters of the official Experiment 2 generator (defaults = the notebook's)."""

    n_per_class: int = 40
    min_samples: int = 50
    max_samples: int = 100
    grid_points: int = 1000
    component_kappa: float = 5.0
    jitter_kappa: float = 40.0
    skew_shape: float = 100.0
    skew_scale: float = 1.0


def angles_to_unit(theta) -> NDArray[np.float64]:
    """Map angles (radians, any range) to t = (theta + pi) / (2 pi) mod 1 in [0, 1)."""
    t = np.mod((np.asarray(theta, dtype=np.float64) + np.pi) / (2 * np.pi), 1.0)
    t[t >= 1.0] = 0.0  # mod(-tiny, 1) rounds to 1.0
    return t


def _von_mises(theta: NDArray, loc: float, kappa: float) -> NDArray:
    return np.exp(kappa * (np.cos(theta - loc) - 1.0))  # unnormalised; normalised on the grid


def _density(name: str, theta: NDArray, rng: np.random.Generator, cfg: Experiment2Config
             ) -> NDArray:
    if name == "skew_normal":
        from scipy.stats import skewnorm

        loc = rng.vonmises(0.0, cfg.jitter_kappa)
        return sum(skewnorm.pdf(theta + 2 * np.pi * k, cfg.skew_shape, loc=loc,
                                scale=cfg.skew_scale) for k in (-1, 0, 1))
    modes = _MODES[name]
    dens = np.zeros_like(theta)
    for mode in modes:
        loc = mode + rng.vonmises(0.0, cfg.jitter_kappa)  # jittered mode location
        dens += _von_mises(theta, loc, cfg.component_kappa) / len(modes)
    return dens


def experiment2_measures(n_per_class: int = 40, *, seed: int = 0,
                         config: Experiment2Config | None = None
                         ) -> tuple[list[NDArray[np.float64]], NDArray[np.int64]]:
    """Draw the six-class data set: ``6 * n_per_class`` empirical measures.

    Returns (measures, labels): measures[i] is a 1-D array of n_i in [50, 100] atoms in [0, 1)
    (uniform weights), labels[i] in 0..5 indexes :data:`EXPERIMENT2_CLASSES`. Deterministic in
    ``seed``.
    """
    if isinstance(n_per_class, bool) or not isinstance(n_per_class, (int, np.integer)):
        raise TypeError(f"n_per_class must be an int, got {n_per_class!r}")
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be >= 1, got {n_per_class}")
    cfg = config or Experiment2Config()
    if not (1 <= cfg.min_samples <= cfg.max_samples):
        raise ValueError("config needs 1 <= min_samples <= max_samples")
    rng = np.random.default_rng(seed)
    g = int(cfg.grid_points)
    theta = -np.pi + 2 * np.pi * np.arange(g) / g
    measures: list[NDArray[np.float64]] = []
    labels: list[int] = []
    for label, name in enumerate(EXPERIMENT2_CLASSES):
        for _ in range(int(n_per_class)):
            dens = _density(name, theta, rng, cfg)
            p = dens / dens.sum()  # normalise the mass to 1 before sampling
            n = int(rng.integers(cfg.min_samples, cfg.max_samples + 1))
            idx = rng.choice(g, size=n, p=p)
            measures.append(idx.astype(np.float64) / g)  # t = (theta + pi) / (2 pi)
            labels.append(label)
    return measures, np.asarray(labels, dtype=np.int64)
