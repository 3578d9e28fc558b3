"""Functions as generalized arrays (paper Sec. 3.1): ``Function`` values with specs and grids.

A :class:`Function` is a callable with a *signature*: ``arg_spec`` (one :class:`Spec` per
argument, i.e. one infinite "index" per argument of the generalized array) and ``ret_spec``
(the spec of the value at each index). It may carry a quadrature :class:`Grid` per argument,
used only to *evaluate* integrals numerically. Every Function also remembers how it was made
(``op``, ``operands``, ``params``): that operator graph is what the functional-derivative
machinery in :mod:`.autodiff` linearizes and transposes.

Call caching (paper Sec. 3.3, "efficiency"): a gradient function calls the same sub-functions
many times (the primal and its tangent both call ``f``). Evaluating the graph naively costs
O(2^depth). Within one top-level call, :class:`_EvalScope` memoizes every sub-function call on
identical argument objects (the same array or the same JAX tracer), so the work, and the jaxpr
``jax.jit`` builds, stays linear in the depth. The official code keys an LRU cache on traced
arguments and evaluates concrete calls through a cached jaxpr; here the memo lives for one call
(so it never leaks tracers) and ``jax.jit`` on a Function gives the compiled, cached path.
:func:`call_cache` turns caching off for the benchmark; :func:`count_calls` counts body
evaluations deterministically.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import itertools
import sys
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "CallCounter",
    "Function",
    "Grid",
    "Spec",
    "call_cache",
    "count_calls",
    "function",
    "with_grid",
    "with_spec",
]


# --------------------------------------------------------------------------------------------
# specs and grids
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """Shape and dtype of one argument or of the return value (like ``jax.ShapeDtypeStruct``).

    Shapes are checked strictly; dtypes are carried for ``jax.linear_transpose`` and
    ``jax.eval_shape`` and canonicalised by JAX (float64 becomes float32 unless x64 is on).
    """

    shape: tuple[int, ...] = ()
    dtype: Any = jnp.float32

    def __post_init__(self) -> None:
        try:
            shape = tuple(int(d) for d in self.shape)
        except TypeError:
            raise TypeError(f"Spec.shape must be a tuple of ints, got {self.shape!r}") from None
        if any(d < 0 for d in shape):
            raise ValueError(f"Spec.shape must be non-negative, got {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", np.dtype(self.dtype))

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def struct(self) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(self.shape, jax.dtypes.canonicalize_dtype(self.dtype))

    def __repr__(self) -> str:
        return f"{self.dtype.name}{list(self.shape)}"


def as_spec(value: Any, name: str = "spec") -> Any:
    """Normalise ``Spec | ShapeDtypeStruct | shape tuple | tuple of those`` (pytree) to Specs."""
    if isinstance(value, Spec):
        return value
    if isinstance(value, jax.ShapeDtypeStruct):
        return Spec(value.shape, value.dtype)
    if value == () or (isinstance(value, tuple) and all(isinstance(d, (int, np.integer))
                                                         for d in value)):
        return Spec(tuple(value))
    if isinstance(value, (tuple, list)):
        return tuple(as_spec(v, name) for v in value)
    raise TypeError(f"{name} must be a Spec, a jax.ShapeDtypeStruct, a shape tuple or a tuple "
                    f"of those; got {value!r}")


def _spec_of_value(value: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: Spec(jnp.shape(a), jnp.result_type(a)), value)


def _shapes(spec: Any) -> Any:
    return jax.tree_util.tree_map(lambda s: s.shape, spec, is_leaf=lambda s: isinstance(s, Spec))


def specs_match(a: Any, b: Any) -> bool:
    """Whether two (pytrees of) specs have the same structure and shapes."""
    return _shapes(a) == _shapes(b)


@dataclass(frozen=True, eq=False)
class Grid:
    """Quadrature nodes and weights, one entry per argument.

    nodes[i]:   (n_i, *arg_spec[i].shape) points for argument i (a multi-dimensional argument
                uses a flattened product grid, e.g. (n^3, 3) for a 3-D argument);
    weights[i]: (n_i,) quadrature weights.
    ``None`` in both entries means "argument i is not integrable". The integral over several
    arguments uses the tensor product of their grids.
    """

    nodes: tuple[Any, ...]
    weights: tuple[Any, ...] = field(default=())

    def __post_init__(self) -> None:
        nodes = tuple(self.nodes)
        weights = tuple(self.weights)
        if len(nodes) != len(weights):
            raise ValueError(f"Grid needs one weights entry per nodes entry; got {len(nodes)} "
                             f"nodes and {len(weights)} weights")
        clean_n, clean_w = [], []
        for i, (n, w) in enumerate(zip(nodes, weights)):
            if n is None or w is None:
                if not (n is None and w is None):
                    raise ValueError(f"Grid argument {i}: nodes and weights must both be None "
                                     "or both be arrays")
                clean_n.append(None)
                clean_w.append(None)
                continue
            # numpy input stays numpy (converted at use, so float64 survives until x64 is on)
            n = n if isinstance(n, jax.Array) else np.asarray(n)
            w = w if isinstance(w, jax.Array) else np.asarray(w)
            if w.ndim != 1:
                raise ValueError(f"Grid weights[{i}] must be 1-D (n_i,), got shape {w.shape}")
            if n.ndim < 1 or n.shape[0] != w.shape[0]:
                raise ValueError(f"Grid nodes[{i}] must have shape ({w.shape[0]}, ...) to match "
                                 f"weights[{i}], got {n.shape}")
            clean_n.append(n)
            clean_w.append(w)
        object.__setattr__(self, "nodes", tuple(clean_n))
        object.__setattr__(self, "weights", tuple(clean_w))

    def __len__(self) -> int:
        return len(self.nodes)

    def entry(self, i: int) -> tuple[Any, Any] | None:
        if i >= len(self.nodes) or self.nodes[i] is None:
            return None
        return self.nodes[i], self.weights[i]

    @staticmethod
    def from_entries(entries: Sequence[tuple[Any, Any] | None]) -> Grid | None:
        if all(e is None for e in entries):
            return None
        return Grid(tuple(None if e is None else e[0] for e in entries),
                    tuple(None if e is None else e[1] for e in entries))


def _same_entry(a: tuple[Any, Any], b: tuple[Any, Any]) -> bool:
    if a[0] is b[0] and a[1] is b[1]:
        return True
    try:
        return all(np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
                   for x, y in zip(a, b))
    except (TypeError, jax.errors.TracerArrayConversionError):
        return False  # traced grids: only the same arrays are known to agree


def combine_grids(n_args: int, grids: Sequence[Grid | None], names: Sequence[str], op: str
                  ) -> Grid | None:
    """The grid of a function built from several functions of the same arguments.

    Per argument, the entry the operands agree on (operands without a grid for it do not
    vote). Different grids for one argument raise ValueError: taking either would make the
    integral depend on the order of the operands.
    """
    entries: list[tuple[Any, Any] | None] = []
    for i in range(n_args):
        found, owner = None, None
        for g, name in zip(grids, names):
            e = None if g is None else g.entry(i)
            if e is None:
                continue
            if found is None:
                found, owner = e, name
            elif not _same_entry(found, e):
                raise ValueError(
                    f"{op}: {owner} and {name} carry different quadrature grids for argument "
                    f"{i} ({np.shape(found[0])[0]} vs {np.shape(e[0])[0]} nodes, or other "
                    "values); the integral would depend on the order of the operands. Put "
                    "them on one grid first, e.g. with_grid(g, f.grid)")
        entries.append(found)
    return Grid.from_entries(entries)


def merge_grids(n_args: int, *grids: Grid | None) -> Grid | None:
    """Per argument, the first grid that has an entry for it (explicit grids first)."""
    entries: list[tuple[Any, Any] | None] = []
    for i in range(n_args):
        found = None
        for g in grids:
            if g is not None and g.entry(i) is not None:
                found = g.entry(i)
                break
        entries.append(found)
    return Grid.from_entries(entries)


# --------------------------------------------------------------------------------------------
# call cache, counters
# --------------------------------------------------------------------------------------------

@dataclass
class CallCounter:
    """Counts Function body evaluations: ``leaf`` = user-supplied bodies, ``total`` = all."""

    leaf: int = 0
    total: int = 0


_CACHE_ENABLED: contextvars.ContextVar[bool] = contextvars.ContextVar("autofd_cache", default=True)
_COUNTER: contextvars.ContextVar[CallCounter | None] = contextvars.ContextVar(
    "autofd_counter", default=None)
_SCOPE: contextvars.ContextVar[_EvalScope | None] = contextvars.ContextVar(
    "autofd_scope", default=None)
# set while a functional is being differentiated: called with every Function that is
# evaluated at points outside the operators (see autodiff.py)
_EVAL_GUARD: contextvars.ContextVar[Callable[[Function], None] | None] = contextvars.ContextVar(
    "autofd_eval_guard", default=None)


@contextlib.contextmanager
def eval_guard(check: Callable[[Function], None] | None) -> Iterator[None]:
    """Install (or, with None, suspend) the point-evaluation check inside the block."""
    token = _EVAL_GUARD.set(check)
    try:
        yield
    finally:
        _EVAL_GUARD.reset(token)


def point_evaluation_message(who: str, name: str) -> str:
    """Why evaluating the differentiated function at points inside a functional is refused."""
    return (f"{who}: the functional evaluates {name}, which depends on the function being "
            "differentiated, at points (as in u(0.3) or jnp.sum(w * jax.vmap(u)(x) ** 2)). "
            "autofd differentiates only what its operators build, so this derivative cannot "
            "be formed (functional_grad would return the zero function). For an integral use integrate(...) with the nodes and "
            "weights as a Grid (integrate(u ** 2, grid=Grid((x,), (w,))) or "
            "with_grid(u, grid)); a point value u(x0) has a Dirac-delta derivative, which is "
            "not a Function: integrate against a narrow kernel instead, or take directional "
            "derivatives with functional_jvp(F, (u,), (du,)) and invoke(u, x0).")


@contextlib.contextmanager
def call_cache(enabled: bool = True) -> Iterator[None]:
    """Turn call caching on or off inside the block (on by default; off is for benchmarks)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {enabled!r}")
    token = _CACHE_ENABLED.set(enabled)
    try:
        yield
    finally:
        _CACHE_ENABLED.reset(token)


