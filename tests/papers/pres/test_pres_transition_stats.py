"""MemoryTransitionStats: streaming moments equal batch moments, buffers, prediction, errors."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.pres import MemoryTransitionStats


@given(seed=st.integers(0, 10_000), n_nodes=st.integers(1, 6), n_batches=st.integers(1, 8))
def test_streaming_moments_equal_batch_moments(seed, n_nodes, n_batches):
    rng = np.random.default_rng(seed)
    dim = 3
    stats = MemoryTransitionStats(n_nodes, dim, dtype=torch.float64)
    all_nodes, all_deltas = [], []
    for _ in range(n_batches):
        nodes = rng.integers(0, n_nodes, size=rng.integers(0, 7))  # repeats and empty batches
        delta = rng.normal(rng.normal(0, 5), rng.uniform(0.1, 3), size=(nodes.size, dim))
        stats.update(torch.as_tensor(nodes), torch.as_tensor(delta))
        all_nodes.append(nodes)
        all_deltas.append(delta)
    nodes, deltas = np.concatenate(all_nodes), np.concatenate(all_deltas)
    for i in range(n_nodes):
        d = deltas[nodes == i]
        assert stats.count[i].item() == len(d)
        if len(d) == 0:
            assert torch.all(stats.mean[i] == 0) and torch.all(stats.m2[i] == 0)
            continue
        np.testing.assert_allclose(stats.mean[i].numpy(), d.mean(0), rtol=1e-10, atol=1e-10)
        var = stats.variance(torch.tensor([i]))[0].numpy()
        np.testing.assert_allclose(var, d.var(0), rtol=1e-9, atol=1e-10)


def test_one_by_one_equals_all_at_once():
    rng = np.random.default_rng(0)
    nodes = torch.as_tensor(rng.integers(0, 4, size=50))
    delta = torch.as_tensor(rng.normal(size=(50, 2)))
    a = MemoryTransitionStats(4, 2, dtype=torch.float64)
    b = MemoryTransitionStats(4, 2, dtype=torch.float64)
    a.update(nodes, delta)
    for k in range(50):
        b.update(nodes[k:k + 1], delta[k:k + 1])
    for name in ("count", "mean", "m2"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name))


def test_buffers_move_with_the_module_and_reset():
    stats = MemoryTransitionStats(3, 2)
    assert set(dict(stats.named_buffers())) == {"count", "mean", "m2"}
    assert set(stats.state_dict()) == {"count", "mean", "m2"}
    stats.update(torch.tensor([0, 0, 2]), torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    stats.double()
    assert stats.mean.dtype == torch.float64
    torch.testing.assert_close(stats.mean[0], torch.tensor([2.0, 3.0], dtype=torch.float64))
    torch.testing.assert_close(stats.variance(torch.tensor([0]))[0],
                               torch.tensor([1.0, 1.0], dtype=torch.float64))
    stats.reset_state()
    assert stats.count.sum() == 0 and stats.mean.abs().sum() == 0 and stats.m2.abs().sum() == 0


def test_predict_adds_the_mean_change():
    stats = MemoryTransitionStats(3, 2)
    stats.update(torch.tensor([1, 1]), torch.tensor([[1.0, -1.0], [3.0, 1.0]]))
    prev = torch.tensor([[10.0, 10.0], [10.0, 10.0]])
    out = stats.predict(torch.tensor([0, 1]), prev)
    torch.testing.assert_close(out, torch.tensor([[10.0, 10.0], [12.0, 10.0]]))  # node 0: no history


def test_update_ignores_autograd_history():
    stats = MemoryTransitionStats(2, 2)
    delta = torch.ones(1, 2, requires_grad=True)
    stats.update(torch.tensor([0]), delta * 2)
    assert not stats.mean.requires_grad


def test_bad_inputs_raise_clear_errors():
    stats = MemoryTransitionStats(3, 2)
    with pytest.raises(ValueError, match=r"nodes must be ids in \[0, 3\)"):
        stats.update(torch.tensor([3]), torch.zeros(1, 2))
    with pytest.raises(ValueError, match=r"nodes must be ids"):
        stats.predict(torch.tensor([-1]), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="delta must have shape"):
        stats.update(torch.tensor([0, 1]), torch.zeros(1, 2))
    with pytest.raises(TypeError, match="nodes must be an integer"):
        stats.update(torch.tensor([0.0]), torch.zeros(1, 2))
    with pytest.raises(TypeError, match="delta must be a floating"):
        stats.update(torch.tensor([0]), torch.zeros(1, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="num_nodes must be a positive int"):
        MemoryTransitionStats(0, 2)
    with pytest.raises(TypeError, match="dtype must be a floating"):
        MemoryTransitionStats(2, 2, dtype=torch.long)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_delta_is_refused_and_leaves_the_statistics_unchanged(bad):
    stats = MemoryTransitionStats(3, 2)
    stats.update(torch.tensor([0, 1]), torch.ones(2, 2))
    before = {k: v.clone() for k, v in stats.state_dict().items()}
    delta = torch.ones(2, 2)
    delta[1, 0] = bad
    with pytest.raises(ValueError, match=r"delta must be finite.*nodes \[2\]"):
        stats.update(torch.tensor([0, 2]), delta)
    assert all(torch.equal(before[k], v) for k, v in stats.state_dict().items())
