"""One sub-package per paper; the folder name is the paper's slug (see catalog.toml).

Each paper's third-party dependencies are its pip extra (``pip install "iclr24[<slug>]"``, see
:mod:`iclr24.extras`). Importing a paper whose dependencies are missing raises an
:class:`ImportError` that names the missing package and that install line, instead of a bare
``No module named 'ot'`` from deep inside the paper (or, for a lazy import, later, in the middle
of a run): a finder placed on ``sys.meta_path`` wraps the loaders of ``iclr24.papers.<slug>``
modules only; the paper's package checks its extra's modules (``importlib.util.find_spec``,
nothing imported) before it runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

_PREFIX = __name__ + "."


class MissingPaperDependency(ImportError):
    """A paper's third-party dependency is not installed; the message says how to install it."""


def _hint(slug: str, exc: ModuleNotFoundError) -> MissingPaperDependency:
    from iclr24 import extras

    missing = (exc.name or "").split(".")[0]
    if missing in extras.NO_DEPS:
        how = f'pip install --no-deps "{extras.NO_DEPS[missing]}"'
        what = extras.NO_DEPS[missing].split("==")[0]
    else:
        how = extras.install_line(slug)
        what = extras.distribution_of(slug, missing)
    err = MissingPaperDependency(f"the paper {slug!r} needs the package {what!r} (module "
                                 f"{missing!r} is not installed): {how}", name=exc.name)
    return err


class _HintingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, slug: str):
        self._loader, self._slug = loader, slug

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__name__ == _PREFIX + self._slug:  # the paper itself: all it needs, up front
            from iclr24 import extras

            missing = extras.missing_modules(self._slug)
            if missing:  # (lazy imports inside functions would fail later, less clearly)
                raise _hint(self._slug, ModuleNotFoundError(f"No module named {missing[0]!r}",
                                                            name=missing[0]))
        try:
            self._loader.exec_module(module)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] == "iclr24":
                raise
            raise _hint(self._slug, exc) from exc

    def __getattr__(self, name: str):  # get_resource_reader, get_source, ... of the real one
        return getattr(self._loader, name)


class _PaperFinder(importlib.abc.MetaPathFinder):
    """Finds ``iclr24.papers.<slug>...`` like the path finder, with a hinting loader."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or isinstance(spec.loader, _HintingLoader):
            return spec
        spec.loader = _HintingLoader(spec.loader, fullname[len(_PREFIX):].split(".")[0])
        return spec


if not any(isinstance(f, _PaperFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _PaperFinder())
