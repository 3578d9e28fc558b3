"""One interface for every next-token predictor: tiny local transformers and pretrained LMs.

A *backend* is anything with

* ``vocab_size`` and ``context_length`` (the most tokens one sequence may hold, or ``None``);
* ``log_probs(tokens) -> (T, V)``: row ``t`` is log p(· | tokens[:t]) for every t in one
  batched causal pass (row 0 is the distribution of the first token after the start symbol);
* ``session(batch_size) -> IncrementalSession``: incremental decoding with a key/value cache,
  ``next_log_probs() -> (B, V)`` then ``feed(tokens: (B,))``, repeated;
* ``generate(prompt, max_new_tokens, temperature=…, seed=…) -> list[int]``;
* ``tokenizer`` (a :class:`Tokenizer`: ``encode(bytes) -> ids``, ``decode(ids) -> bytes``).

:class:`TransformerLM` wraps the kit's :class:`CausalTransformer` (byte-level by default);
:class:`HFCausalLM` wraps a Hugging Face ``AutoModelForCausalLM`` + tokenizer (SmolLM2 or a
user's own checkpoint, see :mod:`.pretrained`). Log-probabilities come back as float64 numpy
arrays computed from float32 logits (log-softmax in float32).

Batched vs incremental: both paths compute the same distributions up to float rounding, not bit
for bit (different matrix shapes accumulate in different orders). Any use that needs the *same
bits* on two sides — arithmetic decoding — must run the same path with the same batch shape on
both sides (``session`` for both). Within one process and thread setting a session is
deterministic: the same fed tokens give the same bits.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from iclr24.kits.threads import torch_threads

from .transformer import CausalTransformer, TransformerConfig

__all__ = [
    "ByteTokenizer",
    "HFCausalLM",
    "HFTokenizer",
    "IncrementalSession",
    "LanguageModelBase",
    "NextTokenBackend",
    "Tokenizer",
    "TransformerLM",
    "sample_from_log_probs",
    "torch_threads",
    "untrained_byte_lm",
]


@runtime_checkable
class Tokenizer(Protocol):
    vocab_size: int

    def encode(self, data: bytes) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> bytes: ...


class ByteTokenizer:
    """Bytes are their own tokens (vocabulary 256); every byte string round-trips."""

    vocab_size = 256

    def encode(self, data: bytes) -> list[int]:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        return list(bytes(data))

    def decode(self, ids: Sequence[int]) -> bytes:
        try:
            return bytes(int(i) for i in ids)
        except ValueError:
            raise ValueError("byte token ids must lie in [0, 256)") from None


class HFTokenizer:
    """A Hugging Face tokenizer over UTF-8 text, exposing the bytes-in/bytes-out interface.

    ``encode`` refuses bytes that are not valid UTF-8 and text the tokenizer does not reproduce
    exactly (so a coder built on it is lossless or fails loudly, never silently lossy).
    """

    def __init__(self, hf_tokenizer: Any) -> None:
        self.hf = hf_tokenizer
        self.vocab_size = len(hf_tokenizer)

    def encode(self, data: bytes | str, check_roundtrip: bool = True) -> list[int]:
        if isinstance(data, str):
            text = data
        elif isinstance(data, (bytes, bytearray, memoryview)):
            try:
                text = bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"data must be valid UTF-8 for a text tokenizer: {exc}") from None
        else:
            raise TypeError(f"data must be bytes or str, got {type(data).__name__}")
        ids = list(self.hf(text, add_special_tokens=False)["input_ids"])
        if check_roundtrip and self.decode(ids) != text.encode("utf-8"):
            raise ValueError("the tokenizer does not reproduce this text exactly "
                             "(normalisation changed it); it cannot be coded losslessly")
        return ids

    def decode(self, ids: Sequence[int]) -> bytes:
        text = self.hf.decode([int(i) for i in ids], skip_special_tokens=False,
                              clean_up_tokenization_spaces=False)
        return text.encode("utf-8")


@runtime_checkable
class IncrementalSession(Protocol):
    batch_size: int

    def next_log_probs(self) -> np.ndarray: ...

    def feed(self, tokens: Sequence[int]) -> None: ...


@runtime_checkable
class NextTokenBackend(Protocol):
    vocab_size: int
    context_length: int | None
    tokenizer: Tokenizer

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray: ...

    def session(self, batch_size: int = 1) -> IncrementalSession: ...

    def generate(self, prompt: Sequence[int], max_new_tokens: int, *, temperature: float = 1.0,
                 seed: int = 0) -> list[int]: ...


def sample_from_log_probs(log_probs: np.ndarray, temperature: float,
                          rng: np.random.Generator) -> int:
    """Draw one id from log-probabilities (V,) at ``temperature`` (0 = greedy argmax)."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return int(np.argmax(log_probs))
    z = log_probs / temperature
    p = np.exp(z - z.max())
    return int(rng.choice(p.size, p=p / p.sum()))


