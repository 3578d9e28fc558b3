"""GaussianEnsemble: identical members give zero uncertainty, a known linear system is learned,
TS1 propagation, determinism, bad input."""

import numpy as np
import pytest
import torch

from iclr24.kits.reinforcement import TransitionBuffer
from iclr24.kits.threads import torch_threads
from iclr24.papers.coplanner import GaussianEnsemble


def _linear_buffer(n=600, seed=0):
    """s' = s + 0.1 (A s + B a), r = s_0 - a^2 (smooth, exactly learnable targets)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(-1, 1, (n, 2))
    a = rng.uniform(-1, 1, (n, 1))
    A, B = np.array([[0.0, 1.0], [-1.0, -0.2]]), np.array([[0.0], [1.0]])
    nxt = s + 0.1 * (s @ A.T + a @ B.T)
    r = s[:, 0] - a[:, 0] ** 2
    buf = TransitionBuffer(2, 1, n, seed=seed)
    buf.add(s, a, r, nxt, np.zeros(n))
    return buf, (s, a, nxt, r)


def _make_identical(model):
    with torch.no_grad():
        for layer in [*model.layers, model.head]:
            layer.weight.copy_(layer.weight[:1].expand_as(layer.weight))
            layer.bias.copy_(layer.bias[:1].expand_as(layer.bias))


@pytest.fixture(scope="module")
def fitted():
    torch.manual_seed(0)
    buf, data = _linear_buffer()
    model = GaussianEnsemble(2, 1, n_members=4, hidden=32, n_layers=2)
    with torch_threads(1):
        info = model.fit(buf, generator=torch.Generator().manual_seed(0), batch_size=32,
                         lr=3e-3, max_epochs=40)
    return model, data, info


def test_identical_members_give_zero_uncertainty(fitted):
    model, (s, a, _, _), _ = fitted
    obs, act = torch.tensor(s[:50], dtype=torch.float32), torch.tensor(a[:50], dtype=torch.float32)
    _, _, u = model.sample(obs, act, torch.Generator().manual_seed(1))
    assert (u > 0).all()  # trained members disagree
    clone = GaussianEnsemble(2, 1, n_members=4, hidden=32, n_layers=2)
    clone.load_state_dict(model.state_dict())
    clone.fitted = True
    _make_identical(clone)
    _, _, u0 = clone.sample(obs, act, torch.Generator().manual_seed(1))
    assert torch.all(u0 == 0)
    # the official independent draw keeps the aleatoric spread even for identical members
    clone.noise = "independent"
    _, _, u1 = clone.sample(obs, act, torch.Generator().manual_seed(1))
    assert (u1 > 0).all()


def test_learns_a_known_linear_system(fitted):
    model, (s, a, nxt, r), info = fitted
    obs, act = torch.tensor(s, dtype=torch.float32), torch.tensor(a, dtype=torch.float32)
    with torch.no_grad():
        mean, _ = model(model._inputs(obs, act))
    pred = mean.mean(0) * model.out_std + model.out_mean
    target = np.concatenate([nxt - s, r[:, None]], axis=1)
    rel = ((pred.numpy() - target) ** 2).mean(0) / target.var(0)
    assert (rel < 0.05).all(), rel
    assert info["val_mse"] < 0.05 and info["epochs"] >= 1


def test_sample_is_one_members_draw(fitted):
    """TS1: with shared noise, each row's (Δs, r) equals member k's μ_k + σ_k ε for one k."""
    model, (s, a, _, _), _ = fitted
    obs, act = torch.tensor(s[:30], dtype=torch.float32), torch.tensor(a[:30], dtype=torch.float32)
    g = torch.Generator().manual_seed(3)
    nxt, rew, _ = model.sample(obs, act, g)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        mean, logvar = model(model._inputs(obs, act))
        eps = torch.randn((1, *mean.shape[1:]), generator=g)
        draws = (mean + torch.exp(0.5 * logvar) * eps) * model.out_std + model.out_mean
    y = torch.cat([nxt - obs, rew[:, None]], dim=1)
    match = (draws - y[None]).abs().amax(-1).min(0).values
    assert torch.all(match < 1e-5)


def test_same_generator_same_samples(fitted):
    model, (s, a, _, _), _ = fitted
    obs, act = torch.tensor(s[:10], dtype=torch.float32), torch.tensor(a[:10], dtype=torch.float32)
    one = model.sample(obs, act, torch.Generator().manual_seed(7))
    two = model.sample(obs, act, torch.Generator().manual_seed(7))
    assert all(torch.equal(x, y) for x, y in zip(one, two))


def test_bad_inputs(fitted):
    model, _, _ = fitted
    with pytest.raises(ValueError, match="n_members must be >= 2"):
        GaussianEnsemble(2, 1, n_members=1)
    with pytest.raises(ValueError, match="noise"):
        GaussianEnsemble(2, 1, noise="gaussian")
    with pytest.raises(ValueError, match="hidden"):
        GaussianEnsemble(2, 1, hidden=0)
    with pytest.raises(RuntimeError, match="fit"):
        GaussianEnsemble(2, 1).sample(torch.zeros(1, 2), torch.zeros(1, 1))
    with pytest.raises(ValueError, match="obs must have shape"):
        model.sample(torch.zeros(3, 5), torch.zeros(3, 1))
    with pytest.raises(ValueError, match="act must have shape"):
        model.sample(torch.zeros(3, 2), torch.zeros(2, 1))
    with pytest.raises(ValueError, match="buffer holds"):
        GaussianEnsemble(3, 1).fit(TransitionBuffer(2, 1, 4, seed=0),
                                   generator=torch.Generator())
    with pytest.raises(TypeError, match="TransitionBuffer"):
        model.fit([1, 2], generator=torch.Generator())


def test_non_finite_inputs_are_refused(fitted):
    model, _, _ = fitted
    with pytest.raises(ValueError, match="obs must be finite"):
        model.sample(torch.tensor([[float("nan"), 0.0]]), torch.zeros(1, 1))
    with pytest.raises(ValueError, match="act must be finite"):
        model.sample(torch.zeros(1, 2), torch.tensor([[float("inf")]]))
