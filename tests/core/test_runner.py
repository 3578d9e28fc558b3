"""The runner: seeding, failure isolation, figure rendering, environment capture."""

import random

import numpy as np
import pytest
from matplotlib.figure import Figure

from iclr24.claims import Measurement, Scale, claim
from iclr24.registry import Paper
from iclr24.runner import cpu_seconds, environment, figure_to_png, run_one, seed_everything

PAPER = Paper(slug="alpha", title="Alpha", area="t", seed_file="", seed_position=0)


def test_seed_everything_resets_global_rngs():
    import torch

    seed_everything(5)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(5)
    assert a == (random.random(), np.random.rand(), torch.rand(1).item())


def test_figure_to_png():
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([1, 2])
    assert figure_to_png(fig).startswith(b"\x89PNG")
    assert figure_to_png(None) is None
    with pytest.raises(TypeError, match="matplotlib Figure"):
        figure_to_png("not a figure")


def test_run_one_verdicts_and_errors():
    ok = claim(rule="x > 1", paper="p", paper_numbers={"x": 4})(
        lambda scale, seed: Measurement({"x": 2}))
    rec = run_one(PAPER, ok, Scale.SMOKE, 0)
    assert rec.verdict == "holds" and rec.rule == "x > 1" and rec.metrics == {"x": 2.0}
    assert rec.paper_reference == {"text": "p", "numbers": {"x": 4.0}}
    assert rec.duration_s >= 0 and rec.environment["python"]

    missing = claim(rule="y > 1", paper="p")(lambda scale, seed: Measurement({"x": 2}))
    rec = run_one(PAPER, missing, Scale.SMOKE, 0)
    assert rec.verdict == "error" and "'y'" in rec.error

    bad_fig = claim(rule="x > 1", paper="p")(
        lambda scale, seed: Measurement({"x": 2}, figure=object()))
    rec = run_one(PAPER, bad_fig, Scale.SMOKE, 0)
    assert rec.verdict == "error" and "matplotlib Figure" in rec.error

    no_rule = claim(rule={"small": "x > 1"}, paper="p")(lambda scale, seed: Measurement({"x": 2}))
    assert run_one(PAPER, no_rule, Scale.SMOKE, 0).verdict == "holds"  # small is the fallback


def test_environment_has_versions():
    env = environment()
    assert {"python", "numpy", "torch"} <= set(env)


def test_cpu_seconds_counts_the_children_a_claim_waited_for():
    """A claim whose work runs in child processes (DeepSpeed ranks) reports their CPU too."""
    import subprocess
    import sys
    import time

    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    c0, p0 = cpu_seconds(), time.process_time()
    subprocess.run([sys.executable, "-c", burn], check=True)
    assert cpu_seconds() - c0 >= 0.35
    assert time.process_time() - p0 < 0.2  # the parent itself only waited



def test_cpu_s_includes_a_joblib_pool_the_claim_started():
    """A claim fanning out with joblib (the replications kit) is charged its workers' CPU."""
    from joblib import Parallel, delayed

    def burn(_):
        import time

        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        return 0

    @claim(rule="x >= 0", paper="p")
    def fan_out(scale, seed):
        Parallel(n_jobs=2)(delayed(burn)(i) for i in range(2))
        return Measurement(metrics={"x": 0.0})

    record = run_one(PAPER, fan_out, Scale.SMOKE, 0)
    assert record.verdict == "holds" and record.cpu_s >= 0.5
