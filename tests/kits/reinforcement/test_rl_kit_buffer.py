import numpy as np
import pytest
import torch

from iclr24.kits.reinforcement import TransitionBuffer


def _filled(n=10, capacity=8, seed=0):
    buf = TransitionBuffer(2, 1, capacity, seed=seed)
    for i in range(n):
        buf.add([i, -i], [0.1 * i], float(i), [i + 1, -i - 1], i % 3 == 0)
    return buf


def test_ring_overwrites_the_oldest_and_all_is_oldest_first():
    buf = _filled(10, 8)
    assert len(buf) == 8
    batch = buf.all()
    assert batch.rewards.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert batch.obs[:, 0].tolist() == batch.rewards.tolist()
    assert batch.next_obs[:, 0].tolist() == [r + 1 for r in batch.rewards.tolist()]
    assert batch.terminated.tolist() == [float(i % 3 == 0) for i in range(2, 10)]
    assert batch.actions.dtype == torch.float32 and batch.actions.shape == (8, 1)


def test_batched_add_equals_row_by_row():
    a = _filled(5, 16)
    b = TransitionBuffer(2, 1, 16, seed=0)
    i = np.arange(5)
    b.add(np.stack([i, -i], 1), 0.1 * i[:, None], i.astype(float), np.stack([i + 1, -i - 1], 1),
          i % 3 == 0)
    for x, y in zip(a.all().__dict__.values(), b.all().__dict__.values()):
        assert torch.equal(x, y)


def test_sampling_is_seeded_and_uniform():
    one, two, other = _filled(8, 8, 1), _filled(8, 8, 1), _filled(8, 8, 2)
    s1, s2, s3 = one.sample(64), two.sample(64), other.sample(64)
    assert torch.equal(s1.rewards, s2.rewards) and not torch.equal(s1.rewards, s3.rewards)
    counts = np.bincount(_filled(8, 8, 3).sample(8000).rewards.numpy().astype(int), minlength=8)
    assert counts.min() > 850 and counts.max() < 1150   # 1000 expected per row


def test_bad_input():
    buf = TransitionBuffer(2, 1, 4, seed=0)
    with pytest.raises(ValueError, match="empty buffer"):
        buf.sample(1)
    with pytest.raises(ValueError, match="action must have 1"):
        buf.add([0, 0], [0, 0], 0.0, [0, 0], False)
    with pytest.raises(ValueError, match="next_obs must have 2"):
        buf.add([0, 0], [0], 0.0, [0, 0, 0], False)
    with pytest.raises(ValueError, match="reward must be finite"):
        buf.add([0, 0], [0], float("nan"), [0, 0], False)
    with pytest.raises(ValueError, match="capacity"):
        TransitionBuffer(2, 1, 0, seed=0)
    with pytest.raises(ValueError, match="batch_size"):
        _filled().sample(0)
