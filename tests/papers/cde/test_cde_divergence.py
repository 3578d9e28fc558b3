"""soft-χ²: closed forms, inverse and conjugate identities, finite gradients at the kinks."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.cde import soft_chi2

F = soft_chi2()


def t(x):
    return torch.tensor(x, dtype=torch.float64)


def test_closed_forms_and_values_at_one():
    x = t([0.25, 0.5, 1.0, 2.0, 3.0])
    expected = [0.25 * np.log(0.25) - 0.25 + 1, 0.5 * np.log(0.5) - 0.5 + 1, 0.0, 0.5, 2.0]
    assert torch.allclose(F.f(x), t(expected))
    assert torch.allclose(F.f_prime(x), t([np.log(0.25), np.log(0.5), 0.0, 1.0, 2.0]))
    assert float(F.f(t(1.0))) == 0.0 and float(F.f_prime(t(1.0))) == 0.0
    assert float(F.f(t(0.0))) == 1.0  # lim x log x = 0


@given(st.floats(-20, 20))
@settings(max_examples=60, deadline=None)
def test_inverse_and_composition(y):
    y = t(y)
    w = F.f_prime_inv(y)
    assert float(w) > 0  # never negative: no ReLU needed
    assert torch.allclose(F.f_prime(w), y, atol=1e-9)
    assert torch.allclose(F.f_of_w(y), F.f(w), atol=1e-9)
    assert torch.allclose(F.log_f_prime_inv(y), torch.log(w), atol=1e-9)


@given(st.floats(-10, 10))
@settings(max_examples=60, deadline=None)
def test_conjugate_derivative_is_the_ratio(y):
    # f*(y) = y w*(y) − f(w*(y)) has derivative w*(y) (the envelope identity behind the V-loss)
    y = t(y).requires_grad_()
    fstar = y * F.f_prime_inv(y) - F.f_of_w(y)
    (g,) = torch.autograd.grad(fstar, y)
    assert torch.allclose(g, F.f_prime_inv(y.detach()), atol=1e-9)


def test_convexity_and_c1_at_one():
    x = torch.linspace(0.01, 4, 400, dtype=torch.float64)
    d2 = F.f(x[2:]) - 2 * F.f(x[1:-1]) + F.f(x[:-2])
    assert (d2 >= -1e-12).all()
    h = 1e-6
    left = (F.f(t(1.0)) - F.f(t(1.0 - h))) / h
    right = (F.f(t(1.0 + h)) - F.f(t(1.0))) / h
    assert abs(float(left - right)) < 1e-5


def test_gradients_finite_on_both_branches():
    y = t([-50.0, -1.0, 0.0, 1.0, 50.0]).requires_grad_()
    out = F.f_prime_inv(y).sum() + F.f_of_w(y).sum() + F.log_f_prime_inv(y).sum()
    out.backward()
    assert torch.isfinite(y.grad).all()
    x = t([0.5, 1.0, 2.0]).requires_grad_()
    (F.f(x).sum() + F.f_prime(x).sum()).backward()
    assert torch.isfinite(x.grad).all()
