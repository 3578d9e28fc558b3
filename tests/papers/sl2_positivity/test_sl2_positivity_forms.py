import numpy as np
import pytest
import sympy as sp

from iclr24.papers.sl2_positivity import (
    act_on_form,
    act_on_gram,
    antidiagonal_sums,
    certification_rate,
    induced_matrix,
    max_det_gram,
    project_gram_constraints,
    random_sos_binary_forms,
    sample_sl2,
)

RNG = np.random.default_rng(0)


def test_act_on_form_is_substitution():
    x, y = sp.symbols("x y")
    p = np.array([1.0, -2.0, 3.0, 0.5, 2.0])            # degree 4
    A = sample_sl2(1, (1.5, 3.0), RNG)[0]
    poly = sum(c * x ** k * y ** (4 - k) for k, c in enumerate(p))
    sub = sp.expand(poly.subs({x: A[0, 0] * x + A[0, 1] * y, y: A[1, 0] * x + A[1, 1] * y},
                              simultaneous=True))
    expected = [float(sub.coeff(x, k).coeff(y, 4 - k)) for k in range(5)]
    np.testing.assert_allclose(act_on_form(A, p), expected, atol=1e-10)


def test_gram_action_commutes_with_antidiagonal_sums():
    # equivariance check 1: sums of act_on_gram(A, G) equal act_on_form(A, p)
    G = RNG.standard_normal((4, 4))
    G = G + G.T
    A = sample_sl2(1, (1.0, 5.0), RNG)[0]
    np.testing.assert_allclose(antidiagonal_sums(act_on_gram(A, G)),
                               act_on_form(A, antidiagonal_sums(G)), rtol=1e-10, atol=1e-10)


def test_induced_matrix_det_and_homomorphism():
    A, B = sample_sl2(2, (1.0, 4.0), RNG)
    for k in (2, 3, 6):
        assert np.linalg.det(induced_matrix(A, k)) == pytest.approx(1.0)
        # v(A B u) = M(A) v(B u) = M(A) M(B) v(u)
        np.testing.assert_allclose(induced_matrix(A @ B, k),
                                   induced_matrix(A, k) @ induced_matrix(B, k), atol=1e-9)


def test_max_det_gram_is_sl2_equivariant():
    # equivariance check 2: G*(p o A) = M^T G*(p) M to solver tolerance
    p = random_sos_binary_forms(1, 3, RNG)[0]
    A = sample_sl2(1, (1.5, 3.0), RNG)[0]
    G = max_det_gram(p)
    G2 = max_det_gram(act_on_form(A, p))
    np.testing.assert_allclose(G2, act_on_gram(A, G), atol=2e-3 * np.abs(G).max())
    np.testing.assert_allclose(antidiagonal_sums(G), p, atol=1e-5 * np.abs(p).max())
    assert np.linalg.eigvalsh(G)[0] > 0
    assert certification_rate(G[None], p[None]) == 1.0


def test_max_det_gram_is_scale_equivariant():
    p = random_sos_binary_forms(1, 2, RNG)[0]
    np.testing.assert_allclose(max_det_gram(3 * p), 3 * max_det_gram(p),
                               atol=1e-3 * np.abs(p).max())


def test_projection_enforces_constraints_exactly_and_symmetrically():
    import torch

    G = torch.randn(5, 4, 4, dtype=torch.float64)
    p = torch.randn(5, 7, dtype=torch.float64)
    Gp = project_gram_constraints(G, p)
    np.testing.assert_allclose(antidiagonal_sums(Gp.numpy()), p.numpy(), atol=1e-12)
    np.testing.assert_allclose(Gp.numpy(), np.swapaxes(Gp.numpy(), 1, 2))


def test_sample_sl2_condition_numbers():
    A = sample_sl2(50, (3.0, 4.0), RNG)
    np.testing.assert_allclose(np.linalg.det(A), 1.0)
    c = np.linalg.cond(A)
    assert np.all((c >= 3.0) & (c <= 4.0))


def test_certification_rate_rejects_indefinite_and_broken_constraints():
    p = random_sos_binary_forms(2, 2, RNG)
    G = np.stack([max_det_gram(q) for q in p])
    bad = G.copy()
    bad[0, 0, 0] -= 1e3                                   # breaks the constraint
    assert certification_rate(bad, p) == 0.5
    ind = G.copy()
    t = 1e3                                               # zero anti-diagonal sums, indefinite
    ind[1, 0, 2] += t
    ind[1, 2, 0] += t
    ind[1, 1, 1] -= 2 * t
    np.testing.assert_allclose(antidiagonal_sums(ind), antidiagonal_sums(G))
    assert certification_rate(ind, p) == 0.5


@pytest.mark.parametrize("p", [np.ones(4), np.ones(2), np.ones((2, 6))])
def test_not_a_binary_form_of_even_degree(p):
    with pytest.raises(ValueError, match="even degree"):
        act_on_form(np.eye(2), p)


def test_not_sl2():
    with pytest.raises(ValueError, match="det"):
        act_on_form(np.diag([2.0, 1.0]), np.ones(5))
    with pytest.raises(ValueError, match="det"):
        act_on_gram(np.diag([2.0, 2.0]), np.eye(3))


def test_max_det_gram_timed_reports_solver_time_within_the_call():
    import time

    from iclr24.papers.sl2_positivity import max_det_gram_timed

    p = random_sos_binary_forms(1, 3, np.random.default_rng(5))[0]
    t0 = time.perf_counter()
    G, solve = max_det_gram_timed(p)
    call = time.perf_counter() - t0
    assert 0 < solve <= call
    np.testing.assert_allclose(G, max_det_gram(p), atol=1e-6 * np.abs(G).max())
    np.testing.assert_allclose(antidiagonal_sums(G), p, atol=1e-5 * np.abs(p).max())


def test_zero_form_has_no_max_det_gram():
    with pytest.raises(ValueError, match="zero form"):
        max_det_gram(np.zeros(7))
    with pytest.raises(ValueError, match="eps must be"):
        max_det_gram(np.ones(3), eps=0.0)


def test_generator_and_sampler_argument_errors():
    with pytest.raises(ValueError, match="n must be"):
        random_sos_binary_forms(-1, 3, RNG)
    with pytest.raises(ValueError, match="d must be"):
        random_sos_binary_forms(3, 0, RNG)
    with pytest.raises(TypeError, match="rng must be"):
        sample_sl2(3, (1.0, 2.0), 0)
    with pytest.raises(ValueError, match="n must be"):
        sample_sl2(2.5, (1.0, 2.0), RNG)
    with pytest.raises(ValueError, match="cond_range"):
        sample_sl2(2, (2.0, 1.0), RNG)


def test_projection_puts_each_correction_on_the_official_entry():
    import torch

    p = torch.arange(1.0, 8.0, dtype=torch.float64)[None]      # p_0..p_6, d = 3
    G = project_gram_constraints(torch.zeros(1, 4, 4, dtype=torch.float64), p)[0].numpy()
    expected = np.zeros((4, 4))
    for k in range(7):                                          # even k: (k/2, k/2); odd k:
        i, j = (k // 2, k // 2) if k % 2 == 0 else ((k + 1) // 2, (k - 1) // 2)
        expected[i, j] += k + 1.0                               # ((k+1)/2, (k-1)/2), symmetrised
    np.testing.assert_allclose(G, (expected + expected.T) / 2, atol=1e-15)
