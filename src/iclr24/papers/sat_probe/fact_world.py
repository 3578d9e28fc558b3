"""A synthetic factual-recall world for SAT Probe (Yuksekgonul et al., "Attention Satisfies: A
Constraint-Satisfaction Lens on Factual Errors of Language Models", ICLR 2024; arXiv 2309.15098).

The paper queries Llama-2 about real entities (basketball players -> birth year, football teams
-> founding year, ...) whose popularity varies; rare entities are recalled badly. That data
(pickles in microsoft/mechanistic-error-probe, research licence) and Llama-2 7B-70B are out of
reach here, so this module builds a world with the same mechanism under our control:

- ``n_entities`` unique pronounceable names (2-3 syllables from :data:`SYLLABLES`), each with a
  birth year in 1900-1999;
- Zipfian training frequency: entity of rank r appears ``max(1, round(K * r**-zipf_a))`` times
  (K chosen so the rarest entity appears once; capped at ``max_count``), so many entities are
  seen only 1-2 times and are recalled badly. Popularity = log(1 + training count): computed from
  the training data, never from test outcomes (the spec's pitfall);
- each occurrence is one of six declarative templates (:data:`TEMPLATES`); for a fraction
  ``qa_fraction`` of entities one occurrence is the query format itself (:data:`QUERY_TEMPLATE`,
  the paper's User/Assistant basketball-player template with "person");
- every entity is then queried (QA-seen and QA-unseen alike) with :data:`QUERY_TEMPLATE`
  truncated before the answer; the constraint is the name, the control span the word "year".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CONTROL_WORD",
    "QUERY_TEMPLATE",
    "SYLLABLES",
    "TEMPLATES",
    "FactModelConfig",
    "FactWorld",
    "make_fact_world",
    "train_fact_model",
]

SYLLABLES = ("ba", "ko", "ri", "ta", "mel", "do", "su", "vin", "la", "ge", "pa", "nor", "ti",
             "zu", "ham", "re", "lo", "fi", "kan", "de", "mo", "sil", "ve", "ru", "bo", "xan",
             "ne", "py", "cor", "el", "wa", "jo", "quin", "ha", "lu", "tor", "mi", "sa", "gul",
             "fen")

TEMPLATES = (
    "{name} was born in {year}.",
    "Born in {year}, {name} grew up in a small town.",
    "The person {name} was born in {year}.",
    "{name}, born in {year}, became well known.",
    "In {year} the person {name} was born.",
    "{name} (born {year}) is a person.",
)

# The paper's query (basketball players): "User: Tell me the year the basketball player {name}
# was born in.\nAssistant: The player was born in"; the answer follows as " {year}."
QUERY_TEMPLATE = ("User: Tell me the year the person {name} was born in.\n"
                  "Assistant: The person was born in")
CONTROL_WORD = "year"


@dataclass(frozen=True)
class FactWorld:
    """Entities, their facts and training counts, the training corpus and the queries.

    names, years (int), counts (training occurrences), popularity = log(1 + counts), qa_seen
    (whether a query-format sentence of the entity is in the corpus): arrays of length n;
    corpus: the training text (one sentence per line, shuffled); prompts: one query per entity
    (ends before the answer); answers: the years as strings.
    """

    names: tuple[str, ...]
    years: np.ndarray
    counts: np.ndarray
    popularity: np.ndarray
    qa_seen: np.ndarray
    corpus: str
    prompts: tuple[str, ...]
    answers: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.names)


def _unique_names(n: int, rng: np.random.Generator) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    capacity = len(SYLLABLES) ** 2 + len(SYLLABLES) ** 3
    if n > capacity // 4:
        raise ValueError(f"n_entities must be at most {capacity // 4} for unique names, got {n}")
    while len(names) < n:
        k = int(rng.integers(2, 4))
        name = "".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), k))
        name = name.capitalize()
        if name not in seen:
            seen.add(name)
            names.append(name)
    return names


def make_fact_world(n_entities: int, zipf_a: float = 1.1, seed: int = 0, *,
                    qa_fraction: float = 0.3, max_count: int = 60) -> FactWorld:
    """Build the world (deterministic in ``seed``).

    n_entities: number of entities (>= 10); zipf_a: exponent of count ∝ rank^(−a) (> 0);
    qa_fraction: share of entities with one query-format training sentence, in [0, 1];
    max_count: cap on the most frequent entities' counts (>= 1).
    """
    if isinstance(n_entities, bool) or not isinstance(n_entities, int) or n_entities < 10:
        raise ValueError(f"n_entities must be an int >= 10, got {n_entities!r}")
    if not (isinstance(zipf_a, (int, float)) and zipf_a > 0):
        raise ValueError(f"zipf_a must be a number > 0, got {zipf_a!r}")
    if not (isinstance(qa_fraction, (int, float)) and 0 <= qa_fraction <= 1):
        raise ValueError(f"qa_fraction must be in [0, 1], got {qa_fraction!r}")
    if isinstance(max_count, bool) or not isinstance(max_count, int) or max_count < 1:
        raise ValueError(f"max_count must be an int >= 1, got {max_count!r}")
    rng = np.random.default_rng(seed)
    names = _unique_names(n_entities, rng)
    years = rng.integers(1900, 2000, n_entities)
    rank = np.arange(1, n_entities + 1, dtype=np.float64)
    k = float(n_entities) ** zipf_a  # the rarest entity (rank n) appears once
    counts = np.minimum(np.maximum(1, np.round(k * rank ** -zipf_a)), max_count).astype(int)
    qa_seen = rng.random(n_entities) < qa_fraction
    lines: list[str] = []
    for i, (name, year) in enumerate(zip(names, years)):
        first = 0
        if qa_seen[i]:
            lines.append(QUERY_TEMPLATE.format(name=name) + f" {year}.")
            first = 1
        for t in rng.integers(0, len(TEMPLATES), counts[i] - first):
            lines.append(TEMPLATES[int(t)].format(name=name, year=year))
    order = rng.permutation(len(lines))
    corpus = "\n".join(lines[j] for j in order) + "\n"
    return FactWorld(names=tuple(names), years=years, counts=counts,
                     popularity=np.log1p(counts.astype(np.float64)), qa_seen=qa_seen,
                     corpus=corpus,
                     prompts=tuple(QUERY_TEMPLATE.format(name=n) for n in names),
                     answers=tuple(str(int(y)) for y in years))


@dataclass(frozen=True)
class FactModelConfig:
    """The tiny recall model and its training (defaults: the ``small`` scale of the claims).

    The spec's 4 layers × 4 heads at d = 128 on 2,000 entities does not train in our CPU
    budget; d = 64 on 400 entities does (≈ 35% recall, rising with popularity). The BPE
    vocabulary is large enough that most names are single tokens, so recall is a lookup the
    last prompt token can do by attending to the name.
    """

    vocab_size: int = 800
    d_model: int = 64
    n_layers: int = 4
    n_heads: int = 4
    context_length: int = 64
    steps: int = 500
    batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 50


def train_fact_model(world: FactWorld, config: FactModelConfig = FactModelConfig(),
                     seed: int = 0, progress=None):
    """A BPE tokenizer learnt on the world's corpus and a tiny causal transformer trained on
    it (the kit's ``train_causal_lm``): returns the kit's ``TransformerLM``."""
    import torch

    from iclr24.kits.language_models import (
        CausalTransformer,
        TrainConfig,
        TransformerConfig,
        TransformerLM,
        train_causal_lm,
        train_subword_tokenizer,
    )

    if not isinstance(world, FactWorld):
        raise TypeError(f"world must be a FactWorld, got {type(world).__name__}")
    if not isinstance(config, FactModelConfig):
        raise TypeError(f"config must be a FactModelConfig, got {type(config).__name__}")
    tokenizer = train_subword_tokenizer(world.corpus.splitlines(), config.vocab_size, "bpe")
    ids = np.asarray(tokenizer.encode(world.corpus), dtype=np.int64)
    torch.manual_seed(seed)
    model = CausalTransformer(TransformerConfig(
        vocab_size=tokenizer.vocab_size, d_model=config.d_model, n_layers=config.n_layers,
        n_heads=config.n_heads, context_length=config.context_length))
    train_causal_lm(model, ids, TrainConfig(
        steps=config.steps, batch_size=config.batch_size, seq_len=config.context_length,
        lr=config.lr, warmup_steps=config.warmup_steps, seed=seed), progress=progress)
    return TransformerLM(model, tokenizer)
