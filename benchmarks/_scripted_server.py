"""A server whose timing is known: every streamed reply holds its first token back ``ttft_s`` and spaces
the next ones ``tpot_s`` apart, whatever the load (a thread a request, sleeping), so a client's TTFT and
TPOT can be checked against the truth instead of against another client on a server whose speed moves
between runs (``llm_endpoint_agreement.py --server scripted``).

OpenAI-compatible on loopback: ``GET /v1/models`` and ``/health``; ``POST /v1/completions`` and
``/v1/chat/completions``, streamed (server-sent events), ``max_tokens`` pieces of ``PIECE`` (one token of
SmolLM2's tokenizer each, so a client counting the text with the model's tokenizer counts
``max_tokens``), the last with ``finish_reason`` ``length`` and the usage, then ``[DONE]``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PIECE = " the"
DEFAULT_TOKENS = 16


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        body = json.dumps({"object": "list", "data": [{"id": self.server.model, "object": "model"}]})
        self._send(200, "application/json", body.encode())

    def do_POST(self) -> None:
        arrived_s = time.monotonic()
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        chat = self.path.rstrip("/").endswith("chat/completions")
        tokens = max(
            1, int(request.get("max_tokens") or request.get("max_completion_tokens") or DEFAULT_TOKENS)
        )
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for i in range(tokens):
            due_s = arrived_s + self.server.ttft_s + i * self.server.tpot_s
            time.sleep(max(0.0, due_s - time.monotonic()))
            last = i == tokens - 1
            usage = (
                {"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens} if last else None
            )
            self.wfile.write(_event(PIECE, chat, "length" if last else None, usage))
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _event(piece: str, chat: bool, finish: str | None, usage: dict[str, int] | None) -> bytes:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    choice |= {"delta": {"content": piece}} if chat else {"text": piece}
    chunk: dict[str, Any] = {
        "object": "chat.completion.chunk" if chat else "text_completion",
        "choices": [choice],
    }
    if usage is not None:
        chunk["usage"] = usage
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model = ""
    ttft_s = 0.0
    tpot_s = 0.0


@contextmanager
def scripted_server(model: str, ttft_s: float, tpot_s: float) -> Iterator[str]:
    """A running scripted server serving ``model`` on loopback; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.model, server.ttft_s, server.tpot_s = model, ttft_s, tpot_s
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
