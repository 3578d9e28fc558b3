"""The five primitive operators of the paper (Sec. 3.2, Table 1) and the structural helpers.

Each operator takes Functions and returns a new Function *node* whose body is plain JAX code
(pointwise derivatives are always left to ``jax.jvp`` / ``jax.linear_transpose`` /
``jax.jacfwd``); the node records ``op``, ``operands`` and ``params`` so that
:mod:`.rules` can linearize and transpose it.

Primitive operators (paper notation):
    compose(f, g1..gk)      (f o g)(x) = f(g1(x), ..., gk(x))
    nabla(f, k)             (grad f)(x) = d f / d x_k                (jax.jacfwd)
    linearize(f, k)         (x, dx) -> d_k f(x) . dx                 (jax.jvp)
    linear_transpose(f, k)  (x_-k, c) -> (d_k f)^T c, f linear in x_k (jax.linear_transpose)
    integrate(f, argnums)   int f(x) dx over the chosen arguments    (quadrature on f.grid)
Structural helpers: partial, broadcast_arg, permute_args, zip_functions / split, add,
constant, zeros_like, and the pointwise ``fnp`` namespace (``fnp.exp(f)`` = compose(exp, f)).

Differences from the official code: ``integrate`` without a grid raises ``ValueError``
instead of silently returning a dummy 0 (a functional's value must never be a placeholder);
``broadcast_arg`` takes the target signature (a Function or a tuple of specs) and the
positions of ``f``'s arguments in it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .compile_cache import cached_program, jit
from .function import (
    _COUNTER,
    _SCOPE,
    Function,
    Grid,
    Spec,
    as_spec,
    combine_grids,
    eval_guard,
    is_function_value,
    merge_grids,
    specs_match,
)

__all__ = [
    "add",
    "braket",
    "broadcast_arg",
    "compose",
    "constant",
    "fnp",
    "integrate",
    "invoke",
    "linear_transpose",
    "linearize",
    "nabla",
    "partial",
    "permute_args",
    "pointwise",
    "split",
    "zeros_like",
    "zip_functions",
]


def _spec_tree(value: Any) -> Any:
    return jax.tree_util.tree_map(lambda s: Spec(s.shape, s.dtype), value)


def _structs(spec: Any) -> Any:
    return jax.tree_util.tree_map(lambda s: s.struct(), spec,
                                  is_leaf=lambda s: isinstance(s, Spec))


def _argnum(argnums: Any, n: int, op: str) -> int:
    if isinstance(argnums, bool) or not isinstance(argnums, (int, np.integer)):
        raise TypeError(f"{op}: argnums must be an int, got {argnums!r}")
    k = int(argnums)
    if not 0 <= k < n:
        raise ValueError(f"{op}: argnums={k} is out of range for a function of {n} argument(s)")
    return k


def _is_traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _concrete(x: Any) -> Any:
    """The concrete Function under a JAX tracer (for its grid), or None."""
    while _is_traced(x):
        x = getattr(x, "primal", None)
    return x if isinstance(x, Function) else None


def _signature(f: Any) -> tuple[tuple[Spec, ...], Any, Grid | None]:
    """(arg_spec, ret_spec, grid) of a Function or of a traced Function."""
    if isinstance(f, Function):
        return f.arg_spec, f.ret_spec, f.grid
    concrete = _concrete(f)
    aval = f.aval
    return aval.arg_spec, aval.ret_spec, None if concrete is None else concrete.grid


def _dispatch(op: str, operands: list[Any], params: dict[str, Any]) -> Any:
    """Run the core operator, or bind its JAX primitive when an operand is traced."""
    if any(_is_traced(o) for o in operands):
        from . import jax_integration
        return jax_integration.bind(op, operands, params)
    return _CORE[op](*operands, **params)


def _require_function(f: Any, name: str, op: str) -> Any:
    if isinstance(f, Function):
        return f
    if _is_traced(f) and type(f.aval).__name__ == "FunctionType":
        return f
    raise TypeError(f"{op}: {name} must be a Function, got {type(f).__name__}")


def pointwise(fun: Callable[..., Any], in_specs: Sequence[Any], name: str | None = None
              ) -> Function:
    """Wrap a plain JAX function as a Function with ``arg_spec = in_specs`` (ret by eval_shape)."""
    if isinstance(fun, Function):
        return fun
    if not callable(fun):
        raise TypeError(f"compose: f must be a Function or a callable, got {type(fun).__name__}")
    in_specs = tuple(as_spec(s) for s in in_specs)
    try:
        ret = _spec_tree(jax.eval_shape(fun, *map(_structs, in_specs)))
    except Exception as exc:
        raise ValueError(f"compose: cannot apply {getattr(fun, '__name__', fun)!r} to values "
                         f"of spec {list(in_specs)}: {exc}") from exc
    return Function.node("pointwise", (), {"fun": fun}, fun, in_specs, ret,
                         name=name or getattr(fun, "__name__", "pointwise"))


# --------------------------------------------------------------------------------------------
# 1. compose
# --------------------------------------------------------------------------------------------

def compose(f: Function | Callable[..., Any], *gs: Function, share_inputs: bool = True
            ) -> Function:
    """(f o g)(x) = f(g1(x), ..., gk(x)).

    f: a Function of k arguments, or a plain JAX function (wrapped pointwise).
    gs: k Functions. With ``share_inputs=True`` they must share one ``arg_spec`` and the result
        takes those arguments; with ``share_inputs=False`` the result takes the concatenation
        of their arguments: (x1, ..., xk) -> f(g1(x1), ..., gk(xk)).

    Raises TypeError for a wrong number of inner functions, ValueError for mismatched specs.
    """
    if not gs:
        raise TypeError("compose: needs at least one inner function g")
    for i, g in enumerate(gs):
        _require_function(g, f"g{i + 1}", "compose")
    if not isinstance(share_inputs, bool):
        raise TypeError(f"compose: share_inputs must be a bool, got {share_inputs!r}")
    if not share_inputs:
        # (x1..xk) -> f(g1(x1)..gk(xk)): lift every g to the concatenated signature.
        sigs = [_signature(g) for g in gs]
        all_args = tuple(s for a, _, _ in sigs for s in a)
        grid = Grid.from_entries([gr.entry(j) if gr is not None else None
                                  for a, _, gr in sigs for j in range(len(a))])
        lifted, start = [], 0
        for g, (a, _, _) in zip(gs, sigs):
            pos = tuple(range(start, start + len(a)))
            lifted.append(broadcast_arg(g, all_args, pos, grid=grid))
            start += len(a)
        gs = tuple(lifted)
    if not isinstance(f, Function) and not _is_traced(f):
        f = pointwise(f, [_signature(g)[1] for g in gs])
    return _dispatch("compose", [f, *gs], {})


def _compose_core(f: Function, *gs: Function) -> Function:
    arg_spec = gs[0].arg_spec
    for i, g in enumerate(gs[1:], start=2):
        if not specs_match(g.arg_spec, arg_spec):
            raise ValueError(f"compose: mismatched argument specs: g1 takes {list(arg_spec)} "
                             f"but g{i} takes {list(g.arg_spec)} (use share_inputs=False for "
                             "separate arguments)")
    if len(f.arg_spec) != len(gs):
        raise TypeError(f"compose: f takes {len(f.arg_spec)} argument(s) but {len(gs)} inner "
                        "function(s) were given")
    for i, (spec, g) in enumerate(zip(f.arg_spec, gs)):
        if not specs_match(spec, g.ret_spec):
            raise ValueError(f"compose: mismatched specs: argument {i} of {f.name} expects "
                             f"{spec!r} but g{i + 1} returns {g.ret_spec!r}")

    def body(*x: Any) -> Any:
        return f(*[g(*x) for g in gs])  # (f o g)(x) = f(g(x))

    grid = combine_grids(len(arg_spec), [g.grid for g in gs],
                         [f"g{i + 1} ({g.name})" for i, g in enumerate(gs)], "compose")
    return Function.node("compose", (f, *gs), {}, body, arg_spec, f.ret_spec, grid,
                         name=f"{f.name}∘({','.join(g.name for g in gs)})")


# --------------------------------------------------------------------------------------------
# 2. nabla
# --------------------------------------------------------------------------------------------

def _nabla_method(method: Any) -> str:
    if method in ("jacfwd", jax.jacfwd):
        return "jacfwd"
    if method in ("jacrev", jax.jacrev):
        return "jacrev"
    raise ValueError(f"nabla: method must be 'jacfwd' or 'jacrev' (or jax.jacfwd / jax.jacrev), "
                     f"got {method!r}")


def _nabla_core(f: Function, argnums: int = 0, method: str = "jacfwd") -> Function:
    """(grad f)(x) = df/dx_k; returns shape ``ret.shape + arg_k.shape`` (jax.jacfwd/jacrev)."""
    _require_function(f, "f", "nabla")
    k = _argnum(argnums, len(f.arg_spec), "nabla")
    jac = jax.jacfwd if _nabla_method(method) == "jacfwd" else jax.jacrev
    if not isinstance(f.ret_spec, Spec):
        raise TypeError("nabla: f must return a single array, not a tuple")

    def body(*x: Any) -> Any:
        def fk(xk: Any) -> Any:
            return f(*x[:k], xk, *x[k + 1:])
        return jac(fk)(x[k])

    ret = Spec(f.ret_spec.shape + f.arg_spec[k].shape, f.ret_spec.dtype)
    return Function.node("nabla", (f,), {"argnums": k, "method": method}, body, f.arg_spec, ret,
                         f.grid,
                         name=f"∇{f.name}")


# --------------------------------------------------------------------------------------------
# 3. linearize
# --------------------------------------------------------------------------------------------

def _linearize_core(f: Function, argnums: int = 0) -> Function:
    """(x_1..x_n, dx) -> d_k f(x) . dx, linear in dx (jax.jvp). Extra argument appended last."""
    _require_function(f, "f", "linearize")
    k = _argnum(argnums, len(f.arg_spec), "linearize")

    def body(*xs: Any) -> Any:
        x, dx = xs[:-1], xs[-1]

        def fk(xk: Any) -> Any:
            return f(*x[:k], xk, *x[k + 1:])
        dx = jax.tree_util.tree_map(lambda t, p: jnp.asarray(t, jnp.result_type(p)), dx, x[k])
        return jax.jvp(fk, (x[k],), (dx,))[1]  # df = d_k f(x) . dx

    arg_spec = f.arg_spec + (f.arg_spec[k],)
    grid = None if f.grid is None else Grid.from_entries(
        [f.grid.entry(i) for i in range(len(f.arg_spec))] + [None])
    return Function.node("linearize", (f,), {"argnums": k}, body, arg_spec, f.ret_spec, grid,
                         name=f"∂{f.name}")


# --------------------------------------------------------------------------------------------
# 4. linear_transpose
# --------------------------------------------------------------------------------------------

def _linear_transpose_core(f: Function, argnums: int = 0) -> Function:
    """For f linear in x_k: (x_-k, c) -> (d f / d x_k)^T c (jax.linear_transpose).

    The result takes f's other arguments in order, then the cotangent c (spec of f's return).
    """
    _require_function(f, "f", "linear_transpose")
    k = _argnum(argnums, len(f.arg_spec), "linear_transpose")
    spec_k = f.arg_spec[k]

    def body(*xs: Any) -> Any:
        rest, c = xs[:-1], xs[-1]

        def fk(xk: Any) -> Any:
            return f(*rest[:k], xk, *rest[k:])
        leaves = jax.tree_util.tree_leaves(c)
        dtype = jnp.result_type(*leaves) if leaves else spec_k.struct().dtype
        primal = jax.ShapeDtypeStruct(spec_k.shape, dtype)
        return jax.linear_transpose(fk, primal)(c)[0]  # (d_k f)^T c

    arg_spec = f.arg_spec[:k] + f.arg_spec[k + 1:] + (f.ret_spec,)
    grid = None if f.grid is None else Grid.from_entries(
        [f.grid.entry(i) for i in range(len(f.arg_spec)) if i != k] + [None])
    return Function.node("linear_transpose", (f,), {"argnums": k}, body, arg_spec, spec_k,
                         grid, name=f"{f.name}ᵀ")


# --------------------------------------------------------------------------------------------
# 5. integrate
# --------------------------------------------------------------------------------------------

class PointEvaluation:
    """The "quadrature" of an :func:`invoke` record: evaluation at the fixed ``args``."""

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args = args


class _IntegralHook:
    """Records or substitutes the scalar results of full integrals and point evaluations
    (``invoke``) while a functional derivative is being taken."""

    def __init__(self, values: Sequence[Any] | None = None) -> None:
        self.records: list[tuple[Function, Any, Any]] = []
        self.values = None if values is None else list(values)
        self.position = 0

    def substitute(self) -> Any:
        """Substitution pass of functional_grad: the next value, a differentiable input."""
        assert self.values is not None
        if self.position >= len(self.values):
            raise RuntimeError("the functional made more integrals on its second run than on "
                               "its first; functional_grad needs a deterministic F")
        value = self.values[self.position]
        self.position += 1
        return value


_HOOK: contextvars.ContextVar[_IntegralHook | None] = contextvars.ContextVar(
    "autofd_integral_hook", default=None)


@contextlib.contextmanager
def integral_hook(hook: _IntegralHook | None) -> Iterator[_IntegralHook | None]:
    token = _HOOK.set(hook)
    try:
        yield hook
    finally:
        _HOOK.reset(token)


def _normalize_argnums(argnums: Any, n: int, op: str) -> tuple[int, ...]:
    if argnums is None:
        return tuple(range(n))
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, bool):
        argnums = (int(argnums),)
    if not isinstance(argnums, (tuple, list)):
        raise TypeError(f"{op}: argnums must be None, an int or a tuple of ints, got {argnums!r}")
    out = []
    for a in argnums:
        out.append(_argnum(a, n, op))
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: argnums has repeated entries: {tuple(argnums)}")
    return tuple(out)


def _is_pair(e: Any) -> bool:
    return isinstance(e, (tuple, list)) and len(e) == 2 and not any(
        isinstance(x, (tuple, list)) or x is None for x in e)


def _explicit_entries(grid: Any, argnums: tuple[int, ...], n_args: int, op: str
                      ) -> list[tuple[Any, Any] | None]:
    """``grid=`` of integrate, one (nodes, weights) entry (or None) per integrated argument.

    Accepts a Grid (over all arguments, or one entry per integrated argument), a bare
    ``(nodes, weights)`` pair when one argument is integrated, or one pair per integrated
    argument.
    """
    if grid is None:
        return [None] * len(argnums)
    if isinstance(grid, Grid):
        if len(grid) == n_args:
            return [grid.entry(k) for k in argnums]
        if len(grid) == len(argnums):
            return [grid.entry(j) for j in range(len(argnums))]
        raise ValueError(f"{op}: grid has {len(grid)} entries; expected {n_args} (one per "
                         f"argument) or {len(argnums)} (one per integrated argument)")
    if len(argnums) == 1 and _is_pair(grid):
        return [tuple(grid)]
    if (isinstance(grid, (tuple, list)) and len(grid) == len(argnums)
            and all(e is None or _is_pair(e) for e in grid)):
        return [None if e is None else tuple(e) for e in grid]
    raise TypeError(f"{op}: grid must be a Grid, a (nodes, weights) pair when one argument is "
                    "integrated, or one (nodes, weights) pair per integrated argument "
                    f"(argnums={argnums}); got {type(grid).__name__} of length "
                    f"{len(grid) if hasattr(grid, '__len__') else '?'}")


def _grid_entries(f: Any, argnums: tuple[int, ...], grid: Any, op: str
                  ) -> tuple[tuple[Any, Any], ...]:
    """Quadrature (nodes, weights) for each integrated argument, from ``grid`` or ``f.grid``."""
    arg_spec, _, f_grid = _signature(f)
    name = getattr(f, "name", "the function")
    explicit = _explicit_entries(grid, argnums, len(arg_spec), op)
    entries = []
    for j, k in enumerate(argnums):
        e = explicit[j]
        if e is None and f_grid is not None:
            e = f_grid.entry(k)
        if e is None and _is_traced(f) and _concrete(f) is None:
            raise TypeError(f"{op}: got a Function traced by jax.jit / jax.vmap / "
                            "jax.linear_transpose, with no concrete Function behind it (so no "
                            "grid); a Function has no array representation and cannot be a "
                            "traced argument of a compiled function. Jit the returned gradient "
                            "instead, close over the Function, or use functional_grad.")
        if e is None:
            raise ValueError(f"{op}: cannot integrate {name} over argument {k}: it has no "
                             "quadrature grid; attach one with with_grid(f, Grid(nodes, "
                             "weights)) or pass grid=...")
        nodes, weights = jnp.asarray(e[0]), jnp.asarray(e[1])
        if weights.ndim != 1 or nodes.ndim < 1 or nodes.shape[0] != weights.shape[0]:
            raise ValueError(f"{op}: the grid for argument {k} needs nodes of shape (n, ...) "
                             f"and weights of shape (n,); got {tuple(nodes.shape)} and "
                             f"{tuple(weights.shape)}")
        if tuple(nodes.shape[1:]) != arg_spec[k].shape:
            raise ValueError(f"{op}: grid nodes for argument {k} have point shape "
                             f"{tuple(nodes.shape[1:])}, expected {arg_spec[k].shape}")
        entries.append((nodes, weights))
    return tuple(entries)


def _quadrature(f: Function, argnums: tuple[int, ...], entries: Sequence[tuple[Any, Any]],
                fixed: dict[int, Any]) -> Any:
    """sum_i w_i f(x_i) over the tensor-product grid of ``argnums`` (others in ``fixed``)."""
    n = len(f.arg_spec)

    def rec(j: int, chosen: dict[int, Any]) -> Any:
        if j == len(argnums):
            return f(*[chosen[i] if i in chosen else fixed[i] for i in range(n)])
        return jax.vmap(lambda xj: rec(j + 1, {**chosen, argnums[j]: xj}))(entries[j][0])

    vals = rec(0, {})  # shape (n_1, ..., n_m) + ret

    def contract(v: Any) -> Any:
        for _, w in entries:
            v = jnp.tensordot(w.astype(v.dtype) if jnp.issubdtype(v.dtype, jnp.floating)
                              else w, v, axes=(0, 0))  # int f dx ~ sum_i w_i f(x_i)
        return v
    return jax.tree_util.tree_map(contract, vals)


def _full_quadrature(f: Function, argnums: tuple[int, ...],
                     entries: Sequence[tuple[Any, Any]]) -> Any:
    if _SCOPE.get() is not None:
        return _quadrature(f, argnums, entries, {})
    with eval_guard(None):  # the integrand's evaluations at the nodes are the operator's own
        return _top_level_quadrature(f, argnums, tuple(entries))


def _top_level_quadrature(f: Function, argnums: tuple[int, ...],
                          entries: tuple[tuple[Any, Any], ...]) -> Any:
    # top level: one compiled program per graph *structure* (nodes and weights are its
    # arguments), reused by later calls on new Functions of the same structure

    def build() -> Callable[..., Any]:
        return lambda e: _quadrature(f, argnums, e, {})
    if _COUNTER.get() is not None:  # counting body evaluations: trace afresh
        return jit(build())(entries)
    shapes = tuple((tuple(n.shape), str(n.dtype), tuple(w.shape), str(w.dtype))
                   for n, w in entries)
    program = cached_program(("integrate", argnums, shapes), f, build)
    if program is None:  # the graph holds tracers of an enclosing transformation
        return _quadrature(f, argnums, entries, {})
    return program(entries)


def integrate(f: Function, argnums: int | Sequence[int] | None = None, grid: Any = None
              ) -> Any:
    """int f(x) dx over ``argnums`` (all arguments by default), by quadrature on the grid.

    Integrating over every argument returns an array (``ret_spec``); integrating over some
    returns a Function of the remaining ones. ``grid`` overrides ``f.grid`` (a Grid over all of
    f's arguments, or one (nodes, weights) pair per integrated argument).

    Raises ValueError when an integrated argument has no grid.
    """
    _require_function(f, "f", "integrate")
    arg_spec = _signature(f)[0]
    argnums = _normalize_argnums(argnums, len(arg_spec), "integrate")
    if not argnums:
        raise ValueError("integrate: argnums must name at least one argument")
    entries = _grid_entries(f, argnums, grid, "integrate")
    full = len(argnums) == len(arg_spec)
    if full and _is_traced(f):
        from . import jax_integration
        return jax_integration.bind("integrate_full", [f], {"argnums": argnums, "grid": entries})
    return _dispatch("integrate", [f], {"argnums": argnums, "grid": entries})


def _integrate_core(f: Function, argnums: tuple[int, ...], grid: Any) -> Any:
    entries = _grid_entries(f, argnums, grid, "integrate")
    rest = tuple(i for i in range(len(f.arg_spec)) if i not in argnums)
    if not rest:
        hook = _HOOK.get()
        if hook is not None and hook.values is not None:
            return hook.substitute()
        value = _full_quadrature(f, argnums, entries)  # int f dx ~ sum_i w_i f(x_i)
        if hook is not None:
            hook.records.append((f, entries, value))
        return value

    def body(*x: Any) -> Any:
        return _quadrature(f, argnums, entries, dict(zip(rest, x)))

    grid_rest = None if f.grid is None else Grid.from_entries([f.grid.entry(i) for i in rest])
    return Function.node("integrate", (f,), {"argnums": argnums, "entries": entries}, body,
                         tuple(f.arg_spec[i] for i in rest), f.ret_spec, grid_rest,
                         name=f"∫{f.name}")


def braket(lfun: Function, rfun: Function, real: bool = False) -> Any:
    """<l|r> = int conj(l(x)) r(x) dx over every argument (``real=True``: its real part).

    Both functions must have the same signature; the integral uses their (common) grid.
    Built from compose and integrate, so it differentiates in both arguments.
    """
    _require_function(lfun, "lfun", "braket")
    _require_function(rfun, "rfun", "braket")
    if not isinstance(real, bool):
        raise TypeError(f"braket: real must be a bool, got {real!r}")
    (la, lr, _), (ra, rr, _) = _signature(lfun), _signature(rfun)
    if not (specs_match(la, ra) and specs_match(lr, rr)):
        raise ValueError(f"braket: lfun and rfun must have the same signature, got "
                         f"{list(la)} -> {lr!r} and {list(ra)} -> {rr!r}")

    def conj_product(a: Any, b: Any) -> Any:
        p = jnp.conj(a) * b
        return jnp.real(p) if real else p
    return integrate(compose(conj_product, lfun, rfun, share_inputs=True))


def invoke(f: Function, *args: Any) -> Any:
    """f(*args) as an operator on f: the value of f at fixed points.

    Forward mode differentiates it (d invoke(f, x) = invoke(df, x), with functional_jvp or
    jax.jvp); reverse mode raises NotTransposableError, because the functional derivative of
    a point value is a Dirac delta, which is not a Function. Use it instead of ``f(x)``
    inside a functional (a plain call there is refused while differentiating).
    """
    _require_function(f, "f", "invoke")
    arg_spec = _signature(f)[0]
    if len(args) != len(arg_spec):
        raise TypeError(f"invoke: the function takes {len(arg_spec)} argument(s), got "
                        f"{len(args)}")
    values = []
    for i, (a, spec) in enumerate(zip(args, arg_spec)):
        if is_function_value(a):
            raise TypeError(f"invoke: argument {i} is a Function; to apply a function to "
                            "functions use compose")
        a = jnp.asarray(a)
        if tuple(a.shape) != spec.shape:
            raise ValueError(f"invoke: argument {i} has shape {tuple(a.shape)}, expected "
                             f"{spec.shape}")
        values.append(a)
    if _is_traced(f):
        from . import jax_integration
        return jax_integration.bind("invoke", [f], {"args": tuple(values)})
    return _invoke_core(f, tuple(values))


def _invoke_core(f: Function, args: tuple[Any, ...]) -> Any:
    hook = _HOOK.get()
    if hook is not None and hook.values is not None:
        return hook.substitute()
    with eval_guard(None):  # the operator's own evaluation
        value = f(*args)
    if hook is not None:
        hook.records.append((f, PointEvaluation(args), value))
    return value


# --------------------------------------------------------------------------------------------
# structural helpers
# --------------------------------------------------------------------------------------------

def _partial_core(f: Function, args: Sequence[Any], argnums: int | Sequence[int]) -> Function:
    """Fix some arguments: partial(f, (a,), 1)(x) = f(x, a)."""
    _require_function(f, "f", "partial")
    argnums = _normalize_argnums(argnums, len(f.arg_spec), "partial")
    if not isinstance(args, (tuple, list)):
        args = (args,)
    if len(args) != len(argnums):
        raise ValueError(f"partial: got {len(args)} value(s) for {len(argnums)} argnums")
    values = []
    for a, k in zip(args, argnums):
        a = jnp.asarray(a)
        if tuple(a.shape) != f.arg_spec[k].shape:
            raise ValueError(f"partial: value for argument {k} has shape {tuple(a.shape)}, "
                             f"expected {f.arg_spec[k].shape}")
        values.append(a)
    fixed = dict(zip(argnums, values))
    rest = tuple(i for i in range(len(f.arg_spec)) if i not in fixed)

    def body(*x: Any) -> Any:
        it = iter(x)
        return f(*[fixed[i] if i in fixed else next(it) for i in range(len(f.arg_spec))])

    grid = None if f.grid is None else Grid.from_entries([f.grid.entry(i) for i in rest])
    return Function.node("partial", (f,), {"args": tuple(values), "argnums": argnums}, body,
                         tuple(f.arg_spec[i] for i in rest), f.ret_spec, grid,
                         name=f"{f.name}|fixed")


def broadcast_arg(f: Function, target: Function | Sequence[Any], argnums: int | Sequence[int],
                  grid: Grid | None = None) -> Function:
    """Lift f to a larger signature, ignoring the new arguments.

    target: a Function (its arg_spec and grid are used) or a tuple of specs.
    argnums: the positions in target's signature that receive f's arguments, in order.
    grid: optional Grid over the target signature (takes precedence over target's grid).
    Example: k(y, x), u(x): broadcast_arg(u, k, 1)(y, x) = u(x).
    """
    _require_function(f, "f", "broadcast_arg")
    if isinstance(target, Function) or _is_traced(target):
        target_spec, _, target_grid = _signature(target)
    elif isinstance(target, (tuple, list)):
        target_spec, target_grid = tuple(as_spec(s) for s in target), None
    else:
        raise TypeError("broadcast_arg: target must be a Function or a tuple of specs, got "
                        f"{type(target).__name__}")
    if grid is not None and not isinstance(grid, Grid):
        raise TypeError(f"broadcast_arg: grid must be a Grid or None, got {type(grid).__name__}")
    merged = merge_grids(len(target_spec), grid, target_grid)
    return _dispatch("broadcast_arg", [f], {"target": target_spec,
                                            "argnums": argnums, "grid": merged})


def _broadcast_arg_core(f: Function, target: tuple[Spec, ...], argnums: Any,
                        grid: Grid | None) -> Function:
    target_spec = target
    argnums = _normalize_argnums(argnums, len(target_spec), "broadcast_arg")
    if len(argnums) != len(f.arg_spec):
        raise ValueError(f"broadcast_arg: f takes {len(f.arg_spec)} argument(s) but "
                         f"argnums names {len(argnums)} position(s)")
    for i, k in enumerate(argnums):
        if not specs_match(f.arg_spec[i], target_spec[k]):
            raise ValueError(f"broadcast_arg: mismatched argument specs: argument {i} of "
                             f"{f.name} is {f.arg_spec[i]!r} but target position {k} is "
                             f"{target_spec[k]!r}")

    def body(*x: Any) -> Any:
        return f(*[x[k] for k in argnums])  # ignores the broadcast arguments

    own = [None] * len(target_spec)
    if f.grid is not None:
        for i, k in enumerate(argnums):
            own[k] = f.grid.entry(i)
    new_grid = merge_grids(len(target_spec), grid, Grid.from_entries(own))
    return Function.node("broadcast_arg", (f,), {"argnums": argnums}, body, target_spec,
                         f.ret_spec, new_grid, name=f"{f.name}↑")


def _permute_args_core(f: Function, perm: Sequence[int]) -> Function:
    """Reorder arguments: the result's i-th argument is f's ``perm[i]``-th argument."""
    _require_function(f, "f", "permute_args")
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(len(f.arg_spec))):
        raise ValueError(f"permute_args: perm must be a permutation of 0..{len(f.arg_spec) - 1}"
                         f", got {perm}")

    def body(*y: Any) -> Any:
        x = [None] * len(perm)
        for i, p in enumerate(perm):
            x[p] = y[i]
        return f(*x)

    grid = None if f.grid is None else Grid.from_entries([f.grid.entry(p) for p in perm])
    return Function.node("permute_args", (f,), {"perm": perm}, body,
                         tuple(f.arg_spec[p] for p in perm), f.ret_spec, grid,
                         name=f"{f.name}⟲")


def _zip_core(*fs: Function) -> Function:
    """x -> (f1(x), ..., fk(x)); all fs share one arg_spec."""
    if not fs:
        raise TypeError("zip_functions: needs at least one function")
    for i, f in enumerate(fs):
        _require_function(f, f"f{i + 1}", "zip_functions")
    for i, f in enumerate(fs[1:], start=2):
        if not specs_match(f.arg_spec, fs[0].arg_spec):
            raise ValueError(f"zip_functions: mismatched argument specs: f1 takes "
                             f"{list(fs[0].arg_spec)} but f{i} takes {list(f.arg_spec)}")

    def body(*x: Any) -> Any:
        return tuple(f(*x) for f in fs)

    grid = combine_grids(len(fs[0].arg_spec), [f.grid for f in fs],
                         [f"f{i + 1} ({f.name})" for i, f in enumerate(fs)], "zip_functions")
    return Function.node("zip", fs, {}, body, fs[0].arg_spec, tuple(f.ret_spec for f in fs),
                         grid, name="zip")


def split(f: Function) -> tuple[Function, ...]:
    """Inverse of zip_functions: a tuple-valued function -> one Function per component."""
    _require_function(f, "f", "split")
    if not isinstance(f.ret_spec, tuple):
        raise TypeError(f"split: {f.name} must return a tuple, its ret_spec is {f.ret_spec!r}")
    return tuple(compose(pointwise(item_getter(i), [f.ret_spec], name=f"item{i}"), f)
                 for i in range(len(f.ret_spec)))


def item_getter(i: int) -> Callable[[Any], Any]:
    """v -> v[i] as a plain function (jax.eval_shape needs weak-referenceable callables)."""
    def item(v: Any) -> Any:
        return v[i]
    item.__name__ = f"item{i}"
    return item


def _add_core(f: Function, g: Function) -> Function:
    """(f + g)(x) = f(x) + g(x) (also how cotangent functions are accumulated)."""
    _require_function(f, "f", "add")
    _require_function(g, "g", "add")
    if not specs_match(f.arg_spec, g.arg_spec):
        raise ValueError(f"add: mismatched argument specs: {list(f.arg_spec)} vs "
                         f"{list(g.arg_spec)}")
    if not specs_match(f.ret_spec, g.ret_spec):
        raise ValueError(f"add: mismatched return specs: {f.ret_spec!r} vs {g.ret_spec!r}")

    def body(*x: Any) -> Any:
        return jax.tree_util.tree_map(jnp.add, f(*x), g(*x))

    grid = combine_grids(len(f.arg_spec), [f.grid, g.grid], [f"f ({f.name})", f"g ({g.name})"],
                         "add")
    return Function.node("add", (f, g), {}, body, f.arg_spec, f.ret_spec, grid,
                         name=f"({f.name}+{g.name})")


def constant(value: Any, arg_spec: Sequence[Any], grid: Grid | None = None) -> Function:
    """x -> value (the transpose of a full integral: a scalar cotangent becomes a constant)."""
    value = jax.tree_util.tree_map(jnp.asarray, value)
    ret = jax.tree_util.tree_map(lambda a: Spec(a.shape, a.dtype), value)
    arg_spec = tuple(as_spec(s) for s in arg_spec)
    return Function.node("constant", (), {"value": value}, lambda *x: value, arg_spec, ret,
                         grid, name="const")


def zeros_like(f: Function) -> Function:
    """x -> 0 with f's signature."""
    _require_function(f, "f", "zeros_like")
    value = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.struct().dtype), f.ret_spec,
                                   is_leaf=lambda s: isinstance(s, Spec))
    return constant(value, f.arg_spec, f.grid)


