"""A stdlib chat server with a prefix cache, for the forbidden-reuse audits' tests (issue 44 scope 3).

Every mode keeps an honest prefix cache: a request costs ``base_s`` plus ``per_char_s`` for each
character of its rendered conversation past the longest prefix it shares with an earlier request (the
time a server with prefix caching takes: reuse within a session's own history is free). The reply is
a function of the whole conversation (six words drawn from its hash), as a greedy model's is. The
dishonest modes answer at once from a reply cache:
- ``salt-blind``: keyed on the conversation with every run of 8+ hex digits stripped (a cache that
  reuses across sessions and passes);
- ``replay``: keyed on the ``X-Session-ID`` and the number of messages (a server that replays the
  stored reply to a turn whose history changed).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORDS = ("read", "the", "file", "then", "run", "tests", "grep", "for", "it", "fix", "done", "ok")
HONEST, SALT_BLIND, REPLAY = "honest", "salt-blind", "replay"


def reply_of(text: str) -> list[str]:
    """The six pieces of the reply to a rendered conversation."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(" " if i else "") + WORDS[b % len(WORDS)] for i, b in enumerate(digest[:6])]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        return

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = request["messages"]
        text = json.dumps(messages)
        key = self._key(messages)
        with self.server.lock:
            stored = self.server.replies.get(key) if key else None
            seen = self.server.texts if stored is None else []
            reused = max((_common(text, earlier) for earlier in seen), default=0)
            self.server.texts.append(text)
        if stored is None:
            time.sleep(self.server.base_s + self.server.per_char_s * (len(text) - reused))
        pieces = (stored or reply_of(text))[: int(request.get("max_tokens", 6))]  # max_tokens held
        if key and stored is None:
            with self.server.lock:
                self.server.replies[key] = pieces
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            delta = {
                "choices": [
                    {"index": 0, "delta": {"content": piece}, "finish_reason": "length" if last else None}
                ]
            }
            if last:
                delta["usage"] = {"prompt_tokens": len(text.split()), "completion_tokens": len(pieces)}
            self.wfile.write(f"data: {json.dumps(delta)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")

    def _key(self, messages: list[dict[str, str]]) -> str:
        if self.server.mode == SALT_BLIND:
            return re.sub(r"[0-9a-f]{8,}", "", json.dumps(messages))
        if self.server.mode == REPLAY:
            return f"{self.headers.get('X-Session-ID', '')}/{len(messages)}"
        return ""


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a bisection of slice comparisons: a
    character loop under the lock made a long shared prefix cost the stub's hits tens of ms)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mode = HONEST
    base_s = 0.02
    per_char_s = 2e-5
    lock: threading.Lock
    texts: list[str]
    replies: dict[str, Any]


@contextmanager
def session_stub(mode: str = HONEST, base_s: float = 0.02, per_char_s: float = 2e-5) -> Iterator[str]:
    """A running server of ``mode``; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.mode, server.base_s, server.per_char_s = mode, base_s, per_char_s
    server.lock, server.texts, server.replies = threading.Lock(), [], {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
