"""From factual queries to the probe's dataset (SAT Probe, Yuksekgonul et al., ICLR 2024, arXiv
2309.15098, Sec. 4): greedy completions, attention features to the constraint and to a control
span, the confidence baseline, popularity and correctness labels, one row per query.

:func:`recall_data` runs the whole per-prompt protocol of :mod:`.attention` on any white-box
backend (the tiny model of :mod:`.fact_world`, SmolLM2-135M-Instruct) and returns
:class:`RecallData`, what :func:`~.probe.evaluate_predictors` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import mannwhitneyu

from .attention import SatRecord, answer_token_count, collect_records, is_correct, sat_features

__all__ = ["RecallData", "attention_gap", "recall_data"]


@dataclass(frozen=True)
class RecallData:
    """features: (n, L·H) max attention of T to the constraint; control: (n, L·H) to the
    control span; confidence: (n,) log-prob of the completion truncated to |gt|; popularity:
    (n,); y: (n,) 1 = correct; records: the per-prompt :class:`SatRecord` objects."""

    features: np.ndarray
    control: np.ndarray
    confidence: np.ndarray
    popularity: np.ndarray
    y: np.ndarray
    n_layers: int
    n_heads: int
    records: tuple[SatRecord, ...]

    @property
    def accuracy(self) -> float:
        return float(self.y.mean())


def recall_data(lm, prompts: Sequence[str], constraints: Sequence[str],
                controls: Sequence[str], answers: Sequence[str], popularity: Sequence[float], *,
                max_new_tokens: int = 15, max_batch: int = 16,
                progress: Callable[[float, str], None] | None = None) -> RecallData:
    """One row per prompt: prompts[i] queries constraints[i] (its answer answers[i]);
    controls[i] is a non-constraint word of the same prompt (the control probe's span)."""
    n = len(prompts)
    for name, seq in (("constraints", constraints), ("controls", controls),
                      ("answers", answers), ("popularity", popularity)):
        if len(seq) != n:
            raise ValueError(f"{name} must hold one entry per prompt ({n}), got {len(seq)}")
    records = collect_records(lm, prompts, [(c, k) for c, k in zip(constraints, controls)],
                              max_new_tokens=max_new_tokens, max_batch=max_batch,
                              progress=progress)
    y = np.array([is_correct(r.completion, a) for r, a in zip(records, answers)], dtype=int)
    conf = np.array([r.confidence(answer_token_count(lm, r.prompt, r.completion, a))
                     for r, a in zip(records, answers)])
    return RecallData(features=sat_features(records, constraint=0),
                      control=sat_features(records, constraint=1), confidence=conf,
                      popularity=np.asarray(popularity, dtype=np.float64), y=y,
                      n_layers=records[0].n_layers, n_heads=records[0].n_heads,
                      records=tuple(records))


def attention_gap(features: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean attention to the constraint (averaged over layers and heads) of correct minus
    incorrect answers, and the one-sided Mann-Whitney p-value that it is larger for correct
    ones (NaN without both classes)."""
    features, y = np.asarray(features, dtype=np.float64), np.asarray(y)
    if features.ndim != 2 or y.shape != (features.shape[0],):
        raise ValueError(f"features must be (n, k) and y (n,), got {features.shape} and "
                         f"{y.shape}")
    score = features.mean(axis=1)
    good, bad = score[y == 1], score[y == 0]
    if good.size == 0 or bad.size == 0:
        return float("nan"), float("nan")
    p = mannwhitneyu(good, bad, alternative="greater").pvalue
    return float(good.mean() - bad.mean()), float(p)
