import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.fedimpro import (
    ClassGaussianBank,
    aggregate_class_gaussians,
    check_noise_std,
    class_moments,
    privatize,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_initial_state_matches_the_official_init():
    bank = ClassGaussianBank(4, 6, sigma_max=0.1, ema="official",
                             generator=torch.Generator().manual_seed(0))
    assert bank.mean.shape == (4, 6) and 0 <= bank.mean.min() and bank.mean.max() <= 1
    assert torch.all(bank.std == 0.1)


def test_official_ema_keeps_the_last_batch_statistics_clipped():
    bank = ClassGaussianBank(3, 2, sigma_max=0.5, ema="official")
    old = bank.state_dict()
    z = torch.tensor([[1.0, 2.0], [3.0, 2.2], [10.0, 0.0], [5.0, 5.0]])
    y = torch.tensor([0, 0, 1, 0])
    bank.update(z, y)
    assert torch.allclose(bank.mean[0], z[[0, 1, 3]].mean(0))
    assert torch.allclose(bank.std[0], z[[0, 1, 3]].std(0).clamp(max=0.5))
    assert torch.allclose(bank.mean[1], z[2])
    assert torch.equal(bank.std[1], old["std"][1])  # one sample: std skipped
    assert torch.equal(bank.mean[2], old["mean"][2])  # class absent: untouched


def test_count_ema_weights_by_n_over_nominal_count():
    bank = ClassGaussianBank(2, 3, sigma_max=10.0, nominal_count=8.0)
    mu0, sd0 = bank.mean.clone(), bank.std.clone()
    z = torch.randn(4, 3)
    bank.update(z, torch.zeros(4, dtype=torch.long))
    w = 4 / 8
    assert torch.allclose(bank.mean[0], (1 - w) * mu0[0] + w * z.mean(0))
    assert torch.allclose(bank.std[0], (1 - w) * sd0[0] + w * z.std(0))
    assert torch.equal(bank.mean[1], mu0[1])


def test_sample_is_class_balanced_and_follows_the_gaussians():
    bank = ClassGaussianBank(3, 4, sigma_max=1.0, ema="official")
    bank.load_state_dict({"mean": torch.arange(12.0).view(3, 4),
                          "std": torch.full((3, 4), 0.5)})
    z, y = bank.sample(32, torch.Generator().manual_seed(0))
    assert z.shape == (33, 4) and torch.equal(torch.bincount(y), torch.tensor([11, 11, 11]))
    zb, yb = bank.sample(30_000, torch.Generator().manual_seed(1))
    for c in range(3):
        assert torch.allclose(zb[yb == c].mean(0), bank.mean[c], atol=0.03)
        assert torch.allclose(zb[yb == c].std(0), bank.std[c], atol=0.03)
    assert not z.requires_grad


def test_bank_validation():
    with pytest.raises(ValueError, match="nominal_count"):
        ClassGaussianBank(2, 2)
    with pytest.raises(ValueError, match="sigma_max"):
        ClassGaussianBank(2, 2, sigma_max=0.0, ema="official")
    bank = ClassGaussianBank(2, 3, ema="official")
    with pytest.raises(ValueError, match=r"state\['mean'\] has shape"):
        bank.load_state_dict({"mean": torch.zeros(3, 3), "std": torch.zeros(2, 3)})
    with pytest.raises(ValueError, match="z must have shape"):
        bank.update(torch.zeros(4, 2), torch.zeros(4, dtype=torch.long))


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_aggregation_equals_pooled_moments(k, seed):
    """With exact per-client class moments (ddof=0), the law of total variance gives the
    pooled class mean and variance."""
    g = torch.Generator().manual_seed(seed)
    c, d = 3, 4
    states, counts, pooled = [], [], {i: [] for i in range(c)}
    for _ in range(k):
        n = torch.randint(0, 6, (c,), generator=g)
        mean, std = torch.zeros(c, d, dtype=torch.float64), torch.ones(c, d, dtype=torch.float64)
        for cls in range(c):
            if n[cls] > 0:
                z = torch.randn(int(n[cls]), d, generator=g, dtype=torch.float64) * 2 + cls
                pooled[cls].append(z)
                mean[cls], std[cls] = z.mean(0), z.std(0, unbiased=False)
        states.append({"mean": mean, "std": std})
        counts.append(n.numpy())
    out = aggregate_class_gaussians(states, np.stack(counts))
    for cls in range(c):
        if pooled[cls]:
            allz = torch.cat(pooled[cls])
            assert torch.allclose(out["mean"][cls], allz.mean(0), atol=1e-10)
            assert torch.allclose(out["std"][cls], allz.std(0, unbiased=False), atol=1e-10)


def test_aggregation_uniform_for_unseen_class_and_validates():
    s1 = {"mean": torch.zeros(2, 2), "std": torch.ones(2, 2)}
    s2 = {"mean": torch.full((2, 2), 2.0), "std": torch.ones(2, 2)}
    out = aggregate_class_gaussians([s1, s2], [[3, 0], [1, 0]])
    assert torch.allclose(out["mean"][0], torch.full((2,), 0.5))
    assert torch.allclose(out["mean"][1], torch.ones(2))  # nobody holds class 1: uniform
    assert torch.allclose(out["std"][1], torch.full((2,), 2.0).sqrt())  # 1 + between var 1
    with pytest.raises(ValueError, match="class_counts"):
        aggregate_class_gaussians([s1, s2], [[1, 1]])
    with pytest.raises(ValueError, match="at least one"):
        aggregate_class_gaussians([], np.zeros((0, 2)))


def test_privatize():
    st_ = {"mean": torch.zeros(3, 5), "std": torch.full((3, 5), 0.01)}
    same = privatize(st_, 0.0)
    assert torch.equal(same["mean"], st_["mean"])
    a = privatize(st_, 1.0, torch.Generator().manual_seed(0))
    b = privatize(st_, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(a["mean"], b["mean"])
    assert (a["std"] >= 0).all() and (a["std"] == 0).any()
    with pytest.raises(ValueError, match="noise_std"):
        privatize(st_, -0.1)


def test_class_moments_match_per_class_torch_moments():
    g = torch.Generator().manual_seed(3)
    z = torch.randn(40, 5, generator=g, dtype=torch.float64) * 3 + 1
    y = torch.randint(0, 3, (40,), generator=g)
    y[0] = 3  # class 3 seen once; class 4 absent
    n, mean, std = class_moments(z, y, 5)
    pop_n, pop_mean, pop_std = class_moments(z, y, 5, unbiased=False)
    assert n.tolist() == torch.bincount(y, minlength=5).double().tolist()
    for c in range(3):
        zc = z[y == c]
        assert torch.allclose(mean[c], zc.mean(0))
        assert torch.allclose(std[c], zc.std(0))
        assert torch.allclose(pop_std[c], zc.std(0, unbiased=False))
    assert torch.equal(pop_n, n) and torch.equal(pop_mean, mean)
    assert torch.allclose(mean[3], z[0]) and torch.all(std[3] == 0)  # one sample: std 0
    assert torch.all(mean[4] == 0) and torch.all(std[4] == 0)  # absent class


def test_nan_features_are_refused_not_folded_into_the_bank():
    bank = ClassGaussianBank(2, 3, nominal_count=4.0)
    before = bank.state_dict()
    z = torch.ones(4, 3)
    z[1, 2] = float("nan")
    with pytest.raises(ValueError, match="z has NaN or inf"):
        bank.update(z, torch.tensor([0, 0, 1, 1]))
    z[1, 2] = float("inf")
    with pytest.raises(ValueError, match="z has NaN or inf"):
        class_moments(z, torch.tensor([0, 0, 1, 1]), 2)
    assert torch.equal(bank.mean, before["mean"]) and torch.equal(bank.std, before["std"])


def test_negative_or_nan_std_is_refused_not_squared_away():
    good = {"mean": torch.zeros(2, 2), "std": torch.ones(2, 2)}
    bad = {"mean": torch.zeros(2, 2), "std": -torch.ones(2, 2)}
    with pytest.raises(ValueError, match=r"states\[1\]\['std'\] must be >= 0"):
        aggregate_class_gaussians([good, bad], [[1, 1], [1, 1]])
    nan_mean = {"mean": torch.full((2, 2), float("nan")), "std": torch.ones(2, 2)}
    with pytest.raises(ValueError, match=r"states\[0\]\['mean'\] has NaN"):
        aggregate_class_gaussians([nan_mean, good], [[1, 1], [1, 1]])
    with pytest.raises(ValueError, match="needs keys"):
        aggregate_class_gaussians([{"mean": torch.zeros(2, 2)}], [[1, 1]])
    bank = ClassGaussianBank(2, 2, ema="official")
    with pytest.raises(ValueError, match=r"state\['std'\] must be >= 0"):
        bank.load_state_dict(bad)
    with pytest.raises(ValueError, match=r"state\['std'\] has NaN"):
        bank.load_state_dict({"mean": torch.zeros(2, 2), "std": torch.full((2, 2), float("nan"))})


@pytest.mark.parametrize("noise", [float("nan"), float("inf"), -0.1])
def test_nan_or_negative_noise_is_refused(noise):
    st_ = {"mean": torch.zeros(2, 2), "std": torch.ones(2, 2)}
    with pytest.raises(ValueError, match="noise_std must be a finite number >= 0"):
        privatize(st_, noise)
    with pytest.raises(ValueError, match="noise_std"):
        check_noise_std(noise)


def test_noise_std_must_be_a_number():
    with pytest.raises(TypeError, match="noise_std must be a real number"):
        check_noise_std("0.1")
    with pytest.raises(TypeError, match="noise_std"):
        check_noise_std(True)
    assert check_noise_std(0) == 0.0
