"""Fixtures and settings shared by all tests."""

import os

import pytest
from hypothesis import settings

# No per-example deadline (a busy 2-core machine makes timings meaningless); under CI the
# examples are derandomized so a run is reproducible (locally they stay random, to find bugs).
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def one_torch_thread():
    """Tiny models: extra intra-op threads only add OpenMP spin-waiting on a 2-core machine."""
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        yield


@pytest.fixture
def task_identity(monkeypatch):
    """What a Flower runtime sets before a ServerApp builds messages (for hand-built messages)."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1)


@pytest.fixture
def check_smoke_claim():
    """``check(claim, keys)``: run ``claim`` at smoke (seed 0), require the metrics in ``keys``
    to exist and be finite and the verdict to be holds/fails/inconclusive; returns the
    Measurement."""
    import math

    from iclr24.claims import Estimate, Scale

    def check(claim_obj, keys):
        m = claim_obj(Scale.SMOKE, 0)
        assert set(keys) <= set(m.metrics), set(keys) - set(m.metrics)
        for key in keys:
            v = m.metrics[key]
            assert math.isfinite(v.value if isinstance(v, Estimate) else v), key
        assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
        return m

    return check

