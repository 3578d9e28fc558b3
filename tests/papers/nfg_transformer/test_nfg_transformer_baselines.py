"""Baselines: replicator dynamics, Elo/mElo fits, the Lemke-Howson wrapper, the MLP."""

import math

import pytest
import torch

from iclr24.papers.nfg_transformer import (
    PayoffMLP,
    fit_ratings,
    nash_conv,
    nashpy_equilibria,
    predict_ratings,
    replicator_dynamics,
)


def test_replicator_dynamics_finds_dominant_strategies():
    # prisoner's dilemma: defect (action 1) strictly dominates
    pd = torch.tensor([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])[None]
    x, y = replicator_dynamics(pd, steps=300, step_size=0.1)
    assert x[0, 1] > 0.99 and y[0, 1] > 0.99
    assert float(nash_conv(pd, [x, y])) < 0.05


def test_replicator_dynamics_keeps_uniform_at_interior_equilibrium():
    a = torch.tensor([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
    g = torch.stack([a, -a])[None]  # rock-paper-scissors: uniform is the fixed point
    x, y = replicator_dynamics(g, steps=50)
    assert torch.allclose(x, torch.full((1, 3), 1 / 3)) and torch.allclose(y, x)


def test_elo_recovers_transitive_game_and_melo_fits_rock_paper_scissors():
    r = torch.tensor([[-1.0, 0.0, 0.5, 2.0]])
    w = torch.sigmoid(r[:, :, None] - r[:, None, :])
    mask = torch.ones(1, 4, 4, dtype=torch.bool)
    ratings, _ = fit_ratings(w, mask, k=0, steps=800)
    torch.testing.assert_close(predict_ratings(ratings, None), w, atol=1e-3, rtol=0)
    # cyclic: W_ij = sigmoid(2 * sin(theta_i - theta_j)) is rank-2 skew (mElo-2 exact, Elo not)
    theta = torch.tensor([[0.0, 2 * math.pi / 3, 4 * math.pi / 3]])
    c = torch.stack([theta.cos(), theta.sin()], -1) * math.sqrt(2)
    w = predict_ratings(torch.zeros(1, 3), c)
    mask = torch.ones(1, 3, 3, dtype=torch.bool)
    elo_err = (predict_ratings(*fit_ratings(w, mask, k=0)) - w).square().mean()
    r1, c1 = fit_ratings(w, mask, k=1, steps=1500, generator=torch.Generator().manual_seed(0))
    melo_err = (predict_ratings(r1, c1) - w).square().mean()
    assert melo_err < 1e-4 < elo_err


def test_nashpy_equilibria_and_mlp_validate_inputs():
    with pytest.raises(ValueError, match="payoffs"):
        nashpy_equilibria(torch.zeros(2, 3, 3).numpy())
    with pytest.raises(ValueError, match="payoffs"):
        PayoffMLP((3, 3))(torch.zeros(2, 2, 3, 4))
    with pytest.raises(ValueError, match="mask"):
        fit_ratings(torch.zeros(1, 3, 3), torch.ones(1, 3, 3))
    with pytest.raises(ValueError, match="payoffs"):
        replicator_dynamics(torch.zeros(1, 3, 3, 3))


def test_lemke_howson_that_cycles_is_reported_as_a_failure_not_a_hang():
    from iclr24.papers.nfg_transformer import l2_invariant_games

    # game 6 of this draw makes nashpy's pivoting cycle (found in a small run)
    g = l2_invariant_games(7, (8, 8), torch.Generator().manual_seed(0), dtype=torch.float64)
    x, y, ok = nashpy_equilibria(g[6:7].numpy(), time_limit_s=0.5)
    assert not ok[0] and x.shape == (1, 8) and y.shape == (1, 8)
    x, y, ok = nashpy_equilibria(g[:2].numpy())
    assert ok.all() and nash_conv(g[:2], [torch.from_numpy(x), torch.from_numpy(y)]).max() < 1e-9