def _token_list(tokens: Sequence[int] | np.ndarray | torch.Tensor, vocab: int,
                name: str = "tokens") -> list[int]:
    if isinstance(tokens, (bytes, bytearray)):
        out = list(tokens)
    elif isinstance(tokens, torch.Tensor):
        out = [int(t) for t in tokens.reshape(-1).tolist()]
    else:
        try:
            out = [int(t) for t in tokens]
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a sequence of integer token ids") from None
    if out and (min(out) < 0 or max(out) >= vocab):
        raise ValueError(f"{name} must lie in [0, {vocab}), got range [{min(out)}, {max(out)}]")
    return out


class LanguageModelBase:
    """Shared conveniences on top of ``log_probs`` / ``session`` (generation, byte scoring)."""

    vocab_size: int
    context_length: int | None
    tokenizer: Tokenizer

    def session(self, batch_size: int = 1) -> IncrementalSession:  # pragma: no cover
        raise NotImplementedError

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def generate(self, prompt: Sequence[int], max_new_tokens: int, *, temperature: float = 1.0,
                 seed: int = 0, stop_ids: Sequence[int] = ()) -> list[int]:
        """Sample ``max_new_tokens`` ids after ``prompt`` (temperature 0 = greedy)."""
        prompt = _token_list(prompt, self.vocab_size, "prompt")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
        rng = np.random.default_rng(seed)
        sess = self.session(1)
        if prompt and hasattr(sess, "prefill"):
            sess.prefill(prompt)  # one batched pass over the prompt
        else:
            for tok in prompt:
                sess.next_log_probs()
                sess.feed([tok])
        out: list[int] = []
        for _ in range(max_new_tokens):
            tok = sample_from_log_probs(sess.next_log_probs()[0], temperature, rng)
            out.append(tok)
            if tok in stop_ids:
                break
            sess.feed([tok])
        return out

    def generate_bytes(self, prompt: bytes, max_new_tokens: int, *, temperature: float = 1.0,
                       seed: int = 0) -> bytes:
        """Text in, text out through the tokenizer."""
        ids = self.generate(self.tokenizer.encode(prompt), max_new_tokens,
                            temperature=temperature, seed=seed)
        return self.tokenizer.decode(ids)

    def code_length_bits(self, tokens: Sequence[int]) -> float:
        """Ideal code length −Σ_t log2 p(x_t | x_<t) of ``tokens`` (batched path)."""
        tokens = _token_list(tokens, self.vocab_size)
        if not tokens:
            return 0.0
        lp = self.log_probs(tokens)
        return float(-lp[np.arange(len(tokens)), tokens].sum() / np.log(2))


# ----------------------------------------------------------------------------- tiny transformer

