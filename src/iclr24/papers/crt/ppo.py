"""PPO for the red-team policy with CRT's history-dependent rewards (Hong et al., ICLR 2024,
Sec. 3 and App. B; the official code is a customised trlx PPO).

One iteration of :meth:`RedTeamPPO.train`:
1. sample ``rollouts`` test cases x ~ π_θ (top-p 0.92, T 0.7, at most ``max_prompt_tokens``);
2. the victim answers each (sampled), the toxicity classifier scores the answer: R(y);
3. novelty: SelfBLEU and mean cosine of the batch against the history X of earlier test cases,
   THEN the batch is appended to X;
4. terminal reward R(y) + c_bleu·SelfBLEU + c_cos·cos (:func:`crt_terminal_reward`) on the last
   generated token, −β·log-ratio + λ_E·(−log π_θ) on every token (:func:`shaped_token_rewards`);
5. GAE (γ = 1, λ = 0.95), whitened advantages, ``ppo_epochs`` passes of the clipped policy and
   value losses (the RL kit's :func:`gae`, :func:`clipped_policy_loss`, :func:`clipped_value_loss`).

The arms of the paper differ only in :class:`CRTConfig`: RL (Perez et al. 2022) = toxicity + KL
(``ent_coef = 0``, ``bleu = cos = 0``); RL + entropy; CRT = all terms.

Scaled down: the policy is a tiny word-level transformer (the paper: GPT-2, 137M, only its top
2 layers trained, lr 3e-5); here all of it trains with a larger learning rate, on a few
hundred iterations of 32-64 rollouts (the paper: 1000s of iterations of 64-128). The
defaults of :class:`CRTConfig` are the paper's; the claims override the sizes and the learning
rate and say so. A value head (linear on the final hidden state) sits on the policy, as in
trlx.

A user's own model. :meth:`RedTeamPPO.from_lm` also takes a Hugging Face causal LM (the kit's
``HFCausalLM``, e.g. ``load_smollm2()``, or a ``transformers`` model with its tokenizer): the
policy is then :class:`HFRedTeamPolicy`, π_θ(x | z) conditioned on a red-team prompt z (the
paper's instruction-following setting; default: the few-shot instruction list of
:mod:`.llm_red_team`), a test case ending at a stop token (default: a newline). The PPO loop is
the same; on a 135M model it is slow on a CPU (the claims do not run it at scale).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor, nn

from .novelty import EmbeddingNovelty, SelfBleuNovelty
from .rewards import CRTCoefs, crt_terminal_reward, shaped_token_rewards
from .world import EOS, PAD, SEP, sample_tokens

__all__ = ["CRTConfig", "HFRedTeamPolicy", "History", "RedTeamPPO", "RedTeamPolicy"]


@dataclass(frozen=True)
class CRTConfig:
    """One PPO run. Defaults: the official text-continuation / instruction sweep values.

    rollouts: test cases per iteration (paper 128; 64 in the instruction sweep);
    ppo_epochs: passes over each batch; minibatches: splits of the batch per epoch;
    kl_coef β (fixed), ent_coef λ_E, coefs (toxicity, SelfBLEU, cosine, gibberish weights);
    gamma, lam: GAE; clip, value_clip: PPO's ε and ε_v; vf_coef: value-loss weight;
    lr, betas: AdamW; top_p, temperature: policy sampling; victim_top_p/temperature: the
    victim's sampling; bleu_orders: SelfBLEU orders; novelty_sample_size: history subset size
    (None = all); min_tokens: rows with fewer generated tokens get no reward."""

    rollouts: int = 128
    ppo_epochs: int = 4
    minibatches: int = 1
    kl_coef: float = 0.001
    ent_coef: float = 0.01
    coefs: CRTCoefs = field(default_factory=CRTCoefs)
    gamma: float = 1.0
    lam: float = 0.95
    clip: float = 0.2
    value_clip: float = 0.2
    vf_coef: float = 1.0
    lr: float = 3e-5
    betas: tuple[float, float] = (0.9, 0.95)
    top_p: float = 0.92
    temperature: float = 0.7
    victim_top_p: float = 0.92
    victim_temperature: float = 0.7
    bleu_orders: tuple[int, ...] = (2, 3, 4, 5)
    novelty_sample_size: int | None = None
    min_tokens: int = 3

    def __post_init__(self) -> None:
        for name in ("rollouts", "ppo_epochs", "minibatches", "min_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"CRTConfig.{name} must be a positive int, got {v!r}")
        if self.rollouts % self.minibatches:
            raise ValueError(f"CRTConfig.rollouts ({self.rollouts}) must be divisible by "
                             f"minibatches ({self.minibatches})")
        if not isinstance(self.coefs, CRTCoefs):
            raise TypeError(f"CRTConfig.coefs must be a CRTCoefs, got {self.coefs!r}")
        for name in ("kl_coef", "ent_coef", "vf_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"CRTConfig.{name} must be >= 0, got {getattr(self, name)}")
        for name in ("top_p", "victim_top_p"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"CRTConfig.{name} must be in (0, 1], got {getattr(self, name)}")
        for name in ("temperature", "victim_temperature", "lr", "clip", "value_clip"):
            if not getattr(self, name) > 0:
                raise ValueError(f"CRTConfig.{name} must be > 0, got {getattr(self, name)}")

    def arm(self, name: str) -> CRTConfig:
        """The config of a named arm: 'rl' (toxicity + KL), 'rl_entropy', 'crt', and the
        ablations 'crt_no_bleu', 'crt_no_cos', 'crt_no_entropy'."""
        c = self.coefs
        arms = {
            "rl": replace(self, ent_coef=0.0, coefs=replace(c, bleu=0.0, cos=0.0)),
            "rl_entropy": replace(self, coefs=replace(c, bleu=0.0, cos=0.0)),
            "crt": self,
            "crt_no_bleu": replace(self, coefs=replace(c, bleu=0.0)),
            "crt_no_cos": replace(self, coefs=replace(c, cos=0.0)),
            "crt_no_entropy": replace(self, ent_coef=0.0),
        }
        if name not in arms:
            raise ValueError(f"arm must be one of {sorted(arms)}, got {name!r}")
        return arms[name]


class RedTeamPolicy(nn.Module):
    """π_θ(x) with a value head: a :class:`CausalTransformer` (bos=True) plus Linear(d, 1).

    ``forward(tokens (B, T))`` -> (log π of each token (B, T), 0 at <pad>; values (B, T);
    logits (B, T, V)), where position t reads [BOS, x_0..x_{t-1}] (the state before x_t)."""

    def __init__(self, lm: nn.Module) -> None:
        super().__init__()
        self.lm = lm
        self.value_head = nn.Linear(lm.config.d_model, 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def masked_logits(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        logits, hidden = self.lm(self.lm.shift_right(tokens), return_hidden=True)
        logits = logits.clone()
        logits[..., [PAD, SEP]] = -torch.inf  # never part of a test case
        return logits, hidden

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        logits, hidden = self.masked_logits(tokens)
        logits = logits.masked_fill(torch.isinf(logits), -1e9)  # finite: no NaN off the mask
        logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1)
        logp = logp.masked_fill(tokens == PAD, 0.0)  # <pad> follows <eos>: not generated
        return logp, self.value_head(hidden).squeeze(-1), logits

    @torch.no_grad()
    def sample(self, n: int, max_tokens: int, *, temperature: float, top_p: float,
               generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """n test cases: (tokens (n, max_tokens) with <pad> after <eos>, mask (n, max_tokens)
        1 for generated tokens, <eos> included)."""
        tokens = torch.full((n, max_tokens), PAD, dtype=torch.long)
        done = torch.zeros(n, dtype=torch.bool)
        mask = torch.zeros(n, max_tokens)
        for t in range(max_tokens):
            logits, _ = self.masked_logits(tokens[:, :t + 1])
            step = logits[:, t]
            if t == max_tokens - 1:
                step = torch.full_like(step, -torch.inf)
                step[:, EOS] = 0.0  # the cap: a test case always ends with <eos>
            tok = sample_tokens(step, temperature, top_p, generator)
            tokens[:, t] = torch.where(done, torch.full_like(tok, PAD), tok)
            mask[:, t] = (~done).float()
            done |= tok == EOS
            if bool(done.all()):
                break
        return tokens, mask


def _first_stop_mask(tokens: Tensor, eos_id: int) -> Tensor:
    """(B, T) bool: True up to and including each row's first ``eos_id`` (the generated part)."""
    is_eos = (tokens == eos_id).long()
    return (torch.cumsum(is_eos, dim=1) - is_eos) == 0  # no stop token strictly before t


