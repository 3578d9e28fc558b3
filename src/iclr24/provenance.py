"""Where a result came from: the code it depends on (a content hash) and the machine it ran on.

A claim's result depends on its paper's package, the kits that package imports (followed
transitively, function-level imports included) and the framework's claim contract
(``iclr24/claims.py``, which every claims module imports, and what it imports). :func:`code_hash`
hashes exactly those files, so a result whose hash no longer matches the source tree is *stale*:
the code under it changed since it was measured. Imports are found by a regular expression over
the source (no import, no AST: ``iclr24 list`` hashes all 57 papers in a few tens of
milliseconds), which errs on the side of following too much: a commented-out import still counts.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PACKAGE_DIR.parent  # the folder that holds the ``iclr24`` package

_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<base>\.+[\w.]*|iclr24(?:\.[\w]+)*)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n#]+)"
    r"|import[ \t]+(?P<plain>iclr24(?:\.[\w]+)*))",
    re.MULTILINE)


# Package inits that hold no method code (the version string; the import-hint finder of
# iclr24.papers): not dependencies of a result, so editing them stales nothing.
_NAMESPACES = frozenset({"iclr24", "iclr24.papers"})


def _module_file(dotted: str) -> Path | None:
    """The file of module ``iclr24.a.b`` (a module file or a package's ``__init__.py``)."""
    return _find_module(SOURCE_ROOT, dotted)


@cache
def _find_module(root: Path, dotted: str) -> Path | None:
    parts = dotted.split(".")
    base = root.joinpath(*parts)
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _module_name(path: Path) -> str:
    rel = path.relative_to(SOURCE_ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(path: Path) -> str:
    """The package a module's relative imports start from."""
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


@cache
def _imports(path: Path, stamp: tuple[int, int]) -> tuple[str, ...]:
    """The ``iclr24`` modules a source file imports (``stamp`` keys the cache on edits).
    Relative imports are resolved for files inside the ``iclr24`` source tree."""
    del stamp
    text = path.read_text(encoding="utf-8", errors="replace")
    found: list[str] = []
    for match in _IMPORT.finditer(text):
        if match.group("plain"):
            found.append(match.group("plain"))
            continue
        base = match.group("base")
        if base.startswith("."):
            if not _inside(path, SOURCE_ROOT):
                continue  # a package outside the tree: its own files are all hashed anyway
            dots = len(base) - len(base.lstrip("."))
            package = _package_of(path).split(".")
            if dots > 1:
                package = package[:len(package) - (dots - 1)]
            rest = base.lstrip(".")
            base = ".".join(package + ([rest] if rest else []))
        found.append(base)
        names = match.group("names").strip("() \t\n")
        for item in names.split(","):
            name = item.strip().split(" as ")[0].strip()
            if name.isidentifier():
                found.append(f"{base}.{name}")  # kept only when it is a submodule
    return tuple(found)


def _with_parents(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def dependency_files(package: Path) -> list[Path]:
    """Every file the results of the paper package at ``package`` depend on, sorted: all its
    files (data files included, ``__pycache__`` left out), the ``iclr24`` modules they import
    transitively, and the claim contract with what it imports (the ``iclr24`` and
    ``iclr24.papers`` package inits aside: they hold no method code)."""
    package = Path(package)
    if not package.is_dir():
        raise ValueError(f"package must be a paper package's folder; {str(package)!r} is not "
                         "a folder")
    slug = package.name
    files = {p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
             and p.suffix != ".pyc"}
    queue = [p for p in files if p.suffix == ".py"] + [PACKAGE_DIR / "claims.py"]
    seen: set[Path] = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        stat = path.stat()
        names = {name for dotted in _imports(path, (stat.st_size, stat.st_mtime_ns))
                 if dotted.startswith("iclr24") for name in _with_parents(dotted)}
        for name in sorted(names):
            if name in _NAMESPACES:
                continue
            if name.startswith("iclr24.papers.") and name.split(".")[2] != slug:
                continue  # papers never import each other; a stray name is not followed
            target = _module_file(name)
            if target is not None and target not in seen:
                queue.append(target)
    return sorted(files | seen)


def code_hash(package: Path) -> str:
    """SHA-256 (first 16 hex digits) over the relative paths and bytes of
    :func:`dependency_files`: the same tree gives the same hash wherever it is checked out."""
    package = Path(package)
    digest = hashlib.sha256()
    keyed = sorted((path.relative_to(SOURCE_ROOT if _inside(path, SOURCE_ROOT)
                                     else package.parent).as_posix(), path)
                   for path in dependency_files(package))
    for key, path in keyed:
        digest.update(key.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@cache
def machine() -> dict[str, str]:
    """The machine a result was measured on: CPU model, cores, memory, GPU (by nvidia-smi)."""
    out = {"cpu_model": platform.processor() or platform.machine(),
           "cores": str(os.cpu_count() or ""), "memory_gib": "", "gpu": "none"}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    out["cpu_model"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as fh:
            kib = int(fh.readline().split()[1])
            out["memory_gib"] = f"{kib / 2**20:.0f}"
    except (OSError, ValueError, IndexError):
        pass
    if shutil.which("nvidia-smi"):
        try:
            res = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10)
            names = [n.strip() for n in res.stdout.splitlines() if n.strip()]
            if res.returncode == 0 and names:
                out["gpu"] = ", ".join(names)
        except (OSError, subprocess.SubprocessError):
            pass
    return out
