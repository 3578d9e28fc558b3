"""Gate inputs, exit probabilities and the exit rule of JEI-DNN."""

import numpy as np
import pytest
import torch
from scipy.stats import entropy

from iclr24.papers.early_exit import (
    UncertaintyGate,
    exit_probabilities,
    gated_exit,
    uncertainty_features,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_uncertainty_features_match_the_official_statistics():
    z = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    u = uncertainty_features(z).numpy()
    p = torch.softmax(z, 1).numpy()
    top = np.sort(p, 1)[:, ::-1]
    pow2 = p ** 2 / (p ** 2).sum(1, keepdims=True)
    np.testing.assert_allclose(u[:, 0], top[:, 0], rtol=1e-12)
    np.testing.assert_allclose(u[:, 1], entropy(p, axis=1), rtol=1e-10)
    np.testing.assert_allclose(u[:, 2], top[:, 0] - top[:, 1], rtol=1e-12)
    np.testing.assert_allclose(u[:, 3], entropy(pow2, axis=1), rtol=1e-10)


def test_uniform_logits_give_the_closed_form_features():
    u = uncertainty_features(torch.zeros(2, 4))
    np.testing.assert_allclose(u.numpy(), [[0.25, np.log(4), 0.0, np.log(4)]] * 2, rtol=1e-6)


def test_gate_sends_no_gradient_into_the_logits():
    z = torch.randn(3, 4, requires_grad=True)
    UncertaintyGate()(z).sum().backward()
    assert z.grad is None


def test_features_reject_bad_input():
    with pytest.raises(ValueError, match="logits"):
        uncertainty_features(torch.zeros(3))
    with pytest.raises(TypeError, match="logits"):
        uncertainty_features(np.zeros((3, 4)))


def _official_loop(g):
    """Literal transcription of the WEIGHTED branch of the official exit loop."""
    B, G = g.shape
    prob_gates = torch.zeros(B, 1)
    gs = torch.zeros(B, 1)
    Ps, qs = [], []
    for l in range(G):
        gl = g[:, l:l + 1]
        no_exit = torch.prod(1 - prob_gates, dim=1)[:, None]
        P = torch.max(torch.zeros(B, 1), torch.min(gl, 1 - gs.sum(1)[:, None]))
        q = torch.clip(P / no_exit, 0, 1)
        gs = torch.cat([gs, gl], 1)
        prob_gates = torch.cat([prob_gates, q], 1)
        Ps.append(P)
        qs.append(q)
    return torch.cat(Ps, 1), torch.cat(qs, 1)


def test_exit_probabilities_equal_the_official_loop():
    g = torch.rand(50, 5, generator=torch.Generator().manual_seed(1))
    P, q = exit_probabilities(g)
    P0, q0 = _official_loop(g)
    torch.testing.assert_close(P, P0)
    # after a (numerically) certain exit q_j ~ 1 the rest is moot and 0/0-sensitive to rounding
    sure = (q0 >= 1 - 1e-5).float()
    live = (torch.cumsum(sure, 1) - sure) == 0
    torch.testing.assert_close(q[live], q0[live])
    assert bool(torch.isfinite(q).all())


def test_exit_probabilities_by_hand():
    P, q = exit_probabilities(torch.tensor([[0.3, 0.5, 0.6]]))
    # P = (0.3, min(0.5, 0.7), max(0, min(0.6, 0.2))); q = (0.3, 0.5/0.7, 0.2/(0.7*(1-5/7)))
    torch.testing.assert_close(P, torch.tensor([[0.3, 0.5, 0.2]]))
    torch.testing.assert_close(q, torch.tensor([[0.3, 0.5 / 0.7, 1.0]]))
    with pytest.raises(ValueError, match="probabilities"):
        exit_probabilities(torch.tensor([[1.5]]))


class _Const(torch.nn.Module):
    def __init__(self, logit):
        super().__init__()
        self.logit = logit

    def forward(self, z):
        return torch.full((z.shape[0], 1), float(self.logit))


def test_gated_exit_takes_the_first_open_gate():
    logits = [torch.zeros(4, 3)] * 4
    closed, open_ = _Const(-20.0), _Const(20.0)
    assert gated_exit(logits, [closed, closed, closed]).tolist() == [3] * 4
    assert gated_exit(logits, [closed, open_, closed]).tolist() == [1] * 4
    assert gated_exit(logits, [open_, open_, open_]).tolist() == [0] * 4
    gen = torch.Generator().manual_seed(0)
    assert gated_exit(logits, [closed, open_, closed], mode="probabilistic",
                      generator=gen).tolist() == [1] * 4
    with pytest.raises(ValueError, match="mode"):
        gated_exit(logits, [closed] * 3, mode="greedy")
    with pytest.raises(ValueError, match="gate per IM"):
        gated_exit(logits, [closed] * 2)


def test_probabilistic_exits_follow_q():
    logits = [torch.zeros(20000, 3)] * 2
    exits = gated_exit(logits, [_Const(0.0)], mode="probabilistic",
                       generator=torch.Generator().manual_seed(0))
    assert abs(float((exits == 0).float().mean()) - 0.5) < 0.02


def test_gate_flops_is_the_official_count():
    assert UncertaintyGate.flops(10) == 10 + 11 + 20 + 50 + 5
    with pytest.raises(ValueError):
        UncertaintyGate.flops(1)
