"""Exact distribution-level evaluation against a language with a known next-token law.

The paper scores fine-tuned models by MAUVE between human text and the model's *ancestral*
("unbiased") samples, which trades off precision (do samples look human?) and recall (is human
text covered?). With a synthetic language both sides can be measured exactly, over the whole
vocabulary, at every teacher-forced prefix:

* recall:    forward KL(P* ‖ Q) per token on prefixes of true held-out sequences;
* precision: reverse KL(Q ‖ P*) per token on prefixes of the model's own ancestral samples
  (the prefixes the model actually visits when it is used);
* wrong-cluster mass: Q's probability on tokens that P* (before its uniform floor) gives zero
  probability, on true prefixes.

:func:`ancestral_sample` uses the KV-cached incremental path of the kit's transformer.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from iclr24.kits.language_models import CausalTransformer

from .finetuning import sequence_logits
from .synthetic_language import SyntheticLanguage

__all__ = ["ancestral_sample", "exact_kl_metrics", "predictive_log_probs"]


def ancestral_sample(model: CausalTransformer, prefix: Tensor, n_new: int,
                     generator: torch.Generator, temperature: float = 1.0) -> Tensor:
    """Sample ``n_new`` tokens after each prefix (unbiased sampling at temperature 1).

    prefix: (B, P) int ids, P >= 1 (a BOS id is fed first when the model has one);
    generator: a CPU ``torch.Generator`` (draws are made on CPU so results do not depend on
    the device). Returns (B, P + n_new) ids.
    """
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
    if not isinstance(prefix, Tensor) or prefix.dtype.is_floating_point or prefix.dim() != 2 \
            or prefix.shape[1] < 1:
        raise ValueError("prefix must be a (B, P) integer tensor with P >= 1")
    if not isinstance(n_new, int) or n_new < 0:
        raise ValueError(f"n_new must be a non-negative int, got {n_new!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    need = prefix.shape[1] + n_new - 1 + (1 if model.config.bos else 0)
    if need > model.config.context_length:
        raise ValueError(f"prefix length + n_new needs {need} positions but the model's "
                         f"context_length is {model.config.context_length}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = prefix.long().to(device)
    with torch.no_grad():
        cache = model.new_cache(out.shape[0])
        logits = None
        if model.config.bos:
            logits = model.forward_step(torch.full((out.shape[0],), model.config.bos_id,
                                                   device=device, dtype=torch.long), cache)
        for t in range(out.shape[1]):
            logits = model.forward_step(out[:, t], cache)
        new = []
        for i in range(n_new):
            probs = torch.softmax(logits.double().cpu() / temperature, dim=-1)
            token = torch.multinomial(probs, 1, generator=generator)[:, 0].to(device)
            new.append(token)
            if i + 1 < n_new:
                logits = model.forward_step(token, cache)
    model.train(was_training)
    if new:
        out = torch.cat([out, torch.stack(new, dim=1)], dim=1)
    return out


def predictive_log_probs(model: CausalTransformer, sequences: Tensor) -> Tensor:
    """log Q(· | x_<t) for t = 1..L-1. sequences: (B, L) -> (B, L-1, V) float64."""
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits, _ = sequence_logits(model, sequences.long().to(next(model.parameters()).device))
    model.train(was_training)
    return torch.log_softmax(logits.double(), dim=-1)


def exact_kl_metrics(model: CausalTransformer, language: SyntheticLanguage, *,
                     n_sequences: int, length: int, seed: int) -> dict[str, float]:
    """Forward / reverse KL per token and wrong-cluster mass of ``model`` against ``language``.

    Draws ``n_sequences`` true held-out sequences (numpy generator seeded by ``seed``) and as
    many ancestral samples of ``length`` tokens from the model (torch generator seeded by
    ``seed``), each starting with EOS. The same seed gives every model the same true prefixes
    and the same random numbers for sampling (common random numbers between methods).

    Returns ``forward_kl``, ``reverse_kl`` (nats/token), ``wrong_mass`` (probability),
    ``nll`` (nats/token on true data) and ``true_entropy`` (nats/token, the NLL floor).
    """
    if not isinstance(language, SyntheticLanguage):
        raise TypeError("language must be a SyntheticLanguage")
    if model.config.vocab_size != language.vocab_size:
        raise ValueError(f"model vocab_size {model.config.vocab_size} != language vocab_size "
                         f"{language.vocab_size}")
    if not isinstance(n_sequences, int) or n_sequences < 1:
        raise ValueError(f"n_sequences must be a positive int, got {n_sequences!r}")
    if not isinstance(length, int) or length < 2:
        raise ValueError(f"length must be an int >= 2, got {length!r}")
    true_seqs = language.sample(n_sequences, length, np.random.default_rng(seed))
    device = next(model.parameters()).device
    # recall side: KL(P* ‖ Q) = Σ_v P*(v) (log P*(v) − log Q(v)) at true prefixes
    log_q = predictive_log_probs(model, true_seqs).cpu()
    p_star = language.next_token_probs(true_seqs)
    log_p = torch.log(p_star)
    forward_kl = float((p_star * (log_p - log_q)).sum(-1).mean())
    wrong = language.wrong_token_mask(true_seqs)
    wrong_mass = float((log_q.exp() * wrong).sum(-1).mean())
    labels = true_seqs[:, 1:]
    nll = float(-log_q.gather(-1, labels[..., None]).mean())
    true_entropy = float(-(p_star * log_p).sum(-1).mean())
    # precision side: KL(Q ‖ P*) = Σ_v Q(v) (log Q(v) − log P*(v)) at the model's own prefixes
    gen = torch.Generator().manual_seed(int(seed))
    start = torch.full((n_sequences, 1), language.eos_id, dtype=torch.long, device=device)
    samples = ancestral_sample(model, start, length - 1, gen).cpu()
    log_q_s = predictive_log_probs(model, samples).cpu()
    log_p_s = torch.log(language.next_token_probs(samples))
    reverse_kl = float((log_q_s.exp() * (log_q_s - log_p_s)).sum(-1).mean())
    return {"forward_kl": forward_kl, "reverse_kl": reverse_kl, "wrong_mass": wrong_mass,
            "nll": nll, "true_entropy": true_entropy}
