"""The laptop-scale FuseLLM experiment: expert sources with their own tokenizers, one target.

The paper fuses Llama-2-7B, OpenLLaMA-7B and MPT-7B (three tokenizers, three training mixes)
into Llama-2-7B on MiniPile (Sec. 4). Here (spec "Laptop-scale reproduction"):

- sources, each an expert on one domain of :mod:`.synthetic_world` (80% of its training
  texts) with its own tokenizer: arithmetic - bytes (256, "character level"); grammar -
  byte-level BPE (300); code - byte-level Unigram (512);
- the target: byte-level BPE (384) trained on the even mixture, a kit ``CausalTransformer``
  briefly pretrained on the even mixture (the "Llama-2 base"), also a source of the fusion;
- continual training on a fresh even-mixture fusion corpus, with the same steps, batches and
  learning rate in every arm: CLM only (λ = 1, the paper's control), FuseLLM-MinCE and
  FuseLLM-AvgCE (λ = 0.9, k = 10, soft MinED alignment), optionally hard alignment;
- held-out bits per character per domain (tokenizer-independent) and greedy accuracy on
  arithmetic questions.

What is scaled down: models of 1-3 layers and d = 32-128 trained for a few hundred steps,
corpora of hundreds of texts; the measured gain is distillation of expert sources into a
small target under a small continual-training budget - the paper's mechanism, not its numbers
(7B fusion on MiniPile is out of reach).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .alignment import SparseDist
from .corpus_fusion import FusedCorpus, align_records, fuse_corpus
from .records import TopKRecord, record_topk
from .synthetic_world import DOMAINS, domain_texts, mixture_texts, split_arith
from .training import FuseConfig, FuseLLMTrainer, bits_per_char
from .vocabulary import TokenVocab, build_vocab_mapping

__all__ = ["FusionInputs", "Model", "WorldConfig", "arith_accuracy", "continue_target",
           "evaluate", "fusion_inputs", "new_model", "test_sets", "train_sources",
           "train_target_base"]

SOURCE_TOKENIZERS = {"arith": ("bytes", 256), "grammar": ("bpe", 300), "code": ("unigram", 512)}
TARGET_TOKENIZER = ("bpe", 384)


@dataclass(frozen=True)
class WorldConfig:
    """Sizes of one run of the synthetic FuseLLM experiment."""

    domains: tuple[str, ...] = DOMAINS
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 4
    context_length: int = 64
    own_share: float = 0.8
    n_source_train: int = 2000
    source_steps: int = 300
    source_lr: float = 3e-3
    n_base_train: int = 1000
    base_steps: int = 60
    n_fusion: int = 600
    fuse_steps: int = 150
    fuse_lr: float = 1e-3
    batch_size: int = 32
    n_test: int = 100
    k: int = 10


@dataclass
class Model:
    """A trained tiny model with its tokenizer (and the kit tokenizer object for decoding)."""

    name: str
    net: torch.nn.Module
    tokenizer: object
    vocab: TokenVocab


def _tokenizer(kind: str, size: int, texts: Sequence[str]):
    from iclr24.kits.language_models import ByteTokenizer, train_subword_tokenizer

    if kind == "bytes":
        return ByteTokenizer()
    return train_subword_tokenizer(texts, vocab_size=size, kind=kind)


def new_model(cfg: WorldConfig, vocab_size: int, seed: int) -> torch.nn.Module:
    from iclr24.kits.language_models import CausalTransformer, TransformerConfig

    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(vocab_size=vocab_size, d_model=cfg.d_model,
                                               n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                                               context_length=cfg.context_length))


def _clm(cfg: WorldConfig, steps: int, lr: float, seed: int) -> FuseConfig:
    return FuseConfig(lam=1.0, steps=steps, batch_size=cfg.batch_size, lr=lr,
                      warmup_ratio=0.05, min_lr_ratio=0.1, seed=seed)


def train_sources(cfg: WorldConfig, seed: int) -> list[Model]:
    """One expert source per domain: ``own_share`` of its texts from its domain."""
    rng = np.random.default_rng(seed)
    sources = []
    for s, dom in enumerate(cfg.domains):
        rest = [d for d in cfg.domains if d != dom]
        weights = {dom: cfg.own_share, **{d: (1 - cfg.own_share) / len(rest) for d in rest}}
        texts = mixture_texts(weights, cfg.n_source_train, rng)
        kind, size = SOURCE_TOKENIZERS[dom]
        tok = _tokenizer(kind, size, texts)
        vocab = TokenVocab.of(tok)
        net = new_model(cfg, vocab.size, seed * 100 + s)
        FuseLLMTrainer(net, vocab, _clm(cfg, cfg.source_steps, cfg.source_lr,
                                        seed * 100 + s)).fit(texts)
        sources.append(Model(f"{dom}-expert ({kind} {vocab.size})", net, tok, vocab))
    return sources


def train_target_base(cfg: WorldConfig, seed: int) -> Model:
    """The target's tokenizer (BPE 384) and its briefly pretrained base model."""
    rng = np.random.default_rng(seed + 7)
    texts = mixture_texts({d: 1.0 for d in cfg.domains}, cfg.n_base_train, rng)
    kind, size = TARGET_TOKENIZER
    tok = _tokenizer(kind, size, texts)
    vocab = TokenVocab.of(tok)
    net = new_model(cfg, vocab.size, seed * 100 + 99)
    FuseLLMTrainer(net, vocab, _clm(cfg, cfg.base_steps, cfg.source_lr, seed + 7)).fit(texts)
    return Model(f"target base ({kind} {vocab.size})", net, tok, vocab)


