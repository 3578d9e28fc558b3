"""Gamma: a fake paper whose method is a shift added to noise; its claims run a null arm."""

import numpy as np

__all__ = ["method_gain"]


def method_gain(seed: int, shift: float) -> float:
    """A measured gain: ``shift`` plus a little seeded noise."""
    return float(shift + np.random.default_rng(seed).normal(0.0, 0.01))
