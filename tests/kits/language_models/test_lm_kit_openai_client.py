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
        if mode == "garbage":
            payload = b"<html>not json</html>"
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
