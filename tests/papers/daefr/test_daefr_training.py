"""Stage 1 (fit_codebook) and the experiment's data/stand-in plumbing."""

import pytest
import torch

from iclr24.papers.daefr import CodebookConfig, fit_codebook
from iclr24.papers.daefr.experiment import DigitsExperiment, digit_features, digits_data

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _x(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.zeros(n, 1, 8, 8)
    base[:, :, 2:6, 2:6] = torch.rand(n, 1, 1, 1, generator=g)  # squares of random brightness
    return base * 2 - 1


def test_fit_codebook_learns_and_is_deterministic():
    x = _x()
    cfg = CodebookConfig(ch=4, ch_mult=(1, 2), code_dim=8, n_codes=8, steps=20, batch_size=16,
                         lr=3e-3, restart_every=10, kmeans_images=32)
    a, fit = fit_codebook(x, cfg, seed=0)
    assert len(fit.recon) == 20 and fit.recon[-1] < fit.recon[0]
    assert not a.training and a.quantizer.n_codes == 8 and a.factor == 2
    b, _ = fit_codebook(x, cfg, seed=0)
    assert all(torch.equal(v, b.state_dict()[k]) for k, v in a.state_dict().items())


def test_codebook_config_validation():
    with pytest.raises(ValueError, match="n_codes"):
        CodebookConfig(n_codes=0)
    with pytest.raises(ValueError, match="lr"):
        CodebookConfig(lr=0.0)
    with pytest.raises(TypeError, match="cfg"):
        fit_codebook(_x(), {"steps": 3})
    with pytest.raises(ValueError, match="\\[-1, 1\\]"):
        fit_codebook(_x() + 5)


def test_digits_split_and_features():
    exp = DigitsExperiment.smoke()
    d = digits_data(exp, 0)
    assert d.x_train.shape == (400, 1, 16, 16) and d.x_test.shape == (200, 1, 16, 16)
    assert d.x_train.min() >= -1 and d.x_train.max() <= 1
    full = digits_data(DigitsExperiment(), 0)
    assert full.x_train.shape[0] == 1300 and full.x_test.shape[0] == 497
    assert torch.equal(full.x_train[:400], d.x_train)  # smoke is a prefix of the same split
    assert digit_features(d.x_test[:3]).shape == (3, 64)
    with pytest.raises(ValueError, match="n_train"):
        DigitsExperiment(n_train=2000)
