"""Deviation gains and NashConv: brute force, nashpy's equilibria, closed forms, masks."""

import itertools

import nashpy
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.nfg_transformer import (
    deviation_gains,
    l2_invariant_games,
    max_deviation_gain,
    nash_conv,
    nashpy_equilibria,
)


def _brute_gains(g, strategies, mask=None):
    """g_p(a') = sum_s sigma(s) m(s) [a' appears] (G_p(a', s_-p) - G_p(s)), by loops."""
    n, sizes = g.shape[0], g.shape[1:]
    mask = np.ones(sizes, bool) if mask is None else mask
    out = []
    for p in range(n):
        seen = mask.any(axis=tuple(q for q in range(n) if q != p))
        gp = np.zeros(sizes[p])
        for a in range(sizes[p]):
            for s in itertools.product(*map(range, sizes)):
                prob = np.prod([strategies[q][s[q]] for q in range(n)])
                dev = list(s)
                dev[p] = a
                gp[a] += prob * mask[s] * seen[a] * (g[(p, *dev)] - g[(p, *s)])
        out.append(gp)
    return out


@settings(max_examples=15)
@given(st.integers(0, 10_000), st.sampled_from([(2, 3), (3, 2, 2), (4, 4)]), st.booleans())
def test_deviation_gains_match_brute_force(seed, shape, masked):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(len(shape), *shape))
    strategies = [rng.dirichlet(np.ones(t)) for t in shape]
    mask = rng.random(shape) < 0.6 if masked else None
    if mask is not None:
        mask.flat[0] = True
    got = deviation_gains(torch.from_numpy(g)[None],
                          [torch.from_numpy(s)[None] for s in strategies],
                          None if mask is None else torch.from_numpy(mask)[None])
    for a, b in zip(got, _brute_gains(g, strategies, mask)):
        np.testing.assert_allclose(a[0].numpy(), b, atol=1e-12)


def test_nash_conv_is_zero_at_every_support_enumeration_equilibrium_of_4x4_games():
    # raw Gaussian games: non-degenerate almost surely (centring makes the payoff matrices
    # singular, which support enumeration's equal-support systems do not handle)
    g = torch.randn(5, 2, 4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    count = 0
    for i in range(5):
        for x, y in nashpy.Game(g[i, 0].numpy(), g[i, 1].numpy()).support_enumeration():
            s = [torch.from_numpy(x)[None], torch.from_numpy(y)[None]]
            assert float(nash_conv(g[i:i + 1], s, reduce="sum")) < 1e-9
            count += 1
    assert count >= 5


def test_nash_conv_is_zero_at_lemke_howson_equilibria_and_positive_elsewhere():
    g = l2_invariant_games(20, (8, 8), torch.Generator().manual_seed(1), dtype=torch.float64)
    x, y, ok = nashpy_equilibria(g.numpy())
    assert ok.all()
    s = [torch.from_numpy(x), torch.from_numpy(y)]
    assert nash_conv(g, s, reduce="max").max() < 1e-9
    uniform = [torch.full((20, 8), 1 / 8, dtype=torch.float64)] * 2
    assert (nash_conv(g, uniform, reduce="max") > 1e-3).all()


def test_matching_pennies_closed_form_and_reductions():
    a = torch.tensor([[1.0, -1.0], [-1.0, 1.0]])
    g = torch.stack([a, -a])[None]
    half = [torch.tensor([[0.5, 0.5]])] * 2
    assert float(nash_conv(g, half, reduce="sum")) == pytest.approx(0.0, abs=1e-7)
    # both play action 0: player 0 wins (no gain), player 1 gains 2 by switching
    pure = [torch.tensor([[1.0, 0.0]])] * 2
    assert float(nash_conv(g, pure, reduce="max")) == pytest.approx(2.0)
    assert float(nash_conv(g, pure, reduce="sum")) == pytest.approx(2.0)
    # (0.75, 0.25) vs (0.5, 0.5): player 1's best response gains 0.5 * ... = 0.5
    skew = [torch.tensor([[0.75, 0.25]]), torch.tensor([[0.5, 0.5]])]
    gains = deviation_gains(g, skew)
    assert torch.allclose(gains[0], torch.zeros(1, 2), atol=1e-7)
    assert torch.allclose(gains[1], torch.tensor([[-0.5, 0.5]]))
    assert float(nash_conv(g, skew, reduce="sum")) == pytest.approx(0.5)


def test_max_deviation_gain_equals_nash_conv_of_pure_profiles():
    g = l2_invariant_games(3, (3, 4), torch.Generator().manual_seed(2), dtype=torch.float64)
    target = max_deviation_gain(g)
    assert target.shape == (3, 3, 4) and (target >= 0).all()
    eye3, eye4 = torch.eye(3, dtype=torch.float64), torch.eye(4, dtype=torch.float64)
    for i in range(3):
        for j in range(4):
            s = [eye3[i].expand(3, 3), eye4[j].expand(3, 4)]
            torch.testing.assert_close(nash_conv(g, s, reduce="max"), target[:, i, j])
    # a pure NE (a dominant-strategy game) has target exactly 0
    pd = torch.tensor([[[3.0, 0.0], [5.0, 1.0]], [[3.0, 5.0], [0.0, 1.0]]])[None]
    target = max_deviation_gain(pd)[0]
    assert float(target[1, 1]) == 0.0 and (target > 0).sum() == 3


def test_gradients_are_finite_with_masked_actions():
    g = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(0))
    logits = [torch.zeros(2, 3, requires_grad=True), torch.zeros(2, 3, requires_grad=True)]
    masked = [logits[0].masked_fill(torch.tensor([False, False, True]), -float("inf")), logits[1]]
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[:, 2, :] = False
    loss = nash_conv(g, [lg.softmax(-1) for lg in masked], mask).sum()
    loss.backward()
    assert all(torch.isfinite(lg.grad).all() for lg in logits)