# --------------------------------------------------------------------------------------------
# public entry points of the operators defined by their cores above
# --------------------------------------------------------------------------------------------

def nabla(f: Function, argnums: int = 0, method: Any = "jacfwd") -> Function:
    """(grad f)(x) = df/dx_k, shape ``ret.shape + arg_k.shape``.

    method: ``"jacfwd"`` (default) or ``"jacrev"`` (``jax.jacfwd`` / ``jax.jacrev`` are
    accepted too): how JAX computes the pointwise Jacobian; the value is the same, jacrev is
    cheaper for functions with many inputs and few outputs.
    """
    _require_function(f, "f", "nabla")
    return _dispatch("nabla", [f], {"argnums": argnums, "method": _nabla_method(method)})


def linearize(f: Function, argnums: int = 0) -> Function:
    """(x_1..x_n, dx) -> d_k f(x) . dx, linear in the appended last argument dx (jax.jvp)."""
    _require_function(f, "f", "linearize")
    return _dispatch("linearize", [f], {"argnums": argnums})


def linear_transpose(f: Function, argnums: int = 0) -> Function:
    """For f linear in x_k: (x_-k..., c) -> (d f / d x_k)^T c (jax.linear_transpose).

    The result takes f's other arguments in order, then the cotangent c (spec of f's return).
    """
    _require_function(f, "f", "linear_transpose")
    return _dispatch("linear_transpose", [f], {"argnums": argnums})


