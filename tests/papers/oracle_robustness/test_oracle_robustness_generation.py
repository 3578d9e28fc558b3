"""generate_oracle_bounded / latent_attack: known answers with an identity generator, the
fallback rule, gradients, and bad input."""

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.kits.frozen_standins import is_frozen
from iclr24.kits.vector_quantization import VQAutoencoder
from iclr24.papers.oracle_robustness import (
    LatentGenerator,
    OracleZoo,
    VQLatentGenerator,
    generate_oracle_bounded,
    latent_attack,
)


class Identity:
    """A LatentGenerator whose latent is the image itself: generation = a pixel attack."""

    def encode(self, x):
        return x.clone()

    def decode(self, z):
        return z


def _linear(seed=0, d=16, k=3):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(d, k)).double().eval()


def _data(b=4):
    g = torch.Generator().manual_seed(1)
    return (0.25 + 0.5 * torch.rand(b, 1, 4, 4, generator=g, dtype=torch.float64),
            torch.tensor([0, 1, 2, 0])[:b])


def _zoo(*members, thr=0.0):
    return OracleZoo(list(members), ["a", "b", "c"], thr)


def test_identity_generator_satisfies_the_protocol():
    assert isinstance(Identity(), LatentGenerator)
    assert not isinstance(object(), LatentGenerator)


def test_one_step_is_a_sign_step_on_the_model_loss():
    model, (x, y) = _linear(), _data()
    xg = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.cross_entropy(model(xg), y, reduction="sum"), xg)
    want = (x + 0.01 * g.sign()).clamp(0, 1)
    assert torch.allclose(latent_attack(model, Identity(), x, y, steps=1, lr=0.01), want)
    # lam = 0 and a zoo that accepts everything: the same iterate, all accepted
    accept_all = _zoo(lambda t: 10 * F.one_hot(y, 3).to(t.dtype))
    out, ok = generate_oracle_bounded(model, accept_all, Identity(), x, y, steps=1, lr=0.01,
                                      lam=0.0)
    assert torch.allclose(out, want) and ok.all()


def test_the_penalty_enters_the_ascent_with_weight_lam():
    model, oracle, (x, y) = _linear(0), _linear(5), _data()
    zoo = _zoo(oracle)
    xg = x.clone().requires_grad_(True)
    j = (F.cross_entropy(model(xg), y, reduction="sum")
         - 2.0 * F.cross_entropy(oracle(xg), y, reduction="sum"))
    (g,) = torch.autograd.grad(j, xg)
    out, _ = generate_oracle_bounded(model, zoo, Identity(), x, y, steps=1, lr=0.01, lam=2.0,
                                     fallback="drop")
    assert torch.allclose(out, (x + 0.01 * g.sign()).clamp(0, 1))


def test_the_attack_raises_the_model_loss():
    model, (x, y) = _linear(), _data()
    before = F.cross_entropy(model(x), y)
    after = F.cross_entropy(model(latent_attack(model, Identity(), x, y, steps=10, lr=0.02)), y)
    assert after > before


def test_fallback_returns_the_last_accepted_iterate():
    model, (x, y) = _linear(), _data()

    class Near:
        """Labels y (via the batch's fixed labels) only while the image stays near x."""

        def __call__(self, t):
            close = ((t - x).abs().amax(dim=(1, 2, 3)) <= 0.025).double()
            return (F.one_hot(y, 3).double() * 10 * close[:, None])

    zoo = _zoo(Near(), thr=0.5)
    steps, lr = 5, 0.01  # iterates 0, 1, 2 are within 0.025 of x, 3.. are not
    out, ok = generate_oracle_bounded(model, zoo, Identity(), x, y, steps=steps, lr=lr, lam=0.0)
    ref2 = latent_attack(model, Identity(), x, y, steps=2, lr=lr)
    assert ok.all() and torch.allclose(out, ref2)
    out_d, ok_d = generate_oracle_bounded(model, zoo, Identity(), x, y, steps=steps, lr=lr,
                                          lam=0.0, fallback="drop")
    assert not ok_d.any()
    assert torch.allclose(out_d, latent_attack(model, Identity(), x, y, steps=steps, lr=lr))


