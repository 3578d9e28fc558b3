"""JAX integration: ``jax.grad(F)(f)`` returns the functional derivative as a Function.

Paper Sec. 3: functions are "generalized arrays" with their own abstract value, and the five
operators are JAX primitives with JVP and transpose rules, so JAX's own reverse mode produces
functional derivatives. The official code does this with JAX internals of the 0.4.2x era
(a ``ShapedArray`` subclass with ``named_shape``, ``raise_to_shaped_mappings``,
``xla.pytype_aval_mappings``, ``ad_util.jaxval_adders``), all removed since. This module
targets JAX 0.10.2 (pinned in constraints.txt) through its *hijax* extension API
(``jax.experimental.hijax``: ``HiType``, ``HiPrimitive``, ``register_hitype``), which is the
supported way to give JAX a new kind of value with its own autodiff rules:

* :class:`FunctionType` is the abstract value of a Function (its arg/ret specs);
  tangents and cotangents of a Function are Functions of the same signature
  (``vspace_add`` = :func:`~.operators.add`, ``vspace_zero`` = :func:`~.operators.zeros_like`).
* One ``HiPrimitive`` per operator. Its eager evaluation (``to_lojax``) is the core operator;
  its abstract evaluation runs the core operator on spec-only stand-ins; its JVP and
  transpose rules are the ones written once in :mod:`.rules`.
* The operators in :mod:`.operators` bind these primitives only when one of their Function
  operands is a JAX tracer, so the core never touches JAX internals.

What works on JAX 0.10.2 and what cannot:

* ``jax.grad(F)(f)``, ``jax.value_and_grad``, ``jax.vjp`` and ``jax.jvp`` of a functional at
  a concrete Function, including tuples of Functions (``jax.grad(loss)((k, b))``), return
  Functions; ``jax.jit`` of the *returned* gradient function works (it is plain JAX code).
* ``jax.jit(F)(f)`` / ``jax.jit(jax.grad(F))(f)`` with ``f`` a *traced argument* is
  impossible: a Function is a Python closure with no array representation (``HiType.lo_ty``
  has nothing to lower to), so it cannot cross a compiled boundary. Jit the returned gradient
  instead, or close over ``f``.
* ``jax.vmap`` over Functions and nested ``jax.grad(jax.grad(F))`` over Function arguments
  are not supported (no batching rules; the primal of a nested trace is not concrete).
  :func:`~.autodiff.functional_grad` and :func:`~.autodiff.functional_jvp` cover those uses.
* Inside a functional traced by ``jax.grad``, ``u(g)`` with Functions ``g`` is
  ``compose(u, g)``; ``u(0.3)`` (a point evaluation, whose derivative is a Dirac delta) raises
  a TypeError saying what to use instead. For that, the first time a Function enters a JAX
  trace, ``jax.core.Tracer.__call__`` is defined (as the official package does at import):
  calling a tracer of an ordinary array still raises Python's "object is not callable", but
  ``callable(tracer)`` is True from then on.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.hijax import HiPrimitive, HiType, Zero, register_hitype

from . import operators as ops
from .function import Function, Spec, point_evaluation_message
from .rules import NotTransposableError, jvp_rules, transpose_rules

__all__ = ["FunctionType", "is_traced"]


def is_traced(x: Any) -> bool:
    """Whether ``x`` is a JAX tracer (a Function value inside a JAX transformation)."""
    return isinstance(x, jax.core.Tracer)


class _Static:
    """Hashable-by-identity box for primitive parameters (grids hold arrays)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


# --------------------------------------------------------------------------------------------
# the abstract value of a Function
# --------------------------------------------------------------------------------------------

def _spec_key(spec: Any) -> Any:
    # shapes only: like the core, autofd checks shapes strictly and lets dtypes follow JAX's
    # promotion (a float32-declared function differentiated under x64 has float64 cotangents)
    if isinstance(spec, Spec):
        return spec.shape
    return tuple(_spec_key(s) for s in spec)


