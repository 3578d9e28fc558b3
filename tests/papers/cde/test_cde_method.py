"""CDE: configuration and input errors, determinism, the OOD switch, act, and that the losses
CDE.fit minimises are the official ones (checked against hand computations)."""

import numpy as np
import pytest
import torch

from iclr24.papers.cde import CDE, CDEConfig, OfflineDataset, noisy_controller_dataset, soft_chi2
from iclr24.papers.cde.losses import ood_penalty, v_loss

TINY = CDEConfig(hidden=(16, 16), batch_size=32)


@pytest.fixture(scope="module")
def data():
    return noisy_controller_dataset(600, 0)


def test_config_validation():
    for kwargs, match in (({"alpha": 0.0}, "alpha"), ({"zeta": 0.0}, "zeta"),
                          ({"ood_eps": 1.0}, "ood_eps"), ({"gamma": 1.0}, "gamma"),
                          ({"num_repeat_actions": 0}, "num_repeat_actions"),
                          ({"e_value_type": "v"}, "e_value_type"),
                          ({"policy_extract_mode": "awr"}, "policy_extract_mode")):
        with pytest.raises(ValueError, match=match):
            CDEConfig(**kwargs)
    assert CDEConfig().uses_ood and not CDEConfig(zeta=1.0).uses_ood
    d = CDEConfig()
    assert (d.alpha, d.zeta, d.ood_eps, d.num_repeat_actions, d.batch_size) == \
        (0.001, 0.9, 0.3, 5, 512)


def test_fit_and_act_errors(data, one_torch_thread):
    model = CDE(4, 2, TINY)
    with pytest.raises(RuntimeError, match="fit"):
        model.act(np.zeros(4))
    with pytest.raises(TypeError, match="dataset must be an OfflineDataset"):
        model.fit({"obs": data.obs}, 5)
    with pytest.raises(ValueError, match="n_steps"):
        model.fit(data, 0)
    with pytest.raises(ValueError, match="obs/act dims"):
        CDE(3, 2, TINY).fit(data, 2)
    with pytest.raises(TypeError, match="config"):
        CDE(4, 2, {"alpha": 1})
    model.fit(data, 2)
    with pytest.raises(ValueError, match="obs must have shape"):
        model.act(np.zeros(3))


def test_fit_is_deterministic_finite_and_acts_in_the_box(data, one_torch_thread):
    runs = []
    for _ in range(2):
        model = CDE(4, 2, TINY, seed=3)
        hist = model.fit(data, 20, torch.Generator().manual_seed(1))
        runs.append((hist, model.act(data.obs[:7])))
    assert runs[0][0]["v_loss"] == runs[1][0]["v_loss"]
    assert np.array_equal(runs[0][1], runs[1][1])
    hist, actions = runs[0]
    assert all(np.isfinite(v).all() for v in hist.values())
    assert actions.shape == (7, 2) and np.abs(actions).max() <= 1
    assert np.all(np.array(hist["policy_loss"][:4]) == 0)   # warm-up: no policy update
    assert np.any(np.array(hist["policy_loss"][4:]) != 0)
    assert max(hist["ood_loss"]) > 0
    single = model.act(data.obs[0])
    assert single.shape == (2,)


def test_zeta_one_drops_the_ood_term_and_the_behaviour_model(data, one_torch_thread):
    cfg = CDEConfig(hidden=(16, 16), batch_size=32, zeta=1.0, policy_extract_mode="weighted_bc")
    model = CDE(4, 2, cfg)
    before = [p.clone() for p in model.data_policy.parameters()]
    hist = model.fit(data, 10)
    assert max(hist["ood_loss"]) == 0 and max(hist["bc_loss"]) == 0
    assert all(torch.equal(a, b) for a, b in zip(before, model.data_policy.parameters()))


def test_lambda_step_drives_the_mean_ratio_to_one(one_torch_thread):
    # with V frozen, the λ_v update alone must make E_D[w] = 1
    adv = torch.tensor([0.3, -0.2, 0.05, 0.1], dtype=torch.float64)
    eta = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([eta], lr=0.01)
    for _ in range(3000):
        _, loss_eta, w = v_loss(adv, torch.zeros(1, dtype=torch.float64), eta, alpha=0.1,
                                gamma=0.99)
        opt.zero_grad()
        loss_eta.backward()
        opt.step()
    assert abs(float(w.mean()) - 1) < 1e-3


def test_v_loss_matches_the_hand_computed_official_formula():
    adv = torch.tensor([0.5, -0.3, 0.0], dtype=torch.float64, requires_grad=True)
    v0 = torch.tensor([2.0, 4.0], dtype=torch.float64)
    eta = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
    alpha, gamma = 0.2, 0.9
    loss, loss_eta, w = v_loss(adv, v0, eta, alpha=alpha, gamma=gamma)
    y = (adv.detach().numpy() - 0.1) / alpha
    wn = np.where(y < 0, np.exp(np.minimum(y, 0)), y + 1)
    fw = np.where(y < 0, (np.minimum(y, 0) - 1) * np.exp(np.minimum(y, 0)) + 1, 0.5 * y ** 2)
    expected = np.mean(wn * (adv.detach().numpy() - 0.1) - alpha * fw) + 0.1 + (1 - gamma) * 3.0
    assert np.isclose(float(loss.detach()), expected) and np.allclose(w.detach().numpy(), wn)
    # d L_V / d e_V = w / n (envelope identity), and d L_λ / d λ = 1 − E[w]
    (g,) = torch.autograd.grad(loss, adv)
    assert np.allclose(g.numpy(), wn / 3)
    (ge,) = torch.autograd.grad(loss_eta, eta)
    assert np.isclose(float(ge), 1 - wn.mean())