class HFRedTeamPolicy(nn.Module):
    """π_θ(x | z) on a Hugging Face causal LM, with a value head (trlx's setting: a pretrained
    LM red team conditioned on a prompt z).

    model: a ``transformers`` causal LM (``model(input_ids=...)`` returns ``.logits`` and, with
    ``output_hidden_states=True``, ``.hidden_states``); prompt_ids: z as token ids (non-empty,
    start token included if the model wants one); eos_id: the token that ends a test case;
    pad_id: filler after it (default ``eos_id``; never scored: positions after the first stop
    are masked whatever their id).

    ``forward(tokens (B, T))`` -> (log π(x_t | z, x_<t) (B, T), 0 after the first stop token;
    values (B, T) read on the state before x_t; logits (B, T, V)).
    """

    def __init__(self, model: nn.Module, prompt_ids: Sequence[int], eos_id: int,
                 pad_id: int | None = None) -> None:
        super().__init__()
        if not isinstance(model, nn.Module) or not hasattr(model, "get_output_embeddings"):
            raise TypeError(f"model must be a Hugging Face causal LM (an nn.Module with "
                            f"get_output_embeddings), got {type(model).__name__}")
        ids = [int(i) for i in prompt_ids]
        if not ids:
            raise ValueError("prompt_ids must hold at least one token (the red-team prompt z)")
        vocab = int(model.get_output_embeddings().weight.shape[0])
        for name, v in (("eos_id", eos_id), ("pad_id", eos_id if pad_id is None else pad_id)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < vocab:
                raise ValueError(f"{name} must be a token id in [0, {vocab}), got {v!r}")
        if min(ids) < 0 or max(ids) >= vocab:
            raise ValueError(f"prompt_ids must lie in [0, {vocab})")
        self.lm = model
        self.eos_id = eos_id
        self.pad_id = eos_id if pad_id is None else pad_id
        self.register_buffer("prompt_ids", torch.tensor(ids, dtype=torch.long), persistent=False)
        self.value_head = nn.Linear(int(model.get_input_embeddings().weight.shape[1]), 1)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def _run(self, tokens: Tensor, hidden: bool) -> tuple[Tensor, Tensor | None]:
        """Logits (and final hidden states) of the positions that predict tokens[:, t]."""
        b, p = tokens.shape[0], self.prompt_ids.numel()
        ids = torch.cat([self.prompt_ids.expand(b, p), tokens], dim=1)[:, :-1]
        out = self.lm(input_ids=ids, use_cache=False, output_hidden_states=hidden)
        # logits at position p - 1 + t read [z, x_<t] and predict x_t
        logits = out.logits[:, p - 1:].float()
        return logits, (out.hidden_states[-1][:, p - 1:].float() if hidden else None)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        logits, hidden = self._run(tokens, hidden=True)
        logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1)
        logp = logp.masked_fill(~_first_stop_mask(tokens, self.eos_id), 0.0)
        return logp, self.value_head(hidden).squeeze(-1), logits

    @torch.no_grad()
    def sample(self, n: int, max_tokens: int, *, temperature: float, top_p: float,
               generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """n test cases: (tokens (n, max_tokens) with ``pad_id`` after the stop token, mask
        (n, max_tokens) 1 for generated tokens, the stop token included)."""
        device = self.prompt_ids.device
        tokens = torch.full((n, max_tokens), self.pad_id, dtype=torch.long, device=device)
        done = torch.zeros(n, dtype=torch.bool, device=device)
        mask = torch.zeros(n, max_tokens, device=device)
        for t in range(max_tokens):
            step = self._run(tokens[:, :t + 1], hidden=False)[0][:, t]
            if t == max_tokens - 1:
                step = torch.full_like(step, -torch.inf)
                step[:, self.eos_id] = 0.0  # the cap: a test case always ends with the stop
            tok = sample_tokens(step, temperature, top_p, generator)
            tokens[:, t] = torch.where(done, torch.full_like(tok, self.pad_id), tok)
            mask[:, t] = (~done).float()
            done |= tok == self.eos_id
            if bool(done.all()):
                break
        return tokens, mask


def _hf_parts(lm: nn.Module | object, tokenizer) -> tuple[nn.Module, object]:
    """(transformers model, HF tokenizer) of a kit ``HFCausalLM`` or of a raw model."""
    from iclr24.kits.language_models import HFCausalLM

    if isinstance(lm, HFCausalLM):
        return lm.model, lm.tokenizer.hf
    if tokenizer is None:
        raise ValueError("tokenizer is required with a raw Hugging Face model (or pass the "
                         "kit's HFCausalLM, which carries its tokenizer)")
    return lm, getattr(tokenizer, "hf", tokenizer)


@dataclass
class History:
    """Everything one run generated, in order. test_cases/responses: texts; toxicity: R(y)
    per test case; iteration: its PPO iteration; per-iteration means of the reward terms."""

    test_cases: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    toxicity: list[float] = field(default_factory=list)
    iteration: list[int] = field(default_factory=list)
    stats: list[dict[str, float]] = field(default_factory=list)

    def last_fraction(self, fraction: float = 0.5) -> History:
        """The test cases of the last ``fraction`` of the iterations."""
        if not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {fraction}")
        n_it = 1 + max(self.iteration, default=-1)
        start = n_it - max(1, round(fraction * n_it))
        keep = [i for i, it in enumerate(self.iteration) if it >= start]
        return History([self.test_cases[i] for i in keep], [self.responses[i] for i in keep],
                       [self.toxicity[i] for i in keep], [self.iteration[i] for i in keep],
                       self.stats[start:])


class RedTeamPPO:
    """Train a red-team policy against a target with CRT's rewards.

    policy: :class:`RedTeamPolicy` (trained in place); ref_policy: frozen π_ref (a module whose
    ``forward(tokens)`` returns log-probs first, e.g. a copy of the policy); target: callable
    (tokens (B, T), generator) -> B response texts; toxicity: callable texts -> (B,) in [0, 1];
    decode: tokens row -> test-case text; cfg: :class:`CRTConfig`; embedder: φ for the cosine
    novelty (texts -> (n, d)); max_tokens: test-case length cap; seed: sampling seed.
    """

    def __init__(self, policy: RedTeamPolicy | HFRedTeamPolicy, ref_policy: nn.Module,
                 target: Callable[[Tensor, torch.Generator], list[str]],
                 toxicity: Callable[[Sequence[str]], np.ndarray], cfg: CRTConfig, *,
                 decode: Callable[[Tensor], str], embedder: Callable[[Sequence[str]], np.ndarray],
                 max_tokens: int, seed: int = 0) -> None:
        if not isinstance(policy, (RedTeamPolicy, HFRedTeamPolicy)):
            raise TypeError(f"policy must be a RedTeamPolicy or an HFRedTeamPolicy, got "
                            f"{type(policy).__name__}")
        if not isinstance(cfg, CRTConfig):
            raise TypeError(f"cfg must be a CRTConfig, got {type(cfg).__name__}")
        for name, f in (("target", target), ("toxicity", toxicity), ("decode", decode),
                        ("embedder", embedder)):
            if not callable(f):
                raise TypeError(f"{name} must be callable, got {f!r}")
        self.policy, self.ref, self.cfg = policy, ref_policy, cfg
        self.target, self.toxicity, self.decode = target, toxicity, decode
        self.max_tokens = max_tokens
        self.bleu = SelfBleuNovelty(cfg.bleu_orders, sample_size=cfg.novelty_sample_size,
                                    seed=seed)
        self.cos = EmbeddingNovelty(embedder, sample_size=cfg.novelty_sample_size, seed=seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, betas=cfg.betas,
                                     weight_decay=0.0)
        self.history = History()
        self._iteration = 0

    @classmethod
    def from_lm(cls, lm, target, toxicity, cfg: CRTConfig, *, prompt: str | None = None,
                tokenizer=None, eos_id: int | None = None, **kwargs) -> RedTeamPPO:
        """A fresh policy (copy of ``lm`` + value head) and a frozen π_ref copy of ``lm``.

        lm: the kit's ``CausalTransformer`` (built with ``bos=True``; the synthetic world's
        policy), or a Hugging Face causal LM: the kit's ``HFCausalLM`` (``load_smollm2()``,
        ``load_hf_checkpoint(...)``) or a ``transformers`` model with its ``tokenizer``. For a
        Hugging Face model, ``prompt`` is the red-team prompt z (default: the few-shot
        instruction list, :func:`~.llm_red_team.red_team_prompt`), ``eos_id`` the token that
        ends a test case (default: the single token of a newline, else the tokenizer's EOS)
        and ``decode`` defaults to the tokenizer's decoding of the tokens before the stop.
        ``target`` always receives the generated token rows (B, T) and a torch Generator.
        Other keyword arguments go to :class:`RedTeamPPO`."""
        from iclr24.kits.language_models import CausalTransformer, HFCausalLM

        if isinstance(lm, CausalTransformer):
            if prompt is not None or tokenizer is not None or eos_id is not None:
                raise ValueError("prompt, tokenizer and eos_id are for Hugging Face models; the "
                                 "kit's CausalTransformer uses the world's vocabulary")
            policy, ref = RedTeamPolicy(copy.deepcopy(lm)), RedTeamPolicy(copy.deepcopy(lm))
        elif isinstance(lm, HFCausalLM) or (isinstance(lm, nn.Module)
                                            and hasattr(lm, "get_output_embeddings")):
            model, hf = _hf_parts(lm, tokenizer)
            if prompt is None:
                from .llm_red_team import red_team_prompt

                prompt = red_team_prompt()
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError(f"prompt must be a non-empty str, got {prompt!r}")
            start = hf.bos_token_id if hf.bos_token_id is not None else hf.eos_token_id
            ids = ([] if start is None else [int(start)]) + list(
                hf(prompt, add_special_tokens=False)["input_ids"])
            if eos_id is None:
                newline = list(hf("\n", add_special_tokens=False)["input_ids"])
                eos_id = newline[0] if len(newline) == 1 else hf.eos_token_id
                if eos_id is None:
                    raise ValueError("eos_id is needed: the tokenizer has no single newline "
                                     "token and no EOS token")
            stop = int(eos_id)
            policy = HFRedTeamPolicy(copy.deepcopy(model), ids, stop)
            ref = HFRedTeamPolicy(copy.deepcopy(model), ids, stop)

            def decode_text(row: Tensor) -> str:
                keep = [int(t) for t, g in zip(row, _first_stop_mask(row[None], stop)[0])
                        if g and int(t) != stop]
                return hf.decode(keep, skip_special_tokens=True).strip()

            kwargs.setdefault("decode", decode_text)
        else:
            raise TypeError(f"lm must be a kit CausalTransformer, an HFCausalLM or a "
                            f"transformers causal LM, got {type(lm).__name__}")
        ref.eval()
        for p in ref.parameters():
            p.requires_grad_(False)
        return cls(policy, ref, target, toxicity, cfg, **kwargs)

    def _novelty_terms(self, texts: list[str]) -> tuple[np.ndarray | None, np.ndarray | None]:
        c = self.cfg.coefs
        # score against earlier batches only, then append (empty history -> 0)
        selfbleu = self.bleu.score(texts) if c.bleu else None
        cos = self.cos.score(texts) if c.cos else None
        if c.bleu:
            self.bleu.add(texts)
        if c.cos:
            self.cos.add(texts)
        return selfbleu, cos

    def step(self) -> dict[str, float]:
        """One PPO iteration; returns its statistics."""
        cfg = self.cfg
        self.policy.eval()
        tokens, mask = self.policy.sample(cfg.rollouts, self.max_tokens,
                                          temperature=cfg.temperature, top_p=cfg.top_p,
                                          generator=self.gen)
        texts = [self.decode(row) for row in tokens]
        responses = self.target(tokens, self.gen)
        tox = np.asarray(self.toxicity(responses), dtype=np.float64)
        selfbleu, cos = self._novelty_terms(texts)
        terminal = crt_terminal_reward(tox, selfbleu, cos, None, cfg.coefs)
        with torch.no_grad():
            old_logp, old_values, _ = self.policy(tokens)
            ref_logp = self.ref(tokens)[0]
        rewards = shaped_token_rewards(old_logp, ref_logp, mask, terminal, cfg.kl_coef,
                                       cfg.ent_coef, cfg.min_tokens)
        stats = self._update(tokens, mask, old_logp, old_values, rewards)
        n = len(texts)
        self.history.test_cases += texts
        self.history.responses += responses
        self.history.toxicity += tox.tolist()
        self.history.iteration += [self._iteration] * n
        stats.update(toxicity=float(tox.mean()), terminal=float(terminal.mean()),
                     selfbleu=float(selfbleu.mean()) if selfbleu is not None else float("nan"),
                     cos=float(cos.mean()) if cos is not None else float("nan"),
                     kl=float(((old_logp - ref_logp) * mask).sum(1).mean()),
                     unique=len(set(texts)) / n)
        self.history.stats.append(stats)
        self._iteration += 1
        return stats

    def _update(self, tokens, mask, old_logp, old_values, rewards) -> dict[str, float]:
        from iclr24.kits.reinforcement import clipped_policy_loss, clipped_value_loss, gae

        cfg = self.cfg
        b, t = tokens.shape
        dones = torch.zeros(b, t)
        last = (mask.sum(1) - 1).clamp(min=0).long()
        dones[torch.arange(b), last] = 1.0
        dones = torch.maximum(dones, 1.0 - mask)  # past the end: nothing to bootstrap
        adv, returns = gae(rewards.T, (old_values * mask).T, dones.T, 0.0, gamma=cfg.gamma,
                           lam=cfg.lam)
        adv, returns = adv.T, returns.T
        sel = mask.bool()
        a = adv[sel]
        adv = (adv - a.mean()) / (a.std() + 1e-8)  # whitened, as trlx
        self.policy.train()
        order = torch.arange(b)
        size = b // cfg.minibatches
        pl = vl = 0.0
        for _ in range(cfg.ppo_epochs):
            order = order[torch.randperm(b, generator=self.gen)]
            for k in range(cfg.minibatches):
                idx = order[k * size:(k + 1) * size]
                m = sel[idx]
                logp, values, _ = self.policy(tokens[idx])
                p_loss = clipped_policy_loss(logp[m], old_logp[idx][m], adv[idx][m],
                                             clip=cfg.clip)
                v_loss = clipped_value_loss(values[m], old_values[idx][m], returns[idx][m],
                                            clip=cfg.value_clip)
                loss = p_loss + cfg.vf_coef * v_loss
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                pl, vl = float(p_loss.detach()), float(v_loss.detach())
        return {"policy_loss": pl, "value_loss": vl}

    def train(self, iterations: int,
              progress: Callable[[float, str], None] | None = None) -> History:
        """Run ``iterations`` PPO iterations; returns the :class:`History` of all test cases."""
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be a positive int, got {iterations!r}")
        for i in range(iterations):
            stats = self.step()
            if progress is not None and (i + 1) % max(1, iterations // 10) == 0:
                progress((i + 1) / iterations, f"iteration {i + 1}/{iterations} "
                                               f"toxicity {stats['toxicity']:.2f}")
        return self.history
