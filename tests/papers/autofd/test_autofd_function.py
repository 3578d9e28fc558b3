"""Function objects, specs, grids, decorators and the call cache."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr24.papers.autofd import (
    Function,
    Grid,
    Spec,
    call_cache,
    compose,
    count_calls,
    function,
    gauss_legendre,
    integrate,
    product_grid,
    sqrt_substitution,
    with_grid,
    with_spec,
)


def test_function_call_checks_and_evaluates():
    f = Function(lambda x, y: jnp.sum(x) * y, [(3,), ()], ())
    assert float(f(jnp.ones(3), 2.0)) == 6.0
    assert f.arg_spec == (Spec((3,)), Spec(()))
    with pytest.raises(ValueError, match="argument 0 .* shape"):
        f(jnp.ones(2), 1.0)
    with pytest.raises(TypeError, match="takes 2 argument"):
        f(jnp.ones(3))


def test_constructor_validation():
    with pytest.raises(TypeError, match="fn must be callable"):
        Function(3.0, [()], ())
    with pytest.raises(TypeError, match="one spec per argument"):
        Function(jnp.sin, Spec(()), ())
    with pytest.raises(ValueError, match="grid has 1 entries"):
        Function(jnp.add, [(), ()], (), Grid((jnp.zeros(3),), (jnp.ones(3),)))
    with pytest.raises(ValueError, match="point shape"):
        Function(jnp.sin, [()], (), Grid((jnp.zeros((3, 2)),), (jnp.ones(3),)))
    with pytest.raises(TypeError, match="Spec.shape"):
        Spec(3)


def test_grid_validation():
    with pytest.raises(ValueError, match="weights entry"):
        Grid((jnp.zeros(3),), ())
    with pytest.raises(ValueError, match="1-D"):
        Grid((jnp.zeros(3),), (jnp.ones((3, 1)),))
    with pytest.raises(ValueError, match="to match"):
        Grid((jnp.zeros(4),), (jnp.ones(3),))
    with pytest.raises(ValueError, match="both be None"):
        Grid((None,), (jnp.ones(3),))


def test_decorators_read_specs():
    @with_spec(arg_spec=[(2,)], ret_spec=())
    def norm2(x):
        return jnp.sum(x**2)
    assert norm2.arg_spec == (Spec((2,)),) and norm2.ret_spec == Spec(())

    @function
    def g(x: Spec((3,)), t: Spec(())) -> Spec((3,)):
        return x * t
    assert g.arg_spec == (Spec((3,)), Spec(())) and g.ret_spec == Spec((3,))
    with pytest.raises(TypeError, match="no annotation"):
        function(lambda x: x)


def test_string_annotations_resolve_in_the_defining_scope():
    import jaxtyping as jt  # a local name: resolved from the scope applying @function

    @function
    def f(x: jt.Float64[jt.Array, ""]) -> jt.Float64[jt.Array, ""]:
        return 2 * x
    assert f.arg_spec == (Spec((), np.float64),) and f.ret_spec == Spec((), np.float64)
    with pytest.raises(TypeError, match="cannot resolve"):
        @function
        def k(x: NotAType) -> jt.Float[jt.Array, ""]:  # noqa: F821
            return x


def test_calling_with_a_function_composes():
    f = Function(jnp.exp, [()], ())
    g = Function(jnp.sin, [()], ())
    h = f(g)
    assert h.op == "compose"
    np.testing.assert_allclose(h(0.3), np.exp(np.sin(0.3)), rtol=1e-6)


def test_arithmetic_is_pointwise():
    f = Function(jnp.sin, [()], ())
    g = Function(jnp.cos, [()], ())
    x = 0.7
    s, c = np.sin(x), np.cos(x)
    for expr, ref in [(f + g, s + c), (f - g, s - c), (f * g, s * c), (f / g, s / c),
                      (f**2, s**2), (2 * f, 2 * s), (1 - f, 1 - s), (f + 1, s + 1),
                      (-f, -s), (1 / g, 1 / c)]:
        np.testing.assert_allclose(expr(x), ref, rtol=1e-6)


def test_call_cache_linear_vs_exponential():
    def nested(depth):
        h = Function(jnp.sin, [()], ())
        f = Function(jnp.exp, [()], ())
        g = Function(jnp.tanh, [()], ())
        for _ in range(depth):
            h = f(h) + g(h)
        return h

    def count(h, cache):
        with call_cache(cache), count_calls() as c:
            jax.make_jaxpr(lambda x: h(x))(0.1)
        return c.leaf
    for d in (1, 4, 7):
        assert count(nested(d), True) == 1 + 2 * d  # each function evaluated once per level
        assert count(nested(d), False) == 3 * 2**d - 2  # L(d) = 2 + 2 L(d-1)


def test_cache_does_not_change_values():
    f = Function(jnp.exp, [()], ())
    g = Function(jnp.tanh, [()], ())
    h = Function(jnp.sin, [()], ())
    for _ in range(5):
        h = f(h) + g(h)
    with call_cache(False):
        off = h(0.2)
    np.testing.assert_allclose(h(0.2), off, rtol=1e-6)
    with pytest.raises(TypeError, match="bool"), call_cache(1):
        pass


def test_with_grid_attaches_grid():
    x, w = gauss_legendre(20, 0.0, 1.0)
    f = Function(lambda t: t**2, [()], ())
    assert f.grid is None
    fg = with_grid(f, Grid((x,), (w,)))
    np.testing.assert_allclose(integrate(fg), 1.0 / 3.0, rtol=1e-5)


def test_quadrature_rules():
    x, w = gauss_legendre(10, -1.0, 2.0)
    np.testing.assert_allclose(np.sum(w * x**5), (2**6 - 1) / 6, rtol=1e-12)
    s, ws = sqrt_substitution(40)
    np.testing.assert_allclose(np.sum(ws / np.sqrt(s)), 2.0, rtol=1e-12)  # int x^-1/2 = 2
    pts, pw = product_grid(*gauss_legendre(5, 0.0, 1.0), dim=3)
    assert pts.shape == (125, 3) and pw.shape == (125,)
    np.testing.assert_allclose(np.sum(pw * pts[:, 0] * pts[:, 1] ** 2), 1 / 6, rtol=1e-12)
    with pytest.raises(ValueError, match="positive int"):
        gauss_legendre(0)
    with pytest.raises(ValueError, match="a < b"):
        gauss_legendre(4, 1.0, 0.0)
    with pytest.raises(ValueError, match="dim"):
        product_grid(x, w, 0)


def test_compose_share_inputs_false():
    f = Function(jnp.sin, [()], ())
    g = Function(jnp.cos, [()], ())
    h = compose(jnp.multiply, f, g, share_inputs=False)
    assert len(h.arg_spec) == 2
    np.testing.assert_allclose(h(0.2, 0.5), np.sin(0.2) * np.cos(0.5), rtol=1e-6)
