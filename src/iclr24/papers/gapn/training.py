"""Training GAPN: PPO on the docking + adversarial reward, alternating with discriminator
updates (paper Sec. 4, Eqs. 3, 6–7), and one-rollout inference.

Per iteration: roll out ``episodes_per_batch`` episodes on complexes drawn from the training
set (actions sampled from π_θ_old); update D_φ once with binary cross-entropy on expert pairs
(at each visited state, a valid action that is a native-contact edge: "ground-truth actions"
pooled over complexes of every chain number, any order) against the policy's actions; reward
each step with r = r_dock + w_adv log D_φ(s, a); GAE (γ = 1 over the N − 1 steps, λ = 0.95);
then ``epochs`` PPO epochs over minibatches of the clipped objective

    L = L_clip(θ) + c_V L_V − c_H H[π_θ(·|s)]

using the RL kit's ``gae``, ``clipped_policy_loss`` and ``clipped_value_loss``. Defaults are
the spec's (clip 0.2, 4 epochs per batch of 32 episodes, lr 3e-4, entropy 0.01, w_adv 0.5); the
paper's own values were not retrieved. ``adversarial_weight=0`` is the no-adversarial ablation
(the discriminator is not trained). Native information is used only for the discriminator's
expert actions during training; inference sees dimers and confidences only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from iclr24.kits.reinforcement import clipped_policy_loss, clipped_value_loss, gae

from .complexes import AssemblyProblem, SyntheticComplex
from .environment import AssemblyEnv, DockingReward, PairScorer
from .policy import AssemblyDiscriminator, GAPNPolicy, ValueNetwork, batch_observations
from .search import AssemblyResult

__all__ = ["GAPNConfig", "GAPNModel", "gapn_assemble", "train_gapn"]


@dataclass(frozen=True)
class GAPNConfig:
    """GAPN hyper-parameters (the spec's defaults)."""

    hidden: int = 64
    layers: int = 3
    iterations: int = 100
    episodes_per_batch: int = 32
    epochs: int = 4
    minibatches: int = 2
    clip: float = 0.2
    gamma: float = 1.0
    lam: float = 0.95
    lr: float = 3e-4
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    adversarial_weight: float = 0.5
    discriminator_lr: float = 3e-4

    def __post_init__(self) -> None:
        for name in ("hidden", "layers", "iterations", "episodes_per_batch", "epochs",
                     "minibatches"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int; got {v!r}")
        if not self.clip > 0:
            raise ValueError(f"clip must be > 0; got {self.clip}")
        if not (0 <= self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(f"gamma and lam must be in [0, 1]; got {self.gamma}, {self.lam}")
        if self.adversarial_weight < 0 or self.entropy_coef < 0:
            raise ValueError("adversarial_weight and entropy_coef must be >= 0")


@dataclass
class GAPNModel:
    """A trained GAPN: policy, value network, discriminator and per-iteration statistics
    (``history`` rows: mean docking return, mean adversarial reward, discriminator loss)."""

    policy: GAPNPolicy
    value: ValueNetwork
    discriminator: AssemblyDiscriminator
    config: GAPNConfig
    history: list[dict[str, float]] = field(default_factory=list)


@torch.no_grad()
def gapn_assemble(env: AssemblyEnv, policy: GAPNPolicy, *, sample: bool = False,
                  generator: torch.Generator | None = None) -> AssemblyResult:
    """One rollout of N − 1 steps: the most probable valid action each step (``sample=True``
    draws from π instead)."""
    if not isinstance(env, AssemblyEnv):
        raise TypeError(f"env must be an AssemblyEnv; got {type(env).__name__}")
    if env.edges:
        raise ValueError("env must be freshly reset (no chain added yet)")
    obs = env.observation()
    while not env.done:
        b = batch_observations([obs])
        logits = policy(b["node_features"], b["edge_features"], b["adjacency"],
                        b["action_mask"], b["node_mask"])[0]
        if sample:
            a = int(torch.multinomial(torch.softmax(logits, -1), 1, generator=generator))
        else:
            a = int(torch.argmax(logits))
        obs, *_ = env.step(a)
    return AssemblyResult(list(env.edges), env.coordinates(), env.total_reward, 1)


def _check_complexes(train: Sequence[SyntheticComplex]) -> list[SyntheticComplex]:
    accepted = ("SyntheticComplex objects (from generate_complexes, complex_from_native or "
                "load_pdb_complex for a local PDB file)")
    if isinstance(train, (SyntheticComplex, str, bytes)) or not isinstance(train, Sequence):
        raise TypeError(f"train_complexes must be a sequence of {accepted}; got "
                        f"{type(train).__name__}")
    train = list(train)
    if not train:
        raise ValueError("train_complexes must be non-empty")
    for k, c in enumerate(train):
        if not isinstance(c, SyntheticComplex):
            hint = (" (an AssemblyProblem has no native, which the discriminator's expert "
                    "actions need)" if isinstance(c, AssemblyProblem) else "")
            raise TypeError(f"train_complexes must hold {accepted}; item {k} is "
                            f"{type(c).__name__}{hint}")
    return train


def train_gapn(train_complexes: Sequence[SyntheticComplex], config: GAPNConfig = GAPNConfig(),
               *, seed: int, reward: DockingReward | None = None,
               progress: Callable[[float, str], None] | None = None) -> GAPNModel:
    """Train GAPN (or, with ``adversarial_weight=0``, its no-adversarial ablation)."""
    train = _check_complexes(train_complexes)
    if not isinstance(config, GAPNConfig):
        raise TypeError(f"config must be a GAPNConfig; got {type(config).__name__}")
    if reward is not None and not isinstance(reward, DockingReward):
        raise TypeError(f"reward must be a DockingReward or None; got {type(reward).__name__}")
    reward = DockingReward() if reward is None else reward
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    policy = GAPNPolicy(config.hidden, config.layers)
    value = ValueNetwork(config.hidden, config.layers)
    disc = AssemblyDiscriminator(config.hidden, config.layers)
    params = [*policy.parameters(), *value.parameters()]
    opt = torch.optim.Adam(params, lr=config.lr, eps=1e-5)
    disc_opt = torch.optim.Adam(disc.parameters(), lr=config.discriminator_lr)
    scorers = [PairScorer(c.problem, reward) for c in train]
    model = GAPNModel(policy, value, disc, config)
    use_adv = config.adversarial_weight > 0
    for it in range(config.iterations):
        obs_list, pairs, old_logp, dock, experts = [], [], [], [], []
        with torch.no_grad():  # rollouts with θ_old, the batch's episodes in lock-step
            picks = rng.integers(len(train), size=config.episodes_per_batch)
            envs = [AssemblyEnv(train[k].problem, reward, scorer=scorers[k]) for k in picks]
            obs_now = [e.observation() for e in envs]
            steps = [[] for _ in envs]  # transition indices of each episode, in order
            while True:
                live = [e for e in range(len(envs)) if not envs[e].done]
                if not live:
                    break
                b = batch_observations([obs_now[e] for e in live])
                logits = policy(b["node_features"], b["edge_features"], b["adjacency"],
                                b["action_mask"], b["node_mask"])
                logp = torch.log_softmax(logits, -1)
                chosen = torch.multinomial(logp.exp(), 1, generator=gen).squeeze(1)
                n_pad = b["node_mask"].shape[1]
                for row, e in enumerate(live):
                    env = envs[e]
                    i, j = divmod(int(chosen[row]), n_pad)
                    native = train[picks[e]].native_contacts
                    good = [(p, q) for p, q in env.valid_actions()
                            if (min(p, q), max(p, q)) in native]
                    experts.append(good[int(rng.integers(len(good)))] if good else None)
                    steps[e].append(len(obs_list))
                    obs_list.append(obs_now[e])
                    pairs.append((i, j))
                    old_logp.append(float(logp[row, chosen[row]]))
                    obs_now[e], r, *_ = env.step((i, j))
                    dock.append(r)
            order = [t for s in steps for t in s]  # regroup transitions episode by episode
            episode_len = [len(s) for s in steps]
            obs_list = [obs_list[t] for t in order]
            pairs = [pairs[t] for t in order]
            old_logp = [old_logp[t] for t in order]
            dock = [dock[t] for t in order]
            experts = [experts[t] for t in order]
        batch = batch_observations(obs_list)
        pair_t = torch.tensor(pairs)
        act = pair_t[:, 0] * batch["node_mask"].shape[1] + pair_t[:, 1]  # flat index i·N + j
        old_logp_t = torch.tensor(old_logp)
        r_dock = torch.tensor(dock, dtype=torch.float32)
        stats = {"iteration": it, "docking_return": float(r_dock.sum()) / len(episode_len)}
        if use_adv:
            stats.update(_discriminator_step(disc, disc_opt, batch, pair_t, experts))
            with torch.no_grad():
                r_adv = nn.functional.logsigmoid(disc(  # r_adv = log D_φ(s, a)
                    batch["node_features"], batch["edge_features"], batch["adjacency"],
                    batch["node_mask"], pair_t))
            rewards = r_dock + config.adversarial_weight * r_adv
            stats["adversarial_reward"] = float(r_adv.mean())
        else:
            rewards = r_dock
        with torch.no_grad():
            values = value(batch["node_features"], batch["adjacency"], batch["node_mask"])
        adv, ret = _episode_gae(rewards, values, episode_len, config)
        _ppo_update(policy, value, opt, params, batch, act, old_logp_t, adv, ret, values,
                    config, gen)
        model.history.append(stats)
        if progress is not None:
            progress((it + 1) / config.iterations, f"PPO iteration {it + 1}/{config.iterations}")
    return model


def _episode_gae(rewards: torch.Tensor, values: torch.Tensor, lengths: list[int],
                 config: GAPNConfig) -> tuple[torch.Tensor, torch.Tensor]:
    advs, rets, start = [], [], 0
    for n in lengths:
        sl = slice(start, start + n)
        dones = torch.zeros(n)
        dones[-1] = 1.0  # the assembly is complete after N − 1 steps
        a, r = gae(rewards[sl], values[sl], dones, 0.0, gamma=config.gamma, lam=config.lam)
        advs.append(a)
        rets.append(r)
        start += n
    return torch.cat(advs), torch.cat(rets)


def _discriminator_step(disc: AssemblyDiscriminator, opt: torch.optim.Optimizer,
                        batch: dict[str, torch.Tensor], policy_pairs: torch.Tensor,
                        experts: list[tuple[int, int] | None]) -> dict[str, float]:
    """One BCE step: native-contact actions (label 1) vs the policy's actions (label 0) at the
    same visited states."""
    rows = [k for k, e in enumerate(experts) if e is not None]
    sub = {k: v[rows] for k, v in batch.items()}
    exp_pairs = torch.tensor([experts[k] for k in rows], dtype=torch.long).reshape(-1, 2)
    args = (sub["node_features"], sub["edge_features"], sub["adjacency"], sub["node_mask"])
    logit_exp = disc(*args, exp_pairs)
    logit_pol = disc(*args, policy_pairs[rows])
    loss = (nn.functional.binary_cross_entropy_with_logits(logit_exp, torch.ones_like(logit_exp))
            + nn.functional.binary_cross_entropy_with_logits(logit_pol,
                                                             torch.zeros_like(logit_pol)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return {"discriminator_loss": float(loss.detach())}


def _ppo_update(policy: GAPNPolicy, value: ValueNetwork, opt: torch.optim.Optimizer,
                params: list[nn.Parameter], batch: dict[str, torch.Tensor], actions: torch.Tensor,
                old_logp: torch.Tensor, adv: torch.Tensor, ret: torch.Tensor,
                old_values: torch.Tensor, config: GAPNConfig, gen: torch.Generator) -> None:
    n = len(actions)
    size = max(1, n // config.minibatches)
    for _ in range(config.epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, size):
            idx = perm[start:start + size]
            mb = {k: v[idx] for k, v in batch.items()}
            logits = policy(mb["node_features"], mb["edge_features"], mb["adjacency"],
                            mb["action_mask"], mb["node_mask"])
            logp_all = torch.log_softmax(logits, -1)
            logp = logp_all.gather(1, actions[idx, None]).squeeze(1)
            p = logp_all.exp()
            entropy = -(p * torch.where(p > 0, logp_all, torch.zeros_like(logp_all))).sum(-1)
            a = adv[idx]
            a = (a - a.mean()) / (a.std() + 1e-8) if len(idx) > 1 else a
            v = value(mb["node_features"], mb["adjacency"], mb["node_mask"])
            loss = (clipped_policy_loss(logp, old_logp[idx], a, clip=config.clip)  # Eq. 6–7
                    + config.value_coef * clipped_value_loss(v, old_values[idx], ret[idx],
                                                             clip=None)
                    - config.entropy_coef * entropy.mean())
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            opt.step()
