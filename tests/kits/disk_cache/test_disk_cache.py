"""The per-machine cache: built once, reused, rebuilt when truncated or half-written."""

import json

import pytest

from iclr24.kits.disk_cache import cache_root, cached_directory, file_sha256


def writer(calls):
    def build(folder):
        calls.append(folder)
        (folder / "weights.bin").write_bytes(b"\x01" * 1000)
        (folder / "config.json").write_text('{"a": 1}')
    return build


def test_built_once_then_reused(tmp_path):
    calls = []
    key = {"wheel": "0.1.2", "sha": "abc"}
    first, built = cached_directory("model", key, writer(calls), root=tmp_path)
    again, built_again = cached_directory("model", key, writer(calls), root=tmp_path)
    assert built and not built_again and first == again and len(calls) == 1
    assert (first / "weights.bin").stat().st_size == 1000
    manifest = json.loads((first / "manifest.json").read_text())
    assert manifest == {"key": key, "files": {"config.json": 8, "weights.bin": 1000}}
    # no temp folder left; the build lock stays beside the entry
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        f".{first.name}.lock", first.name]


def test_another_key_is_another_entry(tmp_path):
    calls = []
    a, _ = cached_directory("model", {"v": 1}, writer(calls), root=tmp_path)
    b, _ = cached_directory("model", {"v": 2}, writer(calls), root=tmp_path)
    assert a != b and len(calls) == 2


@pytest.mark.parametrize("damage", ["truncate", "no_manifest", "other_key", "missing_file"])
def test_a_broken_entry_is_rebuilt_not_loaded(tmp_path, damage):
    calls = []
    key = {"v": 1}
    entry, _ = cached_directory("model", key, writer(calls), root=tmp_path)
    if damage == "truncate":
        with open(entry / "weights.bin", "r+b") as fh:
            fh.truncate(10)
    elif damage == "no_manifest":  # what a crash before the manifest was written leaves
        (entry / "manifest.json").unlink()
    elif damage == "other_key":
        (entry / "manifest.json").write_text(json.dumps({"key": {"v": 0}, "files": {}}))
    else:
        (entry / "config.json").unlink()
    again, built = cached_directory("model", key, writer(calls), root=tmp_path)
    assert built and again == entry and len(calls) == 2
    assert (again / "weights.bin").stat().st_size == 1000


def test_a_failing_build_leaves_nothing_behind(tmp_path):
    def broken(folder):
        (folder / "half.bin").write_bytes(b"x")
        raise RuntimeError("conversion failed")

    with pytest.raises(RuntimeError, match="conversion failed"):
        cached_directory("model", {"v": 1}, broken, root=tmp_path)
    assert [p.name for p in (tmp_path / "model").iterdir() if p.suffix != ".lock"] == []
    with pytest.raises(RuntimeError, match="wrote no files"):
        cached_directory("model", {"v": 1}, lambda folder: None, root=tmp_path)


def _slow_build_in_child(root, log):
    import time

    def build(folder):
        with open(log, "a") as fh:
            fh.write("built\n")
        time.sleep(1.0)  # long enough for the other process to find the entry missing
        (folder / "weights.bin").write_bytes(b"\x02" * 100)

    entry, _ = cached_directory("model", {"v": 1}, build, root=root)
    assert (entry / "weights.bin").read_bytes() == b"\x02" * 100


def test_two_processes_build_an_entry_once(tmp_path):
    """Two processes that ask for a missing entry at once: one builds, the other waits for its
    lock and reads the finished entry (two --jobs workers loading SmolLM2)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    log = tmp_path / "builds.log"
    procs = [ctx.Process(target=_slow_build_in_child, args=(tmp_path / "cache", log))
             for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert log.read_text().splitlines() == ["built"]


def test_root_and_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("ICLR24_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "iclr24"
    with pytest.raises(ValueError, match="plain folder name"):
        cached_directory("../up", {}, writer([]), root=tmp_path)
    with pytest.raises(TypeError, match="JSON-serialisable"):
        cached_directory("m", {"x": object()}, writer([]), root=tmp_path)
    with pytest.raises(TypeError, match="mapping"):
        cached_directory("m", [1], writer([]), root=tmp_path)


def test_file_sha256(tmp_path):
    import hashlib

    p = tmp_path / "f"
    p.write_bytes(b"abc" * 5_000_000)
    assert file_sha256(p, chunk=1 << 16) == hashlib.sha256(b"abc" * 5_000_000).hexdigest()
