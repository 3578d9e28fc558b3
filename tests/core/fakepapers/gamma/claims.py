"""Claims of the fake paper gamma: a null arm measured in the run, guarded by a control."""

import os

from iclr24.claims import Measurement, Scale, claim, seed_difference, sizes

from . import method_gain


@claim(rule="gain > 0", control="null_gain <= 0", paper="The method beats its baseline.",
       against="the same pipeline with the mechanism switched off (null arm)")
def controlled(scale: Scale, seed: int) -> Measurement:
    """Method and null arm over seeds; GAMMA_NULL_SHIFT moves the null arm (a test bed whose
    null passes the main rule when it is positive)."""
    seeds = range(seed, seed + sizes(scale, smoke=1, small=3))
    null_shift = float(os.environ.get("GAMMA_NULL_SHIFT", "-0.5"))
    base = [method_gain(s + 100, 0.0) for s in seeds]
    ours = [method_gain(s, 1.0) for s in seeds]
    null = [method_gain(s + 200, null_shift) for s in seeds]
    return Measurement(metrics={"gain": seed_difference(ours, base),
                                "null_gain": seed_difference(null, base)})


@claim(rule="auroc > 0.5", paper="An AUROC above chance.", against="chance (0.5)")
def not_finite(scale: Scale, seed: int) -> Measurement:
    """A metric that could not be measured (GAMMA_VALUE: nan, inf or a number)."""
    return Measurement(metrics={"auroc": float(os.environ.get("GAMMA_VALUE", "nan"))})


