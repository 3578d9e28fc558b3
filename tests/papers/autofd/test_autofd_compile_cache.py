"""The structural compile cache: a new Function with the same structure reuses the program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr24.papers.autofd import (
    Function,
    Grid,
    clear_compile_cache,
    compile_cache_info,
    compiler_options,
    gauss_legendre,
    integrate,
    with_grid,
)

X, W = gauss_legendre(48, -5.0, 5.0)
G = Grid((X,), (W,))


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        clear_compile_cache()
        yield


def gauss(a=1.0, grid=G):
    return Function(lambda x: jnp.exp(-a * x**2), [()], (), grid)


def counts():
    info = compile_cache_info()
    return info.hits, info.misses


def test_second_call_on_new_function_hits():
    F = lambda f: integrate(f**4)
    v1 = F(gauss())
    assert counts() == (0, 1)
    v2 = F(gauss())  # a new Function object (and a new lambda) of the same structure
    assert counts() == (1, 1)
    assert float(v1) == float(v2)
    np.testing.assert_allclose(float(v1), np.sqrt(np.pi / 4), rtol=1e-8)


def test_structure_changes_miss_and_stay_correct():
    integrate(gauss() ** 4)
    integrate(gauss() ** 3)  # another exponent: another program
    assert counts() == (0, 2)
    for a in (1.0, 2.0):  # a float in a closure is an input of the program, not its key
        np.testing.assert_allclose(float(integrate(gauss(a))), np.sqrt(np.pi / a), rtol=1e-8)
    assert counts() == (1, 3)
    x2, w2 = gauss_legendre(48, -4.0, 4.0)  # grid values are arguments: same program
    np.testing.assert_allclose(float(integrate(gauss(1.0, Grid((x2,), (w2,))))),
                               np.sqrt(np.pi), rtol=1e-6)
    assert counts() == (2, 3)


def test_integer_constants_stay_keyed_by_value():
    for n in (2, 4, 2):  # x ** n with an int n: integer powers, one program per exponent
        f = Function(lambda x, n=n: jnp.exp(-x**2) ** n, [()], (), G)
        np.testing.assert_allclose(float(integrate(f)), np.sqrt(np.pi / n), rtol=1e-8)
    assert counts() == (1, 2)


def test_numpy_closure_is_read_at_every_call():
    c = np.array([1.0])
    f = lambda: Function(lambda x: c[0] * jnp.exp(-x**2), [()], (), G)
    a = float(integrate(f()))
    c[0] = 3.0  # mutated in place: the program must not have baked in 1.0
    b = float(integrate(f()))
    np.testing.assert_allclose(b, 3 * a, rtol=1e-12)
    assert counts() == (1, 1)


def test_optimisation_loop_compiles_once():
    """A functional-optimisation loop: a new Function with a new closure constant each step."""
    F = lambda f: integrate(f**4)
    x, w = np.asarray(X), np.asarray(W)
    for step in range(6):
        c = 0.1 * step
        f = Function(lambda t, c=c: c + 0.3 * jnp.sin(t), [()], (), G)
        value = float(F(f))
        grad_at = jax.grad(F)(f)(0.7)
        np.testing.assert_allclose(value, np.sum(w * (c + 0.3 * np.sin(x)) ** 4), rtol=1e-12)
        np.testing.assert_allclose(float(grad_at), 4 * (c + 0.3 * np.sin(0.7)) ** 3,
                                   rtol=1e-12, atol=1e-15)
        assert f.body.__defaults__ == (c,)  # the trace's swap is undone
    hits, misses = counts()
    assert misses <= 2 and hits >= 2 * 6 - misses  # F(f) and the gradient's value: one each


def test_shared_and_separate_cells_are_different_structures():
    f = gauss(1.0)
    np.testing.assert_allclose(float(integrate(f * f)), np.sqrt(np.pi / 2), rtol=1e-8)
    # the same code with two different closures: two inputs, not one
    np.testing.assert_allclose(float(integrate(gauss(1.0) * gauss(2.0))), np.sqrt(np.pi / 3),
                               rtol=1e-8)
    np.testing.assert_allclose(float(integrate(gauss(3.0) * gauss(2.0))), np.sqrt(np.pi / 5),
                               rtol=1e-6)  # quadrature error ~3e-8 at this width
    assert counts() == (1, 2)


def test_constant_needed_concretely_falls_back_to_value_keys():
    def make(c):
        return Function(lambda x, c=c: jnp.exp(-x**2) * (2.0 if c > 0 else 1.0), [()], (), G)
    for c in (1.0, -1.0, 1.0):
        want = (2.0 if c > 0 else 1.0) * np.sqrt(np.pi)
        np.testing.assert_allclose(float(integrate(make(c))), want, rtol=1e-8)
    hits, misses = counts()
    assert (hits, misses) == (1, 3)  # lifted try, then one program per value (1.0 reused)


def test_arrays_in_closures_are_lifted_by_shape_and_dtype():
    for scale in (1.0, 2.0):
        a = jnp.asarray([scale, 1.0])
        f = Function(lambda x: a[0] * jnp.exp(-a[1] * x**2), [()], (), G)
        np.testing.assert_allclose(float(integrate(f)), scale * np.sqrt(np.pi), rtol=1e-8)
    assert counts() == (1, 1)


def test_gradient_programs_are_shared():
    F = lambda f: integrate(f**4)
    d1 = jax.grad(F)(gauss())(0.3)
    h0, m0 = counts()
    d2 = jax.grad(F)(gauss())(0.3)
    h1, m1 = counts()
    assert m1 == m0 and h1 >= h0 + 2  # the value and the gradient evaluation both hit
    np.testing.assert_allclose(float(d1), 4 * np.exp(-3 * 0.09), rtol=1e-12)
    assert float(d1) == float(d2)


def test_traced_closures_are_evaluated_inline():
    def loss(a):
        return integrate(Function(lambda x: jnp.exp(-a * x**2), [()], (), G))
    g = jax.grad(loss)(1.0)  # d/da sqrt(pi/a) = -sqrt(pi)/2 a^-1.5
    np.testing.assert_allclose(float(g), -np.sqrt(np.pi) / 2, rtol=1e-10)
    assert counts() == (0, 0)


def test_alias_shares_its_operands_program():
    f = gauss()
    integrate(f**2)
    integrate(with_grid(f, G) ** 2)  # an alias node evaluates as its operand
    assert counts() == (1, 1)


def test_compiler_options_are_part_of_the_key():
    F = lambda f: integrate(f**2)
    a = float(F(gauss()))
    with compiler_options(xla_backend_optimization_level=0):
        b = float(F(gauss()))
        c = float(F(gauss()))
    assert counts() == (1, 2)  # one program per option set, reused within it
    np.testing.assert_allclose(b, a, rtol=1e-14)
    assert b == c
    with pytest.raises(TypeError, match="compiler option"), compiler_options(bad=[1]):
        pass
