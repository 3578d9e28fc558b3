"""A client for OpenAI-compatible servers (vLLM, llama.cpp's server, text-generation-inference,
LM Studio...), so the evaluation harnesses run against a model served elsewhere.

Two endpoints, chosen with ``endpoint``:

- ``"completions"`` (default): the legacy ``/v1/completions``. It takes raw prompt text (the
  harnesses build their own prompts and templates) and, with ``echo`` and ``logprobs``, scores
  a given continuation (:meth:`OpenAICompatibleClient.logprobs`).
- ``"chat"``: ``/v1/chat/completions`` with a ``messages`` list; the server applies the model's
  chat template, so a chat-only server works without a template on our side.
  :meth:`OpenAICompatibleClient.chat` sends whole conversations; :meth:`generate` sends each
  prompt as one user message, and :attr:`applies_chat_template` tells a harness to pass bare
  messages rather than templated text. Scoring still needs ``/v1/completions``
  (``supports_logprobs`` defaults to False on this endpoint).

Standard library only (``urllib``); every request has a timeout. Errors name the URL: an
unreachable server raises ``ConnectionError``, an HTTP error status ``RuntimeError`` with the
status and the start of the body, a reply that is not the expected JSON ``ValueError``;
scoring against a server that returns no log-probabilities raises ``NotImplementedError``
(check :attr:`OpenAICompatibleClient.supports_logprobs` first).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CHAT_ROLES", "ENDPOINTS", "OpenAICompatibleClient"]

ENDPOINTS = ("completions", "chat")
CHAT_ROLES = ("system", "user", "assistant")


def _check_conversations(conversations: Any) -> list[list[dict[str, str]]]:
    """Validate a sequence of conversations (each a non-empty list of ``{"role", "content"}``
    messages) and return plain lists of plain dicts."""
    if isinstance(conversations, (str, Mapping)):
        raise TypeError("conversations must be a sequence of conversations (lists of "
                        "{'role', 'content'} messages)")
    convs = list(conversations)
    if not convs:
        raise ValueError("conversations must be non-empty")
    out = []
    for i, conv in enumerate(convs):
        if isinstance(conv, (str, Mapping)) or not isinstance(conv, Sequence) or not conv:
            raise TypeError(f"conversations[{i}] must be a non-empty list of messages, got "
                            f"{type(conv).__name__}")
        msgs = []
        for j, m in enumerate(conv):
            if not isinstance(m, Mapping) or not isinstance(m.get("content"), str):
                raise TypeError(f"conversations[{i}][{j}] must be a mapping with a str "
                                f"'content', got {m!r}"[:200])
            if m.get("role") not in CHAT_ROLES:
                raise ValueError(f"conversations[{i}][{j}]['role'] must be one of "
                                 f"{CHAT_ROLES}, got {m.get('role')!r}")
            msgs.append({"role": m["role"], "content": m["content"]})
        out.append(msgs)
    return out


class OpenAICompatibleClient:
    """base_url: the server root, e.g. ``http://127.0.0.1:8000/v1``; model: the served name.
    endpoint: ``"completions"`` (raw prompts) or ``"chat"`` (messages; the server applies the
    chat template). supports_logprobs: whether the server returns token log-probabilities on
    ``/v1/completions`` (default: True with ``endpoint="completions"``, False with ``"chat"``;
    set False to make :meth:`logprobs` refuse before any request)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 60.0, supports_logprobs: bool | None = None,
                 endpoint: str = "completions") -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be the served model's name")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        if endpoint not in ENDPOINTS:
            raise ValueError(f"endpoint must be one of {ENDPOINTS}, got {endpoint!r}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.api_key, self.timeout = api_key, float(timeout)
        self.endpoint = endpoint
        self.supports_logprobs = (endpoint == "completions" if supports_logprobs is None
                                  else bool(supports_logprobs))
        self.supports_generate = True
        self.applies_chat_template = endpoint == "chat"

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/{path}"
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", errors="replace")
            raise RuntimeError(f"{url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionError(f"cannot reach {url}: {reason}") from None
        try:
            data = json.loads(raw)
        except ValueError:
            raise ValueError(f"{url} did not return JSON: {raw[:200]!r}") from None
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            # the server's reply, not the caller's argument, is malformed: a value error
            raise ValueError(  # noqa: TRY004
                f"{url} returned JSON without a 'choices' list: {str(data)[:200]}")
        return data

    @staticmethod
    def _sampling(max_new_tokens: int, temperature: float, top_p: float, n: int,
                  stop: Sequence[str] | None, seed: int | None) -> dict[str, Any]:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        body: dict[str, Any] = {"max_tokens": int(max_new_tokens), "temperature": temperature,
                                "top_p": top_p, "n": n}
        if stop:
            body["stop"] = list(stop)
        if seed is not None:
            body["seed"] = int(seed)
        return body

    def chat(self, conversations: Sequence[Sequence[Mapping[str, str]]], max_new_tokens: int,
             *, temperature: float = 0.0, top_p: float = 1.0, n: int = 1,
             stop: Sequence[str] | None = None, seed: int | None = None) -> list[list[str]]:
        """``n`` assistant replies to every conversation through ``/v1/chat/completions``
        (one request per conversation): ``out[i][j]`` is the j-th reply to conversations[i].
        A conversation is a non-empty list of ``{"role": "system" | "user" | "assistant",
        "content": str}`` messages; the server applies the model's chat template."""
        convs = _check_conversations(conversations)
        sampling = self._sampling(max_new_tokens, temperature, top_p, n, stop, seed)
        url = f"{self.base_url}/chat/completions"
        out: list[list[str]] = []
        for messages in convs:
            choices = self._post("chat/completions",
                                 {"model": self.model, "messages": messages, **sampling})["choices"]
            try:
                ordered = sorted(choices, key=lambda ch: int(ch.get("index", 0)))
                replies = [str(ch["message"]["content"] or "") for ch in ordered]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise ValueError(f"{url} returned malformed choices (no message content)"
                                 ) from None
            if len(replies) != n:
                raise ValueError(f"{url} returned {len(replies)} choices for n={n}")
            out.append(replies)
        return out

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` completions of every prompt: ``out[i][j]`` is the j-th text for prompts[i].
        With ``endpoint="chat"`` each prompt is sent as one user message (:meth:`chat`)."""
        if isinstance(prompts, str):
            raise TypeError("prompts must be a sequence of str, not one str")
        prompts = list(prompts)
        if not prompts or not all(isinstance(p, str) for p in prompts):
            raise ValueError("prompts must be a non-empty sequence of strings")
        sampling = self._sampling(max_new_tokens, temperature, top_p, n, stop, seed)
        if self.endpoint == "chat":
            return self.chat([[{"role": "user", "content": p}] for p in prompts],
                             max_new_tokens, temperature=temperature, top_p=top_p, n=n,
                             stop=stop, seed=seed)
        body: dict[str, Any] = {"model": self.model, "prompt": prompts, **sampling}
        choices = self._post("completions", body)["choices"]
        out: list[list[str]] = [[] for _ in prompts]
        try:
            for k, ch in enumerate(choices):
                i = int(ch.get("index", k)) // n
                out[i].append(str(ch["text"]))
        except (KeyError, TypeError, ValueError, IndexError):
            raise ValueError(f"{self.base_url}/completions returned malformed choices") from None
        if any(len(o) != n for o in out):
            raise ValueError(f"{self.base_url}/completions returned {len(choices)} choices for "
                             f"{len(prompts)} prompts x n={n}")
        return out

    def logprobs(self, prompt: str, continuation: str) -> list[float]:
        """Log-probabilities of the continuation's tokens after ``prompt`` (the server's own
        tokenisation: tokens whose text starts at or after the end of ``prompt``)."""
        if not self.supports_logprobs:
            raise NotImplementedError(f"{self.base_url} is configured without log-probabilities;"
                                      f" scoring needs a backend that returns them")
        if not isinstance(prompt, str) or not isinstance(continuation, str) or not continuation:
            raise ValueError("prompt and a non-empty continuation must be strings")
        ch = self._post("completions", {"model": self.model, "prompt": prompt + continuation,
                                        "max_tokens": 0, "echo": True, "logprobs": 1,
                                        "temperature": 0.0})["choices"]
        lp = ch[0].get("logprobs") if ch and isinstance(ch[0], dict) else None
        if not lp or lp.get("token_logprobs") is None or lp.get("text_offset") is None:
            raise NotImplementedError(f"{self.base_url} returned no token log-probabilities "
                                      f"(echo + logprobs unsupported?)")
        start = len(prompt)
        vals = [v for v, off in zip(lp["token_logprobs"], lp["text_offset"]) if off >= start]
        if not vals or any(v is None for v in vals):
            raise ValueError(f"{self.base_url} returned no log-probability for the continuation")
        return [float(v) for v in vals]
