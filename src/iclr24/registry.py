"""The catalogue of all 57 papers joined with the paper packages that exist.

A paper is ``implemented`` once ``iclr24/papers/<slug>/claims.py`` exists, ``planned`` before.
Listing papers and their claim names reads files with :mod:`ast` and never imports a paper,
so ``iclr24 list`` stays instant even though papers pull in torch, JAX, PyG, POT...
Only :meth:`Paper.load_claims` imports the paper (and its heavy dependencies).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from iclr24.claims import Claim

PACKAGE_DIR = Path(__file__).resolve().parent
PAPERS_DIR = PACKAGE_DIR / "papers"
CATALOG_PATH = PACKAGE_DIR / "catalog.toml"
PAPERS_PACKAGE = "iclr24.papers"

IMPLEMENTED = "implemented"
PLANNED = "planned"


class UnknownPaperError(KeyError):
    """A slug that is not in the catalogue."""

    def __init__(self, slug: str, valid: list[str]):
        self.slug = slug
        self.valid = valid
        super().__init__(slug)

    def __str__(self) -> str:
        return f"unknown paper {self.slug!r}; valid slugs: {', '.join(self.valid)}"


class UnknownClaimError(KeyError):
    """A claim name that the paper does not define."""

    def __init__(self, slug: str, name: str, valid: list[str]):
        self.slug, self.name, self.valid = slug, name, valid
        super().__init__(name)

    def __str__(self) -> str:
        known = ", ".join(self.valid) or "(none)"
        return f"paper {self.slug!r} has no claim {self.name!r}; its claims: {known}"


@dataclass(frozen=True)
class Paper:
    """One catalogue entry, with what the source tree says about its implementation."""

    slug: str
    title: str
    area: str
    seed_file: str
    seed_position: int
    arxiv: str = ""
    openreview: str = ""
    official_repo: str = ""
    authors: tuple[str, ...] = ()
    summary: str = ""
    claim_names: tuple[str, ...] = field(default=())
    claim_resources: dict[str, dict] = field(default_factory=dict, compare=False, hash=False)
    claim_docs: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    claim_scales: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False,
                                                     hash=False)
    claim_against: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def runs_at(self, claim: str, scale: str) -> bool:
        """Whether ``claim`` runs at ``scale`` (the decorator's literal ``scales=``; every scale
        when it has none)."""
        return claim not in self.claim_scales or scale in self.claim_scales[claim]

    def resources_for(self, claim: str, scale: str) -> dict[str, float]:
        """What one run of ``claim`` at ``scale`` asks for (read from the decorator's literal
        ``resources=``, without importing the paper): ``{"cpus": int, "gpus": float}``."""
        out: dict[str, float] = {"cpus": 1, "gpus": 0}
        for key, value in self.claim_resources.get(claim, {}).items():
            if isinstance(value, dict):
                value = next((value[c] for c in (scale, "small", "smoke") if c in value),
                             out.get(key, 0))
            out[key] = value
        return out

    @property
    def package_dir(self) -> Path:
        return PAPERS_DIR / self.slug

    @property
    def status(self) -> str:
        return IMPLEMENTED if (self.package_dir / "claims.py").is_file() else PLANNED

    @property
    def implemented(self) -> bool:
        return self.status == IMPLEMENTED

    def missing_modules(self) -> list[str]:
        """Third-party modules this paper imports that are not installed (its extra
        provides them: :func:`iclr24.extras.install_line`); found without importing."""
        from iclr24 import extras

        return extras.missing_modules(self.slug) if self.implemented else []

    @property
    def url(self) -> str:
        if self.arxiv:
            return f"https://arxiv.org/abs/{self.arxiv}"
        if self.openreview:
            return f"https://openreview.net/forum?id={self.openreview}"
        return ""

    def docstring(self) -> str:
        """The paper package's module docstring (read without importing it)."""
        init = self.package_dir / "__init__.py"
        if not init.is_file():
            return ""
        return ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""

    def public_api(self) -> list[str]:
        """Names in the paper package's ``__all__`` (read without importing it)."""
        init = self.package_dir / "__init__.py"
        if not init.is_file():
            return []
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                try:
                    return [str(x) for x in ast.literal_eval(node.value)]
                except ValueError:
                    return []
        return []

    def load_claims(self) -> list[Claim]:
        """Import the paper's ``claims`` module and return its claims in source order."""
        if not self.implemented:
            raise NotImplementedError(
                f"paper {self.slug!r} is planned, not implemented yet: it has no claims to run")
        module = importlib.import_module(f"{PAPERS_PACKAGE}.{self.slug}.claims")
        found = [v for v in vars(module).values() if isinstance(v, Claim)]
        return sorted(found, key=lambda c: c.fn.__code__.co_firstlineno)


_SOURCE_CACHE = "registry-claims-v2.json"


