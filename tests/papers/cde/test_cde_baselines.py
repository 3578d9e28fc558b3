"""In-house baselines: BC imitates, CQL pushes Q down off the data, IQL's V is an upper
expectile; input errors; determinism."""

import numpy as np
import pytest
import torch

from iclr24.papers.cde import BC, CQL, IQL, OfflineDataset


def _linear_policy_data(n=512, seed=0):
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (n, 4))
    actions = np.clip(0.8 * obs[:, :2] - 0.3 * obs[:, 2:], -1, 1)
    first = np.zeros(n)
    first[::64] = 1
    return OfflineDataset(obs=obs, actions=actions, rewards=obs[:, 0], next_obs=np.roll(obs, -1, 0),
                          terminals=np.zeros(n), timeouts=np.zeros(n), is_initial=first)


@pytest.fixture(scope="module")
def data():
    return _linear_policy_data()


def test_bc_imitates_the_behaviour_policy(data, one_torch_thread):
    bc = BC(4, 2, hidden=(32, 32), batch_size=128, lr=3e-3)
    hist = bc.fit(data, 400, torch.Generator().manual_seed(0))
    err = np.abs(bc.act(data.obs) - data.actions).mean()
    assert hist["bc_loss"][-1] < hist["bc_loss"][0] and err < 0.1


def test_cql_is_conservative_off_the_data(data, one_torch_thread):
    cql = CQL(4, 2, hidden=(32, 32), batch_size=64, n_action_samples=4)
    hist = cql.fit(data, 150, torch.Generator().manual_seed(0))
    assert all(np.isfinite(v).all() for v in hist.values())
    obs = torch.as_tensor(data.obs[:256], dtype=torch.float32)
    obs = (obs - cql.obs_mean) / cql.obs_std
    a_data = torch.as_tensor(data.actions[:256], dtype=torch.float32)
    a_rand = torch.rand((256, 2), generator=torch.Generator().manual_seed(1)) * 2 - 1
    with torch.no_grad():
        gap = (cql.q[0](obs, a_data) - cql.q[0](obs, a_rand)).mean()
    assert float(gap) > 0
    assert hist["cql_penalty"][-1] < hist["cql_penalty"][0]


def test_iql_value_is_an_upper_expectile(data, one_torch_thread):
    iql = IQL(4, 2, hidden=(32, 32), batch_size=128, expectile=0.9)
    iql.fit(data, 200, torch.Generator().manual_seed(0))
    obs = (torch.as_tensor(data.obs, dtype=torch.float32) - iql.obs_mean) / iql.obs_std
    a = torch.as_tensor(data.actions, dtype=torch.float32)
    with torch.no_grad():
        q = torch.min(iql.q_target[0](obs, a), iql.q_target[1](obs, a))
        v = iql.v_net(obs).squeeze(-1)
    assert float((q < v).float().mean()) > 0.6   # τ = 0.9: V sits above most Q values


def test_errors_and_determinism(data, one_torch_thread):
    with pytest.raises(ValueError, match="n_action_samples"):
        CQL(4, 2, n_action_samples=0)
    with pytest.raises(ValueError, match="expectile"):
        IQL(4, 2, expectile=1.0)
    with pytest.raises(ValueError, match="batch_size"):
        BC(4, 2, batch_size=0)
    bc = BC(4, 2, hidden=(8,))
    with pytest.raises(RuntimeError, match="fit"):
        bc.act(np.zeros(4))
    with pytest.raises(ValueError, match="obs/act dims"):
        BC(5, 2, hidden=(8,)).fit(data, 1)
    with pytest.raises(TypeError, match="OfflineDataset"):
        bc.fit(data.obs, 1)
    outs = []
    for _ in range(2):
        m = IQL(4, 2, hidden=(8, 8), batch_size=16, seed=2)
        m.fit(data, 5, torch.Generator().manual_seed(3))
        outs.append(m.act(data.obs[:4]))
    assert np.array_equal(*outs) and np.abs(outs[0]).max() <= 1


def test_filtered_bc_clones_only_flagged_episodes_and_validates(one_torch_thread):
    import numpy as np
    import pytest

    from iclr24.papers.cde import BC, OfflineDataset

    n, length = 80, 20
    first = np.zeros(n)
    first[::length] = 1
    rew = np.zeros(n)
    rew[length - 1] = 1.0                       # only episode 0 ends in reward
    act = np.full((n, 2), -0.5)
    act[:length] = 0.5                          # ... and it always acts +0.5
    ds = OfflineDataset(obs=np.zeros((n, 4)), actions=act, rewards=rew,
                        next_obs=np.zeros((n, 4)), terminals=np.zeros(n),
                        timeouts=np.roll(first, -1), is_initial=first)
    out = {}
    for flag in (True, False):
        bc = BC(4, 2, hidden=(16,), batch_size=32, lr=1e-2, successful_only=flag)
        bc.fit(ds, 150, torch.Generator().manual_seed(0))
        out[flag] = bc.act(np.zeros(4))
    assert np.allclose(out[True], 0.5, atol=0.1) and np.all(out[False] < 0)
    with pytest.raises(TypeError, match="successful_only"):
        BC(4, 2, successful_only="yes")