def test_bad_strategies_and_reduce_give_clear_errors():
    g = torch.zeros(2, 2, 3, 3)
    good = [torch.full((2, 3), 1 / 3)] * 2
    with pytest.raises(ValueError, match="reduce"):
        nash_conv(g, good, reduce="mean")
    with pytest.raises(ValueError, match="entries"):
        nash_conv(g, good[:1])
    with pytest.raises(ValueError, match=r"strategies\[1\]"):
        deviation_gains(g, [good[0], torch.ones(2, 4)])
    with pytest.raises(TypeError, match="list"):
        deviation_gains(g, torch.ones(2, 3))
    with pytest.raises(ValueError, match="players"):
        max_deviation_gain(torch.zeros(2, 3, 3, 3))
    with pytest.raises(ValueError, match="mask must have shape"):
        deviation_gains(g, good, torch.ones(2, 3, dtype=torch.bool))


def test_strategies_off_the_simplex_or_not_finite_are_refused():
    g = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(0))
    good = torch.full((2, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"strategies\[0\].*sum to 1"):
        nash_conv(g, [torch.ones(2, 3) * 7.0, good])  # unnormalised scores
    with pytest.raises(ValueError, match=r"strategies\[1\].*non-negative"):
        nash_conv(g, [good, torch.tensor([[1.5, -0.5, 0.0]] * 2)])  # sums to 1, negative
    with pytest.raises(ValueError, match=r"strategies\[0\].*finite"):
        deviation_gains(g, [torch.full((2, 3), float("nan")), good])
    with pytest.raises(TypeError, match=r"strategies\[0\].*floating"):
        nash_conv(g, [torch.ones(2, 3, dtype=torch.long), good])
    # round-off is fine: a float32 softmax
    sm = torch.randn(2, 3).softmax(-1)
    assert torch.isfinite(nash_conv(g, [sm, good])).all()


def test_bad_payoffs_in_nash_conv_are_refused():
    g = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(0))
    good = [torch.full((2, 3), 1 / 3)] * 2
    bad = g.clone()
    bad[0, 1, 2, 2] = float("nan")
    with pytest.raises(ValueError, match="payoffs must be finite"):
        nash_conv(bad, good)
    with pytest.raises(ValueError, match="payoffs must be finite"):
        max_deviation_gain(bad)
    with pytest.raises(ValueError, match="at least one game"):
        nash_conv(g[:0], [s[:0] for s in good])
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[0, 2, 2] = False  # deviation gains read unobserved deviations too: still refused
    with pytest.raises(ValueError, match="payoffs must be finite"):
        nash_conv(bad, good, mask)
