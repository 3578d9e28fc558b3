import numpy as np
import pytest
import torch

from iclr24.papers.sl2_positivity import (
    GramMLP,
    SO2GramNet,
    act_on_form,
    act_on_gram,
    antidiagonal_sums,
    induced_matrix,
    predict_gram,
    random_sos_binary_forms,
    rotation,
    sample_sl2,
    train_gram_model,
)
from iclr24.papers.sl2_positivity.equivariant import _circle_harmonics, _gram_geometry


def _net(d, seed=0, **kw):
    torch.manual_seed(seed)
    return SO2GramNet(d, **kw).double()


def _apply(net, P):
    with torch.no_grad():
        return net(torch.from_numpy(P)).numpy()


def _equivariance_gap(net, P, A):
    G = _apply(net, P)
    G_rot = _apply(net, act_on_form(A, P))
    return np.abs(G_rot - act_on_gram(A, G)).max() / np.abs(G).max()


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("phi", [0.3, 1.9, -2.7])
def test_so2_net_commutes_with_rotations(d, phi):
    P = random_sos_binary_forms(6, d, np.random.default_rng(d))
    assert _equivariance_gap(_net(d, n_layers=3, channels=5), P, rotation(phi)) < 1e-5


def test_trained_so2_net_stays_equivariant(one_torch_thread):
    rng = np.random.default_rng(3)
    P = random_sos_binary_forms(40, 3, rng)
    G = np.stack([np.diag([p[0], 0.0, 0.0, p[-1]]) for p in P])
    model = train_gram_model(P, G, epochs=2, seed=0, architecture="so2")
    A = rotation(0.8)
    Gh = predict_gram(model, P[:8])
    np.testing.assert_allclose(predict_gram(model, act_on_form(A, P[:8])), act_on_gram(A, Gh),
                               atol=1e-5 * np.abs(Gh).max())


def test_equivariance_check_can_fail():
    # the check is sensitive: the SO(2) net is not SL(2)-equivariant, the MLP not even SO(2)
    P = random_sos_binary_forms(6, 3, np.random.default_rng(0))
    A = sample_sl2(1, (3.0, 5.0), np.random.default_rng(1))[0]
    assert _equivariance_gap(_net(3), P, A) > 1e-3
    torch.manual_seed(0)
    mlp = GramMLP(3, hidden=(16,)).double()
    assert _equivariance_gap(mlp, P, rotation(0.7)) > 1e-3


@pytest.mark.parametrize("d", [1, 3])
def test_outputs_shapes_exact_constraints_and_homogeneity(d):
    P = random_sos_binary_forms(5, d, np.random.default_rng(2))
    net = _net(d)
    G = _apply(net, P)
    assert G.shape == (5, d + 1, d + 1)
    np.testing.assert_allclose(G, np.swapaxes(G, 1, 2), atol=1e-12)
    np.testing.assert_allclose(antidiagonal_sums(G), P, atol=1e-10 * np.abs(P).max())
    np.testing.assert_allclose(_apply(net, 2.5 * P), 2.5 * G, rtol=1e-10, atol=1e-12)


def test_circle_harmonics_known_answers():
    # x^2 on the circle: cos^2 t = 1/2 + cos(2t)/2 -> c_0 = 1/2, c_2 = 1/4
    np.testing.assert_allclose(_circle_harmonics(1) @ [0.0, 0.0, 1.0], [0.5, 0.25], atol=1e-14)
    # (x^2 + y^2)^2 = 1 on the circle
    np.testing.assert_allclose(_circle_harmonics(2) @ [1.0, 0.0, 2.0, 0.0, 1.0], [1, 0, 0],
                               atol=1e-14)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_gram_frequency_bases_are_eigenspaces(d):
    bases, S, K = _gram_geometry(d)
    n_sym = (d + 1) * (d + 2) // 2
    assert bases[0].shape[1] + 2 * sum(B.shape[1] for B in bases[1:]) == n_sym
    M = induced_matrix(rotation(0.37), d)
    rho = np.kron(M.T, M.T)
    for m, B in enumerate(bases):
        np.testing.assert_allclose(rho @ B, np.exp(2j * m * 0.37) * B, atol=1e-10)
    np.testing.assert_allclose(S @ K, np.eye(2 * d + 1), atol=1e-10)


def test_rotation_is_in_so2():
    R = rotation(1.1)
    np.testing.assert_allclose(R @ R.T, np.eye(2), atol=1e-15)
    assert np.isclose(np.linalg.det(R), 1.0)


def test_bad_input_errors():
    with pytest.raises(ValueError, match="d must be"):
        SO2GramNet(0)
    with pytest.raises(ValueError, match="channels must be"):
        SO2GramNet(3, channels=0)
    with pytest.raises(ValueError, match="n_layers must be"):
        SO2GramNet(3, n_layers=True)
    with pytest.raises(ValueError, match=r"p must have shape \(n, 7\)"):
        _net(3)(torch.zeros(2, 5, dtype=torch.float64))
    P = random_sos_binary_forms(4, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="architecture must be"):
        train_gram_model(P, np.zeros((4, 4, 4)), epochs=1, seed=0, architecture="sl2")
