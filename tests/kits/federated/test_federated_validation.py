"""Bad input gets a clear error at the kit's boundary (labels, features, partitions, delays)."""

import numpy as np
import pytest
import torch

from iclr24.kits.federated import (
    AsyncSimulator,
    ClientUpdate,
    ConstantDelays,
    ExponentialDelays,
    FedBuff,
    TensorSplit,
    TorchClient,
    accuracy,
    check_labels,
    check_partitions,
)


def _split(**over):
    g = torch.Generator().manual_seed(0)
    kw = {"x_train": torch.randn(12, 4, generator=g), "y_train": torch.arange(12) % 3,
          "x_test": torch.randn(6, 4, generator=g), "y_test": torch.arange(6) % 3,
          "num_classes": 3}
    kw.update(over)
    return TensorSplit(**kw)


def test_tensor_split_refuses_bad_labels_and_features():
    _split()
    with pytest.raises(ValueError, match=r"y_test must hold class ids in \[0, 3\), got labels "
                                         r"in \[0, 3\]"):
        _split(y_test=torch.tensor([0, 1, 2, 3, 0, 1]))
    with pytest.raises(ValueError, match="y_train must hold class ids"):
        _split(y_train=torch.arange(12) % 3 - 1)
    x = torch.zeros(6, 4)
    x[2, 1] = float("nan")
    with pytest.raises(ValueError, match="x_test has NaN or inf features in 1 rows"):
        _split(x_test=x)
    with pytest.raises(ValueError, match="x_train has 12 rows but y_train has 11"):
        _split(y_train=torch.arange(11) % 3)
    with pytest.raises(TypeError, match="y_train must be a 1-D integer"):
        _split(y_train=torch.zeros(12))
    with pytest.raises(ValueError, match="num_classes"):
        _split(num_classes=1)


def test_check_labels_and_accuracy_refuse_silent_wrong_answers():
    check_labels(np.array([0, 4]), 5)
    with pytest.raises(ValueError, match="labels in"):
        check_labels(np.array([0, 5]), 5)
    with pytest.raises(TypeError, match="integer"):
        check_labels(np.array([0.5]), 5)
    model = torch.nn.Linear(4, 3)
    params = torch.nn.utils.parameters_to_vector(model.parameters()).detach()
    x = torch.randn(5, 4)
    assert 0.0 <= accuracy(model, params, x, torch.zeros(5, dtype=torch.int64)) <= 1.0
    x[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or inf"):
        accuracy(model, params, x, torch.zeros(5, dtype=torch.int64))


def test_torch_client_checks_labels_when_told_the_classes():
    model = torch.nn.Linear(4, 3)
    y = torch.tensor([0, 1, 3])
    TorchClient(model, torch.randn(3, 4), y, lr=0.1, batch_size=2, steps=1)  # not told
    with pytest.raises(ValueError, match=r"class ids in \[0, 3\)"):
        TorchClient(model, torch.randn(3, 4), y, lr=0.1, batch_size=2, steps=1, num_classes=3)
    x = torch.randn(3, 4)
    x[1] = float("inf")
    with pytest.raises(ValueError, match="NaN or inf"):
        TorchClient(model, x, torch.tensor([0, 1, 2]), lr=0.1, batch_size=2, steps=1)


def test_check_partitions():
    ok = check_partitions([np.array([0, 2]), [1, 3]], 4)
    assert [p.dtype for p in ok] == [np.int64, np.int64]
    with pytest.raises(ValueError, match="sample index 2 is held by clients 0 and 1"):
        check_partitions([np.array([0, 2]), np.array([2, 3])], 4)
    with pytest.raises(ValueError, match=r"partitions\[0\] repeats sample index 1"):
        check_partitions([np.array([1, 1])], 4)
    with pytest.raises(ValueError, match=r"outside \[0, 4\)"):
        check_partitions([np.array([0, 4])], 4)
    with pytest.raises(ValueError, match="non-empty"):
        check_partitions([np.array([], dtype=np.int64)], 4)
    with pytest.raises(TypeError, match="integer"):
        check_partitions([np.array([0.0])], 4)


class _Zero:
    def fit(self, params, config):
        return ClientUpdate(torch.zeros_like(params), 1)


def test_delay_laws_must_cover_every_client_at_construction():
    x0 = torch.zeros(2)
    clients = [_Zero() for _ in range(4)]
    with pytest.raises(ValueError, match="delays covers 3 clients .* there are 4 clients"):
        AsyncSimulator(clients, FedBuff(x0, 2), concurrency=2,
                       delays=ExponentialDelays([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="delays covers 2 clients"):
        AsyncSimulator(clients, FedBuff(x0, 2), concurrency=2, delays=ConstantDelays([1.0, 2.0]))
    AsyncSimulator(clients, FedBuff(x0, 2), concurrency=2, delays=ConstantDelays(1.0))
    with pytest.raises(ValueError, match="scalar or a non-empty 1-D"):
        ConstantDelays([[1.0]])
