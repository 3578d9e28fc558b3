"""Functional derivatives: ``functional_grad(F)(f)`` and ``functional_jvp`` (paper Sec. 3.2-3.3).

The version-independent core of the paper's "jax.grad of a functional": no JAX internals.

How a functional derivative is taken (reverse mode = linearize, then transpose, as in JAX):

1. Each differentiated Function ``f`` gets a fresh alias node ``v`` (so the same Function
   passed twice gets two independent gradients). ``F`` is run once; every *full* integral it
   takes is recorded as (integrand g_j, quadrature, value I_j).
2. The scalar post-processing of the integrals (``F = G(I_1, ..., I_m)``, any jax.numpy code)
   is differentiated by ``jax.grad``: ``F`` is re-run with each integral replaced by an input,
   giving ``c_j = dG/dI_j``.
3. JVP rules (:mod:`.rules`) turn each integrand's graph into a *linear* graph in a placeholder
   tangent ``dv``; the transpose of a full integral maps ``c_j`` to the constant function
   ``x -> c_j``; transpose rules push these cotangent Functions back to ``dv``. The sum that
   arrives at ``dv`` is dF/df, a Function.

Limits (raised, never silent where detectable): the functional must be deterministic in the
integrals it takes; gradients do not flow through an integral's *value* that is fed back into
a Function (e.g. ``f * integrate(f)``); the coefficients c_j enter the returned gradient as
constants, so differentiating a returned gradient again (second order, e.g. with
``functional_jvp``) is exact when F is a sum of integrals (c_j independent of f, as for every
functional in :mod:`.applications`) and misses the d c_j / df term otherwise; operators
without a transpose rule raise
:class:`~.rules.NotTransposableError` naming the operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from .function import (
    Function,
    eval_guard,
    next_uid,
    point_evaluation_message,
    specs_match,
    with_grid,
)
from .operators import (
    PointEvaluation,
    _IntegralHook,
    add,
    constant,
    integral_hook,
    integrate,
    invoke,
    zeros_like,
)
from .rules import NotTransposableError, jvp_rules, transpose_rules

__all__ = ["functional_grad", "functional_jvp", "functional_value_and_grad"]


def _flatten_functions(tree: Any, what: str) -> tuple[list[Function], Any]:
    leaves, treedef = jax.tree_util.tree_flatten(tree, is_leaf=lambda x: isinstance(x, Function))
    for leaf in leaves:
        if not isinstance(leaf, Function):
            raise TypeError(f"{what} must be a Function (or a tuple/list/dict of Functions), "
                            f"got a leaf of type {type(leaf).__name__}")
    if not leaves:
        raise TypeError(f"{what} must contain at least one Function")
    return leaves, treedef


def _alias(f: Function) -> Function:
    return Function.node("alias", (f,), {}, lambda *x: f(*x), f.arg_spec, f.ret_spec, f.grid,
                         name=f.name)


def _placeholder(f: Function) -> Function:
    def body(*x: Any) -> Any:
        raise RuntimeError("internal: a tangent placeholder was evaluated")
    return Function.node("tangent_var", (), {}, body, f.arg_spec, f.ret_spec, f.grid,
                         name=f"d{f.name}")


def _postorder(roots: Sequence[Function], targets: dict[int, int], min_uid: int
               ) -> tuple[dict[int, bool], list[Function]]:
    """Nodes that depend on ``targets`` (operands before users) and the dependence map.

    Nodes made before ``min_uid`` cannot depend on targets made after it: they are pruned,
    which keeps the walk proportional to what ``F`` built, not to the whole history.
    """
    dep: dict[int, bool] = {}
    order: list[Function] = []

    def leaf_state(node: Function) -> bool | None:
        if id(node) in targets:
            return True
        if node.uid < min_uid:
            return False
        return None

    for root in roots:
        if id(root) in dep:
            continue
        state = leaf_state(root)
        if state is not None:
            dep[id(root)] = state
            if state:
                order.append(root)
            continue
        stack = [(root, iter(root.operands))]
        while stack:
            node, it = stack[-1]
            pushed = False
            for child in it:
                if id(child) in dep:
                    continue
                state = leaf_state(child)
                if state is not None:
                    dep[id(child)] = state
                    if state:
                        order.append(child)
                    continue
                stack.append((child, iter(child.operands)))
                pushed = True
                break
            if not pushed:
                stack.pop()
                d = any(dep[id(op)] for op in node.operands)
                dep[id(node)] = d
                if d:
                    order.append(node)
    return dep, order


def _tangents(order: Sequence[Function], dep: dict[int, bool],
              seeds: dict[int, Function]) -> dict[int, Function | None]:
    """Apply the JVP rules in topological order; ``seeds`` maps var id -> its tangent."""
    tan: dict[int, Function | None] = {}
    for node in order:
        if id(node) in seeds:
            tan[id(node)] = seeds[id(node)]
            continue
        rule = jvp_rules.get(node.op)
        if rule is None:
            raise NotImplementedError(f"no JVP rule for operator {node.op!r} ({node.name})")
        tan[id(node)] = rule(node, [tan.get(id(op)) if dep[id(op)] else None
                                    for op in node.operands])
    return tan


def _transpose(outputs: Sequence[tuple[Function, Function]], placeholders: Sequence[Function],
               min_uid: int) -> list[Function | None]:
    """Transpose the linear graph: cotangents of ``outputs`` -> cotangents of placeholders."""
    targets = {id(p): i for i, p in enumerate(placeholders)}
    dep, order = _postorder([t for t, _ in outputs], targets, min_uid)
    ct: dict[int, Function] = {}
    for t, h in outputs:
        ct[id(t)] = h if id(t) not in ct else add(ct[id(t)], h)
    for node in reversed(order):  # users before operands
        h = ct.get(id(node))
        if h is None or id(node) in targets:
            continue
        rule = transpose_rules.get(node.op)
        if rule is None:
            raise NotImplementedError(f"no transpose rule for operator {node.op!r} "
                                      f"({node.name})")
        linear = [dep[id(op)] for op in node.operands]
        for idx, op in enumerate(node.operands):
            if not linear[idx]:
                continue
            contrib = rule(node, h, idx, linear)
            ct[id(op)] = contrib if id(op) not in ct else add(ct[id(op)], contrib)
    return [ct.get(id(p)) for p in placeholders]


def _check_scalar(out: Any, who: str) -> None:
    if isinstance(out, Function):
        raise TypeError(f"{who}: the functional returned a Function, not a scalar; a functional "
                        "must map functions to a number (e.g. end with integrate(...))")
    try:
        shape = jnp.shape(out)
        dtype = jnp.result_type(out)
    except TypeError:
        raise TypeError(f"{who}: the functional must return a scalar array, got "
                        f"{type(out).__name__}") from None
    if shape != ():
        raise ValueError(f"{who}: the functional must return a scalar (shape ()), got shape "
                         f"{shape}; reduce it (e.g. jnp.sum) or differentiate each component")
    if not jnp.issubdtype(dtype, jnp.inexact):
        raise TypeError(f"{who}: the functional must return a floating-point scalar, got {dtype}")


def _prepare(args: tuple[Any, ...], argnums: int, who: str
             ) -> tuple[list[Function], Any, list[Function], tuple[Any, ...], int]:
    if isinstance(argnums, bool) or not isinstance(argnums, int):
        raise TypeError(f"{who}: argnums must be an int, got {argnums!r}")
    if not 0 <= argnums < len(args):
        raise ValueError(f"{who}: argnums={argnums} but only {len(args)} argument(s) given")
    leaves, treedef = _flatten_functions(args[argnums], f"{who}: argument {argnums}")
    marker = next_uid()
    aliases = [_alias(f) for f in leaves]
    new_args = list(args)
    new_args[argnums] = jax.tree_util.tree_unflatten(treedef, aliases)
    return leaves, treedef, aliases, tuple(new_args), marker


def _point_guard(targets: set[int], min_uid: int, who: str) -> Callable[[Function], None]:
    """Raise when F evaluates (outside the operators) a Function that depends on a target."""
    memo: dict[int, bool] = {}

    def depends(root: Function) -> bool:
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in memo:
                stack.pop()
                continue
            if id(node) in targets:
                memo[id(node)] = True
            elif node.uid < min_uid:
                memo[id(node)] = False
            else:
                todo = [op for op in node.operands if id(op) not in memo]
                if todo:
                    stack.extend(todo)
                    continue
                memo[id(node)] = any(memo[id(op)] for op in node.operands)
            stack.pop()
        return memo[id(root)]

    def check(fn: Function) -> None:
        if depends(fn):
            raise TypeError(point_evaluation_message(who, fn.name))
    return check


def _run_recording(F: Callable[..., Any], args: tuple[Any, ...], who: str,
                   targets: set[int], min_uid: int) -> tuple[Any, _IntegralHook]:
    hook = _IntegralHook()
    with integral_hook(hook), eval_guard(_point_guard(targets, min_uid, who)):
        out = F(*args)
    _check_scalar(out, who)
    return out, hook


def _integral_cotangents(F: Callable[..., Any], args: tuple[Any, ...], values: list[Any]
                         ) -> list[Any]:
    """c_j = dG/dI_j: F re-run with its integrals replaced by differentiable inputs."""
    if not values:
        return []

    def G(vals: list[Any]) -> Any:
        hook = _IntegralHook(values=vals)
        with integral_hook(hook):
            out = F(*args)
        if hook.position != len(vals):
            raise RuntimeError("the functional made fewer integrals on its second run than on "
                               "its first; functional_grad needs a deterministic F")
        return out
    return jax.grad(G)(values)


def functional_value_and_grad(F: Callable[..., Any], argnums: int = 0
                              ) -> Callable[..., tuple[Any, Any]]:
    """Like :func:`functional_grad` but also returns F's value."""
    if not callable(F):
        raise TypeError(f"F must be callable, got {type(F).__name__}")
    who = "functional_grad"

    def value_and_grad(*args: Any) -> tuple[Any, Any]:
        leaves, treedef, aliases, new_args, marker = _prepare(args, argnums, who)
        targets = {id(a): i for i, a in enumerate(aliases)}
        out, hook = _run_recording(F, new_args, who, set(targets), marker)
        integrands = [g for g, _, _ in hook.records]
        dep, order = _postorder(integrands, targets, marker)
        cts = _integral_cotangents(F, new_args, [v for _, _, v in hook.records])
        grads: list[Function | None]
        if not any(dep[id(g)] for g in integrands):
            grads = [None] * len(aliases)
        else:
            tmarker = next_uid()
            placeholders = [_placeholder(a) for a in aliases]
            tan = _tangents(order, dep, {id(a): p for a, p in zip(aliases, placeholders)})
            outputs = []
            for (g, how, _), c in zip(hook.records, cts):
                t = tan.get(id(g)) if dep[id(g)] else None
                if t is not None and isinstance(how, PointEvaluation):
                    raise NotTransposableError(
                        f"{who}: the functional evaluates {g.name} at a point (invoke); the "
                        "functional derivative of a point value is a Dirac delta, which is "
                        "not a Function. Use functional_jvp for directional derivatives, or "
                        "integrate against a narrow kernel instead")
                if t is not None:
                    # T(integrate)(c) = the constant function x -> c
                    outputs.append((t, constant(c, g.arg_spec, g.grid)))
            grads = _transpose(outputs, placeholders, tmarker) if outputs else [None] * len(
                aliases)
        result = []
        for f, gr in zip(leaves, grads):
            gr = zeros_like(f) if gr is None else gr
            gr = with_grid(gr, f.grid)
            gr.name = f"δF/δ{f.name}"
            result.append(gr)
        return out, jax.tree_util.tree_unflatten(treedef, result)

    return value_and_grad


