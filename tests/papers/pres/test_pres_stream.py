"""make_drifting_stream: schema, sorting, determinism, the generator's mechanisms, errors."""

import numpy as np
import pytest
import torch

from iclr24.papers.pres import make_drifting_stream


def test_schema_sorted_and_bipartite():
    d = make_drifting_stream(num_users=30, num_items=20, num_events=500, edge_dim=4, seed=0)
    assert d.num_events == 500 and d.msg.shape == (500, 4) and d.msg.dtype == torch.float32
    assert d.t.dtype == torch.long and bool((d.t[1:] >= d.t[:-1]).all())
    assert int(d.src.min()) >= 0 and int(d.src.max()) < 30
    assert int(d.dst.min()) >= 30 and int(d.dst.max()) < 50
    # mean inter-event time 1, stored as floor(10 tau)
    assert 8.0 < float(d.t[-1]) / 500 < 12.0


def test_deterministic_per_seed():
    a, b = make_drifting_stream(num_events=300, seed=4), make_drifting_stream(num_events=300, seed=4)
    c = make_drifting_stream(num_events=300, seed=5)
    for key in ("src", "dst", "t", "msg"):
        assert torch.equal(getattr(a, key), getattr(b, key))
    assert not torch.equal(a.dst, c.dst)


def test_zipf_activity_makes_some_users_much_more_active():
    d = make_drifting_stream(num_users=100, num_events=5000, zipf_a=1.2, seed=0)
    counts = np.sort(np.bincount(d.src.numpy(), minlength=100))[::-1]
    assert counts[0] > 10 * max(counts[50], 1)
    flat = make_drifting_stream(num_users=100, num_events=5000, zipf_a=0.0, seed=0)
    assert np.bincount(flat.src.numpy(), minlength=100).max() < 100


def test_no_switch_no_noise_keeps_each_user_in_one_cluster():
    d = make_drifting_stream(num_users=20, num_items=30, num_events=2000, num_clusters=3,
                             p_switch=0.0, p_in_cluster=1.0, p_repeat=0.0, seed=2)
    # items of one cluster share their feature centre: cluster = nearest of the item means
    items = d.dst.numpy()
    centre = {int(i): d.msg[d.dst == i].mean(0) for i in np.unique(items)}
    keys = sorted(centre)
    means = torch.stack([centre[k] for k in keys])
    dist = torch.cdist(means, means)
    same = (dist < 1.0).numpy()  # noise 0.5 / sqrt(events) << distance between centres
    cluster_of = {k: int(np.argmax(same[j])) for j, k in enumerate(keys)}
    for u in range(20):
        mine = {cluster_of[int(i)] for i in items[d.src.numpy() == u]}
        assert len(mine) <= 1


def test_repeat_probability_one_repeats_the_last_item():
    d = make_drifting_stream(num_users=5, num_items=10, num_events=300, num_clusters=2,
                             p_repeat=1.0, seed=3)
    src, dst = d.src.numpy(), d.dst.numpy()
    for u in range(5):
        assert len(set(dst[src == u])) <= 1


@pytest.mark.parametrize("kwargs, match", [
    ({"num_users": 0}, "num_users must be an int >= 1"),
    ({"num_events": 2.5}, "num_events must be an int"),
    ({"p_switch": 1.5}, r"p_switch must be a probability in \[0, 1\]"),
    ({"p_repeat": -0.1}, "p_repeat must be a probability"),
    ({"num_clusters": 200, "num_items": 10}, "must not exceed num_items"),
    ({"zipf_a": -1.0}, "zipf_a must be a finite number >= 0"),
    ({"zipf_a": float("nan")}, "zipf_a must be a finite number >= 0"),
    ({"zipf_a": float("inf")}, "zipf_a must be a finite number >= 0"),
    ({"seed": -1}, "seed must be a non-negative int"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_drifting_stream(**kwargs)
