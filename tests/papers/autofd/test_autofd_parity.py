"""Parts of the official API: nabla(method="jacrev"), 2 ** f, abs(f), braket, invoke."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from iclr24.papers.autofd import (
    Function,
    Grid,
    NotTransposableError,
    braket,
    functional_grad,
    functional_jvp,
    gauss_legendre,
    integrate,
    invoke,
    nabla,
)

X, W = gauss_legendre(64, -5.0, 5.0)
G = Grid((X,), (W,))
XS = np.linspace(-1.2, 1.2, 5)


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def gauss():
    return Function(lambda x: jnp.exp(-(x**2)), [()], (), G, name="f")


def at(fn, xs=XS):
    return np.asarray(jax.jit(jax.vmap(fn))(jnp.asarray(xs)))


def test_nabla_jacrev_matches_jacfwd():
    v = Function(lambda r: jnp.stack([jnp.sum(r**2), r[0] * r[1], jnp.sin(r[1])]), [(2,)], (3,))
    r = jnp.asarray([0.3, -0.7])
    fwd, rev = nabla(v)(r), nabla(v, method="jacrev")(r)
    assert rev.shape == (3, 2)
    np.testing.assert_allclose(rev, fwd, rtol=1e-14)
    np.testing.assert_allclose(nabla(v, method=jax.jacrev)(r), fwd, rtol=1e-14)
    with pytest.raises(ValueError, match="jacfwd' or 'jacrev"):
        nabla(v, method="hessian")
    f = gauss()
    ref = (2 - 4 * XS**2) * 2 * np.exp(-(XS**2))  # d/df int f'^2 = -2 f''
    for method in ("jacfwd", "jacrev"):
        F = lambda u, m=method: integrate(nabla(u, method=m) ** 2)
        np.testing.assert_allclose(at(jax.grad(F)(f)), ref, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(at(functional_grad(F)(f)), ref, rtol=1e-10, atol=1e-12)


def test_rpow_and_abs():
    f = gauss()
    e = np.exp(-(XS**2))
    np.testing.assert_allclose(at(2**f), 2**e, rtol=1e-14)
    np.testing.assert_allclose(at(abs(-f)), e, rtol=1e-14)
    d = jax.grad(lambda u: integrate(2**u))(f)  # d/du int 2^u = ln 2 * 2^u
    np.testing.assert_allclose(at(d), np.log(2) * 2**e, rtol=1e-12)
    d = functional_grad(lambda u: integrate(abs(u - 0.5)))(f)  # sign(u - 1/2)
    np.testing.assert_allclose(at(d), np.sign(e - 0.5), rtol=1e-14)


def test_braket():
    f = gauss()
    g = Function(lambda x: jnp.cos(x) * jnp.exp(-(x**2)), [()], (), G, name="g")
    np.testing.assert_allclose(float(braket(f, g)), np.sqrt(np.pi / 2) * np.exp(-1 / 8),
                               rtol=1e-10)  # int e^{-2x^2} cos x dx
    np.testing.assert_allclose(float(braket(f, g)), float(integrate(f * g)), rtol=1e-14)
    dl = jax.grad(lambda u: braket(u, g))(f)  # d<u|g>/du = g
    np.testing.assert_allclose(at(dl), np.cos(XS) * np.exp(-(XS**2)), rtol=1e-12)
    dr = functional_grad(lambda u: braket(g, u, real=True))(f)
    np.testing.assert_allclose(at(dr), np.cos(XS) * np.exp(-(XS**2)), rtol=1e-12)
    with pytest.raises(ValueError, match="same signature"):
        braket(f, Function(lambda x, y: x * y, [(), ()], ()))


def test_invoke_forward_mode_and_reverse_mode_error():
    f = gauss()
    g = Function(jnp.sin, [()], (), G, name="g")
    np.testing.assert_allclose(float(invoke(f, 0.3)), np.exp(-0.09), rtol=1e-15)
    # d/de (f + e g)(0.3)^2 = 2 f(0.3) g(0.3)
    F = lambda u: invoke(u, 0.3) ** 2 + integrate(u)
    ref = 2 * np.exp(-0.09) * np.sin(0.3) + float(integrate(g))
    np.testing.assert_allclose(float(functional_jvp(F, (f,), (g,))[1]), ref, rtol=1e-12)
    np.testing.assert_allclose(float(jax.jvp(F, (f,), (g,))[1]), ref, rtol=1e-12)
    with pytest.raises(NotTransposableError, match="Dirac delta"):
        functional_grad(F)(f)
    with pytest.raises(NotTransposableError, match="Dirac delta"):
        jax.grad(F)(f)
    with pytest.raises(TypeError, match="takes 1 argument"):
        invoke(f, 0.1, 0.2)
    with pytest.raises(ValueError, match="shape"):
        invoke(f, jnp.ones(2))