@dataclass
class FusionInputs:
    """Everything the continual-training arms share: the corpus, records and fused targets."""

    texts: list[str]
    target_records: list[TopKRecord]
    source_records: list[list[TopKRecord]]
    aligned: dict[str, list[list[SparseDist]]]  # "soft"/"hard" -> per source
    fused: dict[str, FusedCorpus]  # "min_ce_soft", "avg_ce_soft", "min_ce_hard"


def fusion_inputs(cfg: WorldConfig, target: Model, sources: Sequence[Model], seed: int,
                  alignments: Sequence[str] = ("soft",),
                  methods: Sequence[str] = ("min_ce", "avg_ce"),
                  texts: Sequence[str] | None = None) -> FusionInputs:
    """Records of the target base and every source on the fusion corpus, aligned ("soft"
    MinED and/or "hard" exact match) and fused per method."""
    if texts is None:
        texts = mixture_texts({d: 1.0 for d in cfg.domains}, cfg.n_fusion,
                              np.random.default_rng(seed + 11))
    texts = list(texts)
    tgt_rec = record_topk(target.net, target.vocab, texts, cfg.k)
    src_recs = [record_topk(s.net, s.vocab, texts, cfg.k) for s in sources]
    aligned: dict[str, list[list[SparseDist]]] = {}
    for how in alignments:
        if how not in ("soft", "hard"):
            raise ValueError(f"alignments must be 'soft' or 'hard', got {how!r}")
        per_source = []
        for s, recs in zip(sources, src_recs):
            mapping = build_vocab_mapping(s.vocab, target.vocab) if how == "soft" else None
            per_source.append(align_records(recs, s.vocab, target.vocab, tgt_rec, mapping))
        aligned[how] = per_source
    fused = {f"{m}_{how}": fuse_corpus(tgt_rec, aligned[how], src_recs, method=m)
             for how in alignments for m in methods}
    return FusionInputs(texts, tgt_rec, src_recs, aligned, fused)


def continue_target(cfg: WorldConfig, base: Model, texts: Sequence[str],
                    fused: Sequence[SparseDist] | None, lam: float, seed: int,
                    progress: Callable[..., None] | None = None) -> Model:
    """A copy of the base continued on ``texts`` (λ = 1: CLM only; the fused targets are
    ignored there, so every arm sees the same batches in the same order)."""
    net = new_model(cfg, base.vocab.size, 0)
    net.load_state_dict(base.net.state_dict())
    fc = FuseConfig(lam=lam, steps=cfg.fuse_steps, batch_size=cfg.batch_size, lr=cfg.fuse_lr,
                    warmup_ratio=0.05, min_lr_ratio=0.1, seed=seed)
    FuseLLMTrainer(net, base.vocab, fc).fit(texts, None if lam == 1.0 else fused, progress)
    return Model(base.name, net, base.tokenizer, base.vocab)


def arith_accuracy(model: Model, questions: Sequence[str], max_new_tokens: int = 6) -> float:
    """Greedy exact-match accuracy on arithmetic facts: prompt ``"a+b="``, decode greedily
    until a token holding ``"."``, compare the digits before it with the true answer."""
    net, tok = model.net, model.tokenizer
    correct = 0
    with torch.no_grad():
        for text in questions:
            prompt, answer = split_arith(text)
            ids = model.vocab.encode(prompt)
            out: list[int] = []
            for _ in range(max_new_tokens):
                if len(ids) + len(out) + 1 > net.config.context_length:
                    break
                x = torch.tensor([[net.config.bos_id] + ids + out], dtype=torch.long)
                nxt = int(net(x)[0, -1].argmax())  # the distribution after the last token
                out.append(nxt)
                if "." in model.vocab.id_to_token[nxt]:
                    break
            got = tok.decode(out).decode("utf-8", errors="replace")
            correct += got.split(".")[0] == answer and "." in got
    return correct / max(1, len(questions))


def test_sets(cfg: WorldConfig, seed: int) -> dict[str, list[str]]:
    """Held-out texts per domain (their own generator stream)."""
    rng = np.random.default_rng(seed + 1_000)
    return {d: domain_texts(d, cfg.n_test, rng) for d in cfg.domains}


def evaluate(model: Model, tests: dict[str, list[str]]) -> dict[str, float]:
    """BPC per domain, their mean, and greedy arithmetic accuracy (when "arith" is tested)."""
    out = {f"bpc_{d}": bits_per_char(model.net, model.vocab, texts) for d, texts in tests.items()}
    out["bpc_mean"] = float(np.mean([out[f"bpc_{d}"] for d in tests]))
    if "arith" in tests:
        out["arith_acc"] = arith_accuracy(model, tests["arith"])
    return out
