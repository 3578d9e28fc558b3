"""The laptop-scale version of the paper's protocol: pretrain, then fine-tune with MLE vs EMO.

Paper (Sec. 5.1, ``run_lm_gpt2.sh``): a pretrained GPT-2 is fine-tuned for one epoch on a
domain's training set with MLE, TaiLr, MixCE or EMO (same seed, same data order) and scored by
MAUVE of ancestral samples. Here (spec "Laptop-scale reproduction", experiment 1):

1. draw a clustered Markov language A (pre-training domain) and B = A with 30 % of its cluster
   rows resampled (fine-tuning domain), see :mod:`.synthetic_language`;
2. pretrain the kit's tiny causal transformer with MLE on a stream from A (the kit trainer);
3. take the cost embedding = frozen, normalised copy of the pretrained output head (as the
   official fine-tuning code copies ``lm_head.weight`` after loading);
4. for each replicate seed: draw fine-tuning sequences from B and, from the *same* pretrained
   weights and with the *same* data order, fine-tune once per objective; score each with
   :func:`~.evaluation.exact_kl_metrics` on B with common random numbers.

What is scaled down: a 2-layer d = 64 transformer instead of GPT-2; a synthetic language
instead of WikiText & co; exact forward/reverse KL instead of MAUVE; lr 5e-4 instead of 5e-5;
64-token sequences instead of 256-token blocks (so at the paper's optimiser-step count a
quarter of its tokens). The oracle-embedding run (cluster one-hot + N(0, 0.1²) noise as the
cost embedding) is the spec's ablation, not a paper setting. The shuffled-cost run
(``emo_shuffled_cost``: EMO with the rows of the frozen cost embedding permuted across tokens,
so the costs keep their values but no longer say which tokens are alike) is a null arm, not a
paper setting: EMO with its transport cost's meaning switched off.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from iclr24.kits.language_models import (
    CausalTransformer,
    TrainConfig,
    TransformerConfig,
    train_causal_lm,
)

from .demd import cosine_cost_embedding
from .evaluation import exact_kl_metrics
from .finetuning import FinetuneConfig, finetune
from .objectives import make_objective
from .synthetic_language import SyntheticLanguage, make_language

__all__ = [
    "METHODS",
    "ComparisonConfig",
    "ComparisonResult",
    "bootstrap_mean_interval",
    "pretrain_on_language",
    "run_finetuning_comparison",
]

METHODS = ("mle", "emo", "mixce", "tailr")


@dataclass(frozen=True)
class ComparisonConfig:
    """Sizes and hyper-parameters of the fine-tuning comparison (spec defaults at ``small``)."""

    n_clusters: int = 32
    n_synonyms: int = 8
    domain_shift: float = 0.3          # fraction of A's cluster rows resampled for B
    length: int = 64                   # tokens per sequence (token 0 = EOS context)
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    pretrain_sequences: int = 20_000
    pretrain_lr: float = 1e-3
    pretrain_batch_size: int = 32
    finetune_sequences: int = 1_000
    finetune: FinetuneConfig = field(default_factory=FinetuneConfig)
    mixing_ratio: float = 0.5          # η of MixCE / TaiLr
    emo_mode: int = 1
    eval_sequences: int = 512
    n_seeds: int = 5
    baselines: tuple[str, ...] = ("mixce", "tailr")  # beside MLE and EMO at the main budget
    oracle_ablation: bool = True
    shuffled_cost_null: bool = True
    budget_sequences: tuple[int, ...] = ()  # extra MLE/EMO budgets: the first n sequences
    budget_seeds: int | None = None         # the sweep runs on the first k seeds (None: all)

    def __post_init__(self) -> None:
        for name in ("n_clusters", "n_synonyms", "length", "pretrain_sequences",
                     "finetune_sequences", "eval_sequences", "n_seeds"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.length < 2:
            raise ValueError(f"length must be >= 2, got {self.length}")
        if any(not isinstance(e, int) or isinstance(e, bool) or not 1 <= e
               <= self.finetune_sequences for e in self.budget_sequences):
            raise ValueError(f"budget_sequences must hold ints in 1..finetune_sequences "
                             f"({self.finetune_sequences}), got {self.budget_sequences!r}")
        unknown = [b for b in self.baselines if b not in ("mixce", "tailr")]
        if unknown or len(set(self.baselines)) != len(self.baselines):
            raise ValueError(f"baselines must be distinct names among ('mixce', 'tailr'), got "
                             f"{self.baselines!r}")
        if self.budget_seeds is not None and (
                not isinstance(self.budget_seeds, int) or isinstance(self.budget_seeds, bool)
                or not 1 <= self.budget_seeds <= self.n_seeds):
            raise ValueError(f"budget_seeds must be None or an int in 1..n_seeds "
                             f"({self.n_seeds}), got {self.budget_seeds!r}")


@dataclass
class ComparisonResult:
    """Per-replicate metrics: ``rows[r][method] = {"forward_kl", "reverse_kl", ...}``."""

    config: ComparisonConfig
    language_a: SyntheticLanguage
    language_b: SyntheticLanguage
    pretrained: dict[str, float]
    rows: list[dict[str, dict[str, float]]]
    pretrain_final_loss: float
    finetune_losses: dict[str, list[float]]
    cost_synonym_gap: float
    budget_rows: dict[int, list[dict[str, dict[str, float]]]] = field(default_factory=dict)

    def per_seed(self, method: str, metric: str, sequences: int | None = None) -> np.ndarray:
        """Per-replicate values; ``sequences`` picks a budget of the sweep (``None``: the main
        budget ``config.finetune_sequences``, all methods)."""
        rows = self.rows if sequences in (None, self.config.finetune_sequences) \
            else self.budget_rows[sequences]
        return np.array([row[method][metric] for row in rows])

    def steps(self, sequences: int | None = None) -> int:
        """Optimiser steps of a budget: epochs × ceil(sequences / batch_size)."""
        n = self.config.finetune_sequences if sequences is None else sequences
        return self.config.finetune.epochs * -(-n // self.config.finetune.batch_size)


def pretrain_on_language(language: SyntheticLanguage, config: ComparisonConfig, seed: int,
                         progress: Callable[..., None] | None = None
                         ) -> tuple[CausalTransformer, float]:
    """A tiny transformer pretrained with MLE (kit trainer) on a stream from ``language``."""
    model_config = TransformerConfig(vocab_size=language.vocab_size, d_model=config.d_model,
                                     n_layers=config.n_layers, n_heads=config.n_heads,
                                     context_length=config.length, bos=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # deterministic init without touching the caller's RNG
        model = CausalTransformer(model_config)
    rng = np.random.default_rng([seed, 1])
    n_tokens = config.pretrain_sequences * config.length
    stream = language.sample_stream(n_tokens, rng)
    steps = max(1, config.pretrain_sequences // config.pretrain_batch_size)  # one epoch
    history = train_causal_lm(model, stream, TrainConfig(
        steps=steps, batch_size=config.pretrain_batch_size, seq_len=config.length,
        lr=config.pretrain_lr, warmup_steps=min(20, steps // 10), seed=seed), progress=progress)
    return model, float(np.mean(history.losses[-max(1, steps // 20):]))


def _synonym_gap(cost_embedding: torch.Tensor, language: SyntheticLanguage) -> float:
    """Mean cosine cost between tokens of different clusters minus within a cluster (> 0 when
    the pretrained head has learned the synonym structure)."""
    e = cost_embedding.double()
    cost = 1.0 - e @ e.T
    clusters = torch.as_tensor(language.token_clusters)
    same = clusters[:, None] == clusters[None, :]
    off_diag = ~torch.eye(len(clusters), dtype=torch.bool)
    return float(cost[~same].mean() - cost[same & off_diag].mean())


def run_finetuning_comparison(config: ComparisonConfig, seed: int,
                              progress: Callable[..., None] | None = None) -> ComparisonResult:
    """Run the whole protocol (see module docstring) and return per-replicate metrics."""
    report = progress or (lambda *a, **k: None)
    rng = np.random.default_rng([seed, 0])
    lang_a = make_language(config.n_clusters, config.n_synonyms, rng)
    lang_b = lang_a.shifted(config.domain_shift, rng)

    methods = ["mle", "emo", *config.baselines] \
        + (["emo_oracle"] if config.oracle_ablation else []) \
        + (["emo_shuffled_cost"] if config.shuffled_cost_null else [])
    budgets = [n for n in dict.fromkeys(config.budget_sequences)
               if n != config.finetune_sequences]
    n_budget_seeds = config.n_seeds if config.budget_seeds is None else config.budget_seeds
    n_units = 1 + config.n_seeds * len(methods) \
        + n_budget_seeds * 2 * sum(budgets) / config.finetune_sequences
    model, pretrain_loss = pretrain_on_language(
        lang_a, config, seed,
        progress=lambda f, m="": report(f / n_units, f"pretraining: {m}"))
    state = copy.deepcopy(model.state_dict())
    cost_embedding = cosine_cost_embedding(model.head.weight)  # frozen copy after "loading"
    oracle = lang_a.oracle_embedding(torch.Generator().manual_seed(seed)).float()
    objectives = {
        name: make_objective(name, cost_embedding=cost_embedding, mode=config.emo_mode,
                             mixing_ratio=config.mixing_ratio, shift=False)
        for name in METHODS}
    if config.oracle_ablation:
        objectives["emo_oracle"] = make_objective("emo", cost_embedding=oracle,
                                                  mode=config.emo_mode, shift=False)
    if config.shuffled_cost_null:  # the same cost rows, attached to the wrong tokens
        perm = torch.randperm(cost_embedding.shape[0],
                              generator=torch.Generator().manual_seed(seed))
        objectives["emo_shuffled_cost"] = make_objective(
            "emo", cost_embedding=cost_embedding[perm], mode=config.emo_mode, shift=False)

    eval_seed = int(np.random.default_rng([seed, 2]).integers(2**31))
    pretrained = exact_kl_metrics(model, lang_b, n_sequences=config.eval_sequences,
                                  length=config.length, seed=eval_seed)
    rows: list[dict[str, dict[str, float]]] = []
    budget_rows: dict[int, list[dict[str, dict[str, float]]]] = {}
    losses: dict[str, list[float]] = {}
    done = 1
    for r in range(config.n_seeds):
        sub_seed = int(np.random.default_rng([seed, 3, r]).integers(2**31))
        data = lang_b.sample(config.finetune_sequences, config.length,
                             np.random.default_rng([sub_seed, 4]))
        ft_config = dataclasses.replace(config.finetune, seed=sub_seed)
        row: dict[str, dict[str, float]] = {}
        for name in methods:
            model.load_state_dict(state)  # every objective starts from the same checkpoint
            hist = finetune(model, data, objectives[name], ft_config)
            if r == 0:
                losses[name] = hist
            row[name] = exact_kl_metrics(model, lang_b, n_sequences=config.eval_sequences,
                                         length=config.length, seed=sub_seed)
            done += 1
            report(done / n_units, f"seed {r + 1}/{config.n_seeds}: {name} fine-tuned")
        rows.append(row)
        for n_seq in budgets if r < n_budget_seeds else ():  # the sweep: a prefix of the data
            brow: dict[str, dict[str, float]] = {}
            for name in ("mle", "emo"):
                model.load_state_dict(state)
                finetune(model, data[:n_seq], objectives[name], ft_config)
                brow[name] = exact_kl_metrics(model, lang_b, n_sequences=config.eval_sequences,
                                              length=config.length, seed=sub_seed)
                done += n_seq / config.finetune_sequences
                report(done / n_units, f"seed {r + 1}/{config.n_seeds}: {name}, {n_seq} "
                                       f"sequences")
            budget_rows.setdefault(n_seq, []).append(brow)
    model.load_state_dict(state)
    return ComparisonResult(config, lang_a, lang_b, pretrained, rows, pretrain_loss, losses,
                            _synonym_gap(cost_embedding, lang_a), budget_rows)


def bootstrap_mean_interval(values: np.ndarray | list[float], *, confidence: float = 0.95,
                            n_resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (e.g. per-seed differences).

    With very few values (5 seeds) the interval is crude and tends to be too narrow; it is
    reported beside the per-seed win count, which is what the claim's rule reads.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("values must not be empty")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if x.size == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(int(n_resamples), x.size))].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))
