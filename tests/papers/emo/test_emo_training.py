"""Fine-tuning loop, ancestral sampling, exact KL metrics, bootstrap, and determinism."""

import dataclasses

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import CausalTransformer, TransformerConfig, torch_threads
from iclr24.papers.emo import (
    ComparisonConfig,
    FinetuneConfig,
    ancestral_sample,
    bootstrap_mean_interval,
    exact_kl_metrics,
    finetune,
    make_language,
    make_objective,
    predictive_log_probs,
    run_finetuning_comparison,
)


@pytest.fixture(autouse=True)
def _one_thread():
    # tiny models: one intra-op thread is as fast and avoids OpenMP spinning on busy machines
    with torch_threads(1):
        yield


def _model(vocab, seed=0, bos=False, length=16):
    torch.manual_seed(seed)
    return CausalTransformer(TransformerConfig(vocab_size=vocab, d_model=16, n_layers=1,
                                               n_heads=2, context_length=length, bos=bos))


def test_finetune_reduces_loss_and_is_deterministic():
    lang = make_language(3, 2, np.random.default_rng(0))
    data = lang.sample(64, 12, np.random.default_rng(1))
    emb = torch.randn(lang.vocab_size, 4)
    weights = []
    for _ in range(2):
        model = _model(lang.vocab_size)
        obj = make_objective("emo", cost_embedding=emb, shift=False)
        losses = finetune(model, data, obj, FinetuneConfig(epochs=6, batch_size=16, lr=3e-3,
                                                           seed=3))
        weights.append(torch.cat([p.detach().reshape(-1) for p in model.parameters()]))
    assert len(losses) == 24
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    assert torch.equal(weights[0], weights[1])


def test_finetune_works_with_a_bos_model():
    lang = make_language(2, 2, np.random.default_rng(0))
    data = lang.sample(8, 10, np.random.default_rng(1))
    model = _model(lang.vocab_size, bos=True)
    losses = finetune(model, data, make_objective("mle", shift=False),
                      FinetuneConfig(batch_size=4))
    assert len(losses) == 2 and all(np.isfinite(losses))


def test_finetune_bad_input():
    model = _model(5)
    obj = make_objective("mle", shift=False)
    with pytest.raises(TypeError, match="sequences"):
        finetune(model, torch.zeros(3, 4), obj)
    with pytest.raises(ValueError, match="length >= 2"):
        finetune(model, torch.zeros(3, 1, dtype=torch.long), obj)
    with pytest.raises(TypeError, match="objective"):
        finetune(model, torch.zeros(3, 4, dtype=torch.long), "mle")
    with pytest.raises(ValueError, match="batch_size"):
        FinetuneConfig(batch_size=0)


def test_ancestral_sample_shape_determinism_and_distribution():
    model = _model(4, length=8)
    prefix = torch.zeros(2000, 1, dtype=torch.long)
    a = ancestral_sample(model, prefix, 3, torch.Generator().manual_seed(0))
    b = ancestral_sample(model, prefix, 3, torch.Generator().manual_seed(0))
    assert a.shape == (2000, 4) and torch.equal(a, b) and torch.all(a[:, 0] == 0)
    # the first sampled token follows the model's predictive distribution
    q = predictive_log_probs(model, a[:1, :2]).exp()[0, 0]
    freq = torch.bincount(a[:, 1], minlength=4).double() / 2000
    assert torch.all((freq - q).abs() < 4 * torch.sqrt(q * (1 - q) / 2000) + 1e-3)
    with pytest.raises(ValueError, match="context_length"):
        ancestral_sample(model, prefix[:2], 9, torch.Generator())
    with pytest.raises(ValueError, match="prefix"):
        ancestral_sample(model, torch.zeros(2, 0, dtype=torch.long), 2, torch.Generator())


def test_exact_kl_metrics_against_direct_computation():
    lang = make_language(2, 2, np.random.default_rng(0))
    model = _model(lang.vocab_size)
    m = exact_kl_metrics(model, lang, n_sequences=32, length=10, seed=4)
    assert m["forward_kl"] > 0 and m["reverse_kl"] > 0 and 0 <= m["wrong_mass"] <= 1
    true = lang.sample(32, 10, np.random.default_rng(4))
    log_q = predictive_log_probs(model, true)
    p = lang.next_token_probs(true)
    assert m["forward_kl"] == pytest.approx(float((p * (p.log() - log_q)).sum(-1).mean()))
    assert m["nll"] - m["true_entropy"] == pytest.approx(m["forward_kl"], abs=0.15)
    again = exact_kl_metrics(model, lang, n_sequences=32, length=10, seed=4)
    assert again == m
    with pytest.raises(ValueError, match="vocab_size"):
        exact_kl_metrics(_model(3), lang, n_sequences=4, length=5, seed=0)


def test_bootstrap_interval():
    x = np.random.default_rng(0).normal(1.0, 0.5, size=200)
    low, high = bootstrap_mean_interval(x, seed=1)
    assert low < x.mean() < high and high - low < 0.2
    assert bootstrap_mean_interval([0.3]) == (0.3, 0.3)
    with pytest.raises(ValueError, match="empty"):
        bootstrap_mean_interval([])


def test_comparison_is_deterministic_and_shares_the_checkpoint():
    cfg = ComparisonConfig(n_clusters=3, n_synonyms=2, length=12, d_model=16, n_layers=1,
                           n_heads=2, pretrain_sequences=64, finetune_sequences=32,
                           eval_sequences=16, n_seeds=2, oracle_ablation=False,
                           finetune=FinetuneConfig(batch_size=16))
    a = run_finetuning_comparison(cfg, 7)
    b = run_finetuning_comparison(cfg, 7)
    assert a.rows == b.rows and a.pretrained == b.pretrained
    assert set(a.rows[0]) == {"mle", "emo", "mixce", "tailr", "emo_shuffled_cost"}
    # with learning rate ~0 every objective leaves the shared checkpoint unchanged
    frozen = dataclasses.replace(cfg, n_seeds=1,
                                 finetune=FinetuneConfig(batch_size=16, lr=1e-12))
    c = run_finetuning_comparison(frozen, 7)
    vals = [c.rows[0][m]["reverse_kl"] for m in ("mle", "emo", "mixce", "tailr",
                                                 "emo_shuffled_cost")]
    assert max(vals) - min(vals) < 1e-6
