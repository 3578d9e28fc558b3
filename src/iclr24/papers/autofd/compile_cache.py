"""Compiled programs cached by the *structure* of a Function graph (not by object identity).

Every ``F(f)``, ``jax.grad(F)(f)`` and evaluation of a returned gradient builds a new graph of
Function nodes, so a cache keyed on Function objects never hits across calls and every call
paid a fresh XLA compilation (~0.2 s). Here a graph is fingerprinted instead:

* an operator node by its ``op``, its parameters (argnums, fixed values, quadrature nodes and
  weights, constants), its arg/ret specs and its operands' fingerprints (a DAG walk, linear in
  the number of nodes; fingerprints are memoised on the node);
* a user body (or a pointwise ``fun``) by its code object, defaults, globals namespace and the
  *contents* of its closure cells, recursively (so ``Function(lambda x: x ** p, ...)`` built
  twice with the same ``p`` shares a program, with a different ``p`` it does not);
* numpy arrays (mutable) and small JAX arrays by value (dtype, shape, bytes); large JAX arrays
  (immutable) and any other object by identity, kept alive by the cache entry so that an
  identity can never be reused by another object while the entry exists.

A graph that holds a JAX tracer (a Function built inside ``jax.jit``/``jax.grad`` of a
parameter, as in the brachistochrone training) has no fingerprint: it is evaluated inline in
the enclosing trace, which compiles it once as part of that trace.

Like ``jax.jit``, a cached program assumes bodies are pure: a module-level global that a body
reads and that is *rebound* after the first call is not seen (the globals namespace is part of
the key, not the values in it).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

__all__ = ["CompileCacheInfo", "clear_compile_cache", "compile_cache_info", "compiler_options"]

_VALUE_LIMIT = 1 << 16  # JAX arrays up to this many elements are keyed by value
_MAX_PROGRAMS = 256


class Uncacheable(Exception):
    """The graph holds something with no stable fingerprint (a JAX tracer)."""


@dataclass
class CompileCacheInfo:
    """Counts of compiled-program lookups: ``hits``, ``misses`` (a new program), ``size``."""

    hits: int = 0
    misses: int = 0
    size: int = 0


_INFO = CompileCacheInfo()
_PROGRAMS: OrderedDict[bytes, tuple[Callable[..., Any], list[Any]]] = OrderedDict()


def compile_cache_info() -> CompileCacheInfo:
    """A snapshot of the structural compile cache's counters (for tests and benchmarks)."""
    return CompileCacheInfo(_INFO.hits, _INFO.misses, len(_PROGRAMS))


def clear_compile_cache() -> None:
    """Drop every cached program and reset the counters."""
    _PROGRAMS.clear()
    _INFO.hits = _INFO.misses = 0


class _Encoder:
    """Feeds a canonical description of Python/JAX values into a hash; collects pins."""

    def __init__(self, pins: list[Any]) -> None:
        self.h = hashlib.blake2b(digest_size=20)
        self.pins = pins
        self._visiting: set[int] = set()

    def tag(self, s: str) -> None:
        self.h.update(s.encode())
        self.h.update(b"\x00")

    def identity(self, obj: Any) -> None:
        self.pins.append(obj)
        self.tag(f"id:{id(obj)}")

    def value(self, obj: Any) -> None:
        from .function import Function, Grid, Spec
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            self.tag(f"{type(obj).__name__}:{obj!r}")
        elif isinstance(obj, jax.core.Tracer):
            raise Uncacheable
        elif isinstance(obj, Function):
            digest, pins = fingerprint(obj)
            self.pins.extend(pins)
            self.tag("F")
            self.h.update(digest)
        elif isinstance(obj, Spec):
            self.tag(f"spec:{obj.shape}:{obj.dtype.str}")
        elif isinstance(obj, np.dtype):
            self.tag(f"dtype:{obj.str}")
        elif isinstance(obj, (np.ndarray, np.generic)):
            if obj.dtype == object:
                self.identity(obj)
            else:
                self._array(np.ascontiguousarray(obj))
        elif isinstance(obj, jax.Array):
            if obj.size <= _VALUE_LIMIT:
                self._array(np.asarray(obj), "jax")
            else:
                self.identity(obj)
        elif isinstance(obj, (tuple, list)):
            self.tag(f"{type(obj).__name__}[{len(obj)}")
            for item in obj:
                self.value(item)
            self.tag("]")
        elif isinstance(obj, dict):
            self.tag(f"dict[{len(obj)}")
            for k in sorted(obj, key=repr):
                self.value(k)
                self.value(obj[k])
            self.tag("]")
        elif isinstance(obj, Grid):
            self.tag("grid")
            self.value(obj.nodes)
            self.value(obj.weights)
        elif isinstance(obj, functools.partial):
            self.tag("partial")
            self.value(obj.func)
            self.value(obj.args)
            self.value(obj.keywords)
        elif isinstance(obj, types.MethodType):
            self.tag("method")
            self.value(obj.__func__)
            self.identity(obj.__self__)
        elif isinstance(obj, types.FunctionType):
            self.function(obj)
        else:
            self.identity(obj)

    def _array(self, a: np.ndarray, kind: str = "np") -> None:
        self.tag(f"{kind}:{a.dtype.str}:{a.shape}")
        self.h.update(a.tobytes())

    def function(self, fn: types.FunctionType) -> None:
        if id(fn) in self._visiting:  # a recursive closure: identity breaks the cycle
            self.identity(fn)
            return
        self._visiting.add(id(fn))
        self.tag("fn")
        self.identity(fn.__code__)
        self.identity(fn.__globals__)
        self.value(fn.__defaults__)
        self.value(fn.__kwdefaults__)
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                self.tag("empty")
                continue
            self.value(contents)
        self._visiting.discard(id(fn))


