"""Conservative Density Estimation (Cen et al., ICLR 2024, arXiv 2401.08819): ``CDEConfig``,
``CDE`` (``fit`` / ``act``) and its networks, following the official ``cde.py`` step by step.

CDE solves the regularised occupancy LP max_d E_d[r] − α D_f(d ‖ d̃) under Bellman flow, where
d̃ = ζ d^D + (1 − ζ) μ_OOD mixes the data occupancy with uniform actions at data states and the
density ratio on the OOD part is capped by ε̃. Per minibatch of B transitions and B initial
states (all expectations are minibatch means):

1. V-step (OptiDICE-style dual, §4): e_V(s,a) = r + γ (1 − done) V(s') − V(s),
   y = (e_V − λ_v)/α, w = (f')⁻¹(y),
   L_V = (1 − γ) E_{s₀}[V(s₀)] + E_D[w (e_V − λ_v) − α f(w)] + λ_v (gradients through e_V and w);
   λ_v: minimise E_D[w̄ (ē_V − λ_v)] + λ_v, i.e. drive E_D[w] to 1 (``IS_ratio_normalize``).
2. E-step ("adv" head E(s, a) ≈ e_V; the "q" head subtracts V(s)):
   L_E = ζ E_D[(E(s,a) − ē_V)²] + (1 − ζ) E_{s∼D, a_ood}[ReLU(E(s,a_ood) − λ_e − α f'(ε̃))²]
   with ``num_repeat_actions`` OOD actions per state drawn from U[−1, 1]^m, redrawn (up to 10
   times) where they fall within min(σ_D(s), 0.1) of the data action; ReLU(·)² pushes OOD
   advantages below the level at which w_E = (f')⁻¹((E − λ_e)/α) would exceed ε̃.
   λ_e: minimise E_D[w̄_E (ē_V − λ_e)] + λ_e (as the official code: the V-step advantage).
   The OOD term is used only for 0 < ζ < 1 (ζ = 1 is OptiDICE's unmixed d^D).
3. π_D: 3-component tanh-Gaussian mixture fitted by maximum likelihood on the data (BC).
4. Policy (after the warm-up; "info_proj"): ã ∼ π(·|s) reparameterised,
   L_π = −E[log w_E(s, ã) − (log π(ũ|s) − ζ log π_D(ũ|s))] − β H(π)
   (log densities of the pre-tanh sample ũ, as the official code; H is the sampled entropy of
   the squashed action; β auto-tuned towards −|A|). "weighted_bc": L_π = −E_D[w̄_E log π(a|s)].
   As the official code (latest commit), the info_proj term of each transition is multiplied
   by its ``is_optimal`` weight o(s, a) (``OfflineDataset.optimal_episode_weights``: 1 for
   transitions of episodes whose last reward is positive, 0 otherwise; all ≈ 1 when fewer than
   10 transitions are flagged): L_π = −E_D[o · (log w_E − (log π − ζ log π_D))] − β H(π).
   ``is_optimal_weighting=False`` switches it off (o ≡ 1); weighted_bc does not use it
   (official).

Preprocessing as the official ``preprocess``: observations standardised with the data
statistics, rewards standardised then × 0.1. Defaults are ``hyper_params/cde/maze2d.yaml``.

What differs: updates are counted in gradient steps (``n_steps``, warm-up = ``warmup_fraction``
of them; the official 100 × 1 000 steps with a 20-epoch warm-up is 0.2); the policy network is
the RL kit's ``TanhGaussianActor`` (log σ squashed into [−5, 2] by tanh, where the official
code clips it). D4RL maze2d/Adroit/MuJoCo are out of reach
here (no MuJoCo, no downloads); see ``maze.py`` for the stand-in task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from iclr24.kits.reinforcement import TanhGaussianActor, mlp

from .dataset import OfflineDataset
from .divergence import soft_chi2
from .losses import eta_loss, ood_penalty, v_loss

__all__ = ["CDE", "CDEConfig", "TanhMixturePolicy"]

_EPS = 1e-6


def policy_actions(agent, policy: TanhGaussianActor, obs: np.ndarray, deterministic: bool,
                   generator: torch.Generator | None) -> np.ndarray:
    """The ``act`` of every fitted agent here (CDE and the baselines): raw observations
    (obs_dim,) or (n, obs_dim), standardised by ``agent._normalise``, through ``policy``
    (its mean action, or a sample), as numpy in [−1, 1]."""
    if not agent.fitted:
        raise RuntimeError("call fit() before act()")
    try:
        obs = np.asarray(obs, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"obs must be a numeric array; got {type(obs).__name__}") from None
    if obs.ndim not in (1, 2) or obs.shape[-1] != agent.obs_dim:
        raise ValueError(f"obs must have shape ({agent.obs_dim},) or (n, {agent.obs_dim}); "
                         f"got {obs.shape}")
    if not np.isfinite(obs).all():
        raise ValueError("obs must be finite; got NaN or infinite entries (a NaN observation "
                         "would give a NaN action)")
    x = agent._normalise(obs.reshape(-1, agent.obs_dim))
    with torch.no_grad():
        a = policy(x) if deterministic else policy.sample(x, generator)[0]
    a = a.cpu().numpy()
    return a[0] if obs.ndim == 1 else a


@dataclass(frozen=True)
class CDEConfig:
    """CDE hyper-parameters (official ``maze2d.yaml``)."""

    gamma: float = 0.99
    alpha: float = 0.001            # α of the f-divergence (0.01 for maze2d-large / adroit)
    zeta: float = 0.9               # ζ: weight of d^D in the mixture d̃
    ood_eps: float = 0.3            # ε̃: cap of the density ratio on OOD actions
    num_repeat_actions: int = 5
    hidden: Sequence[int] = (256, 256)
    n_components: int = 3           # mixture components of π_D
    batch_size: int = 512
    lr: float = 3e-4                # networks and the multipliers λ_v, λ_e, β
    warmup_fraction: float = 0.2    # V, E, π_D only for this fraction of the steps
    e_value_type: str = "adv"       # "adv": E predicts the advantage; "q": E − V(s)
    policy_extract_mode: str = "info_proj"   # or "weighted_bc"
    is_ratio_normalize: bool = True
    policy_entropy_reg: bool = True
    target_entropy: float | None = None      # None: −action_dim
    normalize_obs: bool = True
    normalize_rewards: bool = True
    reward_scale: float = 0.1
    is_optimal_weighting: bool = True        # official ``is_optimal`` weights on L_π (info_proj)

    def __post_init__(self) -> None:
        if not 0 <= self.gamma < 1:
            raise ValueError(f"gamma must be in [0, 1); got {self.gamma}")
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0; got {self.alpha}")
        if not 0 < self.zeta <= 1:
            raise ValueError(f"zeta must be in (0, 1]; got {self.zeta}")
        if not 0 < self.ood_eps < 1:
            raise ValueError(f"ood_eps must be in (0, 1); got {self.ood_eps}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction must be in [0, 1); got {self.warmup_fraction}")
        for name in ("num_repeat_actions", "n_components", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int; got {v!r}")
        if not isinstance(self.is_optimal_weighting, bool):
            raise TypeError(f"is_optimal_weighting must be a bool; got "
                            f"{type(self.is_optimal_weighting).__name__}")
        if self.e_value_type not in ("adv", "q"):
            raise ValueError(f"e_value_type must be 'adv' or 'q'; got {self.e_value_type!r}")
        if self.policy_extract_mode not in ("info_proj", "weighted_bc"):
            raise ValueError(f"policy_extract_mode must be 'info_proj' or 'weighted_bc'; got "
                             f"{self.policy_extract_mode!r}")

    @property
    def uses_ood(self) -> bool:
        """The OOD term is active only for a proper mixture, 0 < ζ < 1 (official)."""
        return 0.0 < self.zeta < 1.0


def _small_last_layer(net: nn.Sequential) -> nn.Sequential:
    last = net[-1]
    nn.init.uniform_(last.weight, -3e-3, 3e-3)  # official Critic init "to avoid instability"
    nn.init.uniform_(last.bias, -3e-3, 3e-3)
    return net


def _atanh(a: torch.Tensor) -> torch.Tensor:
    return torch.atanh(a.clamp(-1 + _EPS, 1 - _EPS))


class TanhMixturePolicy(nn.Module):
    """π_D(a|s): a tanh-squashed mixture of ``n_components`` diagonal Gaussians (log σ clipped
    to [−5, 2]); ``log_prob_pre_tanh(obs, u)`` is the mixture density of the pre-tanh action
    u (n, m); ``action_std(obs)`` the mean component σ (n, m)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int], n_components: int
                 ) -> None:
        super().__init__()
        self.k, self.m = n_components, act_dim
        self.trunk = mlp(obs_dim, hidden[-1], hidden[:-1], output_activation=nn.ReLU)
        self.mu = nn.Linear(hidden[-1], n_components * act_dim)
        self.log_sigma = nn.Linear(hidden[-1], n_components * act_dim)
        self.logits = nn.Linear(hidden[-1], n_components)
        nn.init.uniform_(self.log_sigma.weight, -1e-3, 1e-3)
        nn.init.uniform_(self.log_sigma.bias, -1e-3, 1e-3)

    def _params(self, obs: torch.Tensor):
        h = self.trunk(obs)
        mu = self.mu(h).view(-1, self.k, self.m)
        sigma = self.log_sigma(h).clamp(-5.0, 2.0).exp().view(-1, self.k, self.m)
        return mu, sigma, self.logits(h)

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Distribution:
        mu, sigma, logits = self._params(obs)
        comp = torch.distributions.Independent(torch.distributions.Normal(mu, sigma), 1)
        return torch.distributions.MixtureSameFamily(
            torch.distributions.Categorical(logits=logits), comp)

    def log_prob_pre_tanh(self, obs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """log density (n,) of pre-tanh actions u: (n, m) or (r, n, m) -> (r, n)."""
        return self.distribution(obs).log_prob(u)

    def action_std(self, obs: torch.Tensor) -> torch.Tensor:
        return self._params(obs)[1].mean(1)


def standardiser(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, std + 1e-7) over rows of (n, d), as the official ``preprocess``."""
    return x.mean(0), x.std(0) + 1e-7


@dataclass
class _Tensors:
    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    not_done: torch.Tensor
    init_obs: torch.Tensor
    optimal_weight: torch.Tensor
    history: dict[str, list[float]] = field(default_factory=dict)


class CDE(nn.Module):
    """Conservative Density Estimation for a dataset with ``obs_dim`` observations and actions in
    [−1, 1]^``act_dim`` (see the module docstring for the losses)."""

    def __init__(self, obs_dim: int, act_dim: int, config: CDEConfig = CDEConfig(), *,
                 seed: int = 0) -> None:
        super().__init__()
        for name, v in (("obs_dim", obs_dim), ("act_dim", act_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int; got {v!r}")
        if not isinstance(config, CDEConfig):
            raise TypeError(f"config must be a CDEConfig; got {type(config).__name__}")
        self.config, self.obs_dim, self.act_dim = config, obs_dim, act_dim
        torch.manual_seed(seed)  # network initialisation
        h = tuple(config.hidden)
        self.v_net = _small_last_layer(mlp(obs_dim, 1, h))
        self.e_net = _small_last_layer(mlp(obs_dim + act_dim, 1, h))
        self.data_policy = TanhMixturePolicy(obs_dim, act_dim, h, config.n_components)
        self.policy = TanhGaussianActor(obs_dim, act_dim, h)
        self.eta_v = nn.Parameter(torch.zeros(()))        # λ_v
        self.eta_e = nn.Parameter(torch.zeros(()))        # λ_e
        self.log_ent_coef = nn.Parameter(torch.zeros(()))  # log β
        self.target_entropy = (-float(act_dim) if config.target_entropy is None
                               else float(config.target_entropy))
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self.fitted = False
        self._fns = soft_chi2()

    # --- the quantities of the losses -------------------------------------------------------
    def v(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v_net(obs).squeeze(-1)

    def e(self, obs: torch.Tensor, actions: torch.Tensor, v_s: torch.Tensor | None = None
          ) -> torch.Tensor:
        """Advantage head E(s, a) (n,); the "q" variant subtracts V(s) (``v_s``, detached)."""
        out = self.e_net(torch.cat([obs, actions], -1)).squeeze(-1)
        if self.config.e_value_type == "q":
            out = out - (self.v(obs).detach() if v_s is None else v_s)
        return out

    def density_ratio(self, obs: np.ndarray | torch.Tensor, actions: np.ndarray | torch.Tensor
                      ) -> np.ndarray:
        """w_E(s, a) = (f')⁻¹((E(s, a) − λ_e)/α) for raw (unstandardised) obs (n, d_o) and
        actions (n, d_a): the estimated d^π/d̃ ratio, (n,)."""
        o = self._normalise(obs)
        a = torch.as_tensor(np.asarray(actions, np.float32))
        with torch.no_grad():
            y = (self.e(o, a) - self.eta_e) / self.config.alpha
            return self._fns.f_prime_inv(y).numpy()

    def _normalise(self, obs) -> torch.Tensor:
        x = torch.as_tensor(np.asarray(obs, np.float32), device=self.obs_mean.device)
        return (x - self.obs_mean) / self.obs_std

    def act(self, obs: np.ndarray, deterministic: bool = True,
            generator: torch.Generator | None = None) -> np.ndarray:
        """Actions for raw observations (obs_dim,) or (n, obs_dim), as numpy in [−1, 1]."""
        return policy_actions(self, self.policy, obs, deterministic, generator)

    # --- training ---------------------------------------------------------------------------
    def _prepare(self, ds: OfflineDataset) -> _Tensors:
        cfg = self.config
        if cfg.normalize_obs:
            mean, std = standardiser(ds.obs)
            self.obs_mean.copy_(torch.as_tensor(mean))
            self.obs_std.copy_(torch.as_tensor(std))
        r = ds.rewards.astype(np.float64)
        if cfg.normalize_rewards:
            r = (r - r.mean()) / (r.std() + 1e-7)
        r = cfg.reward_scale * r

        def t(x):
            return torch.as_tensor(np.asarray(x, np.float32))

        obs, nxt = self._normalise(ds.obs), self._normalise(ds.next_obs)
        opt_w = (ds.optimal_episode_weights() if cfg.is_optimal_weighting
                 else np.ones(len(ds)))
        return _Tensors(obs, t(ds.actions), t(r), nxt, t(1.0 - ds.terminals),
                        obs[torch.as_tensor(ds.is_initial > 0)], t(opt_w),
                        {k: [] for k in ("v_loss", "e_loss", "ood_loss", "bc_loss",
                                         "policy_loss", "mean_w", "eta_v", "eta_e")})

    def _ood_actions(self, obs: torch.Tensor, actions: torch.Tensor,
                     gen: torch.Generator) -> torch.Tensor:
        """(r, B, m) uniform OOD actions, redrawn where within min(σ_D, 0.1) of the data action
        (official ``get_ood_a``: up to 10 rounds; no exclusion band without π_D)."""
        shape = (self.config.num_repeat_actions, *actions.shape)
        ood = torch.rand(shape, generator=gen) * 2 - 1
        if self.config.policy_extract_mode != "info_proj":
            return ood
        with torch.no_grad():
            band = self.data_policy.action_std(obs).clamp(max=0.1)[None]
        for _ in range(10):
            close = (ood - actions[None]).abs() < band
            if not bool(close.any()):
                break
            ood = torch.where(close, torch.rand(shape, generator=gen) * 2 - 1, ood)
        return ood

    def fit(self, dataset: OfflineDataset, n_steps: int,
            generator: torch.Generator | None = None) -> dict[str, list[float]]:
        """Train on ``dataset`` for ``n_steps`` gradient steps (minibatches and OOD actions from
        ``generator``); returns the per-step loss history (``history["v_loss"]`` etc.)."""
        if not isinstance(dataset, OfflineDataset):
            raise TypeError(f"dataset must be an OfflineDataset; got {type(dataset).__name__}")
        if dataset.obs_dim != self.obs_dim or dataset.act_dim != self.act_dim:
            raise ValueError(f"dataset has obs/act dims ({dataset.obs_dim}, {dataset.act_dim}); "
                             f"this CDE was built for ({self.obs_dim}, {self.act_dim})")
        if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(f"n_steps must be a positive int; got {n_steps!r}")
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        cfg, fns = self.config, self._fns
        data = self._prepare(dataset)
        lr = cfg.lr
        opt_v = torch.optim.Adam(self.v_net.parameters(), lr=lr)
        opt_e = torch.optim.Adam(self.e_net.parameters(), lr=lr)
        opt_dp = torch.optim.Adam(self.data_policy.parameters(), lr=lr)
        opt_pi = torch.optim.Adam(self.policy.parameters(), lr=lr)
        opt_eta = torch.optim.Adam([self.eta_v, self.eta_e], lr=lr)
        opt_ent = torch.optim.Adam([self.log_ent_coef], lr=lr)
        warmup = int(cfg.warmup_fraction * n_steps)
        n, n0, bs, a = len(data.obs), len(data.init_obs), cfg.batch_size, cfg.alpha
        hist = data.history
        for step in range(n_steps):
            idx = torch.randint(0, n, (bs,), generator=gen)
            s, act, r = data.obs[idx], data.actions[idx], data.rewards[idx]
            s2, nd = data.next_obs[idx], data.not_done[idx]
            s0 = data.init_obs[torch.randint(0, n0, (bs,), generator=gen)]

            # 1. V-step and λ_v
            v_all = self.v(torch.cat([s0, s, s2]))
            v0, v_s, v_s2 = v_all[:bs], v_all[bs:2 * bs], v_all[2 * bs:]
            adv = r + cfg.gamma * nd * v_s2 - v_s                  # e_V = r + γV(s') − V(s)
            loss_v, loss_eta_v, w = v_loss(adv, v0, self.eta_v, alpha=a, gamma=cfg.gamma)
            opt_v.zero_grad()
            loss_v.backward()
            opt_v.step()
            adv = adv.detach()

            # 2. E-step and λ_e
            v_s = v_s.detach()
            if cfg.uses_ood:
                ood = self._ood_actions(s, act, gen)
                rep = ood.shape[0]
                e_all = self.e(torch.cat([s, s.repeat(rep, 1)]),
                               torch.cat([act, ood.reshape(-1, self.act_dim)]),
                               torch.cat([v_s, v_s.repeat(rep)]))
                e_sa, e_ood = e_all[:bs], e_all[bs:]
                # ReLU(E(s,a_ood) − λ_e − α f'(ε̃))²: caps the OOD ratio at ε̃
                ood_loss = ood_penalty(e_ood, self.eta_e, alpha=a, ood_eps=cfg.ood_eps).mean()
                e_loss = cfg.zeta * (e_sa - adv).pow(2).mean() + (1 - cfg.zeta) * ood_loss
            else:
                e_sa = self.e(s, act, v_s)
                ood_loss = torch.zeros(())
                e_loss = (e_sa - adv).pow(2).mean()
            w_e = fns.f_prime_inv((e_sa.detach() - self.eta_e.detach()) / a)
            loss_eta_e = eta_loss(w_e, adv, self.eta_e)  # official: V-step advantages
            opt_e.zero_grad()
            e_loss.backward()
            opt_e.step()
            if cfg.is_ratio_normalize:
                opt_eta.zero_grad()
                (loss_eta_v + loss_eta_e).backward()
                opt_eta.step()

            # 3. behaviour policy π_D by maximum likelihood (info_proj only, as official)
            bc_loss = torch.zeros(())
            if cfg.policy_extract_mode == "info_proj":
                bc_loss = -self.data_policy.log_prob_pre_tanh(s, _atanh(act)).mean()
                opt_dp.zero_grad()
                bc_loss.backward()
                opt_dp.step()

            # 4. policy extraction after the warm-up
            pi_loss = torch.zeros(())
            if step >= warmup:
                mean, log_std = self.policy.distribution_params(s)
                std = log_std.exp()
                u = mean + std * torch.randn(mean.shape, generator=gen)
                a_pi = torch.tanh(u)
                log_pu = torch.distributions.Normal(mean, std).log_prob(u).sum(-1)
                log_pa = log_pu - torch.log(1 - a_pi.pow(2) + _EPS).sum(-1)
                entropy = -log_pa.mean()
                if cfg.policy_extract_mode == "info_proj":
                    log_we = fns.log_f_prime_inv((self.e(s, a_pi, v_s) - self.eta_e.detach()) / a)
                    with torch.no_grad():  # π_D's parameters frozen, gradients through ũ
                        data_dist = self.data_policy.distribution(s)
                    log_pd = data_dist.log_prob(u)
                    kl = log_pu - cfg.zeta * log_pd        # log π − ζ log π_D
                    # official: −E_D[is_optimal · (log w_E − (log π − ζ log π_D))]
                    pi_loss = -(data.optimal_weight[idx] * (log_we - kl)).mean()
                else:
                    log_p = torch.distributions.Normal(mean, std).log_prob(_atanh(act)).sum(-1)
                    pi_loss = -(w_e * log_p).mean()  # weighted BC: −E_D[w̄_E log π(a|s)]
                if cfg.policy_entropy_reg:
                    pi_loss = pi_loss - self.log_ent_coef.detach().exp() * entropy
                opt_pi.zero_grad()
                pi_loss.backward()
                opt_pi.step()
                if cfg.policy_entropy_reg:
                    ent_loss = -self.log_ent_coef * (self.target_entropy - entropy.detach())
                    opt_ent.zero_grad()
                    ent_loss.backward()
                    opt_ent.step()
            hist["v_loss"].append(float(loss_v.detach()))
            hist["e_loss"].append(float(e_loss.detach()))
            hist["ood_loss"].append(float(ood_loss.detach()))
            hist["bc_loss"].append(float(bc_loss.detach()))
            hist["policy_loss"].append(float(pi_loss.detach()))
            hist["mean_w"].append(float(w.detach().mean()))
            hist["eta_v"].append(float(self.eta_v.detach()))
            hist["eta_e"].append(float(self.eta_e.detach()))
        self.fitted = True
        return hist