def functional_grad(F: Callable[..., Any], argnums: int = 0) -> Callable[..., Any]:
    """dF/df as a callable Function: ``functional_grad(F)(f)(x)``.

    F: a functional, ``F(*args) -> scalar``; argument ``argnums`` is a Function (or a
       tuple/list/dict of Functions, then the gradient has the same structure).
    Returns a function of the same arguments returning the functional derivative, a Function
    with f's signature and grid (JIT-able: ``jax.jit(grad_fn)(x)``).

    Raises TypeError for a non-Function argument or a functional returning a Function,
    ValueError for a non-scalar functional, NotTransposableError for operators that cannot be
    transposed (e.g. compose with respect to its outer function).
    """
    value_and_grad = functional_value_and_grad(F, argnums)

    def grad(*args: Any) -> Any:
        return value_and_grad(*args)[1]
    return grad


def functional_jvp(F: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
                   ) -> tuple[Any, Any]:
    """Forward mode: (F(f), dF[f; df]) = (F(f), d/de F(f + e df) at e = 0).

    primals: the arguments of F (a tuple); Functions among them may get tangents.
    tangents: same structure as primals, a tangent Function for every Function in primals
        (``None`` entries are zero tangents); non-Function primals must get ``None``.
    """
    if not callable(F):
        raise TypeError(f"F must be callable, got {type(F).__name__}")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("functional_jvp: primals and tangents must be tuples")
    if len(primals) != len(tangents):
        raise ValueError(f"functional_jvp: {len(primals)} primals but {len(tangents)} tangents")
    marker = next_uid()
    new_args, seeds = [], {}
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if isinstance(p, Function):
            a = _alias(p)
            if t is not None:
                if not isinstance(t, Function):
                    raise TypeError(f"functional_jvp: tangent {i} must be a Function, got "
                                    f"{type(t).__name__}")
                if not (specs_match(t.arg_spec, p.arg_spec)
                        and specs_match(t.ret_spec, p.ret_spec)):
                    raise ValueError(f"functional_jvp: mismatched specs: tangent {i} is "
                                     f"{t!r} but primal {i} is {p!r}")
                # the tangent's own grid plays no part (integrals use the primal's grid)
                seeds[id(a)] = t if t.grid is p.grid else with_grid(t, p.grid)
            new_args.append(a)
        else:
            if t is not None:
                raise TypeError(f"functional_jvp: primal {i} is not a Function; its tangent "
                                "must be None")
            new_args.append(p)
    who = "functional_jvp"
    out, hook = _run_recording(F, tuple(new_args), who, set(seeds), marker)
    integrands = [g for g, _, _ in hook.records]
    targets = {k: 0 for k in seeds}
    dep, order = _postorder(integrands, targets, marker)
    tan = _tangents(order, dep, {k: v for k, v in seeds.items()})
    d_integrals = []
    for g, entries, v in hook.records:
        t = tan.get(id(g)) if dep.get(id(g)) else None
        if t is None:
            d_integrals.append(jnp.zeros_like(v))
        elif isinstance(entries, PointEvaluation):
            with integral_hook(None):
                d_integrals.append(invoke(t, *entries.args))  # d g(x0) = dg(x0)
        else:
            with integral_hook(None):
                d_integrals.append(integrate(t, grid=list(entries)))  # d int g = int dg
    if not hook.records:
        return out, jnp.zeros_like(out)
    values = [v for _, _, v in hook.records]

    def G(vals: list[Any]) -> Any:
        h = _IntegralHook(values=vals)
        with integral_hook(h):
            return F(*new_args)
    return jax.jvp(G, (values,), (d_integrals,))
