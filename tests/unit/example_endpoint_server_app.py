"""The app of the worked example endpoint server kind ``example-echo`` (``example_endpoint_server``).

An OpenAI-compatible streaming server on the standard library's ``ThreadingHTTPServer``, loopback only, no
model: ``/health``, ``/v1/models`` and streamed ``/v1/chat/completions`` and ``/v1/completions``. A reply is
the prompt's words again, one per chunk, cycled up to ``max_tokens``; it ends after ``EARLY_EOS_WORDS``
(``finish_reason`` ``stop``) unless the request says ``ignore_eos`` (then ``length``). Run as
``python -m tests.unit.example_endpoint_server_app --model ID --port N ...`` (its command line:
``example_endpoint_server.command``); it prints the settings it was started with, and stops by itself when
its owner, the cell process, is gone (``accelbench.serving.sessions.watch_owner``).
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from accelbench.serving.process import HOST
from accelbench.serving.sessions import watch_owner

EARLY_EOS_WORDS = 3
OWNER = "example-echo"


def reply_words(body: dict[str, Any]) -> list[str]:
    """The reply to a request body: its prompt's words cycled to ``max_tokens`` (fewer without
    ``ignore_eos``)."""
    messages = body.get("messages")
    prompt = " ".join(m.get("content", "") for m in messages) if messages else str(body.get("prompt", ""))
    words = prompt.split() or ["echo"]
    count = int(body.get("max_tokens", 16))
    count = count if body.get("ignore_eos") else min(count, EARLY_EOS_WORDS)
    return [f" {words[i % len(words)]}" for i in range(count)]


def chunk(piece: str, chat: bool, finish: str | None) -> dict[str, Any]:
    """One streamed chunk of ``piece`` (a chat ``delta`` or a completion's ``text``)."""
    text: dict[str, Any] = {"delta": {"content": piece}} if chat else {"text": piece}
    return {"object": "chunk", "choices": [{"index": 0, "finish_reason": finish, **text}]}


def handler(model: str) -> type[BaseHTTPRequestHandler]:
    """The request handler of a server of ``model``."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/health":
                return self._json(200, {"status": "ok"})
            if self.path == "/v1/models":
                return self._json(200, {"data": [{"id": model, "owned_by": OWNER}]})
            return self._json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body.get("model") != model:
                return self._json(404, {"error": {"message": f"no model {body.get('model')!r}"}})
            chat = self.path.endswith("/chat/completions")
            words = reply_words(body)
            finish = "length" if body.get("ignore_eos") else "stop"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i, word in enumerate(words):
                self._event(chunk(word, chat, finish if i == len(words) - 1 else None))
            self._event({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": len(words)}})
            self.wfile.write(b"data: [DONE]\n\n")

        def _event(self, data: dict[str, Any]) -> None:
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def _json(self, code: int, data: dict[str, Any]) -> None:
            payload = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one line a request would be the log's whole size."""

    return Handler


def main(argv: list[str]) -> None:
    """Serve until SIGTERM or until the owner is gone."""
    parser = argparse.ArgumentParser(description="example-echo: an OpenAI-compatible stand-in on loopback")
    for option in ("--port", "--max-concurrency", "--max-tokens", "--threads", "--owner"):
        parser.add_argument(option, type=int, required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((HOST, args.port), handler(args.model))
    server.daemon_threads = True
    watch_owner(args.owner, server.shutdown)
    started = {"model": args.model, "max_concurrency": args.max_concurrency, "max_tokens": args.max_tokens}
    print(f"example-echo ready: {json.dumps({**started, 'threads': args.threads})}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
