"""A tiny OpenAI-compatible server for tests (aiohttp, no model), and a stdlib streaming client.

The fake streams ``/v1/completions`` and ``/v1/chat/completions``: ``FIRST_TOKEN_S`` before the first
token, ``TOKEN_S`` between tokens, ``usage`` in the last event, then ``[DONE]``; its reply is a function of
the whole prompt (salt included), as a real model's is; 404 for a model other than ``fake``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

from aiohttp import web

FIRST_TOKEN_S = 0.4
TOKEN_S = 0.05
TOKENS = 8
WORDS = (" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta", " iota", " kappa")
SALT_A = "9f3c2a7b1e4d8c60"
SALT_B = "0123456789abcdef"


def reply_words(prompt: str, count: int) -> list[str]:
    """The fake model's reply: a function of the whole prompt (salt included), as a real model's is."""
    digest = hashlib.sha256(prompt.encode()).digest()
    return [WORDS[digest[i] % len(WORDS)] for i in range(count)]


def prompt_of(body: dict) -> str:
    return body["prompt"] if "prompt" in body else json.dumps(body["messages"])


def event(text: str, chat: bool) -> dict:
    choice: dict[str, object] = {"index": 0, "finish_reason": None}
    choice.update({"delta": {"content": text}} if chat else {"text": text})
    return {"id": "fake-1", "object": "chunk", "model": "fake", "choices": [choice]}


async def fake_reply(request: web.Request) -> web.StreamResponse:
    """A streaming OpenAI server: FIRST_TOKEN_S before the first token, TOKEN_S between tokens, usage in
    the last event, then ``[DONE]``; 404 for a model other than ``fake``."""
    body = await request.json()
    if body.get("model") != "fake":
        return web.json_response({"error": {"message": "no such model"}}, status=404)
    chat = request.path.endswith("chat/completions")
    words = reply_words(prompt_of(body), int(body.get("max_tokens", TOKENS)))
    usage = {"prompt_tokens": 7, "completion_tokens": len(words), "total_tokens": 7 + len(words)}
    await asyncio.sleep(FIRST_TOKEN_S)
    if not body.get("stream"):
        text = "".join(words)
        message = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
        choice = {"index": 0, "finish_reason": "length", **message}
        return web.json_response({"choices": [choice], "usage": usage})
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for i, word in enumerate(words):
        if i:
            await asyncio.sleep(TOKEN_S)
        await response.write(f"data: {json.dumps(event(word, chat))}\n\n".encode())
    last = event("", chat) | {"usage": usage}
    last["choices"][0]["finish_reason"] = "length"
    await response.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
    await response.write_eof()
    return response


@dataclass(slots=True)
class Upstream:
    url: str
    calls: list[str]


@contextlib.contextmanager
def fake_upstream() -> Iterator[Upstream]:
    """The fake upstream on a free loopback port, served from a thread with its own loop."""
    calls: list[str] = []

    async def counted(request: web.Request) -> web.StreamResponse:
        calls.append(request.path)
        return await fake_reply(request)

    async def health(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/completions", counted)
    app.router.add_post("/v1/chat/completions", counted)
    app.router.add_get("/health", health)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner = web.AppRunner(app, access_log=None)

    async def serve() -> int:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return int(runner.addresses[0][1])

    port = asyncio.run_coroutine_threadsafe(serve(), loop).result(timeout=30)
    yield Upstream(f"http://127.0.0.1:{port}", calls)
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=30)


@dataclass(slots=True)
class Reply:
    """A streamed reply as a client saw it: each event's payload and arrival (s after the send)."""

    events: list[dict]
    arrivals_s: list[float]
    done: bool
    duration_s: float

    @property
    def texts(self) -> list[str]:
        return [text_of(e) for e in self.events if e.get("choices") and text_of(e)]

    @property
    def usage(self) -> dict:
        return next(e["usage"] for e in reversed(self.events) if e.get("usage"))


def text_of(event: dict) -> str:
    choice = event["choices"][0]
    return choice.get("text") or (choice.get("delta") or {}).get("content") or ""


def post(url: str, body: dict, chat: bool = False) -> urllib.request.Request:
    path = "/v1/chat/completions" if chat else "/v1/completions"
    return urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})


def stream(url: str, prompt: str, chat: bool = False, model: str = "fake", max_tokens: int = TOKENS) -> Reply:
    body: dict = {"model": model, "max_tokens": max_tokens, "stream": True}
    body |= {"messages": [{"role": "user", "content": prompt}]} if chat else {"prompt": prompt}
    return read(post(url, body, chat))


def read(request: urllib.request.Request) -> Reply:
    """Send ``request`` and read its SSE reply line by line, timing each event's arrival."""
    events, arrivals, done = [], [], False
    sent = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as reply:
        for raw in iter(reply.readline, b""):
            line = raw.decode().strip()
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                events.append(json.loads(line[6:]))
                arrivals.append(time.perf_counter() - sent)
    return Reply(events, arrivals, done, time.perf_counter() - sent)


def whole_reply(url: str, prompt: str, chat: bool = False) -> dict:
    body: dict = {"model": "fake", "max_tokens": TOKENS}
    body |= {"messages": [{"role": "user", "content": prompt}]} if chat else {"prompt": prompt}
    with urllib.request.urlopen(post(url, body, chat), timeout=30) as reply:
        return json.loads(reply.read())


def prompt(salt: str, question: str = "What is the capital of France?") -> str:
    return f"<|im_start|>system\nYou are helpful.\n{salt}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