class _TransformerSession:
    def __init__(self, model: CausalTransformer, batch_size: int) -> None:
        if not model.config.bos:
            raise ValueError("incremental sessions need a model with bos=True")
        self.model = model
        self.batch_size = batch_size
        self.cache = model.new_cache(batch_size)
        device = model.head.weight.device
        self._pending = torch.full((batch_size,), model.config.bos_id, dtype=torch.long,
                                   device=device)
        self._current: np.ndarray | None = None

    def next_log_probs(self) -> np.ndarray:
        """(B, V) float64 log-probabilities of the next token of each sequence."""
        if self._current is None:
            if self.cache.length >= self.cache.capacity:
                raise ValueError(f"sequence longer than the model's context_length="
                                 f"{self.cache.capacity}")
            with torch.no_grad():
                logits = self.model.forward_step(self._pending, self.cache)
                self._current = torch.log_softmax(logits.float(), dim=-1).double().cpu().numpy()
        return self._current

    def feed(self, tokens: Sequence[int]) -> None:
        if self._current is None:
            self.next_log_probs()  # the distribution for this position must exist first
        toks = _token_list(tokens, self.model.config.vocab_size)
        if len(toks) != self.batch_size:
            raise ValueError(f"feed expects {self.batch_size} tokens, got {len(toks)}")
        self._pending = torch.tensor(toks, dtype=torch.long, device=self._pending.device)
        self._current = None