def fingerprint(f: Any) -> tuple[bytes, list[Any]]:
    """(digest, pinned objects) of a Function's graph; raises :class:`Uncacheable`."""
    cached = f.fingerprint
    if cached is not None:
        if cached is Uncacheable:
            raise Uncacheable
        return cached
    if f.op == "alias":  # x -> f(x) with another grid or name: evaluates as its operand
        try:
            out = fingerprint(f.operands[0])
        except Uncacheable:
            f.fingerprint = Uncacheable
            raise
        f.fingerprint = out
        return out
    pins: list[Any] = []
    enc = _Encoder(pins)
    try:
        enc.tag(f"op:{f.op}")
        enc.value(f.arg_spec)
        enc.value(f.ret_spec)
        if f.op == "leaf":
            enc.value(f.body)
        elif f.op in ("standin", "tangent_var"):
            enc.identity(f)
        else:
            enc.value(f.params)
        for operand in f.operands:
            enc.value(operand)
    except Uncacheable:
        f.fingerprint = Uncacheable
        raise
    out = (enc.h.digest(), pins)
    f.fingerprint = out
    return out


_OPTIONS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "autofd_compiler_options", default=None)


@contextlib.contextmanager
def compiler_options(**options: Any) -> Iterator[None]:
    """XLA compiler options for the programs autofd compiles inside the block.

    For graphs that are evaluated once (each functional-gradient-descent step builds a new,
    larger graph), compile time dominates; ``compiler_options(xla_backend_optimization_level=0)``
    cuts it about 3x on CPU at the price of slower generated code (about 1.5x on a 110k-node
    3-D quadrature). The options are part of the cache key.
    """
    for k, v in options.items():
        if not isinstance(v, (bool, int, float, str)):
            raise TypeError(f"compiler option {k!r} must be a bool, int, float or str, got "
                            f"{type(v).__name__}")
    token = _OPTIONS.set(dict(options) or None)
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def jit(fun: Callable[..., Any]) -> Callable[..., Any]:
    """``jax.jit`` with the current :func:`compiler_options`."""
    options = _OPTIONS.get()
    return jax.jit(fun) if options is None else jax.jit(fun, compiler_options=options)


def cached_program(key_parts: tuple[Any, ...], graph: Any,
                   build: Callable[[], Callable[..., Any]]) -> Callable[..., Any] | None:
    """The compiled program for ``graph`` (+ ``key_parts``), built once per structure.

    Returns None when the graph has no fingerprint (the caller evaluates inline).
    """
    from .function import _CACHE_ENABLED
    try:
        digest, pins = fingerprint(graph)
        enc = _Encoder(pins)
        enc.h.update(digest)
        enc.value(key_parts)
        enc.value((bool(jax.config.jax_enable_x64), _CACHE_ENABLED.get(), _OPTIONS.get()))
    except Uncacheable:
        return None
    key = enc.h.digest()
    hit = _PROGRAMS.get(key)
    if hit is not None:
        _PROGRAMS.move_to_end(key)
        _INFO.hits += 1
        return hit[0]
    _INFO.misses += 1
    program = build()
    _PROGRAMS[key] = (program, pins)
    while len(_PROGRAMS) > _MAX_PROGRAMS:
        _PROGRAMS.popitem(last=False)
    return program