def _claims_from_source(path: Path) -> tuple[tuple[str, ...], dict[str, dict], dict[str, str],
                                             dict[str, tuple[str, ...]], dict[str, str]]:
    """Names of the ``@claim``-decorated functions in a claims.py, the literal ``resources=``,
    ``scales=`` and ``against=`` each declares, and each one's docstring, by static reading.

    Parsing every claims.py takes most of ``iclr24 list``'s time, so the result is kept in a
    small JSON file under the cache root, keyed by each file's path, size and mtime (any edit
    re-reads the file); a missing or unreadable cache just means parsing."""
    if not path.is_file():
        return (), {}, {}, {}, {}
    stat = path.stat()
    stamp = [stat.st_size, stat.st_mtime_ns]
    entries = _source_cache()
    hit = entries.get(str(path))
    if hit is not None and hit[0] == stamp:
        names, resources, docs, scales, against = hit[1]
        return (tuple(names), resources, docs, {k: tuple(v) for k, v in scales.items()},
                against)
    found = _parse_claims(path)
    entries[str(path)] = [stamp, [list(found[0]), found[1], found[2],
                                  {k: list(v) for k, v in found[3].items()}, found[4]]]
    _save_source_cache(entries)
    return found


@cache
def _source_cache() -> dict:
    from iclr24.kits.disk_cache import cache_root

    try:
        data = json.loads((cache_root() / _SOURCE_CACHE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_source_cache(entries: dict) -> None:
    """Atomic replace; a read-only or full cache directory only costs the speed-up."""
    from iclr24.kits.disk_cache import cache_root

    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".registry-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(entries, fh)
        os.replace(tmp, root / _SOURCE_CACHE)
    except OSError:
        pass


def _parse_claims(path: Path) -> tuple[tuple[str, ...], dict[str, dict], dict[str, str],
                                       dict[str, tuple[str, ...]], dict[str, str]]:
    names, resources, docs, scales, against = [], {}, {}, {}, {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            call = deco if isinstance(deco, ast.Call) else None
            func = call.func if call else deco
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if fname != "claim":
                continue
            keywords = {k.arg: k.value for k in (call.keywords if call else [])}
            explicit = keywords.get("name")
            name = (str(explicit.value) if isinstance(explicit, ast.Constant) else node.name)
            names.append(name)
            docs[name] = ast.get_docstring(node) or ""
            if "resources" in keywords:
                try:
                    resources[name] = dict(ast.literal_eval(keywords["resources"]))
                except (ValueError, TypeError):
                    resources[name] = {}  # not a literal: the scheduler assumes one CPU
            if "scales" in keywords:  # must be a literal: the runner plans without importing
                scales[name] = tuple(str(s).lower()
                                     for s in ast.literal_eval(keywords["scales"]))
            if "against" in keywords:
                try:
                    against[name] = str(ast.literal_eval(keywords["against"]))
                except ValueError:
                    against[name] = ""  # not a literal: shown as undeclared
    return tuple(names), resources, docs, scales, against


@cache
def _catalog_entries(path: Path) -> tuple[dict, ...]:
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    return tuple(data["paper"])


def papers() -> list[Paper]:
    """All catalogue papers, in catalogue order, with their implementation status."""
    out = []
    for entry in _catalog_entries(CATALOG_PATH):
        slug = entry["slug"]
        names, resources, docs, scales, against = _claims_from_source(
            PAPERS_DIR / slug / "claims.py")
        out.append(Paper(
            slug=slug,
            title=entry["title"],
            area=entry.get("area", ""),
            seed_file=entry.get("seed_file", ""),
            seed_position=int(entry.get("seed_position", 0)),
            arxiv=entry.get("arxiv", ""),
            openreview=entry.get("openreview", ""),
            official_repo=entry.get("official_repo", ""),
            authors=tuple(entry.get("authors", ())),
            summary=entry.get("summary", ""),
            claim_names=names,
            claim_resources=resources,
            claim_docs=docs,
            claim_scales=scales,
            claim_against=against,
        ))
    return out


def slugs() -> list[str]:
    return [p.slug for p in papers()]


def get(slug: str) -> Paper:
    """The paper with this slug, or :class:`UnknownPaperError` listing the valid slugs."""
    for paper in papers():
        if paper.slug == slug:
            return paper
    raise UnknownPaperError(slug, slugs())


def select_claims(paper: Paper, names: list[str] | None = None) -> list[Claim]:
    """The paper's claims, or only those named (in the order given)."""
    claims = paper.load_claims()
    if not names:
        return claims
    by_name = {c.name: c for c in claims}
    chosen = []
    for name in names:
        if name not in by_name:
            raise UnknownClaimError(paper.slug, name, list(by_name))
        chosen.append(by_name[name])
    return chosen