class TransformerLM(LanguageModelBase):
    """Backend over a :class:`CausalTransformer` (byte-level unless another tokenizer is given).

    ``context_length`` is the most tokens one sequence may hold (= the model's context, since
    the start symbol takes one input position and the last token needs none).
    """

    def __init__(self, model: CausalTransformer, tokenizer: Tokenizer | None = None) -> None:
        if not isinstance(model, CausalTransformer):
            raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
        if not model.config.bos:
            raise ValueError("TransformerLM needs a model built with bos=True")
        self.model = model.eval()
        self.tokenizer = tokenizer or ByteTokenizer()
        if self.tokenizer.vocab_size > model.config.vocab_size:
            raise ValueError(f"tokenizer vocabulary ({self.tokenizer.vocab_size}) exceeds the "
                             f"model's ({model.config.vocab_size})")
        self.vocab_size = model.config.vocab_size
        self.context_length = model.config.context_length

    @property
    def num_parameters(self) -> int:
        return self.model.num_parameters

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray:
        """(T, V) float64: row t = log p(· | tokens[:t]), one batched causal pass."""
        return self.log_probs_batch([tokens])[0]

    def log_probs_batch(self, sequences: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Equal-length sequences scored together (one forward of shape (B, T))."""
        seqs = [_token_list(s, self.vocab_size) for s in sequences]
        if not seqs:
            return []
        t = len(seqs[0])
        if any(len(s) != t for s in seqs):
            raise ValueError("log_probs_batch needs sequences of equal length")
        if t > self.context_length:
            raise ValueError(f"sequence of {t} tokens exceeds the model's context_length="
                             f"{self.context_length}")
        if t == 0:
            return [np.zeros((0, self.vocab_size)) for _ in seqs]
        device = self.model.head.weight.device
        targets = torch.tensor(seqs, dtype=torch.long, device=device)
        with torch.no_grad():
            logits = self.model(self.model.shift_right(targets))
            lp = torch.log_softmax(logits.float(), dim=-1).double().cpu().numpy()
        return list(lp)

    def session(self, batch_size: int = 1) -> _TransformerSession:
        return _TransformerSession(self.model, batch_size)


# ----------------------------------------------------------------------------- Hugging Face

class _HFSession:
    def __init__(self, lm: HFCausalLM, batch_size: int) -> None:
        self.lm = lm
        self.batch_size = batch_size
        self._past: Any = None
        self.length = 0
        self._pending = torch.full((batch_size, 1), lm.start_id, dtype=torch.long,
                                   device=lm.device)
        self._current: np.ndarray | None = None
        # after a padded prefill: the attention mask over the cache (B, cached) and each row's
        # next position (B,); None while every row is as long as the session
        self._mask: torch.Tensor | None = None
        self._next_pos: torch.Tensor | None = None

    def next_log_probs(self) -> np.ndarray:
        if self._current is None:
            if self.lm.context_length is not None and self.length >= self.lm.context_length:
                raise ValueError(f"sequence longer than the model's context_length="
                                 f"{self.lm.context_length}")
            kwargs = {self.lm._cache_kwarg: self._past} if self._past is not None else {}
            if self._mask is not None:
                self._mask = torch.cat([self._mask, torch.ones_like(self._mask[:, :1])], dim=1)
                kwargs.update(attention_mask=self._mask, position_ids=self._next_pos[:, None])
                self._next_pos = self._next_pos + 1
            with torch.no_grad():
                out = self.lm.model(input_ids=self._pending, use_cache=True, **kwargs)
            self._past = getattr(out, self.lm._cache_kwarg)
            self.length += 1
            logits = out.logits[:, -1, :self.lm.vocab_size]
            self._current = torch.log_softmax(logits.float(), dim=-1).double().cpu().numpy()
        return self._current

    def prefill(self, tokens: Sequence[int] | Sequence[Sequence[int]]) -> None:
        """Feed whole prompts to a fresh session in one forward pass: one prompt (a sequence
        of ids) for a batch-1 session, or one non-empty row per batch row. Rows of unequal
        length are left-padded and masked, each with its own positions, so every row sees
        exactly its own prompt (up to float rounding of the padded batch)."""
        rows = ([_token_list(r, self.lm.vocab_size) for r in tokens]
                if len(tokens) and not isinstance(tokens[0], (int, np.integer)) else
                [_token_list(tokens, self.lm.vocab_size)])
        if self._past is not None or len(rows) != self.batch_size or not all(rows):
            raise ValueError(f"prefill needs a fresh session and one non-empty prompt per batch "
                             f"row ({self.batch_size} rows), got {len(rows)} rows")
        longest = max(len(r) for r in rows)
        if self.lm.context_length is not None and longest > self.lm.context_length:
            raise ValueError(f"a prompt of {longest} tokens exceeds the model's "
                             f"context_length={self.lm.context_length}")
        dev = self.lm.device
        pads = [longest - len(r) for r in rows]
        ids = torch.tensor([[self.lm.start_id] * (k + 1) + r[:-1] for k, r in zip(pads, rows)],
                           dtype=torch.long, device=dev)
        kwargs: dict[str, Any] = {}
        if any(pads):
            mask = torch.tensor([[0] * k + [1] * len(r) for k, r in zip(pads, rows)],
                                dtype=torch.long, device=dev)
            kwargs.update(attention_mask=mask,
                          position_ids=(mask.cumsum(1) - 1).clamp(min=0))
            self._mask = mask
            self._next_pos = torch.tensor([len(r) for r in rows], dtype=torch.long, device=dev)
        with torch.no_grad():
            out = self.lm.model(input_ids=ids, use_cache=True, **kwargs)
        self._past = getattr(out, self.lm._cache_kwarg)
        self.length = longest
        self._pending = torch.tensor([[r[-1]] for r in rows], dtype=torch.long, device=dev)
        self._current = None

    def feed(self, tokens: Sequence[int]) -> None:
        if self._current is None:
            self.next_log_probs()
        toks = _token_list(tokens, self.lm.vocab_size)
        if len(toks) != self.batch_size:
            raise ValueError(f"feed expects {self.batch_size} tokens, got {len(toks)}")
        self._pending = torch.tensor(toks, dtype=torch.long, device=self.lm.device)[:, None]
        self._current = None


def untrained_byte_lm(context_length: int = 512, *, d_model: int = 32,
                      seed: int = 0) -> TransformerLM:
    """A randomly initialised one-layer, two-head byte-level model: the smoke-scale stand-in
    for a pretrained model, so that a harness's whole pipeline (prompts, batching, parsers,
    metrics) runs in a second without loading one. It predicts nothing useful. The weights
    depend on ``seed`` only; the global torch RNG is left as it was."""
    for name, v, low in (("context_length", context_length, 8), ("d_model", d_model, 2)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name} must be an int >= {low}, got {v!r}")
    if d_model % 2:
        raise ValueError(f"d_model must be even (two heads), got {d_model}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = CausalTransformer(TransformerConfig(d_model=d_model, n_layers=1, n_heads=2,
                                                    context_length=context_length))
    return TransformerLM(model)


class HFCausalLM(LanguageModelBase):
    """Backend over a Hugging Face causal LM and its tokenizer.

    Sequences are scored after one start token (``start_id``: the tokenizer's BOS, else its
    EOS), so the first real token has a distribution too. ``vocab_size`` is the tokenizer's
    vocabulary (extra padded logits of the output layer are dropped).
    """

    padded_prefill = True  # its sessions prefill rows of unequal length (left-padded, masked)

    def __init__(self, model: Any, hf_tokenizer: Any, *, name: str = "hf-model",
                 file_size_bytes: int | None = None, num_parameters: int | None = None) -> None:
        self.model = model.eval()
        self._num_parameters = num_parameters
        self.tokenizer = HFTokenizer(hf_tokenizer)
        self.name = name
        self.vocab_size = min(len(hf_tokenizer), int(model.config.vocab_size))
        ctx = getattr(model.config, "max_position_embeddings", None)
        self.context_length = int(ctx) - 1 if ctx else None
        start = hf_tokenizer.bos_token_id
        if start is None:
            start = hf_tokenizer.eos_token_id
        if start is None:
            raise ValueError("the tokenizer has neither a BOS nor an EOS token to start from")
        self.start_id = int(start)
        self.file_size_bytes = file_size_bytes
        # transformers 5.x renamed `past_key_values` to `cache`; support both
        params = inspect.signature(model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"

    @property
    def device(self) -> torch.device:
        try:
            return next(self.model.parameters()).device
        except StopIteration:  # every weight packed (a quantised copy): those run on the CPU
            return torch.device("cpu")

    @property
    def num_parameters(self) -> int:
        """The model's parameter count (given at construction for a quantised copy, whose
        packed weights are not ``nn.Parameter`` objects)."""
        if self._num_parameters is not None:
            return self._num_parameters
        return sum(p.numel() for p in self.model.parameters())

    def log_probs(self, tokens: Sequence[int]) -> np.ndarray:
        """(T, V) float64: row t = log p(· | start, tokens[:t]), one batched causal pass."""
        toks = _token_list(tokens, self.vocab_size)
        if self.context_length is not None and len(toks) > self.context_length:
            raise ValueError(f"sequence of {len(toks)} tokens exceeds the model's "
                             f"context_length={self.context_length}")
        if not toks:
            return np.zeros((0, self.vocab_size))
        ids = torch.tensor([[self.start_id] + toks[:-1]], dtype=torch.long, device=self.device)
        with torch.no_grad():
            logits = self.model(input_ids=ids, use_cache=False).logits[0, :, :self.vocab_size]
        return torch.log_softmax(logits.float(), dim=-1).double().cpu().numpy()

    def session(self, batch_size: int = 1) -> _HFSession:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        return _HFSession(self, batch_size)

    def chat(self, user_message: str, max_new_tokens: int = 64, *, temperature: float = 0.0,
             seed: int = 0, system: str | None = None) -> str:
        """Apply the tokenizer's chat template and return the assistant's reply text."""
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": user_message}]
        prompt = self.tokenizer.hf.apply_chat_template(messages, tokenize=False,
                                                       add_generation_prompt=True)
        ids = list(self.tokenizer.hf(prompt, add_special_tokens=False)["input_ids"])
        # generate() conditions on start_id + the templated prompt, then decodes greedily
        stop = [t for t in (self.tokenizer.hf.eos_token_id,
                            self.tokenizer.hf.convert_tokens_to_ids("<|im_end|>")) if t is not None]
        out = self.generate(ids, max_new_tokens, temperature=temperature, seed=seed, stop_ids=stop)
        if out and out[-1] in stop:
            out = out[:-1]
        return self.tokenizer.hf.decode(out, skip_special_tokens=True)
