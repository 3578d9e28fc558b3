"""Answers that used to be silently wrong now raise, and unclear errors say what to do."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr24.papers.autofd import (
    Function,
    Grid,
    NotTransposableError,
    Spec,
    compose,
    functional_grad,
    functional_jvp,
    gauss_legendre,
    integrate,
    with_grid,
)

X, W = gauss_legendre(32, -4.0, 4.0)
G = Grid((X,), (W,))
S = Spec(())


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def gauss(grid=G):
    return Function(lambda x: jnp.exp(-(x**2)), [()], (), grid, name="rho")


# -- a body that does not return its ret_spec ---------------------------------------------------

def test_body_returning_another_shape_is_refused():
    f = Function(lambda x: x * jnp.ones(3), [S], S, G)
    with pytest.raises(ValueError, match=r"returned float64\[3\] but its ret_spec"):
        integrate(f)
    with pytest.raises(ValueError, match="ret_spec"):
        f(0.2)
    with pytest.raises(ValueError, match="ret_spec"):
        jax.vmap(f)(jnp.asarray(X))
    pair = Function(lambda x: (x, x), [()], ((), (2,)))
    with pytest.raises(ValueError, match="ret_spec"):
        pair(0.1)
    with pytest.raises(ValueError, match="dtype of the same kind"):
        Function(lambda x: x > 0, [()], ())(0.1)
    # float width follows JAX's x64 setting: a float32 spec may return float64
    assert Function(lambda x: jnp.sin(x), [Spec((), jnp.float32)], Spec((), jnp.float32))(
        jnp.float64(0.5)).dtype == jnp.float64


# -- functionals that evaluate the differentiated function outside the operators ----------------

def test_point_evaluation_in_a_functional_is_refused():
    f = gauss()
    point = lambda u: u(0.3)
    hand_quadrature = lambda u: jnp.sum(W * jax.vmap(u)(jnp.asarray(X)) ** 2)
    for F in (point, hand_quadrature):
        with pytest.raises(TypeError, match="Dirac-delta .* integrate"):
            functional_grad(F)(f)
        with pytest.raises(TypeError, match="invoke"):
            jax.grad(F)(f)
        with pytest.raises(TypeError, match="invoke"):
            functional_jvp(F, (f,), (gauss(),))
    # the hand-written quadrature written with the operators gives the right gradient
    dF = functional_grad(lambda u: integrate(u**2, grid=(X, W)))(f)
    np.testing.assert_allclose(float(dF(0.3)), 2 * np.exp(-0.09), rtol=1e-12)


def test_evaluating_other_functions_stays_allowed():
    f, k = gauss(), Function(lambda x: jnp.cos(x), [()], (), G)
    F = lambda u: integrate(u**2) * k(0.3)
    np.testing.assert_allclose(float(functional_grad(F)(f)(0.5)),
                               2 * np.exp(-0.25) * np.cos(0.3), rtol=1e-12)
    np.testing.assert_allclose(float(jax.grad(F)(f)(0.5)), 2 * np.exp(-0.25) * np.cos(0.3),
                               rtol=1e-12)


def test_traced_call_syntax():
    f, g = gauss(), Function(jnp.sin, [()], (), G)
    # u(g) on a traced u composes (and compose is not transposable in its outer function)
    with pytest.raises(NotTransposableError, match="outer function"):
        jax.grad(lambda u: integrate(u(g)))(f)
    with pytest.raises(TypeError, match="Tracer' object is not callable"):
        jax.grad(lambda a: a(1.0))(1.0)  # ordinary tracers keep Python's error


# -- functions on different grids -------------------------------------------------------------

def test_functions_on_different_grids_are_not_combined():
    xb, wb = gauss_legendre(5, -1.0, 1.0)
    ga, gb = gauss(), gauss(Grid((xb,), (wb,)))
    for build in (lambda: ga * gb, lambda: gb * ga, lambda: ga + gb, lambda: gb - ga):
        with pytest.raises(ValueError, match="different quadrature grids"):
            build()
    same = gauss(Grid((X.copy(),), (W.copy(),)))  # equal values in other arrays: one grid
    np.testing.assert_allclose(float(integrate(ga * same)), np.sqrt(np.pi / 2), rtol=1e-10)
    moved = with_grid(gb, ga.grid)  # the explicit way: put them on one grid first
    assert float(integrate(ga * moved)) == float(integrate(moved * ga))


# -- errors that used to be unclear -------------------------------------------------------------

def test_integrate_grid_argument_forms():
    f = Function(lambda x: jnp.exp(-(x**2)), [()], ())
    ref = float(np.sum(W * np.exp(-(X**2))))
    np.testing.assert_allclose(float(integrate(f, grid=(X, W))), ref, rtol=1e-12)
    np.testing.assert_allclose(float(integrate(f, grid=[(X, W)])), ref, rtol=1e-12)
    np.testing.assert_allclose(float(integrate(f, grid=G)), ref, rtol=1e-12)
    with pytest.raises(TypeError, match=r"grid must be a Grid, a \(nodes, weights\) pair"):
        integrate(f, grid=(X, W, W))
    with pytest.raises(ValueError, match=r"weights of shape \(n,\)"):
        integrate(f, grid=(X, W[:3]))
    two = Function(lambda x, y: jnp.exp(-(x**2) - y**2), [(), ()], ())
    with pytest.raises(TypeError, match="one \\(nodes, weights\\) pair per integrated"):
        integrate(two, grid=(X, W))
    np.testing.assert_allclose(float(integrate(two, grid=[(X, W), (X, W)])), ref**2, rtol=1e-12)


def test_vmap_over_functions_says_why():
    f = gauss()
    with pytest.raises(ValueError, match="is a Function, not an array"):
        jax.vmap(lambda u: integrate(u))(f)
    with pytest.raises(ValueError, match="not an array"):
        np.shape(f)


def test_linear_transpose_wrt_outer_function_of_compose():
    f, g = gauss(), Function(jnp.sin, [()], (), G)
    with pytest.raises(NotTransposableError, match="outer function"):
        jax.linear_transpose(lambda u: compose(u, g), f)(f)
    # with respect to a linear pointwise map it works: (2 u)^T h = 2 h
    (ct,) = jax.linear_transpose(lambda u: 2.0 * u, f)(g)
    np.testing.assert_allclose(float(ct(0.4)), 2 * np.sin(0.4), rtol=1e-12)
