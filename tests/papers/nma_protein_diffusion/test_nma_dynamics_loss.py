"""Mode features and L_dyn: closed forms, sign/scale invariance, errors."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.nma_protein_diffusion import (
    displacement_cosines,
    dynamics_loss,
    mode_overlap,
    normalised_amplitudes,
)


def _disp(seed, n=6):
    return torch.randn(n, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_features_closed_form():
    d = torch.tensor([[1.0, 0, 0], [0, 2.0, 0], [-3.0, 0, 0]], dtype=torch.float64)
    cos = displacement_cosines(d).reshape(3, 3)
    assert torch.allclose(cos, torch.tensor([[1.0, 0, -1], [0, 1, 0], [-1, 0, 1]],
                                            dtype=torch.float64))
    amp = normalised_amplitudes(d)
    assert torch.allclose(amp, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) / 14 ** 0.5)
    # a residue that does not move: zero cosines with everyone, no NaN
    still = torch.tensor([[1.0, 0, 0], [0, 0, 0]], dtype=torch.float64)
    assert torch.equal(displacement_cosines(still), torch.tensor([1.0, 0, 0, 0],
                                                                 dtype=torch.float64))


def test_loss_closed_form():
    a = torch.tensor([[1.0, 0, 0], [0, 1.0, 0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 0, 0], [1.0, 0, 0]], dtype=torch.float64)
    # cosines: a -> [1, 0, 0, 1], b -> [1, 1, 1, 1]: L1 = 0.5; amplitudes equal: 0
    assert float(dynamics_loss(a, b)) == pytest.approx(0.5)
    c = torch.tensor([[1.0, 0, 0], [0, 3.0, 0]], dtype=torch.float64)
    amp = (abs(1 / 2 ** 0.5 - 1 / 10 ** 0.5) + abs(1 / 2 ** 0.5 - 3 / 10 ** 0.5)) / 2
    assert float(dynamics_loss(a, c)) == pytest.approx(2 * amp)
    assert float(dynamics_loss(a, c, amp_weight=0.0)) == pytest.approx(0.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 10.0), st.sampled_from([-1.0, 1.0]))
def test_loss_ignores_eigenvector_sign_and_scale(seed, scale, sign):
    d, t = _disp(seed), _disp(seed + 1)
    base = dynamics_loss(d, t)
    assert torch.allclose(dynamics_loss(sign * scale * d, t), base)
    assert torch.allclose(dynamics_loss(d, -t), base)
    assert float(dynamics_loss(d, sign * scale * d)) == pytest.approx(0.0, abs=1e-12)
    assert float(base) > 0
    # rotating both displacement sets together changes nothing (features are invariant)
    q, _ = torch.linalg.qr(_disp(seed + 2, 3))
    assert torch.allclose(dynamics_loss(d @ q.T, t @ q.T), base)
    assert float(mode_overlap(-d, d)) == pytest.approx(1.0)


def test_batched_and_errors():
    d = torch.stack([_disp(0), _disp(1)])
    t = _disp(2)
    out = dynamics_loss(d, t)
    assert out.shape == (2,)
    assert torch.allclose(out[1], dynamics_loss(d[1], t))
    with pytest.raises(ValueError, match="same residues"):
        dynamics_loss(_disp(0, 5), _disp(1, 6))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., n_m, 3\)"):
        dynamics_loss(torch.zeros(4, 2), t)
    with pytest.raises(TypeError, match="torch.Tensor"):
        displacement_cosines([[1.0, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match="amp_weight"):
        dynamics_loss(t, t, amp_weight=-1)
