import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.concept_axes.world import (
    circular_hue_error_deg,
    coarse_color_index,
    fine_hue_index,
    render_scenes,
    sample_scenes,
)


def test_scenes_are_in_range_and_deterministic():
    a = sample_scenes(20, 8, np.random.default_rng(3))
    b = sample_scenes(20, 8, np.random.default_rng(3))
    assert a.images.shape == (20, 3, 8, 8)
    assert float(a.images.min()) >= 0 and float(a.images.max()) <= 1
    assert np.array_equal(a.images.numpy(), b.images.numpy())


def test_object_colour_follows_the_hue():
    rng = np.random.default_rng(0)
    img = render_scenes(np.array([1]), np.array([0.0]), np.array([0]), 16, rng)  # red square
    centre = img[0, :, 6:10, 6:10].mean(dim=(1, 2)).numpy()
    assert centre[0] > 0.9 and centre[1] < 0.1 and centre[2] < 0.1
    img = render_scenes(np.array([1]), np.array([1 / 3]), np.array([0]), 16, rng)  # green
    assert img[0, 1, 6:10, 6:10].mean() > 0.9


def test_bins():
    assert coarse_color_index(np.array([0.0, 0.083, 0.084, 0.5, 0.99])).tolist() == [0, 0, 1, 3, 0]
    assert fine_hue_index(np.array([0.0, 1 / 24, 0.99])).tolist() == [0, 1, 0]


@given(st.floats(0, 0.999), st.floats(0, 0.999))
def test_circular_error_is_a_metric_on_the_circle(a, b):
    d = circular_hue_error_deg(np.array([a]), np.array([b]))[0]
    assert 0 <= d <= 180 + 1e-9
    assert d == pytest.approx(circular_hue_error_deg(np.array([b]), np.array([a]))[0])
    assert circular_hue_error_deg(np.array([a]), np.array([(a + 0.5) % 1]))[0] == \
        pytest.approx(180, abs=1e-6)


def test_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="size"):
        render_scenes(np.array([0]), np.array([0.1]), np.array([0]), 10, rng)
    with pytest.raises(ValueError, match="shape indices"):
        render_scenes(np.array([7]), np.array([0.1]), np.array([0]), 8, rng)
    with pytest.raises(ValueError, match="n must"):
        sample_scenes(0, 8, rng)