@contextlib.contextmanager
def count_calls() -> Iterator[CallCounter]:
    """Count Function body evaluations inside the block (deterministic; no timing)."""
    counter = CallCounter()
    token = _COUNTER.set(counter)
    try:
        yield counter
    finally:
        _COUNTER.reset(token)


class _EvalScope:
    """Memo of sub-function calls during one top-level call, keyed by argument identity."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        # key -> (args kept alive so their ids cannot be reused, result)
        self.memo: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}

    def call(self, fn: Function, args: tuple[Any, ...]) -> Any:
        key = (id(fn), *map(id, args))
        if self.enabled:
            hit = self.memo.get(key)
            if hit is not None:
                return hit[1]
        counter = _COUNTER.get()
        if counter is not None:
            counter.total += 1
            if fn.op == "leaf":
                counter.leaf += 1
        out = fn.body(*args)
        if fn.op == "leaf":
            check_return(fn, out)
        if self.enabled:
            self.memo[key] = (args, out)
        return out


_KINDS = {"b": "bool", "i": "integer", "u": "integer", "f": "floating", "c": "complex"}


def _kind(dtype: Any) -> str:
    for kind, parent in (("bool", np.bool_), ("integer", np.integer),
                         ("floating", np.floating), ("complex", np.complexfloating)):
        if jnp.issubdtype(dtype, parent):
            return kind
    return str(dtype)


def check_return(fn: Function, out: Any) -> None:
    """Raise if a body's value does not match ``fn.ret_spec`` (shape, and dtype kind).

    Checked on every evaluation of a user body, which under ``jax.jit`` / ``jax.vmap`` means
    once per trace (shapes are static). Float widths may differ (float32 vs float64 follows
    JAX's x64 setting); bool / integer / floating / complex may not.
    """
    spec = fn.ret_spec
    if isinstance(spec, Spec):  # fast path (every call of a user body goes through here)
        shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
        if (shape is not None and dtype is not None and tuple(shape) == spec.shape
                and _KINDS.get(np.dtype(dtype).kind, "?") == _KINDS.get(spec.dtype.kind, "!")):
            return
    leaves, tree = jax.tree_util.tree_flatten(out)
    try:
        got = [Spec(jnp.shape(a), jnp.result_type(a)) for a in leaves]
    except TypeError:
        raise TypeError(f"{fn.name} returned a {type(out).__name__}, but its ret_spec is "
                        f"{spec!r}: a body must return arrays") from None
    want, tree_want = jax.tree_util.tree_flatten(spec, is_leaf=lambda s: isinstance(s, Spec))
    ok = tree == tree_want and all(
        g.shape == w.shape and _kind(g.dtype) == _kind(w.dtype) for g, w in zip(got, want))
    if not ok:
        shown = jax.tree_util.tree_unflatten(tree, got)
        raise ValueError(f"{fn.name} returned {shown!r} but its ret_spec is {spec!r}: the body "
                         "must return the declared shape (and a dtype of the same kind); fix "
                         "the body or declare ret_spec to match")


# --------------------------------------------------------------------------------------------
# Function
# --------------------------------------------------------------------------------------------

_UID = itertools.count()
_JIT_CACHE: weakref.WeakKeyDictionary[Function, Callable[..., Any]] = weakref.WeakKeyDictionary()


def next_uid() -> int:
    """A monotone serial number: nodes made after a marker cannot be its ancestors."""
    return next(_UID)


class Function:
    """A function value: callable body + ``arg_spec`` + ``ret_spec`` (+ optional ``grid``).

    Calling it with arrays evaluates it (shapes are checked against ``arg_spec``); calling it
    with Functions composes (``f(g)`` is ``compose(f, g)``). Arithmetic (``f + g``, ``f * g``,
    ``2 * f``, ``f ** 2``, ``2 ** f``, ``-f``, ``abs(f)``) builds pointwise compositions.
    Functions are hashable by identity and immutable.

    Args:
        fn: the body, ``fn(*args) -> value``; args have the shapes of ``arg_spec``.
        arg_spec: one :class:`Spec` (or shape tuple) per argument.
        ret_spec: the :class:`Spec` of the return value (a tuple of Specs for tuple outputs).
        grid: optional :class:`Grid` with one entry per argument.
        name: for error messages and ``repr``.
    """

    __slots__ = (
        "__weakref__",
        "arg_spec",
        "body",
        "fingerprint",
        "grid",
        "name",
        "op",
        "operands",
        "params",
        "ret_spec",
        "uid",
    )

    def __init__(self, fn: Callable[..., Any], arg_spec: Sequence[Any], ret_spec: Any,
                 grid: Grid | None = None, *, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if isinstance(arg_spec, (Spec, jax.ShapeDtypeStruct)):
            raise TypeError("arg_spec must be a sequence with one spec per argument, e.g. "
                            "(Spec(()),) for one scalar argument")
        if not isinstance(arg_spec, (tuple, list)):
            raise TypeError(f"arg_spec must be a tuple of specs, got {arg_spec!r}")
        arg = tuple(as_spec(a, "arg_spec entry") for a in arg_spec)
        for a in arg:
            if not isinstance(a, Spec):
                raise TypeError("each arg_spec entry must be one array Spec (pytree arguments "
                                f"are not supported), got {a!r}")
        self._init(fn, arg, as_spec(ret_spec, "ret_spec"), grid, "leaf", (), {},
                   name or getattr(fn, "__name__", "f"))

    def _init(self, body: Callable[..., Any], arg_spec: tuple[Spec, ...], ret_spec: Any,
              grid: Grid | None, op: str, operands: tuple[Function, ...],
              params: dict[str, Any], name: str) -> None:
        if grid is not None:
            if not isinstance(grid, Grid):
                raise TypeError(f"grid must be a Grid or None, got {type(grid).__name__}")
            if len(grid) != len(arg_spec):
                raise ValueError(f"grid has {len(grid)} entries but {name} takes "
                                 f"{len(arg_spec)} arguments")
            for i, spec in enumerate(arg_spec):
                e = grid.entry(i)
                if e is not None and tuple(e[0].shape[1:]) != spec.shape:
                    raise ValueError(f"grid nodes for argument {i} of {name} have point shape "
                                     f"{tuple(e[0].shape[1:])}, expected {spec.shape}")
        self.body = body
        self.arg_spec = arg_spec
        self.ret_spec = ret_spec
        self.grid = grid
        self.op = op
        self.operands = operands
        self.params = params
        self.name = name
        self.uid = next_uid()
        self.fingerprint: Any = None  # memo of compile_cache.fingerprint

    @classmethod
    def node(cls, op: str, operands: Sequence[Function], params: dict[str, Any],
             body: Callable[..., Any], arg_spec: tuple[Spec, ...], ret_spec: Any,
             grid: Grid | None = None, name: str | None = None) -> Function:
        """Make an operator node (used by the operators; users call ``Function(...)``)."""
        self = cls.__new__(cls)
        self._init(body, tuple(arg_spec), ret_spec, grid, op, tuple(operands), dict(params),
                   name or op)
        return self

    # -- evaluation ---------------------------------------------------------------------------

    def _check_args(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        if len(args) != len(self.arg_spec):
            raise TypeError(f"{self.name} takes {len(self.arg_spec)} argument(s) "
                            f"{list(self.arg_spec)}, got {len(args)}")
        out = []
        for i, (a, spec) in enumerate(zip(args, self.arg_spec)):
            if not isinstance(spec, Spec):  # a tuple-valued argument (pointwise nodes only)
                if _shapes(spec) != jax.tree_util.tree_map(lambda t: tuple(jnp.shape(t)), a):
                    raise ValueError(f"argument {i} of {self.name} does not match {spec!r}")
                out.append(a)
                continue
            if not isinstance(a, jax.Array):
                a = jnp.asarray(a)
            if tuple(a.shape) != spec.shape:
                raise ValueError(f"argument {i} of {self.name} has shape {tuple(a.shape)}, "
                                 f"expected {spec.shape} (arg_spec {list(self.arg_spec)})")
            out.append(a)
        return tuple(out)

    def __call__(self, *args: Any) -> Any:
        if any(is_function_value(a) for a in args):
            from .operators import compose
            return compose(self, *args)
        args = self._check_args(args)
        scope = _SCOPE.get()
        if scope is not None:
            return scope.call(self, args)
        guard = _EVAL_GUARD.get()
        if guard is not None:
            guard(self)
        if not any(isinstance(a, jax.core.Tracer) for a in args):
            # a concrete top-level call runs through jax.jit: one compiled program for the
            # whole graph (traced once, with the call cache) instead of op-by-op dispatch
            return self._compiled(*args)
        return self._evaluate(*args)

    def _evaluate(self, *args: Any) -> Any:
        scope = _EvalScope(_CACHE_ENABLED.get())
        token = _SCOPE.set(scope)
        try:
            return scope.call(self, args)
        finally:
            _SCOPE.reset(token)

    @property
    def _compiled(self) -> Callable[..., Any]:
        """``jax.jit(self._evaluate)``, shared by every Function with the same structure."""
        if _COUNTER.get() is None:
            from .compile_cache import cached_program
            program = cached_program(("call",), self, lambda: self._evaluate)
            if program is not None:
                return program
        jitted = _JIT_CACHE.get(self)
        if jitted is None:
            jitted = jax.jit(self._evaluate)
            _JIT_CACHE[self] = jitted
        return jitted

    # -- arithmetic: pointwise compositions ---------------------------------------------------

    def __add__(self, other: Any) -> Function:
        from .operators import add, compose
        if is_function_value(other):
            return add(self, other)
        return compose(_bind_right(jnp.add, other, "add"), self)

    def __radd__(self, other: Any) -> Function:
        from .operators import compose
        return compose(_bind_left(jnp.add, other, "add"), self)

    def __sub__(self, other: Any) -> Function:
        return _binary(jnp.subtract, self, other, "subtract")

    def __rsub__(self, other: Any) -> Function:
        from .operators import compose
        return compose(_bind_left(jnp.subtract, other, "subtract"), self)

    def __mul__(self, other: Any) -> Function:
        return _binary(jnp.multiply, self, other, "multiply")

    def __rmul__(self, other: Any) -> Function:
        from .operators import compose
        return compose(_bind_left(jnp.multiply, other, "multiply"), self)

    def __truediv__(self, other: Any) -> Function:
        return _binary(jnp.divide, self, other, "divide")

    def __rtruediv__(self, other: Any) -> Function:
        from .operators import compose
        return compose(_bind_left(jnp.divide, other, "divide"), self)

    def __pow__(self, other: Any) -> Function:
        return _binary(jnp.power, self, other, "power")

    def __rpow__(self, other: Any) -> Function:
        from .operators import compose
        return compose(_bind_left(jnp.power, other, "power"), self)

    def __neg__(self) -> Function:
        from .operators import compose
        return compose(jnp.negative, self)

    def __abs__(self) -> Function:
        from .operators import compose
        return compose(jnp.abs, self)

    @property
    def shape(self) -> tuple[int, ...]:
        """A Function has no array shape; asking for one (``jax.vmap`` over a Function,
        ``np.shape(f)``) raises a ValueError saying what to do instead."""
        raise ValueError(
            f"{self.name} is a Function, not an array: it has no shape, so jax.vmap / jax.jit "
            "cannot take it as a mapped or traced argument. Map over the points instead "
            "(jax.vmap(f)(xs)), build one Function per case in a Python loop, or give the "
            "Function an extra argument for the batch index")

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:  # identity: Functions are graph nodes
        return self is other

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        grid = "" if self.grid is None else ", grid"
        return (f"Function<{self.name}>({', '.join(map(repr, self.arg_spec))}) -> "
                f"{self.ret_spec!r}{grid}")


def is_function_value(x: Any) -> bool:
    """A Function, or a JAX tracer standing for one (inside ``jax.grad`` of a functional)."""
    return isinstance(x, Function) or (isinstance(x, jax.core.Tracer)
                                       and type(x.aval).__name__ == "FunctionType")


def _bind_right(fun: Callable[..., Any], c: Any, name: str) -> Callable[[Any], Any]:
    def bound(v: Any) -> Any:
        return fun(v, c)
    bound.__name__ = f"{name}_const"
    return bound


def _bind_left(fun: Callable[..., Any], c: Any, name: str) -> Callable[[Any], Any]:
    def bound(v: Any) -> Any:
        return fun(c, v)
    bound.__name__ = f"const_{name}"
    return bound


def _binary(fun: Callable[..., Any], f: Function, other: Any, name: str) -> Function:
    from .operators import compose
    if is_function_value(other):
        return compose(fun, f, other, share_inputs=True)
    return compose(_bind_right(fun, other, name), f)


# --------------------------------------------------------------------------------------------
# constructors
# --------------------------------------------------------------------------------------------

def with_spec(arg_spec: Sequence[Any], ret_spec: Any, grid: Grid | None = None
              ) -> Callable[[Callable[..., Any]], Function]:
    """Decorator: turn a plain JAX function into a :class:`Function` with explicit specs.

    >>> @with_spec(arg_spec=[()], ret_spec=())
    ... def f(x):
    ...     return jnp.sin(x)
    """
    def decorate(fn: Callable[..., Any]) -> Function:
        return Function(fn, tuple(arg_spec), ret_spec, grid)
    return decorate


def _spec_from_annotation(ann: Any, where: str) -> Spec:
    if isinstance(ann, Spec):
        return ann
    if ann is inspect.Parameter.empty:
        raise TypeError(f"{where} has no annotation; annotate it with a jaxtyping array type "
                        "(e.g. Float[Array, '']) or use with_spec(arg_spec, ret_spec)")
    dim_str = getattr(ann, "dim_str", None)
    if dim_str is None:
        raise TypeError(f"{where} is annotated with {ann!r}, which is not a jaxtyping array "
                        "type; use e.g. Float[Array, '3'] or with_spec(arg_spec, ret_spec)")
    dims = []
    for tok in dim_str.split():
        try:
            dims.append(int(tok))
        except ValueError:
            raise TypeError(f"{where}: only fixed integer dimensions are supported in "
                            f"annotations, got {dim_str!r}") from None
    dtypes = getattr(ann, "dtypes", None) or ["float32"]
    dtype = next((d for d in dtypes if d in ("float32", "float64")), dtypes[0])
    return Spec(tuple(dims), np.dtype(dtype) if dtype in np.sctypeDict else jnp.float32)


def function(fn: Callable[..., Any] | None = None, *, grid: Grid | None = None) -> Any:
    """Decorator: read the specs from annotations: jaxtyping types (``Float32[Array, ""]``,
    fixed integer dimensions only) or :class:`Spec` objects (``x: Spec((3,))``).

    >>> from jaxtyping import Array, Float64
    >>> @function
    ... def f(x: Float64[Array, ""]) -> Float64[Array, ""]:
    ...     return jnp.sin(x)
    """
    def decorate(fn: Callable[..., Any], frame_locals: dict[str, Any] | None = None
                 ) -> Function:
        if frame_locals is None:
            frame_locals = dict(sys._getframe(1).f_locals)
        try:
            # string annotations (``from __future__ import annotations``) are resolved in the
            # function's module and in the scope that applies the decorator
            sig = inspect.signature(fn, eval_str=True, locals=frame_locals)
        except NameError as exc:
            raise TypeError(f"cannot resolve the annotations of {fn.__name__}: {exc}; import the "
                            "annotation types where the function is defined, or use "
                            "with_spec(arg_spec, ret_spec)") from exc
        arg_spec = tuple(_spec_from_annotation(p.annotation, f"argument {p.name!r} of "
                                               f"{fn.__name__}")
                         for p in sig.parameters.values())
        ret = _spec_from_annotation(sig.return_annotation, f"return value of {fn.__name__}")
        return Function(fn, arg_spec, ret, grid)
    if fn is None:
        return decorate
    return decorate(fn, dict(sys._getframe(1).f_locals))


def with_grid(f: Function, grid: Grid | None) -> Function:
    """The same function with a quadrature grid attached (an ``alias`` node; f is unchanged)."""
    if not isinstance(f, Function):
        raise TypeError(f"f must be a Function, got {type(f).__name__}")
    return Function.node("alias", (f,), {}, lambda *x: f(*x), f.arg_spec, f.ret_spec, grid,
                         name=f.name)
