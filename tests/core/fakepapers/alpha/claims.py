"""Claims of the fake paper: one holds, one fails, one raises, one sleeps, one per-scale."""

import os
import random
import time

from iclr24.claims import Measurement, Scale, claim, sizes


@claim(rule="ratio >= 1", paper="The paper reports a ratio of 3.", paper_numbers={"ratio": 3.0})
def holds_claim(scale: Scale, seed: int) -> Measurement:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    fig.add_subplot().plot([0, 1], [0, 1])
    return Measurement(metrics={"ratio": 2.0, "noise": random.random()}, figure=fig,
                       tables={"per_size": [{"n": 1, "t": 0.5}, {"n": 2, "t": 0.25}]},
                       notes="A note.")


@claim(rule="gap < 0.1", paper="The paper reports a gap of 0.01.")
def fails_claim(scale: Scale, seed: int) -> Measurement:
    return Measurement(metrics={"gap": 0.5})


@claim(rule="x > 0", paper="Never gets this far.")
def raises_claim(scale: Scale, seed: int) -> Measurement:
    raise RuntimeError("deliberate failure inside a claim")


@claim(rule={"smoke": "n >= 1", "small": "n >= 10"}, paper="Scale-dependent rule.")
def scaled_claim(scale: Scale, seed: int, progress) -> Measurement:
    n = sizes(scale, smoke=1, small=5)
    progress(0.5, "half way")
    delay = float(os.environ.get("ALPHA_SLEEP", "0"))
    if delay:
        time.sleep(delay)
    return Measurement(metrics={"n": n, "seed": seed})


@claim(rule="gain > 0", paper="The paper reports a gain of 0.01.", paper_numbers={"gain": 0.01})
def estimate_claim(scale: Scale, seed: int) -> Measurement:
    """Five replicates around zero: the interval straddles the rule's boundary."""
    import numpy as np

    from iclr24.claims import Estimate

    if os.environ.get("ALPHA_SIGKILL"):
        import signal

        os.kill(os.getpid(), signal.SIGKILL)  # a worker dying mid-claim (tests of --jobs)
    if os.environ.get("ALPHA_CHILD"):  # a claim that starts a process of its own
        import multiprocessing

        child = multiprocessing.get_context("spawn").Process(target=os.getpid)
        child.start()
        child.join()
        assert child.exitcode == 0
    draws = np.random.default_rng(seed).normal(0.0, 1.0, size=5)
    return Measurement(metrics={"gain": Estimate.mean_of(draws - draws.mean() + 0.1),
                                "spread": float(draws.std())})
