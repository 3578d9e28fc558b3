"""The OpenAI-compatible client against a stub server started here on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from iclr24.kits.language_models.openai_client import OpenAICompatibleClient


class _Stub(BaseHTTPRequestHandler):
    mode = "ok"
    seen: ClassVar[list] = []

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass

    def _answer(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.seen.append((self.path, body, self.headers.get("Authorization")))
        mode = _Stub.mode
        if mode == "slow":
            time.sleep(2)
        if mode == "500":
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"model crashed")
            return
        chat = self.path.endswith("/chat/completions")
        if mode == "chatonly" and not chat:  # a chat-only server has no /v1/completions
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"not found")
            return
        if mode == "garbage":
            payload = b"<html>not json</html>"
        elif chat:
            # the reply names the roles it saw and echoes the last message, choices reversed
            # (clients must order them by index)
            roles = ",".join(m["role"] for m in body["messages"])
            last = body["messages"][-1]["content"]
            choices = [{"index": j, "message": {"role": "assistant",
                                                "content": f"{roles}:{last}|{j}"}}
                       for j in reversed(range(body["n"]))]
            if mode == "nocontent":
                choices = [{"index": 0, "text": "legacy"}]
            payload = json.dumps({"choices": choices}).encode()
        elif body.get("echo"):
            text = body["prompt"]
            offs = list(range(0, len(text), 4))  # 4-character "tokens"
            lp = None if mode == "nologprobs" else {
                "token_logprobs": [None] + [-0.5] * (len(offs) - 1), "text_offset": offs}
            payload = json.dumps({"choices": [{"text": text, "index": 0, "logprobs": lp}]}
                                 ).encode()
        else:
            prompts = body["prompt"]
            choices = [{"text": f"{p}|{j}", "index": i * body["n"] + j}
                       for i, p in enumerate(prompts) for j in range(body["n"])]
            payload = json.dumps({"choices": choices}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()


def test_generate_groups_n_choices_per_prompt(server):
    _Stub.mode, _Stub.seen = "ok", []
    c = OpenAICompatibleClient(server, "tiny", api_key="k")
    out = c.generate(["a", "b"], 5, n=3, stop=["\n"], seed=7)
    assert out == [["a|0", "a|1", "a|2"], ["b|0", "b|1", "b|2"]]
    path, body, auth = _Stub.seen[-1]
    assert path == "/v1/completions" and auth == "Bearer k"
    assert body["max_tokens"] == 5 and body["stop"] == ["\n"] and body["seed"] == 7


def test_logprobs_of_the_continuation_only(server):
    _Stub.mode = "ok"
    c = OpenAICompatibleClient(server, "tiny")
    assert c.logprobs("abcdefgh", "ijklmnop") == [-0.5, -0.5]  # tokens at offsets 8 and 12
    _Stub.mode = "nologprobs"
    with pytest.raises(NotImplementedError, match="no token log-probabilities"):
        c.logprobs("abcd", "efgh")
    with pytest.raises(NotImplementedError, match="without log-probabilities"):
        OpenAICompatibleClient(server, "tiny", supports_logprobs=False).logprobs("a", "b")


def test_http_errors_malformed_json_timeouts_and_unreachable_servers(server):
    c = OpenAICompatibleClient(server, "tiny", timeout=0.5)
    _Stub.mode = "500"
    with pytest.raises(RuntimeError, match=r"HTTP 500: model crashed"):
        c.generate(["a"], 3)
    _Stub.mode = "garbage"
    with pytest.raises(ValueError, match="did not return JSON"):
        c.generate(["a"], 3)
    _Stub.mode = "slow"
    with pytest.raises(ConnectionError, match="cannot reach"):
        c.generate(["a"], 3)
    _Stub.mode = "ok"
    dead = OpenAICompatibleClient("http://127.0.0.1:9/v1", "tiny", timeout=2)
    with pytest.raises(ConnectionError, match=r"127\.0\.0\.1:9/v1/completions"):
        dead.generate(["a"], 3)
    with pytest.raises(ValueError, match="base_url"):
        OpenAICompatibleClient("localhost:8000", "tiny")
    with pytest.raises(ValueError, match="prompts"):
        c.generate([], 3)


def test_chat_endpoint_sends_messages_and_orders_choices(server):
    """A chat-only server: generate() goes to /chat/completions with one user message per
    prompt, chat() sends whole conversations, replies come back in index order."""
    _Stub.mode, _Stub.seen = "chatonly", []
    c = OpenAICompatibleClient(server, "tiny", api_key="k", endpoint="chat")
    assert c.applies_chat_template and not c.supports_logprobs
    out = c.generate(["a", "b"], 5, n=2, stop=["\n"], seed=3)
    assert out == [["user:a|0", "user:a|1"], ["user:b|0", "user:b|1"]]
    assert [p for p, _, _ in _Stub.seen] == ["/v1/chat/completions"] * 2
    _, body, auth = _Stub.seen[-1]
    assert body["messages"] == [{"role": "user", "content": "b"}] and auth == "Bearer k"
    assert body["max_tokens"] == 5 and body["stop"] == ["\n"] and body["seed"] == 3
    assert "prompt" not in body
    conv = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}, {"role": "user", "content": "again"}]
    assert c.chat([conv], 4) == [["system,user,assistant,user:again|0"]]
    # the legacy endpoint is what a chat-only server lacks: the default client says so
    with pytest.raises(RuntimeError, match=r"completions answered HTTP 404"):
        OpenAICompatibleClient(server, "tiny").generate(["a"], 3)
    with pytest.raises(NotImplementedError, match="without log-probabilities"):
        c.logprobs("a", "b")
    _Stub.mode = "nocontent"
    with pytest.raises(ValueError, match="no message content"):
        c.chat([conv], 4)
    _Stub.mode = "ok"


def test_chat_bad_inputs_name_the_argument(server):
    c = OpenAICompatibleClient(server, "tiny", endpoint="chat")
    with pytest.raises(ValueError, match="endpoint"):
        OpenAICompatibleClient(server, "tiny", endpoint="responses")
    with pytest.raises(TypeError, match="conversations"):
        c.chat("hello", 3)
    with pytest.raises(TypeError, match="conversations"):
        c.chat([{"role": "user", "content": "hi"}], 3)  # one conversation, not a list of them
    with pytest.raises(ValueError, match="conversations must be non-empty"):
        c.chat([], 3)
    with pytest.raises(TypeError, match=r"conversations\[0\]"):
        c.chat([[]], 3)
    with pytest.raises(ValueError, match=r"conversations\[0\]\[0\]\['role'\]"):
        c.chat([[{"role": "robot", "content": "hi"}]], 3)
    with pytest.raises(TypeError, match=r"conversations\[0\]\[1\]"):
        c.chat([[{"role": "user", "content": "hi"}, {"role": "user", "content": 3}]], 3)
    with pytest.raises(ValueError, match="n must be"):
        c.chat([[{"role": "user", "content": "hi"}]], 3, n=0)
    with pytest.raises(TypeError, match="not one str"):
        c.generate("abc", 3)
    # an explicit supports_logprobs still wins over the endpoint's default
    assert OpenAICompatibleClient(server, "t", endpoint="chat", supports_logprobs=True
                                  ).supports_logprobs
