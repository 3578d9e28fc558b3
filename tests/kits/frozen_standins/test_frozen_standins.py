import pytest
import torch
from torch import nn

from iclr24.kits.frozen_standins import Frozen, cached_standin, freeze, is_frozen


def _make():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 1))


def test_freeze_stops_parameter_gradients_but_not_input_gradients():
    m = freeze(_make())
    assert is_frozen(m)
    x = torch.randn(5, 3, requires_grad=True)
    m(x).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert all(p.grad is None for p in m.parameters())
    assert torch.equal(m(x), m(x))  # eval mode: dropout off


def test_frozen_wrapper_stays_in_eval_under_a_training_parent():
    parent = nn.Sequential(Frozen(_make()), nn.Linear(1, 1))
    parent.train()
    assert parent[1].training and not parent[0].part.training
    assert is_frozen(parent[0].part)


def test_cached_standin_trains_once_and_loads_the_same_weights(tmp_path):
    calls = []

    def train(m):
        calls.append(1)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(1.0)

    a = cached_standin("toy", {"steps": 1}, 0, _make, train, root=tmp_path)
    b = cached_standin("toy", {"steps": 1}, 0, _make, train, root=tmp_path)
    assert len(calls) == 1
    assert is_frozen(a) and is_frozen(b)
    for pa, pb, p0 in zip(a.parameters(), b.parameters(), _make().parameters()):
        assert torch.equal(pa, pb) and torch.allclose(pa, p0 + 1)
    cached_standin("toy", {"steps": 2}, 0, _make, train, root=tmp_path)
    cached_standin("toy", {"steps": 1}, 1, _make, train, root=tmp_path)
    assert len(calls) == 3  # another config or seed is another entry


def test_truncated_cache_entry_is_rebuilt(tmp_path):
    calls = []

    def train(m):
        calls.append(1)

    cached_standin("toy", {}, 0, _make, train, root=tmp_path)
    cached_standin("toy", {}, 0, _make, train, root=tmp_path)
    assert len(calls) == 1
    (state,) = tmp_path.glob("toy/*/state.pt")
    state.write_bytes(state.read_bytes()[:10])
    m = cached_standin("toy", {}, 0, _make, train, root=tmp_path)
    assert len(calls) == 2 and isinstance(m, nn.Module)


def test_bad_input(tmp_path):
    with pytest.raises(TypeError, match="Module"):
        freeze(object())
    with pytest.raises(TypeError, match="seed"):
        cached_standin("toy", {}, "0", _make, lambda m: None, root=tmp_path)
    with pytest.raises(TypeError, match="make\\(\\)"):
        cached_standin("toy", {}, 0, lambda: 3, lambda m: None, root=tmp_path)
    with pytest.raises(TypeError, match="config"):
        cached_standin("toy", [1], 0, _make, lambda m: None, root=tmp_path)
