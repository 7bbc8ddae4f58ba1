"""A stdlib chat server with a prefix cache, for the forbidden-reuse audits' tests (issue 44 scope 3).

Every mode keeps an honest prefix cache: a request costs ``base_s`` plus ``per_char_s`` for each
character of its rendered conversation past the longest prefix it shares with an earlier request (the
time a server with prefix caching takes: reuse within a session's own history is free). The reply is
a function of the whole conversation (six words drawn from its hash), as a greedy model's is. The
dishonest modes answer at once from a reply cache:
- ``salt-blind``: keyed on the conversation with every run of 8+ hex digits stripped (a cache that
  reuses across sessions and passes);
- ``replay``: keyed on the ``X-Session-ID`` and the number of messages (a server that replays the
  stored reply to a turn whose history changed);
- ``salt-blind-shy``: the salt-blind cache, except that a request of a session it has not seen carrying
  more than one user message is answered honestly and not stored: it spares the shape of stop 54's copied
  probe (a fresh session with a history, which no timed turn has) and replays everything else;
- ``audit-cheap``: the honest cache, except that a request it can tell from a session's turn (a fresh
  session whose first request carries a history: an altered pair's control; a session's request that
  does not extend the session's last one: an altered probe) is answered at once with filler: it frees
  the audits' slots and gains their tokens, and no timing audit sees it (probe and control alike fast).

``audited_ladder`` runs a ladder as the sessions cell does (``sessions.cell``: the warm-up session, then
each point with its audit pairs and decoys), against one of them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from accelbench.endpoint.client import Target
from accelbench.sessions.cell import run_ladder, warm_up
from accelbench.sessions.driver import Counters
from accelbench.sessions.load import Load, Opening
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.source import Source
from accelbench.sessions.workload import Session

WORDS = ("read", "the", "file", "then", "run", "tests", "grep", "for", "it", "fix", "done", "ok")
HONEST, SALT_BLIND, REPLAY, SHY = "honest", "salt-blind", "replay", "salt-blind-shy"
CHEAP = "audit-cheap"
PLANTED = (
    (HONEST, ()),
    (SALT_BLIND, ("copied_session",)),
    (SHY, ("copied_session",)),
    (REPLAY, ("altered_history",)),
)
"""Each mode and the audits that must catch it (none: the honest prefix cache passes both)."""


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
        if self.server.mode == CHEAP and self._audit_shaped(messages):
            self._stream([" ok"] * int(request.get("max_tokens", 6)), text)
            return
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
        self._stream(pieces, text)

    def _stream(self, pieces: Sequence[str], text: str) -> None:
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

    def _audit_shaped(self, messages: list[dict[str, str]]) -> bool:
        """A request that is not the next turn of a session this server follows (``audit-cheap``)."""
        session = self.headers.get("X-Session-ID", "")
        with self.server.lock:
            last = self.server.histories.get(session)
            if last is None and sum(m["role"] == "user" for m in messages) > 1:
                return True  # a fresh session with a history
            if last is not None and messages[: len(last)] != last:
                return True  # not the session's next turn: an edited history
            self.server.histories[session] = messages
        return False

    def _key(self, messages: list[dict[str, str]]) -> str:
        if self.server.mode == SHY:
            session = self.headers.get("X-Session-ID", "")
            with self.server.lock:
                fresh = session not in self.server.sessions
                self.server.sessions.add(session)
            if fresh and sum(m["role"] == "user" for m in messages) > 1:
                return ""  # the shape of an audit: answered honestly
        if self.server.mode in (SALT_BLIND, SHY):
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
    sessions: set[str]
    histories: dict[str, list[dict[str, str]]]


@contextmanager
def session_stub(mode: str = HONEST, base_s: float = 0.02, per_char_s: float = 2e-5) -> Iterator[str]:
    """A running server of ``mode``; yields its base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.mode, server.base_s, server.per_char_s = mode, base_s, per_char_s
    server.lock, server.texts, server.replies, server.sessions = threading.Lock(), [], {}, set()
    server.histories = {}
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def audited_ladder(
    url: str,
    passes: Mapping[Load, Sequence[Session]],
    warm: Sequence[Session],
    counters: Counters,
    folder: Path,
    openings: Mapping[Load, Opening] | None = None,
) -> list[TurnRecord]:
    """Every turn of the ladder ``passes`` (each point's sessions) run as the cell runs it against the
    server at ``url``: the warm-up pass ``warm`` whole, then each point with its altered-history pairs and
    its copied-session decoys (``sessions.cell.run_ladder``), 6 tokens a reply."""
    source = Source(
        passes={load: tuple(sessions) for load, sessions in passes.items()},
        workload="test",
        turns=max(len(s.turns) for sessions in passes.values() for s in sessions),
        max_tokens=6,
        delay_s=(0.0, 0.02),
        openings=openings or {},
        warm=tuple(warm),
    )
    target = Target(url, "stub", timeout_s=30.0)
    warm_up(target, source, counters)
    return run_ladder(target, source, 6, counters, folder / "turns.jsonl")[1]
