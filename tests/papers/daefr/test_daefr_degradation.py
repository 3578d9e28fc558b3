"""The training degradation: known answers for each step, determinism, and bad input."""

import pytest
import torch
import torch.nn.functional as F

from iclr24.papers.daefr import DegradationConfig, degrade


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _images(n=4, c=1, size=16, seed=0):
    return torch.rand(n, c, size, size, generator=_gen(seed)) * 2 - 1


def test_shape_range_dtype_and_determinism():
    x = _images(6)
    a = degrade(x, DegradationConfig(), _gen(1))
    assert a.shape == x.shape and a.dtype == x.dtype
    assert a.min() >= -1 and a.max() <= 1
    assert torch.equal(a, degrade(x, DegradationConfig(), _gen(1)))
    assert not torch.equal(a, degrade(x, DegradationConfig(), _gen(2)))
    rgb = _images(2, c=3)
    assert degrade(rgb, DegradationConfig(), _gen(0)).shape == rgb.shape


def test_near_identity_settings_return_the_input():
    x = _images()
    cfg = DegradationConfig(sigma=(1e-3, 1e-3), scale=(1.0, 1.0), noise=(0.0, 0.0),
                            jpeg_prob=0.0)
    assert torch.allclose(degrade(x, cfg, _gen()), x, atol=1e-5)


def test_downsampling_is_bilinear_down_then_up():
    x = _images()
    cfg = DegradationConfig(sigma=(1e-3, 1e-3), scale=(4.0, 4.0), noise=(0.0, 0.0),
                            jpeg_prob=0.0)
    u = (x + 1) / 2
    ref = F.interpolate(F.interpolate(u, size=(4, 4), mode="bilinear", align_corners=False),
                        size=(16, 16), mode="bilinear", align_corners=False) * 2 - 1
    assert torch.allclose(degrade(x, cfg, _gen()), ref, atol=1e-5)


def test_blur_matches_kornia_and_lowers_variation():
    from kornia.filters import gaussian_blur2d

    x = _images()
    cfg = DegradationConfig(sigma=(1.5, 1.5), scale=(1.0, 1.0), noise=(0.0, 0.0),
                            jpeg_prob=0.0)
    ref = gaussian_blur2d((x + 1) / 2, (11, 11), (1.5, 1.5), border_type="reflect") * 2 - 1
    out = degrade(x, cfg, _gen())
    assert torch.allclose(out, ref, atol=1e-5)
    assert out.std() < 0.6 * x.std()


def test_noise_has_the_requested_std():
    x = torch.zeros(64, 1, 16, 16)  # mid-grey: no clipping of the noise
    cfg = DegradationConfig(sigma=(1e-3, 1e-3), scale=(1.0, 1.0), noise=(0.1, 0.1),
                            jpeg_prob=0.0)
    out = degrade(x, cfg, _gen())
    assert float(out.std()) == pytest.approx(0.2, rel=0.05)  # 0.1 on [0, 1] = 0.2 on [-1, 1]


def test_jpeg_quality_orders_the_error():
    x = _images(8)
    err = {}
    for q in (5, 95):
        cfg = DegradationConfig(sigma=(1e-3, 1e-3), scale=(1.0, 1.0), noise=(0.0, 0.0),
                                jpeg_quality=(q, q), jpeg_prob=1.0)
        err[q] = float((degrade(x, cfg, _gen()) - x).abs().mean())
    assert 0 < err[95] < err[5]


def test_severe_preset():
    cfg = DegradationConfig.severe()
    assert cfg.scale == (4.0, 4.0) and cfg.sigma[0] >= 1.2


@pytest.mark.parametrize("kwargs, match", [
    ({"sigma": (0.0, 1.0)}, "sigma"),
    ({"sigma": (-1.0, 1.0)}, "sigma"),
    ({"scale": (0.8, 4.0)}, "scale"),
    ({"scale": (3.0, 2.0)}, "scale"),
    ({"noise": (-0.1, 0.1)}, "noise"),
    ({"jpeg_quality": (0, 90)}, "jpeg_quality"),
    ({"jpeg_quality": (30, 101)}, "jpeg_quality"),
    ({"jpeg_prob": 1.5}, "jpeg_prob"),
])
def test_bad_config_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DegradationConfig(**kwargs)


def test_bad_images_are_refused():
    with pytest.raises(ValueError, match="shape"):
        degrade(torch.zeros(16, 16))
    with pytest.raises(ValueError, match="shape"):
        degrade(torch.zeros(1, 2, 16, 16))
    with pytest.raises(ValueError, match="\\[-1, 1\\]"):
        degrade(torch.full((1, 1, 16, 16), 255.0))
    with pytest.raises(TypeError, match="floating-point"):
        degrade(torch.zeros(1, 1, 16, 16, dtype=torch.uint8))
    with pytest.raises(TypeError, match="cfg"):
        degrade(_images(), {"sigma": (1, 2)})
    with pytest.raises(TypeError, match="generator"):
        degrade(_images(), DegradationConfig(), 0)
    with pytest.raises(TypeError, match="jpeg_quality"):
        DegradationConfig(jpeg_quality=(30.5, 90))


def test_images_in_zero_one_are_flagged():
    """Issue 38: a [0, 1] batch passes the range check but would be read as grey-to-white; the
    check warns, naming the argument and the fix. [-1, 1] data (and an all-zero, mid-grey
    batch) do not warn."""
    import warnings

    from iclr24.papers.daefr import check_images

    zero_one = (_images(4) + 1) / 2
    with pytest.warns(UserWarning, match=r"x has no negative value.*rescale with x \* 2 - 1"):
        degrade(zero_one)
    with pytest.warns(UserWarning, match="x_hq has no negative value"):
        check_images(zero_one, "x_hq")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_images(_images(4), "x_hq")
        check_images(torch.zeros(2, 1, 8, 8), "x_hq")
        degrade(_images(2))
