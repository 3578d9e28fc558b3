"""The digit world: disjoint splits, augmentation, PGD, noise, stand-in caching, and that
evaluated models and the judge are kept apart from what they must not see."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from iclr24.kits.frozen_standins import is_frozen
from iclr24.papers.oracle_robustness import (
    SPLIT_FRACTIONS,
    DigitWorldConfig,
    augment_digits,
    build_digit_world,
    digit_splits,
    digit_world,
    gaussian_noise,
    load_digit_tensors,
    pgd_linf,
    train_evaluated_model,
)

TINY = DigitWorldConfig(vq_steps=2, oracle_widths=(4, 6), oracle_epochs=1, model_epochs=1)


def test_splits_are_disjoint_stratified_and_complete():
    _, y = load_digit_tensors(8)
    s = digit_splits(y.numpy(), seed=3)
    parts = [s.train, s.oracle_pool, s.test]
    assert sum(len(p) for p in parts) == len(y)
    assert len(np.unique(np.concatenate(parts))) == len(y)
    for p, f in zip(parts, SPLIT_FRACTIONS):
        assert abs(len(p) / len(y) - f) < 0.01
        assert np.bincount(y.numpy()[p], minlength=10).min() > 0
    assert np.array_equal(s.non_test, np.sort(np.concatenate([s.train, s.oracle_pool])))


def test_load_digit_tensors():
    x, y = load_digit_tensors(8)
    assert x.shape == (1797, 1, 8, 8) and x.min() >= 0 and x.max() <= 1 and y.dtype == torch.int64
    with pytest.raises(ValueError, match="multiple of 4"):
        load_digit_tensors(10)


def test_augment_digits_identity_range_and_determinism():
    x, _ = load_digit_tensors(8)
    x = x[:16]
    same = augment_digits(x, torch.Generator().manual_seed(0), max_rotation=0, scale=(1, 1),
                          max_shift_px=0, elastic_px=0)
    assert torch.allclose(same, x, atol=1e-6)
    a = augment_digits(x, torch.Generator().manual_seed(1))
    b = augment_digits(x, torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and not torch.allclose(a, x) and a.min() >= 0 and a.max() <= 1
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        augment_digits(x * 3, torch.Generator())


def test_gaussian_noise_and_pgd():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).eval()
    x, y = load_digit_tensors(8)
    x, y = x[:32], y[:32]
    adv = pgd_linf(model, x, y, eps=0.1, steps=5, generator=torch.Generator().manual_seed(0))
    assert (adv - x).abs().max() <= 0.1 + 1e-6 and adv.min() >= 0 and adv.max() <= 1
    assert F.cross_entropy(model(adv), y) > F.cross_entropy(model(x), y)
    assert all(p.grad is None for p in model.parameters())
    noisy = gaussian_noise(x, 0.3, torch.Generator().manual_seed(0))
    assert noisy.min() >= 0 and noisy.max() <= 1 and not torch.equal(noisy, x)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_noise(x, 0.0, torch.Generator())
    with pytest.raises(ValueError, match="eps"):
        pgd_linf(model, x, y, eps=0.0, steps=5, generator=torch.Generator())


def test_train_evaluated_model_kinds():
    x, y = load_digit_tensors(8)
    with pytest.raises(ValueError, match="kind must be one of"):
        train_evaluated_model("vit", x[:8], y[:8], seed=0)
    m = train_evaluated_model("logreg", x[:64], y[:64], seed=0, config=TINY)
    assert is_frozen(m) and m(x[:2]).shape == (2, 10)


def test_world_is_cached_frozen_and_keeps_its_parts_apart(tmp_path, one_torch_thread,
                                                          monkeypatch):
    w1 = build_digit_world(TINY, 0, root=tmp_path)
    w2 = build_digit_world(TINY, 0, root=tmp_path)  # loaded from the cache
    for a, b in zip(w1.zoo.members, w2.zoo.members):
        assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(),
                                                     b.state_dict().values()))
    assert all(is_frozen(m) for m in w1.zoo.members)
    assert is_frozen(w1.generator.autoencoder)
    # the judge is no member of the zoo and not a torch module (it cannot be differentiated)
    assert all(m is not w1.judge for m in w1.zoo.members)
    assert not isinstance(w1.judge, nn.Module)
    # evaluated models train on the evaluated-model split only, never the pool or the test set
    seen = []
    real = digit_world.train_evaluated_model

    def spy(kind, x, y, **kw):
        seen.append(x)
        return real(kind, x, y, **kw)

    monkeypatch.setattr(digit_world, "train_evaluated_model", spy)
    w1.train_model("logreg", 0)
    train_x, _ = w1.part("train")
    assert torch.equal(seen[0], train_x)
    pool = {t.numpy().tobytes() for t in w1.part("oracle_pool")[0]} | \
        {t.numpy().tobytes() for t in w1.part("test")[0]}
    train_only = [t for t in train_x if t.numpy().tobytes() not in pool]
    assert len(train_only) > 0.95 * len(train_x)  # (a few digits occur twice in the data set)
    assert len(w1.splits.train) == len(seen[0])
    with pytest.raises(ValueError, match="name must be"):
        w1.part("everything")
