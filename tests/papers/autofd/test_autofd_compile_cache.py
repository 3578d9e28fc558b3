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
    for a in (1.0, 2.0):  # closure contents are part of the key
        np.testing.assert_allclose(float(integrate(gauss(a))), np.sqrt(np.pi / a), rtol=1e-8)
    assert counts() == (0, 4)
    x2, w2 = gauss_legendre(48, -4.0, 4.0)  # grid values are arguments: same program
    np.testing.assert_allclose(float(integrate(gauss(1.0, Grid((x2,), (w2,))))),
                               np.sqrt(np.pi), rtol=1e-6)
    assert counts() == (1, 4)


def test_numpy_closure_is_keyed_by_value():
    c = np.array([1.0])
    f = lambda: Function(lambda x: c[0] * jnp.exp(-x**2), [()], (), G)
    a = float(integrate(f()))
    c[0] = 3.0  # mutated in place: must not reuse the program that baked in 1.0
    b = float(integrate(f()))
    np.testing.assert_allclose(b, 3 * a, rtol=1e-12)
    assert counts() == (0, 2)


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
