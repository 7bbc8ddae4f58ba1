"""A stdlib OpenAI-style streaming server for the endpoint client's tests: each ``mode`` is one kind
of server (honest, 401, not streaming, dying mid-stream, a filler first chunk, wrong model, a reply
cache that strips the salt); ``delay_s`` holds each reply back that long before its first chunk, and
``serial`` serves one request at a time (a server with a capacity of 1 / ``delay_s`` requests/s);
``gap_s`` spaces the chunks of a reply (its inter-token latency)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PIECES = ("Hello", " world", ",", " how", " are", " you")


def _chunk(piece: str, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": finish}]}
    if usage is not None:
        chunk["usage"] = usage
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        return

    def do_GET(self) -> None:
        owner = {"owned_by": self.server.owner} if self.server.owner else {}
        body = json.dumps({"data": [{"id": m, **owner} for m in self.server.models]}).encode()
        self._send(200, "application/json", body)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(request)
        mode = self.server.mode
        if self.server.key and self.headers.get("Authorization") != f"Bearer {self.server.key}":
            given = self.headers.get("Authorization", "").encode()
            return self._send(401, "application/json", b'{"error": "invalid api key: ' + given + b'"}\n')
        if mode == "cache" and self._cached(request):
            pass  # a reply cache that strips the salt's hex digits: seen content answers at once
        elif mode == "cache":
            time.sleep(0.2)
        if mode == "json":
            return self._send(200, "application/json", b'{"choices": [{"text": "Hello"}]}')
        with self.server.lock if self.server.serial else contextlib.nullcontext():
            time.sleep(self.server.delay_s)
            self._stream(mode)

    def _stream(self, mode: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = (" ", *PIECES) if mode == "filler" else PIECES
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            if mode == "die" and i == 2:
                return  # the connection closes without a finish_reason
            usage = (
                {"prompt_tokens": 7, "completion_tokens": self.server.usage or len(pieces)} if last else None
            )
            if i and self.server.gap_s:
                time.sleep(self.server.gap_s)
            self.wfile.write(_chunk(piece, "length" if last else None, usage))
            self.wfile.flush()
        if mode != "nodone":
            self.wfile.write(b"data: [DONE]\n\n")

    def _cached(self, request: dict[str, Any]) -> bool:
        key = re.sub(r"[0-9a-f]{8,}", "", json.dumps(request.get("messages") or request.get("prompt")))
        seen = key in self.server.seen
        self.server.seen.add(key)
        return seen

    def _send(self, code: int, kind: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mode = "ok"
    key = ""
    models: tuple[str, ...] = ("tiny-llama",)
    owner = ""
    usage = 0
    delay_s = 0.0
    gap_s = 0.0
    serial = False
    lock: threading.Lock
    bodies: list[dict[str, Any]]
    seen: set[str]


@contextmanager
def stub(
    mode: str = "ok",
    key: str = "",
    models: tuple[str, ...] = ("tiny-llama",),
    usage: int = 0,
    delay_s: float = 0.0,
    serial: bool = False,
    gap_s: float = 0.0,
    owner: str = "",
) -> Iterator[str]:
    """A running stub server; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.mode, server.key, server.models, server.usage, server.bodies = mode, key, models, usage, []
    server.seen, server.delay_s, server.serial, server.lock = set(), delay_s, serial, threading.Lock()
    server.gap_s, server.owner = gap_s, owner
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
