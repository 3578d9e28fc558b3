"""CALM across two tokenisations: a Hugging Face anchor (SmolLM2-135M-Instruct) composed with a
character-level augmenting model, trained on KV facts of a subset of keys.

Paper: Bansal et al., ICLR 2024, Sec. 3 (the composition) and Sec. 4.1 (m_A memorises keys ->
values; the composed model must answer for keys D_C never showed). The paper composes PaLM2-S
with PaLM2-XXS models that share a vocabulary; here the anchor reads the text with SmolLM2's BPE
and m_A with characters, so the cross-attention mask comes from character spans
(:func:`~.composer.cross_model_mask`): anchor position t (having read the text up to character
e_t) may attend to m_A's positions that have read no further than e_t.

Task (KV-substitution): prompt ``abc?`` -> answer ``7;`` for train keys in D_C, exact match of
the teacher-forced greedy answer on held-out keys (m_A knows all keys, the anchor none).
Out of reach: PaLM2-S/XXS and any 7B-scale anchor; SmolLM2 runs in float32 on CPU, so D_C
training is a few hundred steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .composer import cross_model_mask
from .composition import CALM
from .kv_data import VOCAB, CharVocab

__all__ = ["TextBatch", "Tokenize", "char_tokenize", "encode_text_batch", "hf_tokenize",
           "text_exact_match", "train_text_composition"]

IGNORE = -100
Tokenize = Callable[[str], list[tuple[int, int]]]
"""text -> [(token id, end character offset (exclusive))] for the tokens of ``text``."""

_FAR = 1 << 30  # end offset of padding: never visible through the mask


def hf_tokenize(hf_tokenizer) -> Tokenize:
    """A :data:`Tokenize` from a Hugging Face fast tokenizer (offset mapping, no specials)."""
    def tokenize(text: str) -> list[tuple[int, int]]:
        enc = hf_tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(int(i), int(e)) for i, (_, e) in zip(enc["input_ids"], enc["offset_mapping"])]
    return tokenize


def char_tokenize(vocab: CharVocab = VOCAB) -> Tokenize:
    """One token per character (the kit char models of :mod:`.kv_experiment`)."""
    def tokenize(text: str) -> list[tuple[int, int]]:
        return [(i, k + 1) for k, i in enumerate(vocab.encode(text))]
    return tokenize


class TextBatch:
    """Anchor inputs/labels (B, T) and character ends (B, T); augmenting inputs and ends (B, S);
    ``cross_mask`` (B, T, S) from the ends."""

    def __init__(self, inputs: Tensor, labels: Tensor, ends: Tensor, aug_inputs: Tensor,
                 aug_ends: Tensor) -> None:
        self.inputs, self.labels, self.ends = inputs, labels, ends
        self.aug_inputs, self.aug_ends = aug_inputs, aug_ends
        self.cross_mask = cross_model_mask(ends, aug_ends)

    def select(self, idx: Tensor) -> TextBatch:
        return TextBatch(self.inputs[idx], self.labels[idx], self.ends[idx],
                         self.aug_inputs[idx], self.aug_ends[idx])


def _rows(examples: Sequence[tuple[str, str]], tokenize: Tokenize, start_id: int,
          labelled: bool, pad_id: int) -> tuple[Tensor, Tensor, Tensor]:
    seqs = []
    for prompt, answer in examples:
        p = tokenize(prompt)
        a = [(i, e + len(prompt)) for i, e in tokenize(answer)]
        if not a:
            raise ValueError(f"answer {answer!r} has no tokens")
        seqs.append((p, a))
    t = max(len(p) + len(a) for p, a in seqs)
    inputs = torch.full((len(seqs), t), pad_id, dtype=torch.long)
    labels = torch.full((len(seqs), t), IGNORE, dtype=torch.long)
    ends = torch.full((len(seqs), t), _FAR, dtype=torch.long)
    for r, (p, a) in enumerate(seqs):
        toks = p + a
        # position 0 reads the start token (0 characters); position j reads tokens[:j]
        inputs[r, 0] = start_id
        ends[r, 0] = 0
        for j in range(1, len(toks)):
            inputs[r, j] = toks[j - 1][0]
            ends[r, j] = toks[j - 1][1]
        if labelled:
            for j in range(len(p), len(toks)):
                labels[r, j] = toks[j][0]
    return inputs, labels, ends


def encode_text_batch(examples: Sequence[tuple[str, str]], anchor_tokenize: Tokenize,
                      anchor_start_id: int, aug_tokenize: Tokenize, aug_start_id: int, *,
                      anchor_pad_id: int = 0, aug_pad_id: int = 0) -> TextBatch:
    """(prompt, answer) pairs for two tokenisations: labels on the anchor's answer tokens;
    anchor padding positions get a huge end (they see everything; their labels are ignored),
    augmenting padding positions too (so no anchor position sees them)."""
    if not examples:
        raise ValueError("examples must be a non-empty list of (prompt, answer) pairs")
    inputs, labels, ends = _rows(examples, anchor_tokenize, anchor_start_id, True, anchor_pad_id)
    aug_inputs, _, aug_ends = _rows(examples, aug_tokenize, aug_start_id, False, aug_pad_id)
    return TextBatch(inputs, labels, ends, aug_inputs, aug_ends)


def _logits(calm: CALM | nn.Module, batch: TextBatch) -> Tensor:
    if isinstance(calm, CALM):
        return calm(batch.inputs, batch.aug_inputs, cross_mask=batch.cross_mask).logits
    out = calm(input_ids=batch.inputs, use_cache=False) if not hasattr(calm, "blocks") \
        else calm(batch.inputs)
    return getattr(out, "logits", out)


@torch.no_grad()
def text_exact_match(model: CALM | nn.Module, batch: TextBatch, batch_size: int = 32
                     ) -> list[bool]:
    """Per row: does the argmax at every labelled position equal the label (greedy decoding
    reproduces the answer's tokens)? ``model``: a :class:`CALM` or the anchor alone."""
    out: list[bool] = []
    for i in range(0, batch.inputs.shape[0], batch_size):
        b = batch.select(torch.arange(i, min(i + batch_size, batch.inputs.shape[0])))
        pred = _logits(model, b).argmax(-1)
        out.extend(bool(x) for x in ((pred == b.labels) | (b.labels == IGNORE)).all(1))
    return out


def train_text_composition(calm: CALM, batch: TextBatch, *, steps: int, batch_size: int,
                           lr: float, seed: int) -> list[float]:
    """AdamW on the composers only, answer-token NLL, batches drawn with a seeded generator."""
    gen = torch.Generator().manual_seed(int(seed))
    params = calm.trainable_parameters()
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    calm.train()
    losses = []
    for _ in range(steps):
        b = batch.select(torch.randint(0, batch.inputs.shape[0], (batch_size,), generator=gen))
        logits = _logits(calm, b)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                               b.labels.reshape(-1), ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(float(loss.detach()))
    calm.eval()
    return losses
