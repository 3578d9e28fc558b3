"""Linearization (JVP) and transposition rules of every operator (paper Sec. 3.2, Table 1).

Written once, over Function nodes, with no JAX internals: a JVP rule maps a node and its
operands' tangent Functions (``None`` = zero) to the node's tangent Function; a transpose rule
maps a node that is linear in operand ``i`` and a cotangent Function ``h`` (same signature as
the node) to the cotangent of operand ``i``. Reverse mode = apply the JVP rules, then transpose
the resulting linear graph (:mod:`.autodiff`), exactly as JAX does for arrays.

Rules (paper's notation, h the cotangent):
    compose   d(f o g) = df o g + [x -> d f(g(x)) . dg(x)]  = compose(linearize(f, i), g, dg)
              T wrt dg: x -> (d f(g(x)))^T h(x)              = compose(linear_transpose(.), g, h)
              T wrt df: needs g^{-1}  -> NotImplementedError (as in the paper's code)
    nabla     linear; T: h -> -div h (integration by parts; boundary terms dropped)
    linearize, linear_transpose: linear in f, JVP = same op on df; T: NotImplementedError
    integrate linear; T: h -> h broadcast along the integrated arguments
    broadcast_arg  linear; T: h -> integrate h over the broadcast arguments
    permute_args   linear; T: inverse permutation
    zip / split    transposes of each other; add: h -> (h, h)
    partial   linear; T would be h (x) delta_a (a Dirac delta) -> NotImplementedError
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from .function import Function, Grid, Spec
from .operators import (
    add,
    broadcast_arg,
    compose,
    integrate,
    item_getter,
    linear_transpose,
    linearize,
    nabla,
    partial,
    permute_args,
    pointwise,
    zeros_like,
    zip_functions,
)

__all__ = ["NotTransposableError", "jvp_rules", "sum_functions", "transpose_rules"]


class NotTransposableError(NotImplementedError):
    """An operator cannot be transposed with respect to the requested operand."""


def sum_functions(terms: list[Function]) -> Function | None:
    out = None
    for t in terms:
        out = t if out is None else add(out, t)
    return out


# --------------------------------------------------------------------------------------------
# JVP rules: (node, [tangent of each operand or None]) -> tangent of node or None
# --------------------------------------------------------------------------------------------

def _jvp_compose(node: Function, tangents: list[Function | None]) -> Function | None:
    f, *gs = node.operands
    tf, *tgs = tangents
    terms = []
    if tf is not None:
        terms.append(compose(tf, *gs))  # df o g
    for i, tg in enumerate(tgs):
        if tg is not None:
            terms.append(compose(linearize(f, i), *gs, tg))  # d_i f(g(x)) . dg_i(x)
    return sum_functions(terms)


def _jvp_add(node: Function, tangents: list[Function | None]) -> Function | None:
    return sum_functions([t for t in tangents if t is not None])


def _jvp_alias(node: Function, tangents: list[Function | None]) -> Function | None:
    return tangents[0]


def _jvp_same_op(build: Callable[[Function, Function], Function]
                 ) -> Callable[[Function, list[Function | None]], Function | None]:
    def rule(node: Function, tangents: list[Function | None]) -> Function | None:
        return None if tangents[0] is None else build(node, tangents[0])
    return rule


def _jvp_zip(node: Function, tangents: list[Function | None]) -> Function | None:
    if all(t is None for t in tangents):
        return None
    return zip_functions(*[zeros_like(f) if t is None else t
                           for f, t in zip(node.operands, tangents)])


jvp_rules: dict[str, Callable[[Function, list[Function | None]], Function | None]] = {
    "compose": _jvp_compose,
    "add": _jvp_add,
    "alias": _jvp_alias,
    "zip": _jvp_zip,
    # linear operators: the tangent is the same operator applied to the operand's tangent
    "nabla": _jvp_same_op(lambda n, t: nabla(t, n.params["argnums"], n.params["method"])),
    "linearize": _jvp_same_op(lambda n, t: linearize(t, n.params["argnums"])),
    "linear_transpose": _jvp_same_op(lambda n, t: linear_transpose(t, n.params["argnums"])),
    "integrate": _jvp_same_op(lambda n, t: integrate(t, n.params["argnums"],
                                                     grid=n.params["entries"])),
    "broadcast_arg": _jvp_same_op(lambda n, t: broadcast_arg(t, n.arg_spec,
                                                             n.params["argnums"], grid=n.grid)),
    "permute_args": _jvp_same_op(lambda n, t: permute_args(t, n.params["perm"])),
    "partial": _jvp_same_op(lambda n, t: partial(t, n.params["args"], n.params["argnums"])),
}


# --------------------------------------------------------------------------------------------
# transpose rules: (node, cotangent h, operand index, [operand is linear?]) -> operand cotangent
# --------------------------------------------------------------------------------------------

def _t_compose(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    f, *gs = node.operands
    if idx == 0:
        outer = "its outer function" if f.op == "standin" else f"the outer function {f.name}"
        raise NotTransposableError(
            f"cannot transpose compose(f, g, ...) with respect to {outer}: that needs the inverse of the inner function(s) (h o g^-1 |det dg^-1|), "
            "which autofd does not construct. This happens when the functional applies the "
            "function being differentiated to another function, e.g. f(g(x)) differentiated "
            "with respect to f.")
    i = idx - 1
    others = [g for j, g in enumerate(gs) if j != i]
    if any(linear[1 + j] for j in range(len(gs)) if j != i):
        raise NotTransposableError(
            f"compose({f.name}, ...) depends on the differentiated function through more than "
            "one inner function in a linear position; this is not a linear map of one of them")
    # T: x -> (d f(g(x)) / d g_i)^T h(x)
    return compose(linear_transpose(f, i), *others, h)


def _t_add(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    return h


def _t_nabla(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    f = node.operands[0]
    k = node.params["argnums"]
    arg_shape = f.arg_spec[k].shape
    n = math.prod(arg_shape)
    ret_shape = f.ret_spec.shape

    def neg_trace(j: Any) -> Any:  # -div h = -sum_a d h[..., a] / d x_a
        m = j.reshape(ret_shape + (n, n))
        return -jnp.trace(m, axis1=-2, axis2=-1)
    neg_trace.__name__ = "neg_div"
    return compose(pointwise(neg_trace, [Spec(ret_shape + arg_shape + arg_shape,
                                              f.ret_spec.dtype)]), nabla(h, k, node.params["method"]))


def _t_integrate(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    f = node.operands[0]
    integrated = node.params["argnums"]
    rest = tuple(i for i in range(len(f.arg_spec)) if i not in integrated)
    entries = [None] * len(f.arg_spec)
    for k, e in zip(integrated, node.params["entries"]):
        entries[k] = e
    # T(int . dx)(h) = h broadcast along the integrated arguments (keeping their grid)
    return broadcast_arg(h, f.arg_spec, rest, grid=Grid.from_entries(entries))


def _t_broadcast_arg(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    argnums = node.params["argnums"]
    others = tuple(i for i in range(len(node.arg_spec)) if i not in argnums)
    if not others:
        r = h
    else:
        entries = []
        for k in others:
            e = node.grid.entry(k) if node.grid is not None else None
            if e is None and h.grid is not None:
                e = h.grid.entry(k)
            if e is None:
                raise ValueError(
                    f"cannot transpose broadcast_arg({node.operands[0].name}): integrating a "
                    f"function with no grid - broadcast argument {k} has no quadrature grid; "
                    "give the target function a Grid for it")
            entries.append(e)
        r = integrate(h, others, grid=entries)  # T(broadcast)(h) = int h d(broadcast args)
    order = sorted(argnums)
    perm = tuple(order.index(k) for k in argnums)
    return r if perm == tuple(range(len(perm))) else permute_args(r, perm)


def _t_permute(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    perm = node.params["perm"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return permute_args(h, inverse)


def _t_zip(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    return compose(pointwise(item_getter(idx), [h.ret_spec], name=f"item{idx}"), h)


def _t_alias(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
    return h


def _not_transposable(op: str, why: str) -> Callable[..., Function]:
    def rule(node: Function, h: Function, idx: int, linear: list[bool]) -> Function:
        raise NotTransposableError(f"{op}({node.operands[0].name}) is not transposable with "
                                   f"respect to its function argument: {why}")
    return rule


transpose_rules: dict[str, Callable[[Function, Function, int, list[bool]], Function]] = {
    "compose": _t_compose,
    "add": _t_add,
    "alias": _t_alias,
    "nabla": _t_nabla,
    "integrate": _t_integrate,
    "broadcast_arg": _t_broadcast_arg,
    "permute_args": _t_permute,
    "zip": _t_zip,
    "linearize": _not_transposable("linearize", "not implemented (as in the paper's code)"),
    "linear_transpose": _not_transposable("linear_transpose",
                                          "not implemented (as in the paper's code)"),
    "partial": _not_transposable("partial", "the adjoint of evaluating at a fixed point is a "
                                 "Dirac delta, which is not a Function"),
}
