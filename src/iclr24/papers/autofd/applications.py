"""The paper's applications as functionals (Sec. 4): variational problems, DFT, neural functionals.

Each function maps Functions to a number (or, for the kernel layer, to a Function) using only
the operators, so ``functional_grad`` and ``jax.grad`` differentiate them:

* :func:`brachistochrone_functional` - F(y) = int sqrt(1 + y'^2) / sqrt(-y) dx (Sec. 4.1);
  its functional derivative is the Euler-Lagrange expression dL/dy - d/dx dL/dy'.
* :func:`lda_exchange` - E_x = -(3/4)(3/pi)^(1/3) int rho^(4/3) (Sec. 4.2, local);
  v_x = dE_x/drho = -(3/pi)^(1/3) rho^(1/3).
* :func:`von_weizsacker` - T_W = (1/8) int |grad rho|^2 / rho (Sec. 4.2, semilocal).
* :func:`nonlocal_energy` - int int k(x, y) rho(x) rho(y) dx dy (Sec. 4.2, nonlocal).
* :func:`kernel_layer` - (T_k x)(y) = int k(y, x') x(x') dx' + b(y) (Sec. 4.3, neural
  functional), optionally followed by a pointwise activation.

Also the reference values of the brachistochrone claim (cycloid through (0,0) and (1,-1),
straight line) and an accurate quadrature of its travel-time functional for any curve.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from .function import Function
from .operators import _require_function, _signature, broadcast_arg, compose, integrate, nabla
from .quadrature import sqrt_substitution

__all__ = [
    "LDA_EXCHANGE_CONSTANT",
    "brachistochrone_functional",
    "brachistochrone_integrand",
    "brachistochrone_travel_time",
    "cycloid",
    "kernel_layer",
    "lda_exchange",
    "nonlocal_energy",
    "von_weizsacker",
]


def brachistochrone_integrand(y: Any, dy: Any) -> Any:
    """L(y, y') = sqrt(1 + y'^2) / sqrt(-y) (travel time x sqrt(2g) per unit x)."""
    return jnp.sqrt(1.0 + dy**2) / jnp.sqrt(-y)


def brachistochrone_functional(y: Function) -> Any:
    """F(y) = int sqrt(1 + y'(x)^2) / sqrt(-y(x)) dx on y's grid (y: R -> R, y < 0 inside).

    The value is only as good as y's grid: use :func:`~.quadrature.sqrt_substitution`
    (the integrand is singular like x^(-1/2) at the start point).
    """
    _check_scalar_function(y, "y")
    return integrate(compose(brachistochrone_integrand, y, nabla(y)))  # int L(y, y') dx


def brachistochrone_travel_time(y: Callable[[Any], Any], n: int = 400) -> float:
    """Accurate F(y) for a smooth curve y: [0, 1] -> R with y(0) = 0 (x = s^2 substitution).

    y: a JAX-differentiable scalar function (a Function or plain callable); y' by jax.grad.
    """
    nodes, weights = sqrt_substitution(n)

    @jax.jit
    def total(xs: Any, ws: Any) -> Any:
        dy = jax.vmap(jax.grad(lambda x: y(x)))(xs)
        return jnp.sum(ws * brachistochrone_integrand(jax.vmap(y)(xs), dy))
    return float(total(jnp.asarray(nodes), jnp.asarray(weights)))


def cycloid(x_end: float = 1.0, y_end: float = -1.0, n: int = 2001
            ) -> tuple[np.ndarray, np.ndarray, float]:
    """The brachistochrone through (0, 0) and (x_end, y_end): points (x, y) and its F value.

    x = r (t - sin t), y = -r (1 - cos t), t in [0, T]; F = sqrt(2 r) T (= 2.5819 for (1,-1)).
    """
    if not (x_end > 0 and y_end < 0):
        raise ValueError(f"need x_end > 0 and y_end < 0, got {x_end}, {y_end}")
    ratio = -y_end / x_end
    t_end = optimize.brentq(lambda t: (1 - math.cos(t)) - ratio * (t - math.sin(t)),
                            1e-6, 2 * math.pi - 1e-9)
    r = -y_end / (1 - math.cos(t_end))
    t = np.linspace(0.0, t_end, n)
    return r * (t - np.sin(t)), -r * (1 - np.cos(t)), math.sqrt(2 * r) * t_end


LDA_EXCHANGE_CONSTANT = -0.75 * (3.0 / math.pi) ** (1.0 / 3.0)


def lda_exchange(rho: Function) -> Any:
    """E_x[rho] = -(3/4)(3/pi)^(1/3) int rho(r)^(4/3) dr (Slater/Dirac LDA exchange)."""
    _check_scalar_function(rho, "rho")
    return integrate(compose(lambda r: LDA_EXCHANGE_CONSTANT * r ** (4.0 / 3.0), rho))


def von_weizsacker(rho: Function) -> Any:
    """T_W[rho] = (1/8) int |grad rho(r)|^2 / rho(r) dr (rho: R^d -> R, d = arg size)."""
    _check_scalar_function(rho, "rho")

    def t_w(r: Any, g: Any) -> Any:
        return jnp.sum(g**2) / r / 8.0  # |grad rho|^2 / (8 rho)
    return integrate(compose(t_w, rho, nabla(rho)))


def nonlocal_energy(rho: Function, k: Function) -> Any:
    """E[rho] = int int k(x, y) rho(x) rho(y) dx dy; k takes two arguments of rho's spec.

    dE/drho(x) = int (k(x, y) + k(y, x)) rho(y) dy (= 2 int k(x, y) rho(y) dy for symmetric k).
    """
    _check_scalar_function(rho, "rho")
    _require_function(k, "k", "nonlocal_energy")
    k_args, rho_args = _signature(k)[0], _signature(rho)[0]
    if len(k_args) != 2 or any(s.shape != rho_args[0].shape for s in k_args):
        raise ValueError(f"nonlocal_energy: mismatched argument specs: k must take two "
                         f"arguments of spec {rho_args[0]!r}, got {list(k_args)}")
    # k(x, y) rho(x) rho(y), then the double integral
    return integrate(k * broadcast_arg(rho, k, 0) * broadcast_arg(rho, k, 1))


def kernel_layer(k: Function, b: Function, x: Function,
                 activation: Callable[[Any], Any] | None = None) -> Function:
    """(T_k x)(y) = act( int k(y, x') x(x') dx' + b(y) ), a neural-functional layer.

    k: Function (y, x') -> value with a grid on its second argument; b: Function y -> value;
    x: Function x' -> value. Returns a Function of y.
    """
    for name, f in (("k", k), ("b", b), ("x", x)):
        _require_function(f, name, "kernel_layer")
    if len(_signature(k)[0]) != 2:
        raise ValueError(f"kernel_layer: k must take two arguments (y, x'), got "
                         f"{len(_signature(k)[0])}")
    xb = broadcast_arg(x, k, 1)  # (y, x') -> x(x')
    out = integrate(k * xb, argnums=1) + b  # int k(y, x') x(x') dx' + b(y)
    return out if activation is None else compose(activation, out)


def _check_scalar_function(f: Any, name: str) -> None:
    _require_function(f, name, "functional")
    ret = _signature(f)[1]
    if getattr(ret, "shape", None) != ():
        raise ValueError(f"{name} must return a scalar, its ret_spec is {ret!r}")
