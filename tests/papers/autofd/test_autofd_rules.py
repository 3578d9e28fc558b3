"""JVP rules against finite differences; transpose identities <T(h), v> = <h, L(v)>."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from iclr24.papers.autofd import (
    Function,
    Grid,
    broadcast_arg,
    compose,
    constant,
    functional_jvp,
    gauss_legendre,
    integrate,
    linear_transpose,
    linearize,
    nabla,
    partial,
    permute_args,
    product_grid,
    split,
    zip_functions,
)
from iclr24.papers.autofd.rules import transpose_rules

X, W = gauss_legendre(48, -7.0, 7.0)
G1 = Grid((X,), (W,))
G2 = Grid((X, X), (W, W))
X2, W2 = product_grid(*gauss_legendre(48, -5.0, 5.0), dim=2)
GV = Grid((X2,), (W2,))


def bumps(coef, centers, grid=G1):
    coef, centers = jnp.asarray(coef), jnp.asarray(centers)

    def fn(x):
        return jnp.sum(coef * jnp.exp(-((x - centers) ** 2)))
    return Function(fn, [()], (), grid, name="bumps")


def bumps2(coef, centers):
    coef, centers = jnp.asarray(coef), jnp.asarray(centers)

    def fn(x, y):
        return jnp.sum(coef * jnp.exp(-((x - centers) ** 2) - (y + 0.5 * centers) ** 2))
    return Function(fn, [(), ()], (), G2, name="bumps2")


def bumps_vec(coef, centers):
    coef, centers = jnp.asarray(coef), jnp.asarray(centers)

    def fn(r):
        return jnp.sum(coef * jnp.exp(-jnp.sum((r - centers) ** 2, axis=-1)))
    return Function(fn, [(2,)], (), GV, name="bumps_vec")


coefs = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)
cents = st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3)


def fd(F, f, g, eps=1e-5):
    return (F(f + eps * g) - F(f - eps * g)) / (2 * eps)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


# ---- JVP rules vs central finite differences -------------------------------------------------

FUNCTIONALS = {
    "compose+nabla": lambda f: integrate(compose(lambda a, b: jnp.sin(a) * b**2 + a**3, f,
                                                 nabla(f))),
    "nonlocal/broadcast": lambda f: integrate(
        Function(lambda x, y: jnp.exp(-((x - y) ** 2)), [(), ()], (), G2)
        * broadcast_arg(f, ([()] * 2), 0, grid=G2) * broadcast_arg(f, ([()] * 2), 1, grid=G2)),
    "partial integrate": lambda f: integrate(integrate(
        broadcast_arg(f, [(), ()], 1, grid=G2) ** 2
        * Function(lambda x, y: jnp.cos(x) * jnp.exp(-(y**2)), [(), ()], (), G2), argnums=1)
        ** 2),
    "permute": lambda f: integrate(permute_args(
        broadcast_arg(f, [(), ()], 0, grid=G2) * Function(
            lambda x, y: jnp.exp(-(x**2) - 2 * y**2) * (1 + x), [(), ()], (), G2), (1, 0)) ** 3),
    "linearize+partial": lambda f: integrate(partial(linearize(f), (1.0,), 1) ** 2
                                             * Function(lambda x: jnp.exp(-(x**2)), [()], (),
                                                        G1)),
    "zip/split": lambda f: integrate(compose(lambda a, b: a * jnp.tanh(b),
                                             *split(zip_functions(f, f**2)))),
}


@pytest.mark.parametrize("name", list(FUNCTIONALS))
def test_jvp_matches_finite_differences(name):
    F = FUNCTIONALS[name]
    f = bumps([0.7, -0.3, 0.5], [0.1, -0.8, 1.0])
    g = bumps([0.2, 0.4, -0.6], [0.5, -0.2, -1.1])
    value, tangent = functional_jvp(F, (f,), (g,))
    np.testing.assert_allclose(value, F(f), rtol=1e-12)
    np.testing.assert_allclose(tangent, fd(F, f, g), rtol=1e-6, atol=1e-9)


def test_jvp_through_linear_transpose():
    s = Function(lambda x: jnp.exp(-(x**2)) * (1 + x), [()], (), G1)

    def F(f):
        lin = Function(lambda x, a: a * f(x), [(), ()], (), G2)  # linear in a
        return integrate(partial(linear_transpose(lin, 1), (1.0,), 1) * s)
    # int f(x) s(x) dx is linear: the JVP is the functional itself at g
    f = bumps([0.7, -0.3, 0.5], [0.1, -0.8, 1.0])
    g = bumps([0.2, 0.4, -0.6], [0.5, -0.2, -1.1])
    value, _ = functional_jvp(F, (f,), (g,))
    np.testing.assert_allclose(value, integrate(f * s), rtol=1e-12)
    # linear_transpose's JVP rule: d(linear_transpose(lin_f)) = linear_transpose(lin_dg)
    lt = linear_transpose(Function(lambda x, a: a * g(x), [(), ()], (), G2), 1)
    np.testing.assert_allclose(lt(0.3, 1.0), g(0.3), rtol=1e-12)


# ---- transpose identities -------------------------------------------------------------------

def inner(h, v):
    return float(integrate(h * v))


def transpose_of(node, h, idx=0):
    linear = [i == idx for i in range(len(node.operands))]
    return transpose_rules[node.op](node, h, idx, linear)


@settings(max_examples=4, deadline=None, derandomize=True, phases=[Phase.generate])
@given(coefs, cents, coefs, cents)
def test_transpose_nabla_1d(a, m, b, n):
    v, h = bumps(a, m), bumps(b, n)
    L = nabla(v)
    T = transpose_of(L, h)  # -d/dx h
    np.testing.assert_allclose(inner(T, v), inner(h, L), rtol=1e-6, atol=1e-9)  # quadrature


@settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate])
@given(coefs, st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=2))
def test_transpose_nabla_vector_argument(a, shift):
    centers = jnp.asarray([[0.3, -0.2], [-0.5, 0.4], [0.1, 0.9]])
    v = bumps_vec(a, centers)
    # h: R^2 -> R^2 (the spec of nabla(v)); -div h pairs with grad v
    hv = Function(lambda r: jnp.array([jnp.exp(-jnp.sum((r - jnp.asarray(shift)) ** 2)),
                                       r[0] * jnp.exp(-jnp.sum(r**2))]), [(2,)], (2,), GV)
    L = nabla(v)
    T = transpose_of(L, hv)
    lhs = float(integrate(T * v))
    rhs = float(integrate(compose(jnp.dot, hv, L)))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-6, atol=1e-9)  # quadrature error only


@settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate])
@given(coefs, cents, coefs, cents)
def test_transpose_integrate_and_broadcast(a, m, b, n):
    v2, h1 = bumps2(a, m), bumps(b, n)
    L = integrate(v2, argnums=1)  # (Lv)(x) = int v(x, y) dy
    T = transpose_of(L, h1)  # (T h)(x, y) = h(x)
    np.testing.assert_allclose(float(integrate(T * v2)), inner(h1, L), rtol=1e-10)
    v1, h2 = bumps(a, m), bumps2(b, n)
    B = broadcast_arg(v1, h2, 1)  # (Bv)(x, y) = v(y)
    TB = transpose_of(B, h2)  # (T h)(y) = int h(x, y) dx
    np.testing.assert_allclose(inner(TB, v1), float(integrate(h2 * B)), rtol=1e-10)


@settings(max_examples=3, deadline=None, derandomize=True, phases=[Phase.generate])
@given(coefs, cents, coefs, cents)
def test_transpose_permute_compose_add(a, m, b, n):
    v2, h2 = bumps2(a, m), bumps2(b, n)
    P = permute_args(v2, (1, 0))
    TP = transpose_of(P, h2)
    np.testing.assert_allclose(float(integrate(TP * v2)), float(integrate(h2 * P)), rtol=1e-10)
    v, h = bumps(a, m), bumps(b, n)
    lin = Function(lambda u: 3.0 * u, [()], ())  # a pointwise linear outer function
    C = compose(lin, v)
    TC = transpose_of(C, h, idx=1)
    np.testing.assert_allclose(inner(TC, v), inner(h, C), rtol=1e-10)
    g = bumps([1.0, 0.5, 0.2], [0.0, 0.3, -0.3])
    D = compose(linearize(Function(jnp.sin, [()], ()), 0), g, v)  # x -> cos(g(x)) v(x)
    TD = transpose_of(D, h, idx=2)
    np.testing.assert_allclose(inner(TD, v), inner(h, D), rtol=1e-10)
    S = v + g  # add is linear in each operand
    np.testing.assert_allclose(inner(transpose_of(S, h), v), inner(h, v), rtol=1e-12)


def test_transpose_zip():
    v, u = bumps([0.5, 0.1, -0.2], [0.0, 1.0, -1.0]), bumps([0.3, 0.2, 0.1], [0.5, 0.0, 0.2])
    Z = zip_functions(v, u)
    h = zip_functions(bumps([1.0, 0.0, 0.0], [0.2, 0, 0]), bumps([0.0, 1.0, 0.0], [0, 0.3, 0]))
    T = transpose_of(Z, h, idx=0)
    h0, _ = split(h)
    np.testing.assert_allclose(inner(T, v), inner(h0, v), rtol=1e-12)


def test_transpose_of_full_integral_is_constant():
    c = jnp.asarray(2.5)
    v = bumps([0.5, 0.1, -0.2], [0.0, 1.0, -1.0])
    T = constant(c, v.arg_spec, v.grid)
    np.testing.assert_allclose(inner(T, v), float(c * integrate(v)), rtol=1e-12)
