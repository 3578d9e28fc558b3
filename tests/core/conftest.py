"""Fixtures that point the registry at the fake papers package in tests/core/fakepapers."""

import sys
from pathlib import Path

import pytest

FAKE = Path(__file__).resolve().parent / "fakepapers"


def use_fake_papers(registry_module) -> None:
    """Point a registry module at the fake catalogue (also used by subprocess drivers)."""
    if str(FAKE.parent) not in sys.path:
        sys.path.insert(0, str(FAKE.parent))
    registry_module.PAPERS_DIR = FAKE
    registry_module.CATALOG_PATH = FAKE / "catalog.toml"
    registry_module.PAPERS_PACKAGE = "fakepapers"


@pytest.fixture
def fake_registry(monkeypatch):
    from iclr24 import registry

    monkeypatch.syspath_prepend(str(FAKE.parent))
    monkeypatch.setattr(registry, "PAPERS_DIR", FAKE)
    monkeypatch.setattr(registry, "CATALOG_PATH", FAKE / "catalog.toml")
    monkeypatch.setattr(registry, "PAPERS_PACKAGE", "fakepapers")
    return registry