def test_ood_penalty_is_zero_exactly_below_the_ratio_cap():
    eta, alpha, eps = torch.tensor(0.2), 0.01, 0.3
    f = soft_chi2()
    e = torch.tensor([0.2 + alpha * np.log(0.29), 0.2 + alpha * np.log(0.31), 0.5])
    pen = ood_penalty(e, eta, alpha=alpha, ood_eps=eps)
    ratio = f.f_prime_inv((e - eta) / alpha)
    assert float(pen[0]) == 0 and float(ratio[0]) < eps
    assert float(pen[1]) > 0 and float(ratio[1]) > eps
    assert np.isclose(float(pen[2]), (0.5 - 0.2 - alpha * np.log(eps)) ** 2, rtol=1e-5)


def test_density_ratio_and_dataset_validation_at_the_method_boundary(data, one_torch_thread):
    model = CDE(4, 2, TINY)
    model.fit(data, 3)
    w = model.density_ratio(data.obs[:5], data.actions[:5])
    assert w.shape == (5,) and (w > 0).all()
    cols = {k: getattr(data, k) for k in ("obs", "actions", "rewards", "next_obs", "terminals",
                                          "timeouts", "is_initial")}
    cols["actions"] = cols["actions"] * 2
    with pytest.raises(ValueError, match=r"actions must lie in \[-1, 1\]"):
        OfflineDataset(**cols)


def test_nan_or_non_numeric_observations_are_refused_by_act(data, one_torch_thread):
    from iclr24.papers.cde import BC

    for agent in (CDE(4, 2, TINY), BC(4, 2, hidden=(8,), batch_size=8)):
        agent.fit(data, 2)
        for bad in (np.array([0.5, np.nan, 0.0, 0.0]), np.full((3, 4), np.inf)):
            with pytest.raises(ValueError, match="obs must be finite"):
                agent.act(bad)
        with pytest.raises(TypeError, match="obs must be a numeric array"):
            agent.act(["a", "b", "c", "d"])


def _episodes(last_rewards, length=20):
    """Episodes of ``length`` steps whose last reward is ``last_rewards[i]``."""
    rng = np.random.default_rng(0)
    n = len(last_rewards) * length
    rew = np.zeros(n)
    rew[length - 1::length] = last_rewards
    first = np.zeros(n)
    first[::length] = 1
    return OfflineDataset(obs=rng.normal(size=(n, 4)), actions=rng.uniform(-0.9, 0.9, (n, 2)),
                          rewards=rew, next_obs=rng.normal(size=(n, 4)), terminals=np.zeros(n),
                          timeouts=np.roll(first, -1), is_initial=first)


def test_optimal_episode_weights_follow_the_official_is_optimal_column():
    # episodes 0 and 2 end in reward: their 40 transitions get 1, the others 0
    ds = _episodes([1.0, 0.0, 1.0, 0.0])
    w = ds.optimal_episode_weights()
    assert np.array_equal(w, np.repeat([1.0, 0.0, 1.0, 0.0], 20))
    # a reward inside an episode but not at its end does not flag it
    ds2 = OfflineDataset(**{**{k: getattr(ds, k) for k in ("obs", "actions", "next_obs",
                                                             "terminals", "timeouts",
                                                             "is_initial")},
                            "rewards": np.roll(ds.rewards, -1)})
    assert ds2.optimal_episode_weights().max() < 1.0 + 1e-3  # fallback: nothing flagged
    # fewer than 10 flagged transitions: + 1e-6 and rescaled to mean 1 (official fallback)
    none = _episodes([0.0, 0.0]).optimal_episode_weights()
    assert np.allclose(none, 1.0)
    few = _episodes([1.0, 0.0], length=5).optimal_episode_weights()
    assert few.mean() == pytest.approx(1.0) and few[0] > 1.5 and few[-1] < 1e-4
    with pytest.raises(ValueError, match="min_flagged"):
        ds.optimal_episode_weights(min_flagged=-1)


def test_is_optimal_weighting_changes_only_the_policy_loss(one_torch_thread):
    ds = _episodes([1.0, 0.0, 0.0, 0.0])
    cfg = CDEConfig(hidden=(16, 16), batch_size=32, warmup_fraction=0.0)
    hists = {}
    for flag in (True, False):
        model = CDE(4, 2, CDEConfig(**{**cfg.__dict__, "is_optimal_weighting": flag}), seed=0)
        hists[flag] = model.fit(ds, 5, torch.Generator().manual_seed(0))
    assert hists[True]["v_loss"][:1] == hists[False]["v_loss"][:1]
    assert hists[True]["policy_loss"][0] != hists[False]["policy_loss"][0]
    assert CDEConfig().is_optimal_weighting  # official default
    with pytest.raises(TypeError, match="is_optimal_weighting"):
        CDEConfig(is_optimal_weighting=1)
