"""Fixtures shared by the paper and kit tests."""

import pytest


@pytest.fixture
def one_torch_thread():
    """Tiny models: extra intra-op threads only add OpenMP spin-waiting on a 2-core machine."""
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        yield
