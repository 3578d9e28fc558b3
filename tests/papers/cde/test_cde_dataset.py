"""OfflineDataset validation and trajectory-wise sub-sampling; the noisy-controller dataset."""

import numpy as np
import pytest

from iclr24.papers.cde import OfflineDataset, noisy_controller_dataset


def _columns(n=6, episodes=(0, 3)):
    first = np.zeros(n)
    first[list(episodes)] = 1
    return {"obs": np.zeros((n, 4)), "actions": np.zeros((n, 2)), "rewards": np.zeros(n),
            "next_obs": np.zeros((n, 4)), "terminals": np.zeros(n), "timeouts": np.zeros(n),
            "is_initial": first}


def test_actions_outside_the_box_are_refused():
    cols = _columns()
    cols["actions"][2, 1] = 1.5
    with pytest.raises(ValueError, match=r"actions must lie in \[-1, 1\]"):
        OfflineDataset(**cols)


def test_a_dataset_without_episode_starts_is_refused():
    cols = _columns()
    cols["is_initial"][:] = 0
    with pytest.raises(ValueError, match="is_initial must mark episode starts.*no episode start"):
        OfflineDataset(**cols)


def test_shape_type_and_flag_errors():
    cols = _columns()
    cols["rewards"] = np.zeros(5)
    with pytest.raises(ValueError, match="rewards must have 6 rows"):
        OfflineDataset(**cols)
    cols = _columns()
    cols["obs"] = np.zeros(6)
    with pytest.raises(ValueError, match="obs must be 2-D"):
        OfflineDataset(**cols)
    cols = _columns()
    cols["terminals"][0] = 0.5
    with pytest.raises(ValueError, match="terminals must be 0/1"):
        OfflineDataset(**cols)
    cols = _columns()
    cols["obs"][0, 0] = np.nan
    with pytest.raises(ValueError, match="obs must be finite"):
        OfflineDataset(**cols)
    cols = _columns()
    cols["obs"] = "abc"
    with pytest.raises((TypeError, ValueError), match="obs"):
        OfflineDataset(**cols)


def test_episode_ids_and_subsampling_keep_whole_episodes():
    ds = noisy_controller_dataset(3000, 0, episode_length=100)
    assert len(ds) == 3000 and ds.n_episodes == 30
    assert np.array_equal(np.bincount(ds.episode_ids), np.full(30, 100))
    sub = ds.subsample_episodes(0.1, seed=1)
    assert len(sub) == 300 and sub.n_episodes == 3 and sub.is_initial[0] == 1
    assert np.array_equal(sub.subsample_episodes(1.0, 0).obs, sub.obs)
    again = ds.subsample_episodes(0.1, seed=1)
    assert np.array_equal(again.obs, sub.obs)          # seeded
    other = ds.subsample_episodes(0.1, seed=2)
    assert not np.array_equal(other.obs, sub.obs)
    # every kept episode is a contiguous block of the original, in order
    starts = np.flatnonzero(sub.is_initial)
    for st in starts:
        i = np.flatnonzero((ds.obs == sub.obs[st]).all(1))[0]
        assert np.array_equal(ds.obs[i:i + 100], sub.obs[st:st + 100])
    with pytest.raises(ValueError, match="fraction must be in"):
        ds.subsample_episodes(0.0, 0)


def test_noisy_controller_dataset_layout():
    ds = noisy_controller_dataset(1200, 3)
    assert len(ds) == 1200 and ds.n_episodes == 4
    assert np.abs(ds.actions).max() <= 1 and ds.terminals.sum() == 0
    assert ds.timeouts.sum() == 4 and ds.timeouts[299] == 1 and ds.is_initial[300] == 1
    # consecutive rows chain within an episode
    same = ds.is_initial[1:] == 0
    assert np.allclose(ds.next_obs[:-1][same], ds.obs[1:][same])
    # the sparse reward is 1 exactly within 0.5 of the goal
    d = np.linalg.norm(ds.next_obs[:, :2] - np.array([3.5, 1.5]), axis=1)
    assert np.array_equal(ds.rewards == 1, d <= 0.5)
    assert np.array_equal(noisy_controller_dataset(1200, 3).actions, ds.actions)
    with pytest.raises(ValueError, match="n_steps"):
        noisy_controller_dataset(0, 0)
