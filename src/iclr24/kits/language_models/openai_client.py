"""A client for OpenAI-compatible completion servers (vLLM, llama.cpp's server, text-generation-
inference, LM Studio...), so the evaluation harnesses run against a model served elsewhere.

Only the legacy ``/v1/completions`` endpoint is used: it takes raw prompt text (the harnesses
build their own prompts and templates) and, with ``echo`` and ``logprobs``, scores a given
continuation. Standard library only (``urllib``); every request has a timeout. Errors name the
URL: an unreachable server raises ``ConnectionError``, an HTTP error status ``RuntimeError``
with the status and the start of the body, a reply that is not the expected JSON
``ValueError``; scoring against a server that returns no log-probabilities raises
``NotImplementedError`` (check :attr:`OpenAICompatibleClient.supports_logprobs` first).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

__all__ = ["OpenAICompatibleClient"]


class OpenAICompatibleClient:
    """base_url: the server root, e.g. ``http://127.0.0.1:8000/v1``; model: the served name.
    supports_logprobs: whether the server returns token log-probabilities (most local
    servers do; set False to make :meth:`logprobs` refuse before any request)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = 60.0, supports_logprobs: bool = True) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise ValueError("model must be the served model's name")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.api_key, self.timeout = api_key, float(timeout)
        self.supports_logprobs = supports_logprobs
        self.supports_generate = True

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

    def generate(self, prompts: Sequence[str], max_new_tokens: int, *, temperature: float = 0.0,
                 top_p: float = 1.0, n: int = 1, stop: Sequence[str] | None = None,
                 seed: int | None = None) -> list[list[str]]:
        """``n`` completions of every prompt: ``out[i][j]`` is the j-th text for prompts[i]."""
        prompts = list(prompts)
        if not prompts or not all(isinstance(p, str) for p in prompts):
            raise ValueError("prompts must be a non-empty sequence of strings")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int, got {n!r}")
        body: dict[str, Any] = {"model": self.model, "prompt": prompts,
                                "max_tokens": int(max_new_tokens), "temperature": temperature,
                                "top_p": top_p, "n": n}
        if stop:
            body["stop"] = list(stop)
        if seed is not None:
            body["seed"] = int(seed)
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
