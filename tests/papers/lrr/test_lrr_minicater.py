"""MiniCATER: shapes, determinism, balance, the containment physics, and no leak from the last
frame on the contained subset."""

import numpy as np
import pytest

from iclr24.papers.lrr import MiniCATERConfig, generate_minicater, render_frame, segment_bounds

SNITCH = np.array([1.0, 0.9, 0.1], dtype=np.float32)


@pytest.fixture(scope="module")
def videos():
    return generate_minicater(400, seed=3)


def _snitch_pixels(frame):
    return int(np.all(np.isclose(frame, SNITCH[:, None, None]), axis=0).sum())


def test_shapes_and_determinism(videos):
    v = videos[0]
    assert v.frames.shape == (12, 3, 24, 24) and v.frames.dtype == np.float32
    assert v.positions.shape[:2] == (12, len(v.kinds))
    assert 0.0 <= v.frames.min() and v.frames.max() <= 1.0
    again = generate_minicater(5, seed=3)
    for a, b in zip(videos[:5], again):
        assert np.array_equal(a.frames, b.frames) and a.actions == b.actions
    other = generate_minicater(5, seed=4)
    assert not all(np.array_equal(a.frames, b.frames) for a, b in zip(again, other))


def test_object_counts_and_balance(videos):
    for v in videos:
        assert v.kinds[0] == "snitch"
        assert 2 <= v.kinds.count("cone") <= 3 and 3 <= len(v.kinds) <= 5
    frac = np.mean([v.contained_at_end for v in videos])
    assert 0.4 < frac < 0.6


def test_segments():
    assert segment_bounds(12) == [(0, 3), (3, 6), (6, 9), (9, 11)]
    assert segment_bounds(8) == [(0, 3), (3, 6), (6, 7)]


def test_containment_physics(videos):
    """At every key frame: one object per cell; the snitch is visible in the pixels iff it is
    not contained; a contained snitch shares the containing cone's cell; slides stay within
    max_step cells."""
    keys = [0] + [e for _, e in segment_bounds(12)]
    for v in videos:
        for t in keys:
            cells = [tuple(np.rint(p).astype(int)) for p in v.positions[t]]
            assert np.allclose(v.positions[t], np.rint(v.positions[t]))
            c = v.contained_by[t]
            if c >= 0:
                assert v.kinds[c] == "cone" and cells[0] == cells[c]
                assert len(set(cells)) == len(cells) - 1
                assert _snitch_pixels(v.frames[t]) == 0
            else:
                assert len(set(cells)) == len(cells)
                assert _snitch_pixels(v.frames[t]) == 4  # the whole 2x2 square shows
        for kind, _, src, dst in v.actions:
            assert max(abs(src // 6 - dst // 6), abs(src % 6 - dst % 6)) <= 2
            assert kind in ("slide", "contain", "carry", "lift")
    kinds = {a[0] for v in videos for a in v.actions}
    assert kinds == {"slide", "contain", "carry", "lift"}


def test_carry_moves_the_hidden_snitch(videos):
    carried = [(v, k) for v in videos for k, a in enumerate(v.actions) if a[0] == "carry"]
    assert carried
    for v, k in carried:
        _, cone, src, dst = v.actions[k]
        start, end = segment_bounds(12)[k]
        assert v.snitch_cell(start) == src and v.snitch_cell(end) == dst
        assert v.contained_by[end] == cone


def test_render_frame_draws_cones_over_the_snitch():
    cfg = MiniCATERConfig()
    pos = np.array([[2.0, 3.0], [2.0, 3.0]])
    img = render_frame(pos, ["snitch", "cone"], True, [(1.0, 0.9, 0.1), (0.5, 0.5, 0.5)], cfg)
    assert _snitch_pixels(img) == 0  # drawn, then covered
    img = render_frame(pos[:1], ["snitch"], True, [(1.0, 0.9, 0.1)], cfg)
    assert _snitch_pixels(img) == 4
    ys, xs = np.nonzero(img.sum(0))
    assert set(ys) == {9, 10} and set(xs) == {13, 14}


def test_last_frame_classifier_near_chance_on_contained(videos):
    """Leakage check: a classifier of the final cell from the last frame alone is accurate when
    the snitch is visible but, when it is contained, no better than guessing among the
    look-alike cones (1 / n_cones), far from what tracking gives (1.0)."""
    from sklearn.linear_model import LogisticRegression

    def features(vs):  # the last frame's raw pixels
        return np.stack([v.frames[-1].ravel() for v in vs])

    train = generate_minicater(1500, seed=11)
    clf = LogisticRegression(max_iter=300).fit(features(train), [v.final_cell for v in train])
    xt = features(videos)
    yt = np.array([v.final_cell for v in videos])
    hidden = np.array([v.contained_at_end for v in videos])
    correct = clf.predict(xt) == yt
    cone_chance = np.mean([1 / v.kinds.count("cone") for v in videos if v.contained_at_end])
    assert correct[~hidden].mean() > 0.9
    assert correct[hidden].mean() <= cone_chance + 0.08


def test_bad_config():
    with pytest.raises(ValueError, match="more objects than grid cells"):
        MiniCATERConfig(grid=2, n_cones=(1, 2), n_objects=(3, 4))
    with pytest.raises(ValueError, match="n_frames"):
        MiniCATERConfig(n_frames=1)
    with pytest.raises(ValueError, match="cell_px"):
        MiniCATERConfig(cell_px=2)
    with pytest.raises(ValueError, match="cannot hold"):
        MiniCATERConfig(n_cones=(3, 4), n_objects=(3, 4))
    with pytest.raises(ValueError, match="p_cover"):
        MiniCATERConfig(p_cover=1.5)
    with pytest.raises(TypeError, match="grid"):
        MiniCATERConfig(grid=6.0)
    with pytest.raises(ValueError, match="n_videos"):
        generate_minicater(0)
    with pytest.raises(TypeError, match="config"):
        generate_minicater(2, config={"grid": 6})
