"""GAPN networks: GCN normalisation, masking, permutation equivariance, padding invariance;
training determinism and the no-adversarial ablation."""

import numpy as np
import pytest
import torch

from iclr24.papers.gapn import (
    AssemblyDiscriminator,
    AssemblyEnv,
    EdgeScorer,
    GAPNConfig,
    GAPNPolicy,
    ValueNetwork,
    batch_observations,
    gapn_assemble,
    generate_complexes,
    normalized_adjacency,
    train_gapn,
)


@pytest.fixture(scope="module")
def small_set():
    return generate_complexes(4, (3, 5), seed=21)


def _logits(policy, obs_list):
    b = batch_observations(obs_list)
    return policy(b["node_features"], b["edge_features"], b["adjacency"], b["action_mask"],
                  b["node_mask"]), b


def test_normalized_adjacency_closed_form():
    a = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    out = normalized_adjacency(a, torch.tensor([[True, True]]))
    assert torch.allclose(out, torch.full((1, 2, 2), 0.5))  # (A + I) / 2 for two linked nodes
    pad = normalized_adjacency(torch.ones(1, 3, 3), torch.tensor([[True, True, False]]))
    assert torch.all(pad[0, 2] == 0) and torch.all(pad[0, :, 2] == 0)


def test_edge_scorer_equals_mlp_on_concatenation(one_torch_thread):
    torch.manual_seed(0)
    s = EdgeScorer(8, 4)
    h, e = torch.randn(2, 5, 8), torch.randn(2, 5, 5, 4)
    w = torch.cat([s.src.weight, s.dst.weight, s.edge.weight], dim=1)
    x = torch.cat([h[:, :, None].expand(-1, -1, 5, -1), h[:, None].expand(-1, 5, -1, -1), e], -1)
    ref = s.out(torch.relu(x @ w.T + s.src.bias)).squeeze(-1)
    assert torch.allclose(s(h, e), ref, atol=1e-6)
    assert torch.allclose(s.pairs(h[:, 1], h[:, 3], e[:, 1, 3]), ref[:, 1, 3], atol=1e-6)


def test_policy_masks_invalid_actions(small_set, one_torch_thread):
    torch.manual_seed(0)
    policy = GAPNPolicy(16, 2)
    env = AssemblyEnv(small_set[0].problem)
    env.step((0, 1))
    logits, b = _logits(policy, [env.observation()])
    mask = b["action_mask"].flatten(1)
    assert torch.isinf(logits[~mask]).all() and torch.isfinite(logits[mask]).all()
    assert float(torch.softmax(logits.detach(), -1)[mask].sum()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="action_mask"):
        policy(b["node_features"], b["edge_features"], b["adjacency"],
               torch.zeros_like(b["action_mask"]), b["node_mask"])


def test_policy_is_permutation_equivariant(small_set, one_torch_thread):
    torch.manual_seed(0)
    policy = GAPNPolicy(16, 3)
    env = AssemblyEnv(small_set[1].problem)
    env.step(env.valid_actions()[0])
    obs = env.observation()
    n = len(obs["placed"])
    perm = np.random.default_rng(0).permutation(n)
    p_obs = {k: v[perm] if v.ndim == 1 or k == "node_features" else v[np.ix_(perm, perm)]
             for k, v in obs.items()}
    base, _ = _logits(policy, [obs])
    permuted, _ = _logits(policy, [p_obs])
    base, permuted = base.view(n, n), permuted.view(n, n)
    assert torch.allclose(permuted, base[np.ix_(perm, perm)], atol=1e-5)


def test_padding_does_not_change_logits_or_values(small_set, one_torch_thread):
    torch.manual_seed(0)
    policy, value = GAPNPolicy(16, 2), ValueNetwork(16, 2)
    small = AssemblyEnv(small_set[0].problem).observation()
    big = AssemblyEnv(generate_complexes(1, (7, 7), seed=2)[0].problem).observation()
    alone, b1 = _logits(policy, [small])
    both, b2 = _logits(policy, [small, big])
    n, m = len(small["placed"]), b2["node_mask"].shape[1]
    valid = b1["action_mask"].flatten(1)[0]
    assert torch.allclose(alone[0][valid],
                          both[0].view(m, m)[:n, :n].flatten()[valid], atol=1e-5)
    v1 = value(b1["node_features"], b1["adjacency"], b1["node_mask"])
    v2 = value(b2["node_features"], b2["adjacency"], b2["node_mask"])
    assert torch.allclose(v1[0], v2[0], atol=1e-5)
    d = AssemblyDiscriminator(16, 2)
    out = d(b2["node_features"], b2["edge_features"], b2["adjacency"], b2["node_mask"],
            torch.tensor([[0, 1], [0, 2]]))
    assert out.shape == (2,)


def test_training_is_deterministic_and_ablation_skips_discriminator(small_set,
                                                                   one_torch_thread):
    cfg = GAPNConfig(hidden=16, layers=2, iterations=2, episodes_per_batch=4)
    a = train_gapn(small_set, cfg, seed=3)
    b = train_gapn(small_set, cfg, seed=3)
    for p, q in zip(a.policy.parameters(), b.policy.parameters()):
        assert torch.equal(p, q)
    assert a.history[0]["docking_return"] == b.history[0]["docking_return"]
    assert "discriminator_loss" in a.history[0]
    torch.manual_seed(3)
    GAPNPolicy(16, 2), ValueNetwork(16, 2)
    init = AssemblyDiscriminator(16, 2)
    noadv = train_gapn(small_set, GAPNConfig(hidden=16, layers=2, iterations=2,
                                             episodes_per_batch=4, adversarial_weight=0.0),
                       seed=3)
    assert "discriminator_loss" not in noadv.history[0]
    for p, q in zip(init.parameters(), noadv.discriminator.parameters()):
        assert torch.equal(p, q)  # never updated
    res = gapn_assemble(AssemblyEnv(small_set[2].problem), a.policy)
    assert res.n_scored == 1 and len(res.edges) == small_set[2].n_chains - 1


def test_ppo_learns_to_prefer_confident_native_edges(one_torch_thread):
    """A short PPO run on GT-dimer complexes raises the probability of native edges (which
    carry the docking reward) at the first step above the untrained policy's."""
    data = generate_complexes(8, (4, 5), seed=31, mode="gt")
    cfg = GAPNConfig(hidden=16, layers=2, iterations=25, episodes_per_batch=8, lr=3e-3,
                     adversarial_weight=0.0)

    def native_mass(policy):
        total = 0.0
        for c in data:
            logits, _ = _logits(policy, [AssemblyEnv(c.problem).observation()])
            p = torch.softmax(logits.detach(), -1).view(c.n_chains, c.n_chains)
            total += sum(float(p[0, j]) for j in range(1, c.n_chains)
                         if (0, j) in c.native_contacts)
        return total / len(data)

    torch.manual_seed(5)
    before = native_mass(GAPNPolicy(16, 2))
    after = native_mass(train_gapn(data, cfg, seed=5).policy)
    assert after > before + 0.1


def test_bad_configs_and_inputs(small_set):
    with pytest.raises(ValueError, match="iterations"):
        GAPNConfig(iterations=0)
    with pytest.raises(ValueError, match="clip"):
        GAPNConfig(clip=0)
    with pytest.raises(ValueError, match="non-empty"):
        train_gapn([], seed=0)
    with pytest.raises(TypeError, match="SyntheticComplex"):
        train_gapn([small_set[0].problem], seed=0)
    with pytest.raises(ValueError, match="non-empty"):
        batch_observations([])
