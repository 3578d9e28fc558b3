"""functional_grad / functional_jvp and the jax.grad integration, on closed forms; every error."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr24.papers.autofd import (
    Function,
    Grid,
    NotTransposableError,
    add,
    brachistochrone_functional,
    compose,
    cycloid,
    fnp,
    functional_grad,
    functional_jvp,
    functional_value_and_grad,
    gauss_legendre,
    integrate,
    kernel_layer,
    lda_exchange,
    linearize,
    nabla,
    nonlocal_energy,
    partial,
    sqrt_substitution,
    von_weizsacker,
)

X, W = gauss_legendre(64, -4.0, 4.0)
G1 = Grid((X,), (W,))
XS = np.linspace(-1.5, 1.5, 7)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def gauss(grid=G1):
    return Function(lambda x: jnp.exp(-(x**2)), [()], (), grid, name="rho")


def evaluate(fn, xs):
    return np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(xs)))


def test_usage_example_from_docstring():
    f = gauss()
    F = lambda f: integrate(compose(lambda v, dv: v**4 + 0.5 * dv**2, f, nabla(f)))
    dF = jax.grad(F)(f)
    ref = 4 * np.exp(-3 * XS**2) - (4 * XS**2 - 2) * np.exp(-(XS**2))  # 4 f^3 - f''
    np.testing.assert_allclose(evaluate(dF, XS), ref, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(dF(0.5), ref[4 - 1] if False else (
        4 * np.exp(-0.75) - (1 - 2) * np.exp(-0.25)), rtol=1e-12)


def test_local_functional_both_routes():
    rho = gauss()
    ref = -((3 / math.pi) ** (1 / 3)) * np.exp(-(XS**2)) ** (1 / 3)
    for grad in (functional_grad(lda_exchange), jax.grad(lda_exchange)):
        g = grad(rho)
        assert isinstance(g, Function) and g.arg_spec == rho.arg_spec
        assert g.grid is not None  # the gradient lives on f's domain, with f's grid
        np.testing.assert_allclose(evaluate(g, XS), ref, rtol=1e-13)


def test_value_and_grad_and_jit_of_returned_gradient():
    rho = gauss()
    value, g = functional_value_and_grad(lda_exchange)(rho)
    np.testing.assert_allclose(value, lda_exchange(rho), rtol=1e-14)
    v2, g2 = jax.value_and_grad(lda_exchange)(rho)
    np.testing.assert_allclose(v2, value, rtol=1e-14)
    jitted = jax.jit(g2)
    np.testing.assert_allclose(jitted(0.3), g(0.3), rtol=1e-14)
    np.testing.assert_allclose(jax.jit(jax.vmap(g2))(jnp.asarray(XS)), evaluate(g, XS),
                               rtol=1e-14)


def test_semilocal_brachistochrone_euler_lagrange():
    nodes, weights = sqrt_substitution(40)
    y = Function(lambda x: -jnp.sin(jnp.pi * x / 2), [()], (), Grid((nodes,), (weights,)))
    L = lambda yy, p: jnp.sqrt(1 + p**2) / jnp.sqrt(-yy)

    def el(x):  # dL/dy - d/dx dL/dy', both by jax on the closed-form curve
        yy = lambda t: -jnp.sin(jnp.pi * t / 2)
        dy = jax.grad(yy)
        dl_dy = jax.grad(L, 0)(yy(x), dy(x))
        return dl_dy - jax.grad(lambda t: jax.grad(L, 1)(yy(t), dy(t)))(x)
    xs = np.linspace(0.1, 0.9, 9)
    g = functional_grad(brachistochrone_functional)(y)
    np.testing.assert_allclose(evaluate(g, xs), np.asarray(jax.vmap(el)(jnp.asarray(xs))),
                               rtol=1e-12)


def test_von_weizsacker_3d_closed_form():
    from iclr24.papers.autofd import product_grid
    pts, pw = product_grid(*gauss_legendre(6, -4.0, 4.0), dim=3)
    rho = Function(lambda r: jnp.exp(-jnp.sum(r**2)), [(3,)], (), Grid((pts,), (pw,)))
    rs = np.random.default_rng(0).normal(size=(5, 3)) * 0.7
    g = jax.grad(von_weizsacker)(rho)
    np.testing.assert_allclose(evaluate(g, rs), 1.5 - np.sum(rs**2, -1) / 2, rtol=1e-12)


def test_nonlocal_gradient_and_tuple_arguments():
    n, w = gauss_legendre(120, -6.0, 6.0)
    f = Function(lambda x: jnp.exp(-(x**2)), [()], (), Grid((n,), (w,)))
    k = Function(lambda x, y: jnp.exp(-((x - y) ** 2)), [(), ()], (), Grid((n, n), (w, w)))
    ref = 2 * np.sqrt(np.pi / 2) * np.exp(-(XS**2) / 2)
    np.testing.assert_allclose(evaluate(functional_grad(nonlocal_energy)(f, k), XS), ref,
                               rtol=1e-10)
    # gradient w.r.t. the kernel: dE/dk(x, y) = f(x) f(y)
    gk = functional_grad(nonlocal_energy, argnums=1)(f, k)
    np.testing.assert_allclose(gk(0.3, -0.2), np.exp(-0.09 - 0.04), rtol=1e-12)
    # the same Function passed twice gets two independent gradients
    gf, gk2 = jax.grad(lambda p: nonlocal_energy(*p))((f, k))
    np.testing.assert_allclose(gk2(0.3, -0.2), gk(0.3, -0.2), rtol=1e-12)
    np.testing.assert_allclose(evaluate(gf, XS), ref, rtol=1e-10)


def test_kernel_layer_forward_and_gradient():
    n = 40
    nodes = jnp.linspace(0.0, 1.0, n)
    w = jnp.ones(n) / n
    k = Function(lambda s, t: jnp.sin(s) + jnp.cos(t), [(), ()], (), Grid((nodes, nodes), (w, w)))
    b = Function(lambda t: t**2, [()], (), Grid((nodes,), (w,)))
    x = Function(lambda t: jnp.cos(3 * t), [()], (), Grid((nodes,), (w,)))
    out = kernel_layer(k, b, x)
    ref = np.sum(w * (np.sin(0.4) + np.cos(nodes)) * np.cos(3 * nodes)) + 0.16
    np.testing.assert_allclose(out(0.4), ref, rtol=1e-12)
    act = kernel_layer(k, b, x, jnp.tanh)
    np.testing.assert_allclose(act(0.4), np.tanh(ref), rtol=1e-12)
    # d/db int (T_k x)^2 = 2 (T_k x)
    gb = functional_grad(lambda b_: integrate(kernel_layer(k, b_, x) ** 2))(b)
    np.testing.assert_allclose(gb(0.4), 2 * ref, rtol=1e-12)


def test_functional_jvp_and_jax_jvp_agree_with_finite_differences():
    f = gauss()
    g = Function(lambda x: x * jnp.exp(-(x**2)) + 0.1, [()], (), G1)
    F = lambda f: jnp.log(integrate(fnp.exp(-f) * f**2))
    eps = 1e-5
    fd = (F(f + eps * g) - F(f - eps * g)) / (2 * eps)
    _, t = functional_jvp(F, (f,), (g,))
    np.testing.assert_allclose(t, fd, rtol=1e-7)
    _, t2 = jax.jvp(F, (f,), (g,))
    np.testing.assert_allclose(t2, fd, rtol=1e-7)
    # reverse mode agrees: <dF/df, g> = dF[f; g]
    gr = functional_grad(F)(f)
    np.testing.assert_allclose(integrate(gr * g), fd, rtol=1e-7)


def test_second_order_through_returned_gradient():
    f = gauss()
    v = Function(lambda x: jnp.exp(-((x - 0.3) ** 2)), [()], (), G1)
    g = Function(lambda x: jnp.cos(x) * jnp.exp(-(x**2)), [()], (), G1)
    cube = lambda f: integrate(f**3)  # noqa: E731; dF/df = 3 f^2, second variation 6 f g
    pairing = lambda f: integrate(functional_grad(cube)(f) * v)
    _, t = functional_jvp(pairing, (f,), (g,))
    np.testing.assert_allclose(t, integrate(6 * f * g * v), rtol=1e-12)


def test_call_syntax_and_operators_on_user_functions():
    f = gauss()
    F = lambda f: integrate(Function(jnp.sin, [()], ())(f) * f)
    g = functional_grad(F)(f)
    ff = np.exp(-(XS**2))
    np.testing.assert_allclose(evaluate(g, XS), np.cos(ff) * ff + np.sin(ff), rtol=1e-13)


# ---- errors -----------------------------------------------------------------------------------

def test_error_transpose_compose_outer_function():
    f = gauss()
    g = Function(lambda x: 0.5 * x, [()], (), G1)
    F = lambda f: integrate(compose(f, g))
    with pytest.raises(NotTransposableError, match="outer function"):
        functional_grad(F)(f)
    with pytest.raises(NotImplementedError, match="outer function"):
        jax.grad(F)(f)
    # forward mode needs no transpose and works
    _, t = functional_jvp(F, (f,), (f,))
    np.testing.assert_allclose(t, integrate(compose(f, g)), rtol=1e-12)


def test_error_integrate_without_grid():
    f = Function(jnp.sin, [()], ())
    with pytest.raises(ValueError, match="no quadrature grid"):
        integrate(f)
    with pytest.raises(ValueError, match="no quadrature grid"):
        functional_grad(lambda f: integrate(f**2))(f)
    with pytest.raises(ValueError, match="argnums"):
        integrate(Function(jnp.add, [(), ()], (), Grid((X, X), (W, W))), argnums=2)


def test_error_mismatched_specs():
    f = Function(jnp.sin, [()], (), G1)
    v = Function(lambda x: jnp.stack([x, x]), [()], (2,), G1)
    with pytest.raises(ValueError, match="mismatched specs"):
        compose(f, v)
    with pytest.raises(ValueError, match="mismatched argument specs"):
        add(f, Function(jnp.sum, [(2,)], ()))
    with pytest.raises(ValueError, match="mismatched argument specs"):
        compose(jnp.add, f, Function(jnp.sum, [(2,)], ()))
    with pytest.raises(ValueError, match="mismatched argument specs"):
        nonlocal_energy(f, Function(lambda a, b: a, [(), (2,)], ()))
    with pytest.raises(TypeError, match="takes 2 argument"):
        compose(Function(jnp.add, [(), ()], ()), f)
    with pytest.raises(ValueError, match="mismatched specs"):
        functional_jvp(lda_exchange, (f,), (v,))
    with pytest.raises(ValueError, match="shape"):
        f(jnp.ones(2))


def test_error_non_scalar_functional():
    v = Function(lambda x: jnp.stack([x, x**2]), [()], (2,), G1)
    with pytest.raises(ValueError, match="scalar"):
        functional_grad(integrate)(v)
    with pytest.raises(TypeError, match="Gradient only defined for scalar"):
        jax.grad(integrate)(v)
    with pytest.raises(TypeError, match="returned a Function"):
        functional_grad(lambda f: f * 2)(gauss())


def test_error_bad_arguments_and_untransposable_ops():
    with pytest.raises(TypeError, match="must be a Function"):
        functional_grad(lda_exchange)(jnp.ones(3))
    with pytest.raises(TypeError, match="must be callable"):
        functional_grad(3)
    with pytest.raises(ValueError, match="argnums=2"):
        functional_grad(lda_exchange, argnums=2)(gauss())
    with pytest.raises(TypeError, match="nabla: f must be a Function"):
        nabla(jnp.sin)
    f = gauss()
    with pytest.raises(NotTransposableError, match="Dirac delta"):
        functional_grad(lambda f: integrate(partial(_pinned(f), (0.5,), 1) ** 2))(f)
    with pytest.raises(NotTransposableError, match="linearize"):
        functional_grad(lambda f: integrate(linearize(f), grid=Grid((X, X), (W, W))))(f)


def test_jax_transformations_over_function_arguments_fail_clearly():
    f = gauss()
    F = lambda f: integrate(f**2)
    with pytest.raises(TypeError, match="jax.jit"):
        jax.jit(F)(f)
    with pytest.raises(NotImplementedError, match="nested transformations"):
        jax.grad(jax.grad(F))(f)


def _pinned(f):
    """(x, a) -> f(a) e^{-x^2}: evaluating f at a fixed point a is what partial does."""
    from iclr24.papers.autofd import broadcast_arg
    two = Function(lambda x, a: jnp.exp(-(x**2)) + 0 * a, [(), ()], (), Grid((X, X), (W, W)))
    return two * broadcast_arg(f, two, 1)


def test_cycloid_reference():
    xs, ys, F = cycloid()
    assert abs(F - 2.5819) < 1e-4
    assert abs(xs[-1] - 1) < 1e-9 and abs(ys[-1] + 1) < 1e-9
    with pytest.raises(ValueError, match="x_end"):
        cycloid(1.0, 1.0)
