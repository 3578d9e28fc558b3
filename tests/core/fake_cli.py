"""Runs the iclr24 CLI against the fake papers (for tests that need a separate process)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import use_fake_papers  # noqa: E402

from iclr24 import registry  # noqa: E402
from iclr24.cli import app  # noqa: E402

if __name__ == "__main__":  # spawned --jobs workers import this file as __mp_main__
    use_fake_papers(registry)
    app(sys.argv[1:])
