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


def test_lemke_howson_that_cycles_is_not_a_hang_and_any_solution_is_verified():
    import time

    from iclr24.papers.nfg_transformer import l2_invariant_games

    # game 6 of this draw makes nashpy's Lemke-Howson (label 0) cycle (found in a small run)
    g = l2_invariant_games(7, (8, 8), torch.Generator().manual_seed(0), dtype=torch.float64)
    t0 = time.perf_counter()
    x, y, ok, methods = nashpy_equilibria(g[6:7].numpy(), time_limit_s=0.5, return_methods=True)
    assert time.perf_counter() - t0 < 25 and x.shape == (1, 8) and y.shape == (1, 8)
    if ok[0]:  # another label, the transposed game or vertex enumeration found one: verified
        assert methods[0] != "lh0"
        assert nash_conv(g[6:7], [torch.from_numpy(x), torch.from_numpy(y)], reduce="sum") < 1e-6
    x, y, ok = nashpy_equilibria(g[:2].numpy())
    assert ok.all() and nash_conv(g[:2], [torch.from_numpy(x), torch.from_numpy(y)]).max() < 1e-9


def test_lemke_howson_non_equilibrium_is_caught_and_replaced_by_a_verified_one():
    import nashpy
    import numpy as np

    from iclr24.papers.nfg_transformer import l2_invariant_games

    # nashpy 0.0.43's Lemke-Howson returns a non-equilibrium on 6x4 games (every label)
    g = l2_invariant_games(3, (6, 4), torch.Generator().manual_seed(1), dtype=torch.float64)
    a, b = g[0, 0].numpy(), g[0, 1].numpy()
    lx, ly = nashpy.Game(a + np.arange(4.0), b + np.arange(6.0)[:, None]).lemke_howson(0)
    bad = nash_conv(g[:1], [torch.from_numpy(lx)[None], torch.from_numpy(ly)[None]], reduce="sum")
    assert bad > 0.01  # the raw solver output is not an equilibrium
    x, y, ok, methods = nashpy_equilibria(g.numpy(), return_methods=True)
    assert ok.all() and all(m != "lh0" for m in methods)
    nc = nash_conv(g, [torch.from_numpy(x), torch.from_numpy(y)], reduce="sum")
    assert float(nc.max()) < 1e-6


def test_nashpy_equilibria_marks_unverifiable_games_unsolved(monkeypatch):
    import nashpy
    import numpy as np

    # every solver returns a pure profile that is not an equilibrium -> unsolved, never solved
    def wrong(self, *args, **kwargs):
        x, y = np.zeros(self.payoff_matrices[0].shape[0]), np.zeros(
            self.payoff_matrices[0].shape[1])
        x[0] = y[0] = 1.0
        return x, y

    def wrong_iter(self):
        yield wrong(self)

    monkeypatch.setattr(nashpy.Game, "lemke_howson", wrong)
    monkeypatch.setattr(nashpy.Game, "vertex_enumeration", wrong_iter)
    pd = torch.tensor([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]],
                      dtype=torch.float64)[None]  # (0, 0) is not an equilibrium
    _, _, ok, methods = nashpy_equilibria(pd.numpy(), return_methods=True)
    assert not ok[0] and methods == ["unsolved"]


def test_bad_inputs_to_baselines_name_the_argument():
    with pytest.raises(ValueError, match="finite"):
        nashpy_equilibria(np_nan_game())
    with pytest.raises(ValueError, match="at least one game"):
        nashpy_equilibria(torch.zeros(0, 2, 3, 3).numpy())
    with pytest.raises(ValueError, match="finite"):
        PayoffMLP((3, 3))(torch.full((1, 2, 3, 3), float("nan")))
    with pytest.raises(ValueError, match="finite"):
        replicator_dynamics(torch.full((1, 2, 3, 3), float("nan")))
    with pytest.raises(ValueError, match="at least one game"):
        replicator_dynamics(torch.zeros(0, 2, 3, 3))


def np_nan_game():
    g = torch.zeros(1, 2, 3, 3, dtype=torch.float64)
    g[0, 0, 1, 1] = float("nan")
    return g.numpy()


def test_regularised_melo_beats_the_global_mean_on_held_out_disc_entries():
    from iclr24.papers.nfg_transformer import disc_games, fit_ratings_cv

    g, m = disc_games(48, 12, 4, 0.5, torch.Generator().manual_seed(5))
    w, hidden = g[:, 0], ~m
    mean_mse = float((0.5 - w)[hidden].square().mean())  # global mean of a symmetric mask = 0.5
    r, c, lam = fit_ratings_cv(w, m, k=2, steps=300, generator=torch.Generator().manual_seed(0))
    melo_mse = float((predict_ratings(r, c) - w)[hidden].square().mean())
    assert melo_mse < mean_mse and lam > 0
