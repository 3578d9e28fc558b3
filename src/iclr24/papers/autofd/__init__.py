"""Automatic Functional Differentiation in JAX (Lin, ICLR 2024; arXiv 2311.18727).

Functions are treated as generalized arrays (one continuous index per argument), and five
higher-order primitive operators, each with a linearization (JVP) rule and a transposition
rule, make reverse-mode autodiff of *functionals* return the functional derivative as a
callable function. This package is a usable library, not only a reproduction.

Usage: differentiate your own functional in three lines::

    import jax, jax.numpy as jnp
    from iclr24.papers.autofd import Function, Grid, compose, gauss_legendre, integrate, nabla

    x, w = gauss_legendre(64, -3.0, 3.0)
    f = Function(lambda x: jnp.exp(-x**2), arg_spec=[()], ret_spec=(), grid=Grid((x,), (w,)))

    F = lambda f: integrate(compose(lambda v, dv: v**4 + 0.5 * dv**2, f, nabla(f)))  # 1
    dF = jax.grad(F)(f)            # 2: a Function: x -> 4 f(x)^3 - f''(x)
    dF(0.5), jax.jit(jax.vmap(dF))(jnp.linspace(-1, 1, 9))                             # 3

``functional_grad(F)(f)`` does the same without going through ``jax.grad`` (and also accepts
tuples of Functions); ``functional_jvp(F, (f,), (df,))`` is forward mode. Use float64
(``with jax.enable_x64(True):``) when you need 1e-15-level agreement.

How the code maps to the paper:
    function.py        Sec. 3.1  Function (arg_spec/ret_spec = the generalized array's shape),
                                 Grid, ``function``/``with_spec`` decorators, call caching
                                 (Sec. 3.3) with ``call_cache`` and ``count_calls``.
    operators.py       Sec. 3.2  compose, nabla, linearize, linear_transpose, integrate and the
                                 structural helpers partial, broadcast_arg, permute_args,
                                 zip_functions/split, add (+ arithmetic, ``fnp.exp(f)``),
                                 braket, invoke (point value; forward mode only).
    rules.py           Table 1   every operator's JVP and transpose rule, written once.
    autodiff.py        Sec. 3    functional_grad / functional_value_and_grad / functional_jvp:
                                 linearize with the JVP rules, transpose the linear graph.
    jax_integration.py Sec. 3    the operators as JAX primitives on JAX 0.10.2 (hijax API), so
                                 ``jax.grad(F)(f)`` returns a Function (limits listed there:
                                 no jax.jit/vmap *over* Function arguments; jit the result).
    applications.py    Sec. 4    brachistochrone functional, LDA exchange, von Weizsaecker,
                                 nonlocal energy, neural-functional kernel layer.
    compile_cache.py             compiled programs cached by the structure of the graph (a
                                 new Function of the same structure reuses the program).
    quadrature.py                Gauss-Legendre, x = s^2 substitution, product grids.
    claims.py                    exact_derivatives, brachistochrone, call_cache.

What differs from the paper's code (sail-sg/autofd): its ``jax.grad`` path relies on JAX
internals removed after 0.4.30; here the rules live in a JAX-independent core and the JAX layer
uses the hijax extension API of the pinned JAX 0.10.2. ``integrate`` without a grid raises
instead of returning a dummy 0; ``partial`` is not transposable (its adjoint is a Dirac delta)
and says so; compose is not transposable with respect to its outer function (needs an
inverse), as in the paper. The call cache memoizes calls within one top-level evaluation
(keyed by argument identity, tracers included) and concrete top-level calls and integrals run
through ``jax.jit`` programs cached by the graph's *structure* (an LRU of 256), instead of a
global LRU cache of jaxprs keyed by function hash. Scaled down in the claims: the
brachistochrone MLP is 2x32 (paper 3x128) trained 5000 steps (paper 10 000), on a
singularity-aware grid instead of the notebook's biased uniform grid; the neural functional
uses 3 steps on 100-node grids (smoke: 30). Side effects: importing this package registers
Function as a JAX type (``jax.experimental.hijax.register_hitype``); the first time a Function
enters a JAX trace, ``jax.core.Tracer.__call__`` is defined (the official package does this at
import) so that ``u(0.3)`` on a traced Function raises a clear error and ``u(g)`` composes;
calling any other tracer still raises Python's "not callable", but ``callable(tracer)`` is then
True. Float64 is never switched on for you.

Guards against silent wrong answers (each raises, naming what to use instead): a body whose
value does not match its ``ret_spec``; a functional that evaluates the function being
differentiated at points (``u(0.3)``, a hand-written ``jnp.sum(w * jax.vmap(u)(x))``) instead of
through the operators; functions on different grids combined (the integral would depend on the
operand order).
"""

from .applications import (
    LDA_EXCHANGE_CONSTANT,
    brachistochrone_functional,
    brachistochrone_integrand,
    brachistochrone_travel_time,
    cycloid,
    kernel_layer,
    lda_exchange,
    nonlocal_energy,
    von_weizsacker,
)
from .autodiff import functional_grad, functional_jvp, functional_value_and_grad
from .compile_cache import (
    CompileCacheInfo,
    clear_compile_cache,
    compile_cache_info,
    compiler_options,
)
from .function import (
    CallCounter,
    Function,
    Grid,
    Spec,
    call_cache,
    count_calls,
    function,
    with_grid,
    with_spec,
)
from .jax_integration import FunctionType
from .operators import (
    add,
    braket,
    broadcast_arg,
    compose,
    constant,
    fnp,
    integrate,
    invoke,
    linear_transpose,
    linearize,
    nabla,
    partial,
    permute_args,
    pointwise,
    split,
    zeros_like,
    zip_functions,
)
from .quadrature import gauss_legendre, grid_1d, product_grid, sqrt_substitution
from .rules import NotTransposableError

__all__ = [
    "LDA_EXCHANGE_CONSTANT",
    "CallCounter",
    "CompileCacheInfo",
    "Function",
    "FunctionType",
    "Grid",
    "NotTransposableError",
    "Spec",
    "add",
    "brachistochrone_functional",
    "brachistochrone_integrand",
    "brachistochrone_travel_time",
    "braket",
    "broadcast_arg",
    "call_cache",
    "clear_compile_cache",
    "compile_cache_info",
    "compiler_options",
    "compose",
    "constant",
    "count_calls",
    "cycloid",
    "fnp",
    "function",
    "functional_grad",
    "functional_jvp",
    "functional_value_and_grad",
    "gauss_legendre",
    "grid_1d",
    "integrate",
    "invoke",
    "kernel_layer",
    "lda_exchange",
    "linear_transpose",
    "linearize",
    "nabla",
    "nonlocal_energy",
    "partial",
    "permute_args",
    "pointwise",
    "product_grid",
    "split",
    "sqrt_substitution",
    "von_weizsacker",
    "with_grid",
    "with_spec",
    "zeros_like",
    "zip_functions",
]
