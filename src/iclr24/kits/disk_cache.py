"""A per-machine cache of expensive derived files (converted model weights, ...).

Root: ``$ICLR24_CACHE``, else ``$XDG_CACHE_HOME/iclr24``, else ``~/.cache/iclr24``.

:func:`cached_directory` returns a directory built once for a *key* (a JSON-able mapping that
names everything the content depends on: package versions, hashes of the inputs). The entry is
built in a temporary sibling and renamed into place in one step, and its manifest (the key and
every file's size) is written last, so a half-written entry is never read: an entry whose
manifest is missing, names another key, or lists a file whose size differs (a truncated file)
is removed and built again. A process that finds the entry missing takes an advisory file lock
(``.<digest>.lock`` beside it) before building, so a second process asking for the same entry
meanwhile (two ``--jobs`` workers that both load SmolLM2) waits and reads the first one's entry
instead of building its own; without the lock (a file system that refuses ``flock``) both
build, one rename wins and the other's copy is discarded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ENV_VAR", "cache_root", "cached_directory", "file_sha256"]

ENV_VAR = "ICLR24_CACHE"
MANIFEST = "manifest.json"


def cache_root() -> Path:
    """The cache's root folder (not created here)."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "iclr24"


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 22) -> str:
    """SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _build_lock(path: Path):
    """An exclusive advisory lock on ``path`` for the block (a no-op where flock is refused)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, the rename still keeps entries whole
        yield
        return
    with open(path, "a+b") as fh:  # closing the file releases the lock
        with contextlib.suppress(OSError):
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield


def _entry_valid(entry: Path, key: Mapping[str, Any]) -> bool:
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("key") != json.loads(json.dumps(dict(key))):
            return False
        files = manifest["files"]
        return bool(files) and all((entry / name).stat().st_size == size
                                   for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def cached_directory(name: str, key: Mapping[str, Any], build: Callable[[Path], None],
                     root: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """The cache entry for ``key`` under ``name``, built by ``build(folder)`` if it is missing
    or broken. Returns ``(folder, built)``, ``built`` telling whether this call built it.

    name:  a folder name for this kind of entry, e.g. ``"smollm2"``.
    key:   JSON-able mapping of everything the content depends on.
    build: writes the entry's files into the (empty, temporary) folder it is given.
    """
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"name must be a plain folder name, got {name!r}")
    if not isinstance(key, Mapping):
        raise TypeError(f"key must be a mapping, got {type(key).__name__}")
    try:
        digest = hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()).hexdigest()[:20]
    except TypeError:
        raise TypeError("key must be JSON-serialisable (strings, numbers, lists, dicts)") from None
    base = Path(root) if root is not None else cache_root()
    entry = base / name / digest
    if _entry_valid(entry, key):
        return entry, False
    entry.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(entry.parent / f".{digest}.lock"):
        if _entry_valid(entry, key):  # built by another process while this one waited
            return entry, False
        return entry, _build_entry(entry, key, build, name)


def _build_entry(entry: Path, key: Mapping[str, Any], build: Callable[[Path], None],
                 name: str) -> bool:
    if entry.exists():
        shutil.rmtree(entry, ignore_errors=True)  # half-written or truncated: rebuild
    tmp = entry.parent / f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        build(tmp)
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        if not files:
            raise RuntimeError(f"building cache entry {name!r} wrote no files")
        manifest = tmp / MANIFEST
        manifest.write_text(json.dumps({"key": dict(key), "files": files}, indent=1),
                            encoding="utf-8")
        for path in tmp.iterdir():  # durable before it becomes visible
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
        try:
            os.rename(tmp, entry)
        except OSError:
            if not _entry_valid(entry, key):  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True
