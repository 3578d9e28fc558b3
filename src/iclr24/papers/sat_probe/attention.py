"""Attention to constraint tokens, the confidence baseline and correctness labels (SAT Probe,
Yuksekgonul et al., ICLR 2024, arXiv 2309.15098, Sec. 3-4).

Per prompt (the paper's steps):

1. greedy completion of the prompt (max 15 new tokens), batched through the kit's
   :class:`~iclr24.kits.language_models.LocalTextModel` by :func:`collect_records`;
2. one pass over prompt + completion with attentions on (the kit's ``trace``: eager attention
   on Hugging Face models); T = the last *prompt* token, whose output predicts the first answer
   token. The attention row A^{ℓ,h}[T, :] of every layer ℓ and head h is kept;
3. each constraint's token span (:func:`~.constraints.locate_constraint`, character offsets);
4. :func:`sat_features`: A_{C,T}^{ℓ,h} = max_{c ∈ C} A^{ℓ,h}[T, c], flattened to L·H numbers
   (column ℓ·H + h); the attention sink at the start token is kept, not renormalised;
5. the confidence baseline: log p of the model's own completion truncated to the ground truth's
   token length (:meth:`SatRecord.confidence`, :func:`answer_token_count`);
6. the label: :func:`is_correct`. The official code compares tokens (the completion's first
   |gt| tokens against the tokens of " {gt}"); we compare normalised strings (leading
   whitespace dropped, case folded, the answer must be followed by a non-alphanumeric
   character or the end), which gives the same verdict for the answers here and is robust to
   " 1963" vs "1963." formatting.

Backends: the tiny :class:`~iclr24.kits.language_models.TransformerLM` and
:class:`~iclr24.kits.language_models.HFCausalLM` (SmolLM2-135M-Instruct: 30 layers × 9 heads =
270 features; a local Llama-style checkpoint). A served model (OpenAI-compatible HTTP) exposes
no attention and is refused. Out of reach: Llama-2 7B/13B/70B (the paper's models; 70B in
8-bit) and the paper's secondary feature, the attention-contribution norm
‖A[T, c] · x_c W_V W_O‖, which is not implemented.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from iclr24.kits.language_models import HFCausalLM, LocalTextModel, TransformerLM, trace

from .constraints import locate_constraint, token_char_spans

__all__ = [
    "SatRecord",
    "answer_token_count",
    "collect_records",
    "constraint_attention",
    "is_correct",
    "normalize_answer",
    "sat_features",
]

_AGGREGATES = ("max", "mean")


@dataclass(frozen=True)
class SatRecord:
    """What one prompt gave.

    attention[i]: (L, H, n_i) float32, the attention of the last prompt token T to the n_i
    tokens of constraints[i] (layer, head, token); spans[i]: that constraint's token span
    [start, end) in the prompt's tokens; token_logprobs: (n_completion_tokens,) log p of each
    completion token; first_logprob: log p of the greedy first token after the prompt (the
    model's choice even when it ended the completion at once); num_prompt_tokens: T + 1.
    """

    prompt: str
    completion: str
    constraints: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    attention: tuple[np.ndarray, ...]
    token_logprobs: np.ndarray
    first_logprob: float
    num_prompt_tokens: int

    @property
    def n_layers(self) -> int:
        return int(self.attention[0].shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.attention[0].shape[1])

    def confidence(self, n_tokens: int) -> float:
        """log p of the completion truncated to ``n_tokens`` tokens (the paper's confidence
        baseline: n_tokens = the ground truth's token length); an empty completion scores the
        log-probability of the first token it chose."""
        if isinstance(n_tokens, bool) or not isinstance(n_tokens, (int, np.integer)) \
                or n_tokens < 1:
            raise ValueError(f"n_tokens must be an int >= 1, got {n_tokens!r}")
        if self.token_logprobs.size == 0:
            return float(self.first_logprob)
        return float(self.token_logprobs[:int(n_tokens)].sum())  # Σ_{k<|gt|} log p(y_k | ·)


def _check_white_box(lm: object) -> None:
    if not isinstance(lm, (TransformerLM, HFCausalLM)):
        raise TypeError(f"attention weights were requested from {type(lm).__name__}, which does "
                        "not expose them: SAT Probe needs a white-box backend (TransformerLM or "
                        "HFCausalLM), not a text-only or served model")


def _constraint_list(constraints: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(constraints, str):
        constraints = (constraints,)
    try:
        out = tuple(constraints)
    except TypeError:
        raise TypeError("constraints must be a str or a sequence of str") from None
    if not out:
        raise ValueError("constraints must name at least one constraint")
    for i, c in enumerate(out):
        if not isinstance(c, str):
            raise TypeError(f"constraints[{i}] must be a str, got {type(c).__name__}")
    return out


def _completion_ids(lm: TransformerLM | HFCausalLM, prompt: str, prompt_ids: list[int],
                    completion: str) -> list[int]:
    if not completion:
        return []
    full = list(lm.tokenizer.encode((prompt + completion).encode("utf-8")))
    if full[:len(prompt_ids)] == prompt_ids and len(full) > len(prompt_ids):
        return full[len(prompt_ids):]
    return list(lm.tokenizer.encode(completion.encode("utf-8")))


def constraint_attention(lm: TransformerLM | HFCausalLM, prompt: str,
                         constraints: str | Sequence[str], *, max_new_tokens: int = 15,
                         completion: str | None = None, stop: Sequence[str] = ("\n",)
                         ) -> SatRecord:
    """Attention of the last prompt token to each constraint, and the completion's log-probs.

    lm: a white-box backend (``TransformerLM`` or ``HFCausalLM``); prompt: the query, ending
    where the answer starts; constraints: strings that occur in the prompt; completion: the
    model's completion if already generated, else it is generated greedily (``max_new_tokens``,
    cut at ``stop``). Only the completion's log-probs depend on it: attention at T is causal.
    """
    _check_white_box(lm)
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("prompt must be a non-empty str")
    names = _constraint_list(constraints)
    prompt_ids, _ = token_char_spans(prompt, lm.tokenizer)
    spans = tuple(locate_constraint(prompt, c, lm.tokenizer) for c in names)
    if completion is None:
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
                or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
        completion = LocalTextModel(lm).generate([prompt], max_new_tokens, temperature=0.0,
                                                 stop=list(stop))[0][0]
    elif not isinstance(completion, str):
        raise TypeError(f"completion must be a str or None, got {type(completion).__name__}")
    comp = _completion_ids(lm, prompt, prompt_ids, completion)
    ctx = lm.context_length
    if ctx is not None:
        if len(prompt_ids) > ctx:
            raise ValueError(f"prompt has {len(prompt_ids)} tokens, more than the model's "
                             f"context_length={ctx}")
        comp = comp[:ctx - len(prompt_ids)]
    tr = trace(lm, prompt_ids + comp)
    t = len(prompt_ids)  # trace position of the last prompt token (position 0 = start token)
    row = tr.attentions[:, :, t, :]  # A^{ℓ,h}[T, :]: (L, H, positions)
    attention = tuple(np.ascontiguousarray(row[:, :, s + 1:e + 1]) for s, e in spans)
    logprobs = np.array([tr.log_probs[t + k, tok] for k, tok in enumerate(comp)])
    return SatRecord(prompt=prompt, completion=completion, constraints=names, spans=spans,
                     attention=attention, token_logprobs=logprobs,
                     first_logprob=float(tr.log_probs[t].max()),
                     num_prompt_tokens=len(prompt_ids))


def collect_records(lm: TransformerLM | HFCausalLM, prompts: Sequence[str],
                    constraints: Sequence[str | Sequence[str]], *, max_new_tokens: int = 15,
                    max_batch: int = 16, stop: Sequence[str] = ("\n",),
                    progress: Callable[[float, str], None] | None = None) -> list[SatRecord]:
    """:func:`constraint_attention` over many prompts: greedy completions generated in batches
    of ``max_batch`` (one ``LocalTextModel.generate`` call), then one traced pass per prompt.
    constraints[i] holds prompt i's constraint(s)."""
    _check_white_box(lm)
    prompts = list(prompts)
    constraints = list(constraints)
    if not prompts:
        raise ValueError("prompts must be a non-empty sequence of str")
    if len(constraints) != len(prompts):
        raise ValueError(f"constraints must hold one entry per prompt ({len(prompts)}), got "
                         f"{len(constraints)}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be an int >= 1, got {max_new_tokens!r}")
    for i, (p, c) in enumerate(zip(prompts, constraints)):  # refuse bad input before generating
        if not isinstance(p, str) or not p:
            raise ValueError(f"prompts[{i}] must be a non-empty str")
        for name in _constraint_list(c):
            locate_constraint(p, name, lm.tokenizer)
    completions = [o[0] for o in LocalTextModel(lm, max_batch=max_batch).generate(
        prompts, max_new_tokens, temperature=0.0, stop=list(stop))]
    records = []
    for i, (p, c, comp) in enumerate(zip(prompts, constraints, completions)):
        if progress is not None and i % 25 == 0:
            progress(i / len(prompts), f"attention of prompt {i + 1}/{len(prompts)}")
        records.append(constraint_attention(lm, p, c, completion=comp))
    return records


def normalize_answer(text: str) -> str:
    """Leading/trailing whitespace dropped, case folded, one trailing period removed."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    out = text.strip().casefold()
    return out[:-1].rstrip() if out.endswith(".") else out


def is_correct(completion: str, answer: str) -> bool:
    """Whether the completion starts with the answer (both normalised the same way) and the
    answer is not the prefix of a longer word ("Rabatit" is not "Rabat"; "1963." is "1963")."""
    c = completion.lstrip().casefold()
    a = normalize_answer(answer)
    if not a:
        raise ValueError("answer must be a non-empty string")
    return c.startswith(a) and (len(c) == len(a) or not c[len(a)].isalnum())


def answer_token_count(lm: TransformerLM | HFCausalLM, prompt: str, completion: str,
                       answer: str) -> int:
    """|gt|: tokens of the answer as it would follow the prompt (with the completion's leading
    whitespace, " " if it has none), the length the confidence baseline truncates to."""
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError("answer must be a non-empty string")
    lead = completion[:len(completion) - len(completion.lstrip())] or " "
    prompt_ids = list(lm.tokenizer.encode(prompt.encode("utf-8")))
    return max(1, len(_completion_ids(lm, prompt, prompt_ids, lead + answer.strip())))


def sat_features(records: Sequence[SatRecord], agg: str = "max",
                 layers: Sequence[int] | None = None, constraint: int = 0) -> np.ndarray:
    """(n, len(layers) · H) features: A_{C,T}^{ℓ,h} aggregated over constraint ``constraint``'s
    tokens (``agg="max"`` as the paper; ``"mean"`` an ablation); column k·H + h is the k-th
    selected layer's head h; ``layers=None`` keeps every layer."""
    records = list(records)
    if not records:
        raise ValueError("records must be a non-empty sequence of SatRecord")
    for i, r in enumerate(records):
        if not isinstance(r, SatRecord):
            raise TypeError(f"records[{i}] must be a SatRecord, got {type(r).__name__}")
    if agg not in _AGGREGATES:
        raise ValueError(f"agg must be one of {_AGGREGATES}, got {agg!r}")
    n_layers, n_heads = records[0].n_layers, records[0].n_heads
    if any((r.n_layers, r.n_heads) != (n_layers, n_heads) for r in records):
        raise ValueError("records must come from one model (equal layer and head counts)")
    if layers is None:
        chosen = list(range(n_layers))
    else:
        chosen = list(layers)
        bad = [ly for ly in chosen
               if isinstance(ly, bool) or not isinstance(ly, (int, np.integer))
               or not 0 <= ly < n_layers]
        if not chosen or bad:
            raise ValueError(f"layers must be a non-empty list of layer indices in "
                             f"[0, {n_layers}), got {layers!r}")
    if isinstance(constraint, bool) or not isinstance(constraint, int) or constraint < 0:
        raise ValueError(f"constraint must be an int >= 0, got {constraint!r}")
    rows = []
    for i, r in enumerate(records):
        if constraint >= len(r.attention):
            raise ValueError(f"records[{i}] has {len(r.attention)} constraint(s); constraint "
                             f"index {constraint} is out of range")
        a = r.attention[constraint][chosen]  # (L', H, n_tok)
        rows.append(a.max(axis=2) if agg == "max" else a.mean(axis=2))  # max_{c∈C} A[T, c]
    return np.stack(rows).reshape(len(records), -1).astype(np.float64)
