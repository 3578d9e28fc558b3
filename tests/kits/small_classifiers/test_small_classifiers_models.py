"""Digits splits and the seeded MLP trainer of the small-classifier kit."""

import numpy as np
import pytest

from iclr24.kits.small_classifiers import (
    MLPTrainer,
    load_digits_split,
    stratified_split_indices,
)


def test_stratified_split_is_a_partition_and_stratified():
    y = np.repeat(np.arange(3), [50, 30, 20])
    parts = stratified_split_indices(y, (0.6, 0.2, 0.2), seed=3)
    allrows = np.concatenate(parts)
    assert np.array_equal(np.sort(allrows), np.arange(100))
    assert [np.bincount(y[p], minlength=3).tolist() for p in parts] == [
        [30, 18, 12], [10, 6, 4], [10, 6, 4]]
    again = stratified_split_indices(y, (0.6, 0.2, 0.2), seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again))
    with pytest.raises(ValueError, match="fractions must be positive and sum to 1"):
        stratified_split_indices(y, (0.6, 0.6), 0)


def test_digits_split_scalings_and_classes():
    d = load_digits_split(seed=0)
    assert sum(v.shape[0] for v in d.X.values()) == 1797 and d.num_classes == 10
    assert d.X["train"].min() >= 0 and d.X["train"].max() <= 1
    s = load_digits_split(scaling="standard", seed=0)
    m = s.X["train"].mean(0)
    assert np.abs(m).max() < 1e-5
    c = load_digits_split((0.5, 0.5), ("a", "b"), classes=[6, 7], seed=1)
    assert c.num_classes == 2 and set(np.unique(c.y["a"])) == {0, 1}
    with pytest.raises(ValueError, match="scaling"):
        load_digits_split(scaling="minmax")
    with pytest.raises(ValueError, match="classes must be distinct digits"):
        load_digits_split(classes=[3, 11])
    with pytest.raises(KeyError):
        d.part("nope")


def test_trainer_is_seeded_and_learns(one_torch_thread):
    d = load_digits_split((0.5, 0.5), ("train", "test"), seed=0)
    train = MLPTrainer(epochs=60)
    a = train(*d.part("train"), rng=np.random.default_rng(5))
    b = train(*d.part("train"), rng=np.random.default_rng(5))
    c = train(*d.part("train"), rng=np.random.default_rng(6))
    pa = a.predict_proba(d.X["test"])
    assert np.allclose(pa, b(d.X["test"]))
    assert not np.allclose(pa, c(d.X["test"]))
    assert np.allclose(pa.sum(1), 1, atol=1e-5)
    assert (a.predict(d.X["test"]) == d.y["test"]).mean() > 0.9
    assert a.features(d.X["test"][:3]).shape == (3, 128)
    with pytest.raises(ValueError, match="y must have shape"):
        train(d.X["train"], d.y["train"][:-1], rng=0)
    with pytest.raises(ValueError, match="num_classes"):
        MLPTrainer(epochs=1, num_classes=3)(d.X["train"], d.y["train"], rng=0)
    with pytest.raises(TypeError, match="rng must be"):
        train(d.X["train"], d.y["train"], rng="x")