def partial(f: Function, args: Sequence[Any], argnums: int | Sequence[int]) -> Function:
    """Fix some arguments: partial(f, (a,), 1)(x) = f(x, a)."""
    _require_function(f, "f", "partial")
    if not isinstance(args, (tuple, list)):
        args = (args,)
    return _dispatch("partial", [f], {"args": tuple(args), "argnums": argnums})


def permute_args(f: Function, perm: Sequence[int]) -> Function:
    """Reorder arguments: the result's i-th argument is f's ``perm[i]``-th argument."""
    _require_function(f, "f", "permute_args")
    return _dispatch("permute_args", [f], {"perm": tuple(int(p) for p in perm)})


def zip_functions(*fs: Function) -> Function:
    """x -> (f1(x), ..., fk(x)); all fs share one arg_spec."""
    if not fs:
        raise TypeError("zip_functions: needs at least one function")
    for i, f in enumerate(fs):
        _require_function(f, f"f{i + 1}", "zip_functions")
    return _dispatch("zip", list(fs), {})


def add(f: Function, g: Function) -> Function:
    """(f + g)(x) = f(x) + g(x) (also how cotangent functions are accumulated)."""
    _require_function(f, "f", "add")
    _require_function(g, "g", "add")
    return _dispatch("add", [f, g], {})