class FunctionType(HiType):
    """Abstract value of a Function: its signature (a generalized array's "shape")."""

    def __init__(self, arg_spec: tuple[Spec, ...], ret_spec: Any) -> None:
        self.arg_spec = tuple(arg_spec)
        self.ret_spec = ret_spec

    def __hash__(self) -> int:
        return hash(("FunctionType", _spec_key(self.arg_spec), _spec_key(self.ret_spec)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, FunctionType)
                and _spec_key(self.arg_spec) == _spec_key(other.arg_spec)
                and _spec_key(self.ret_spec) == _spec_key(other.ret_spec))

    def str_short(self, short_dtypes: bool = False, **_: Any) -> str:
        return f"Function[({', '.join(map(repr, self.arg_spec))}) -> {self.ret_spec!r}]"

    __repr__ = str_short

    @property
    def dtype(self) -> Any:
        """The dtype of the values (first leaf of ret_spec): lets ``jax.linear_transpose``
        accept Function primals, so that its error is autofd's (e.g. compose with respect to
        its outer function) instead of a missing attribute."""
        leaves = jax.tree_util.tree_leaves(self.ret_spec, is_leaf=lambda s: isinstance(s, Spec))
        return jax.dtypes.canonicalize_dtype(leaves[0].dtype)

    # autodiff: the tangent space of functions with a signature is the same signature
    def to_tangent_aval(self) -> FunctionType:
        return self

    def vspace_zero(self) -> Function:
        return ops.zeros_like(_standin(self))

    def vspace_add(self, x: Any, y: Any) -> Any:
        return ops.add(x, y)

    def lo_ty(self) -> list[Any]:
        raise TypeError("a Function has no array representation: it cannot be an argument or "
                        "output of jax.jit / lax control flow. Jit the returned gradient "
                        "function instead, or close over the Function.")

    # arithmetic on traced Functions (Tracer.__add__ etc. forward here)
    _add = staticmethod(lambda a, b: _traced_binary("+", a, b))
    _radd = staticmethod(lambda a, b: _traced_binary("r+", a, b))
    _sub = staticmethod(lambda a, b: _traced_binary("-", a, b))
    _rsub = staticmethod(lambda a, b: _traced_binary("r-", a, b))
    _mul = staticmethod(lambda a, b: _traced_binary("*", a, b))
    _rmul = staticmethod(lambda a, b: _traced_binary("r*", a, b))
    _truediv = staticmethod(lambda a, b: _traced_binary("/", a, b))
    _rtruediv = staticmethod(lambda a, b: _traced_binary("r/", a, b))
    _pow = staticmethod(lambda a, b: _traced_binary("**", a, b))
    _rpow = staticmethod(lambda a, b: _traced_binary("r**", a, b))
    _neg = staticmethod(lambda a: ops.compose(jnp.negative, a))
    _abs = staticmethod(lambda a: ops.compose(jnp.abs, a))
    _eq = staticmethod(lambda a, b: a is b)  # identity, as for Functions (jax.vmap compares)


def _traced_binary(kind: str, a: Any, b: Any) -> Any:
    from .function import _bind_left, _bind_right
    funcs = {"+": jnp.add, "-": jnp.subtract, "*": jnp.multiply, "/": jnp.divide,
             "**": jnp.power}
    reverse = kind.startswith("r")
    fun = funcs[kind.lstrip("r")]
    if _is_function_like(b):
        if kind == "+":
            return ops.add(a, b)
        return ops.compose(fun, a, b) if not reverse else ops.compose(fun, b, a)
    if reverse:
        return ops.compose(_bind_left(fun, b, fun.__name__), a)
    return ops.compose(_bind_right(fun, b, fun.__name__), a)


def _is_function_like(x: Any) -> bool:
    return isinstance(x, Function) or (is_traced(x) and isinstance(x.aval, FunctionType))


def _aval_of(value: Any) -> Any:
    if isinstance(value, Function):
        return FunctionType(value.arg_spec, value.ret_spec)
    return jax.core.get_aval(value) if not is_traced(value) else value.aval


def _traced_call(self: Any, *args: Any) -> Any:
    """``u(...)`` on a JAX tracer: compose when ``u`` stands for a Function and every argument
    is a Function; a clear error for point evaluations; Python's own error for other tracers."""
    if isinstance(self.aval, FunctionType):
        if args and all(_is_function_like(a) for a in args):
            return ops.compose(self, *args)
        raise TypeError(point_evaluation_message("jax.grad", "a traced Function"))
    raise TypeError(f"'{type(self).__name__}' object is not callable")


def _function_type(f: Function) -> FunctionType:
    # the first time a Function enters a JAX trace, teach tracers the call syntax (the official
    # package patches jax.core.Tracer.__call__ at import; here only once it is needed)
    if not _CALL_INSTALLED:
        _install_traced_call()
    return FunctionType(f.arg_spec, f.ret_spec)


_CALL_INSTALLED = False


def _install_traced_call() -> None:
    global _CALL_INSTALLED
    if "__call__" not in vars(jax.core.Tracer):
        jax.core.Tracer.__call__ = _traced_call
    _CALL_INSTALLED = True


register_hitype(Function, _function_type)


