"""Compiled programs cached by the *structure* of a Function graph (not by object identity).

Every ``F(f)``, ``jax.grad(F)(f)`` and evaluation of a returned gradient builds a new graph of
Function nodes, so a cache keyed on Function objects never hits across calls and every call
paid a fresh XLA compilation (~0.2 s). Here a graph is fingerprinted instead:

* an operator node by its ``op``, its parameters (argnums, fixed values, quadrature nodes and
  weights, constants), its arg/ret specs and its operands' fingerprints (a DAG walk, linear in
  the number of nodes; fingerprints are memoised on the node);
* a user body (or a pointwise ``fun``) by its code object, defaults, globals namespace and the
  *contents* of its closure cells, recursively;
* a floating or complex number held *directly* in a default or a closure cell (a Python float,
  a numpy or JAX array of float/complex dtype) by its type, dtype and shape only: its value
  becomes an *input* of the compiled program (a "lifted constant"). A functional optimisation
  that builds ``Function(lambda t, c=c: c + 0.3 * jnp.sin(t), ...)`` with a new ``c`` at every
  step therefore reuses one program instead of compiling at every step. While the program is
  traced, the lifted slots of the graph being traced hold the tracers (cells and defaults are
  swapped and restored around the trace); later graphs of the same structure pass their own
  values. Integers and booleans stay keyed by value (they often decide shapes, indices or
  branches). A body that needs a lifted constant as a concrete number (``if c > 0``,
  ``np.sin(c)``, ``math.exp(c)``) fails to trace with it; that graph structure is then marked
  and compiled keyed by value, as before, with the same result;
* other numpy arrays (mutable) and small JAX arrays by value (dtype, shape, bytes); large JAX
  arrays (immutable) and any other object by identity, kept alive by the cache entry so that an
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
    _VALUE_KEYED.clear()
    _INFO.hits = _INFO.misses = 0


# where a lifted constant lives: ("cell", cell), ("default", fn, index) or ("kwdefault", fn, key)
Slot = tuple[Any, ...]
# errors of a body that needs a lifted constant as a concrete value while it is traced
_CONCRETE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                    jax.errors.TracerIntegerConversionError)


def _lift_tag(obj: Any) -> str | None:
    """The abstract type of a liftable constant (float / complex scalar or array), else None."""
    if isinstance(obj, bool) or isinstance(obj, jax.core.Tracer):
        return None
    if isinstance(obj, (float, complex)):
        return f"lift:{type(obj).__name__}"
    if isinstance(obj, (np.ndarray, np.generic, jax.Array)) and obj.dtype.kind in "fc":
        return f"lift:{type(obj).__name__}:{obj.dtype.str}:{tuple(obj.shape)}"
    return None


def _slot_id(slot: Slot) -> tuple[Any, ...]:
    return (slot[0], id(slot[1]), *slot[2:])


def _slot_get(slot: Slot) -> Any:
    kind, owner = slot[0], slot[1]
    if kind == "cell":
        return owner.cell_contents
    if kind == "default":
        return owner.__defaults__[slot[2]]
    return owner.__kwdefaults__[slot[2]]


def _slot_set(slot: Slot, value: Any) -> None:
    kind, owner = slot[0], slot[1]
    if kind == "cell":
        owner.cell_contents = value
    elif kind == "default":
        d = list(owner.__defaults__)
        d[slot[2]] = value
        owner.__defaults__ = tuple(d)
    else:
        owner.__kwdefaults__ = {**owner.__kwdefaults__, slot[2]: value}


class _Encoder:
    """Feeds a canonical description of Python/JAX values into a hash; collects pins and, with
    ``lift``, the slots of lifted constants (in traversal order)."""

    def __init__(self, pins: list[Any], slots: list[Slot] | None = None) -> None:
        self.h = hashlib.blake2b(digest_size=20)
        self.pins = pins
        self.slots = slots  # None: no lifting, every constant keyed by value
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
            digest, pins, slots = fingerprint(obj, lift=self.slots is not None)
            self.pins.extend(pins)
            if self.slots is not None:
                self.slots.extend(slots)
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
        defaults = fn.__defaults__ or ()
        self.tag(f"defaults[{len(defaults)}")
        for i, d in enumerate(defaults):
            self._slot(d, ("default", fn, i))
        kwdefaults = fn.__kwdefaults__ or {}
        self.tag(f"kwdefaults[{len(kwdefaults)}")
        for k in sorted(kwdefaults):
            self.tag(k)
            self._slot(kwdefaults[k], ("kwdefault", fn, k))
        for cell in fn.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                self.tag("empty")
                continue
            self._slot(contents, ("cell", cell))
        self._visiting.discard(id(fn))

    def _slot(self, obj: Any, slot: Slot) -> None:
        tag = _lift_tag(obj) if self.slots is not None else None
        if tag is None:
            self.value(obj)
        else:  # a lifted constant: its abstract type is part of the key, its value an input
            self.tag(tag)
            self.pins.append(slot[1])
            self.slots.append(slot)


def fingerprint(f: Any, lift: bool = True) -> tuple[bytes, list[Any], list[Slot]]:
    """(digest, pinned objects, lifted-constant slots) of a Function's graph.

    With ``lift=False`` every constant is keyed by value (no slots). Memoised on the node per
    mode (not while lifted slots hold tracers). Raises :class:`Uncacheable`.
    """
    memo = f.fingerprint if f.fingerprint is not None else {}
    cached = memo.get(lift)
    if cached is not None:
        if cached is Uncacheable:
            raise Uncacheable
        return cached

    def remember(value: Any) -> None:
        if not _TRACING_LIFTED:
            f.fingerprint = {**memo, lift: value}

    if f.op == "alias":  # x -> f(x) with another grid or name: evaluates as its operand
        try:
            out = fingerprint(f.operands[0], lift)
        except Uncacheable:
            remember(Uncacheable)
            raise
        remember(out)
        return out
    pins: list[Any] = []
    slots: list[Slot] | None = [] if lift else None
    enc = _Encoder(pins, slots)
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
        remember(Uncacheable)
        raise
    out = (enc.h.digest(), pins, slots or [])
    remember(out)
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


_TRACING_LIFTED = False  # True while a trace swaps lifted slots for tracers
_VALUE_KEYED: set[bytes] = set()  # lifted keys whose bodies need concrete constants


@contextlib.contextmanager
def _swapped(slots: list[Slot], values: tuple[Any, ...]) -> Iterator[None]:
    """Put ``values`` (tracers) into ``slots`` for the duration of a trace, then restore."""
    global _TRACING_LIFTED
    saved, outer = [], _TRACING_LIFTED
    _TRACING_LIFTED = True
    try:
        for slot, v in zip(slots, values):
            saved.append((slot, _slot_get(slot)))
            _slot_set(slot, v)
        yield
    finally:
        for slot, old in reversed(saved):
            _slot_set(slot, old)
        _TRACING_LIFTED = outer


def _key(graph: Any, key_parts: tuple[Any, ...], lift: bool
         ) -> tuple[bytes, list[Any], list[Slot]]:
    """(cache key, pins, unique lifted slots) of ``graph`` + ``key_parts``."""
    from .function import _CACHE_ENABLED
    digest, pins, slots = fingerprint(graph, lift)
    enc = _Encoder(list(pins))
    enc.h.update(digest)
    enc.value(key_parts)
    enc.value((bool(jax.config.jax_enable_x64), _CACHE_ENABLED.get(), _OPTIONS.get()))
    # the same cell or default reached twice is one input: the aliasing pattern is structure
    index: dict[tuple[Any, ...], int] = {}
    unique: list[Slot] = []
    pattern = []
    for slot in slots:
        sid = _slot_id(slot)
        if sid not in index:
            index[sid] = len(unique)
            unique.append(slot)
        pattern.append(index[sid])
    enc.value(tuple(pattern))
    return enc.h.digest(), enc.pins, unique


def _lookup(key: bytes, pins: list[Any], slots: list[Slot],
            build: Callable[[], Callable[..., Any]]) -> Callable[..., Any]:
    hit = _PROGRAMS.get(key)
    if hit is not None:
        _PROGRAMS.move_to_end(key)
        _INFO.hits += 1
        return hit[0]
    _INFO.misses += 1
    fn = build()
    traced_slots = list(slots)  # the slots of the graph this program is traced on

    def run(consts: tuple[Any, ...], *args: Any) -> Any:
        with _swapped(traced_slots, consts):
            return fn(*args)
    program = jit(run)
    _PROGRAMS[key] = (program, pins)
    while len(_PROGRAMS) > _MAX_PROGRAMS:
        _PROGRAMS.popitem(last=False)
    return program


def cached_program(key_parts: tuple[Any, ...], graph: Any,
                   build: Callable[[], Callable[..., Any]]) -> Callable[..., Any] | None:
    """The compiled program for ``graph`` (+ ``key_parts``), built once per structure.

    ``build()`` returns the (not yet jitted) function of the program's arguments; it is traced
    on this graph. Returns a callable of those arguments that passes this graph's lifted
    constants, or None when the graph has no fingerprint (the caller evaluates inline).
    """
    try:
        key, pins, slots = _key(graph, key_parts, lift=True)
        if key in _VALUE_KEYED:
            key, pins, slots = _key(graph, key_parts, lift=False)
    except Uncacheable:
        return None
    program = _lookup(key, pins, slots, build)
    consts = tuple(_slot_get(s) for s in slots)
    if not slots:
        return functools.partial(program, ())

    def call(*args: Any) -> Any:
        try:
            return program(consts, *args)
        except _CONCRETE_ERRORS:
            # a body needs a lifted constant as a concrete value: key this structure by value
            _VALUE_KEYED.add(key)
            _PROGRAMS.pop(key, None)
            vkey, vpins, vslots = _key(graph, key_parts, lift=False)
            return _lookup(vkey, vpins, vslots, build)((), *args)
    return call