_CORE: dict[str, Callable[..., Any]] = {
    "compose": _compose_core,
    "nabla": _nabla_core,
    "linearize": _linearize_core,
    "linear_transpose": _linear_transpose_core,
    "integrate": _integrate_core,
    "partial": _partial_core,
    "broadcast_arg": _broadcast_arg_core,
    "permute_args": _permute_args_core,
    "zip": _zip_core,
    "add": _add_core,
}


# --------------------------------------------------------------------------------------------
# pointwise namespace: fnp.exp(f) == compose(jnp.exp, f)
# --------------------------------------------------------------------------------------------

class _PointwiseNamespace:
    """``fnp.<name>(*args)``: the jax.numpy function applied pointwise to Function arguments.

    Function arguments become the inner functions of a compose (they must share one
    arg_spec); other arguments are held constant. ``fnp.exp(f)``, ``fnp.maximum(f, 0.0)``,
    ``fnp.sum(f ** 2)``.
    """

    def __getattr__(self, name: str) -> Callable[..., Function]:
        fun = getattr(jnp, name, None)
        if fun is None or not callable(fun):
            raise AttributeError(f"fnp has no pointwise function {name!r} (not in jax.numpy)")

        @functools.wraps(fun)
        def lifted(*args: Any, **kwargs: Any) -> Function:
            positions = [i for i, a in enumerate(args) if is_function_value(a)]
            if not positions:
                raise TypeError(f"fnp.{name}: at least one argument must be a Function")

            def apply(*vals: Any) -> Any:
                full = list(args)
                for i, v in zip(positions, vals):
                    full[i] = v
                return fun(*full, **kwargs)
            apply.__name__ = name
            return compose(apply, *[args[i] for i in positions], share_inputs=True)
        return lifted

    def __dir__(self) -> list[str]:
        return [n for n in dir(jnp) if not n.startswith("_")]


fnp = _PointwiseNamespace()