def _standin(aval: FunctionType) -> Function:
    """A spec-only Function (for abstract evaluation and undefined primals)."""
    def body(*x: Any) -> Any:
        raise RuntimeError("internal: a spec-only stand-in Function was evaluated")
    return Function.node("standin", (), {}, body, aval.arg_spec, aval.ret_spec, name="standin")


# --------------------------------------------------------------------------------------------
# one primitive per operator
# --------------------------------------------------------------------------------------------

class _OperatorPrimitive(HiPrimitive):
    """``op(*operands, **params)`` as a JAX primitive; the math lives in the core operator."""

    def __init__(self, op: str, core_fn: Any) -> None:
        super().__init__(f"autofd_{op}")
        self.op = op
        self.core_fn = core_fn

    def is_high(self, *avals: Any, **params: Any) -> bool:
        return True

    def _apply(self, operands: list[Any], static: _Static) -> Any:
        return self.core_fn(*operands, **static.value)

    def abstract_eval(self, *avals: Any, static: _Static) -> Any:
        if self.op in _ARRAY_OPS:
            f = avals[0]
            ret = jax.tree_util.tree_map(lambda s: jax.core.ShapedArray(
                s.shape, jax.dtypes.canonicalize_dtype(s.dtype)), f.ret_spec,
                is_leaf=lambda s: isinstance(s, Spec))
            return ret, set()
        standins = [_standin(a) if isinstance(a, FunctionType) else a for a in avals]
        return _aval_of(self._apply(standins, static)), set()

    def to_lojax(self, *operands: Any, static: _Static) -> Any:
        # eager evaluation: the core operator on concrete Functions
        if self.op == "integrate_full":
            return ops._integrate_core(operands[0], **static.value)
        if self.op == "invoke":
            return ops._invoke_core(operands[0], **static.value)
        return self._apply(list(operands), static)

    def jvp(self, primals: Any, tangents: Any, *, static: _Static) -> Any:
        out = self.bind(*primals, static=static)
        tans = [None if isinstance(t, Zero) else t for t in tangents]
        if self.op in _ARRAY_OPS:
            t = tans[0]
            if t is None:
                return out, Zero(_aval_of(out).to_tangent_aval())
            # d int f = int df;  d f(x0) = df(x0)
            return out, PRIMITIVES[self.op].bind(t, static=static)
        if not isinstance(out, Function):
            raise NotImplementedError(
                "jax.grad over Functions needs concrete primal Functions: nested "
                "transformations (jax.jit / jax.vmap / jax.grad of jax.grad) over a Function "
                "argument are not supported; use functional_grad / functional_jvp")
        tout = jvp_rules[self.op](out, tans)
        if tout is None:
            return out, Zero(_aval_of(out))
        return out, tout

    def transpose(self, ct: Any, *args: Any, static: _Static) -> list[Any]:
        undefined = [jax.interpreters.ad.is_undefined_primal(a) for a in args]
        if isinstance(ct, Zero):
            return [None] * len(args)
        if self.op == "invoke":
            raise NotTransposableError(
                "jax.grad: the functional evaluates a Function at a point (invoke); the "
                "functional derivative of a point value is a Dirac delta, which is not a "
                "Function. Use jax.jvp / functional_jvp for directional derivatives, or "
                "integrate against a narrow kernel instead")
        if self.op == "integrate_full":
            f_aval = args[0].aval
            entries = static.value["grid"]
            grid = ops.Grid.from_entries(list(entries))
            return [ops.constant(ct, f_aval.arg_spec, grid)]  # T(int)(c) = x -> c
        operands = [_standin(a.aval) if u else a for a, u in zip(args, undefined)]
        node = self._apply(operands, static)
        rule = transpose_rules[self.op]
        return [rule(node, ct, i, undefined) if u else None for i, u in enumerate(undefined)]


def _core(name: str) -> Any:
    return getattr(ops, f"_{name}_core")


PRIMITIVES: dict[str, _OperatorPrimitive] = {
    name: _OperatorPrimitive(name, _core(name))
    for name in ("compose", "nabla", "linearize", "linear_transpose", "integrate",
                 "partial", "broadcast_arg", "permute_args", "zip", "add")
}
# operators whose result is an array, not a Function
_ARRAY_OPS = ("integrate_full", "invoke")
for _name in _ARRAY_OPS:
    PRIMITIVES[_name] = _OperatorPrimitive(_name, None)


def bind(op: str, operands: list[Any], params: dict[str, Any]) -> Any:
    """Bind operator ``op`` (called by :mod:`.operators` when an operand is traced)."""
    return PRIMITIVES[op].bind(*operands, static=_Static(params))