def test_a_zoo_that_never_accepts_flags_every_sample():
    model, (x, y) = _linear(), _data()
    wrong = _zoo(lambda t: F.one_hot((y + 1) % 3, 3).double() * 10, thr=0.5)
    out, ok = generate_oracle_bounded(model, wrong, Identity(), x, y, steps=3, lr=0.01, lam=0.0)
    assert not ok.any()
    assert torch.allclose(out, latent_attack(model, Identity(), x, y, steps=3, lr=0.01))


def test_no_gradient_reaches_model_or_oracle_parameters():
    model, oracle, (x, y) = _linear(0), _linear(5), _data()
    model.requires_grad_(True)
    generate_oracle_bounded(model, _zoo(oracle), Identity(), x, y, steps=3, lr=0.01)
    assert all(p.grad is None for p in [*model.parameters(), *oracle.parameters()])


def test_non_differentiable_member_used_in_generation_is_an_error():
    model, (x, y) = _linear(), _data()
    zoo = _zoo(lambda t: F.one_hot(y, 3).double())  # carries no gradient
    with pytest.raises(ValueError, match="oracle member 0 .*not differentiable"):
        generate_oracle_bounded(model, zoo, Identity(), x, y, steps=2, lam=1.0)
    _, ok = generate_oracle_bounded(model, zoo, Identity(), x, y, steps=2, lam=0.0)  # filter
    assert ok.shape == (4,)


def test_vq_generator_wraps_the_kit_autoencoder():
    torch.manual_seed(0)
    ae = VQAutoencoder(in_ch=1, ch=4, ch_mult=(1, 2), code_dim=16, n_codes=8)
    gen = VQLatentGenerator(ae)
    assert is_frozen(ae) and isinstance(gen, LatentGenerator)
    x = torch.rand(3, 1, 8, 8)
    z = gen.encode(x)
    assert z.shape == (3, 16, 4, 4)
    zg = z.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(gen.decode(zg).sum(), zg)  # straight-through through Q
    assert g.abs().sum() > 0
    rec = gen.reconstruct(x)
    assert rec.shape == x.shape and rec.min() >= 0 and rec.max() <= 1
    with pytest.raises(TypeError, match="VQAutoencoder"):
        VQLatentGenerator(nn.Linear(2, 2))


@pytest.mark.parametrize("change, err, match", [
    ({"x": torch.rand(4, 4, 4, dtype=torch.float64)}, ValueError, "shape \\(B, C, H, W\\)"),
    ({"x": torch.full((4, 1, 4, 4), 1.5, dtype=torch.float64)}, ValueError, "\\[0, 1\\]"),
    ({"x": torch.full((4, 1, 4, 4), 200, dtype=torch.uint8)}, TypeError, "floating-point"),
    ({"y": torch.tensor([0, 1])}, ValueError, "y must have shape \\(4,\\)"),
    ({"y": torch.tensor([0, 1, 2, 3])}, ValueError, "labels in \\[0, 3\\)"),
    ({"steps": 0}, ValueError, "steps"),
    ({"lr": -0.1}, ValueError, "lr"),
    ({"lam": -1.0}, ValueError, "lam"),
    ({"fallback": "best"}, ValueError, "fallback"),
    ({"generator": object()}, TypeError, "encode\\(x\\) and decode\\(z\\)"),
    ({"zoo": "zoo"}, TypeError, "OracleZoo"),
])
def test_bad_input(change, err, match):
    x, y = _data()
    args = {"model": _linear(), "zoo": _zoo(_linear(5)), "generator": Identity(), "x": x, "y": y,
            "steps": 2, "lr": 0.01, "lam": 1.0, "fallback": "last_accepted"}
    args.update(change)
    with pytest.raises(err, match=match):
        generate_oracle_bounded(args.pop("model"), args.pop("zoo"), args.pop("generator"),
                                args.pop("x"), args.pop("y"), **args)


def test_model_in_training_mode_and_shape_mismatch_are_errors():
    x, y = _data()
    with pytest.raises(ValueError, match="eval mode"):
        latent_attack(_linear().train(), Identity(), x, y, steps=1)

    class Cropping(Identity):
        def decode(self, z):
            return z[..., :2, :2]

    with pytest.raises(ValueError, match="must have x's shape"):
        latent_attack(_linear(), Cropping(), x, y, steps=1)
