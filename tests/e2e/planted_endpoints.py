"""Planted dishonest OpenAI-compatible servers: a proxy in front of any upstream OpenAI endpoint that
cheats the way a vendor who read accelbench's code would (issue 31, item 5). Run as

    python tests/e2e/planted_endpoints.py --upstream http://127.0.0.1:8000 --mode cache --port 9000

or from a test with ``with planted_endpoint(upstream_url, "filler") as proxy: ... proxy.url``.

Modes (``/v1/completions`` and ``/v1/chat/completions``; every other path is passed through):

* ``honest``: plain pass-through; a streamed reply goes on event by event as the upstream sends it.
* ``cache``: a reply cache keyed on the request with every run of >= 8 hex digits removed from the
  prompt (so any hex salt is ignored); a hit replays the stored events at once, without the upstream.
* ``cache-long``: the same cache, replayed only to a request whose ``max_tokens`` is the longest seen
  so far (the curve's): a shorter one, shaped like the repeat audit's requests before they took the
  curve's ``max_tokens``, goes to the upstream (the cache hidden from an audit told by its length).
* ``filler``: a streamed reply starts at once with an event whose text is only whitespace, then the
  upstream's reply follows (a fake first token that stops a naive TTFT clock early).
* ``pad``: each reply gets ``PAD_REPEATS`` x the upstream's output tokens of a repeated filler token
  appended (sent at once), and ``usage`` is raised by as many tokens (inflated output tokens/s).

The request-counting pads (issue 40 item 5): a reply it pads keeps the upstream's first quarter of
``max_tokens`` (at least one token), then leaves the upstream and sends the filler token up to
``max_tokens`` at once, ``usage`` saying ``max_tokens``: never longer than asked, the client's count
agrees, and the reply costs a quarter of the decode. A *point* begins with a request that arrives
after ``POINT_GAP_S`` with nothing in flight; the index of a request is its place since then. Which
replies it pads (the rest go through honestly; streamed requests only):

* ``count-pad``: all but those shaped like audits (``max_tokens`` <= ``AUDIT_TOKENS`` with nothing
  else in flight) and the first ``COUNT_HONEST`` of each point (the replies the accuracy check used to
  judge): the cheat that topped issue 40's try, 4.9-5.6x the honest output tokens/s.
* ``pad-late``: replies of requests that arrive ``LATE_S`` or more after their point began.
* ``pad-busy``: replies of requests that arrive while another is in flight (concurrency > 1).
* ``pad-after``: replies past the first ``PAD_AFTER`` of each point.

The place-finding caches (issue 40: the repeat audit's pairs moved into the curve's points): the
``cache`` above, every reply stored, but a stored reply replayed only to requests at the places the
repeat audit's requests had, or might have (elsewhere the request goes to the upstream):

* ``cache-busy``: only to a request that arrives while another is in flight (the audit's requests went
  alone, at concurrency 1, after the curve).
* ``cache-late``: only from the ``COUNT_HONEST``-th request of a point on (the first requests after a
  pause are answered honestly).
* ``cache-early``: only to the first ``COUNT_HONEST`` of a point (the tail of a point, where audit
  requests after the curve would have come, answered honestly).
* ``cache-peak``: only to a request that arrives with ``PEAK_OTHERS`` or more others in flight: the top
  of a ladder that reaches 4 (a vendor knows the suite's ladder), where the curve's figures peak, and
  only the audit's pairs placed there (a share of the cell's pairs too small for the median rule).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import copy
import json
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

COUNTING = ("count-pad", "pad-late", "pad-busy", "pad-after")
PLACING = ("cache-busy", "cache-late", "cache-early", "cache-peak")
CACHING = ("cache", "cache-long", *PLACING)
MODES = ("honest", *CACHING, "filler", "pad", *COUNTING)
GENERATION_PATHS = ("/v1/completions", "/v1/chat/completions")
SALT = re.compile(r"[0-9a-fA-F]{8,}")
"""What the cache ignores: a run of 8 or more hex digits (a salt drawn as hex)."""
FILLER_TEXT = " "
PAD_TEXT = " the"
"""One token in SmolLM2's tokenizer (and most BPE vocabularies)."""
PAD_REPEATS = 1
"""Filler tokens appended per upstream output token: 1 doubles every reply."""
AUDIT_TOKENS = 8
COUNT_HONEST = 4
PAD_AFTER = 1
PEAK_OTHERS = 3
LATE_S = 1.0
POINT_GAP_S = 0.05
UPSTREAM_TIMEOUT_S = 600.0
HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}


@dataclass(slots=True)
class ProxyState:
    """What the proxy did (read by tests): requests seen, upstream calls, cache hits."""

    upstream: str
    mode: str
    requests: int = 0
    upstream_calls: int = 0
    cache_hits: int = 0
    cache: dict[str, list[bytes]] = field(default_factory=dict)
    """Stored replies: the key -> the raw SSE events (streamed) or the one JSON body (not streamed)."""
    padded: int = 0
    """Replies a request-counting mode padded (``COUNTING``)."""
    kept_honest: int = 0
    """Streamed replies a request-counting mode let through unchanged."""
    in_flight: int = 0
    idle_since_s: float = 0.0
    point_started_s: float = 0.0
    point_requests: int = 0
    longest_max_tokens: int = 0
    """The largest ``max_tokens`` of a request so far (``cache-long``)."""
    points: int = 0
    """The points a request-counting or place-finding mode told apart (``_arrive``)."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """What a request-counting proxy knows of a request when it arrives."""

    index: int
    """Its place since its point began (0, 1, ...)."""
    since_point_s: float
    busy: bool
    """Another request was in flight."""
    max_tokens: int
    others: int = 0
    """The requests in flight beside it."""


def pads(mode: str, arrival: Arrival) -> bool:
    """Whether the request-counting ``mode`` pads the reply to ``arrival``."""
    if mode == "count-pad":
        audit_shaped = arrival.max_tokens <= AUDIT_TOKENS and not arrival.busy
        return not audit_shaped and arrival.index >= COUNT_HONEST
    if mode == "pad-late":
        return arrival.since_point_s >= LATE_S
    if mode == "pad-busy":
        return arrival.busy
    return mode == "pad-after" and arrival.index >= PAD_AFTER


def replays(mode: str, arrival: Arrival) -> bool:
    """Whether the place-finding cache ``mode`` replays a stored reply to ``arrival``."""
    if mode == "cache-busy":
        return arrival.busy
    if mode == "cache-late":
        return arrival.index >= COUNT_HONEST
    if mode == "cache-early":
        return arrival.index < COUNT_HONEST
    return mode == "cache-peak" and arrival.others >= PEAK_OTHERS


KEYED = ("model", "prompt", "messages")
"""What the cache keys on: the prompt, not the reply's length (a shorter ``max_tokens`` gets the stored
reply cut), nor sampling or stream options."""


def cache_key(path: str, body: dict[str, Any]) -> str:
    """The prompt without its salt: hex runs of 8 or more removed from every string."""
    kept = {key: body[key] for key in KEYED if key in body}
    return path + " " + SALT.sub("", json.dumps(kept, sort_keys=True))


def _max_tokens(body: dict[str, Any]) -> int | None:
    value = body.get("max_completion_tokens", body.get("max_tokens"))
    return value if isinstance(value, int) else None


def _cut(stored: list[bytes], limit: int | None) -> list[bytes]:
    """A stored stream cut to ``limit`` text events (one per token), its closing events kept with
    ``usage`` lowered to match."""
    texts = [e for e in stored if (p := _payload(e)) and p.get("choices") and _text_of(p["choices"][0])]
    if limit is None or len(texts) <= limit:
        return stored
    kept, seen = [], 0
    for event in stored:
        payload = _payload(event)
        is_text = bool(payload and payload.get("choices") and _text_of(payload["choices"][0]))
        seen += is_text
        if is_text and seen > limit:
            continue
        if payload and payload.get("usage") and not is_text:
            event = _sse(_bumped(payload, limit - len(texts)))
        kept.append(event)
    return kept


def _text_of(choice: dict[str, Any]) -> str | None:
    """The text a choice carries (completions ``text``, chat ``delta.content`` or ``message.content``)."""
    if "text" in choice:
        return choice["text"]
    holder = choice.get("delta") or choice.get("message") or {}
    return holder.get("content")


def _with_text(event: dict[str, Any], text: str, chat: bool) -> dict[str, Any]:
    """A copy of a streamed event (ids, model, created kept) that carries only ``text``."""
    made = {key: value for key, value in event.items() if key not in ("choices", "usage", "timings")}
    choice: dict[str, Any] = {"index": 0, "finish_reason": None}
    choice.update({"delta": {"content": text}} if chat else {"text": text, "logprobs": None})
    made["choices"] = [choice]
    return made


def _sse(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def _payload(event: bytes) -> dict[str, Any] | None:
    """The JSON of an SSE event's ``data:`` lines, None for ``[DONE]``, comments and non-JSON."""
    lines = [
        line[5:].strip() for line in event.decode(errors="replace").splitlines() if line.startswith("data:")
    ]
    data = "\n".join(lines)
    if not data or data == "[DONE]":
        return None
    with contextlib.suppress(ValueError):
        parsed = json.loads(data)
        return parsed if isinstance(parsed, dict) else None
    return None


async def _events(reply: Any) -> AsyncIterator[bytes]:
    """The upstream's SSE events as they arrive (each with its blank-line end); a tail without the
    blank line at connection close is an event too."""
    pending = b""
    async for line in reply.content:
        pending += line
        if line in (b"\n", b"\r\n"):
            yield pending
            pending = b""
    if pending.strip():
        yield pending + b"\n"


class Proxy:
    """The aiohttp application of one planted server."""

    def __init__(self, state: ProxyState) -> None:
        self.state = state
        self.session: ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        app.on_cleanup.append(self._close)
        return app

    async def _close(self, app: web.Application) -> None:
        if self.session is not None:
            await self.session.close()

    def _client(self) -> ClientSession:
        if self.session is None:  # made on the serving loop; one connection per request
            self.session = ClientSession(
                connector=TCPConnector(force_close=True), timeout=ClientTimeout(total=UPSTREAM_TIMEOUT_S)
            )
        return self.session

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.state.requests += 1
        raw = await request.read()
        body: Any = None
        with contextlib.suppress(ValueError):
            body = json.loads(raw) if raw else None
        if request.method != "POST" or request.path not in GENERATION_PATHS or not isinstance(body, dict):
            return await self._plain(request, raw)
        chat = request.path.endswith("chat/completions")
        key = cache_key(request.path, body)
        asked = _max_tokens(body) or 0
        self.state.longest_max_tokens = max(self.state.longest_max_tokens, asked)
        short = self.state.mode == "cache-long" and asked < self.state.longest_max_tokens
        key = "" if short else key  # a short request's reply is not stored over the curve's
        if self.state.mode in PLACING:
            return await self._placed(request, raw, body, key, chat)
        if self.state.mode in CACHING and key in self.state.cache:
            self.state.cache_hits += 1
            stored = _cut(self.state.cache[key], _max_tokens(body))
            return await self._replay(request, stored, bool(body.get("stream")))
        if body.get("stream") and self.state.mode in COUNTING:
            return await self._counted(request, raw, chat, _max_tokens(body) or 16)
        if body.get("stream"):
            return await self._streamed(request, raw, key, chat)
        return await self._whole(request, raw, key, chat)

    def _arrive(self, max_tokens: int) -> Arrival:
        state, now = self.state, time.monotonic()
        if state.in_flight == 0 and now - state.idle_since_s >= POINT_GAP_S:
            state.point_started_s, state.point_requests = now, 0
            state.points += 1
        arrival = Arrival(
            index=state.point_requests,
            since_point_s=now - state.point_started_s,
            busy=state.in_flight > 0,
            max_tokens=max_tokens,
            others=state.in_flight,
        )
        state.point_requests += 1
        state.in_flight += 1
        return arrival

    def _leave(self) -> None:
        self.state.in_flight -= 1
        if self.state.in_flight == 0:
            self.state.idle_since_s = time.monotonic()

    async def _placed(
        self, request: web.Request, raw: bytes, body: dict[str, Any], key: str, chat: bool
    ) -> web.StreamResponse:
        """A place-finding cache: every reply stored, a stored one replayed where ``replays`` says."""
        arrival = self._arrive(_max_tokens(body) or 0)
        try:
            if key in self.state.cache and replays(self.state.mode, arrival):
                self.state.cache_hits += 1
                stored = _cut(self.state.cache[key], _max_tokens(body))
                return await self._replay(request, stored, bool(body.get("stream")))
            if body.get("stream"):
                return await self._streamed(request, raw, key, chat)
            return await self._whole(request, raw, key, chat)
        finally:
            self._leave()

    async def _counted(
        self, request: web.Request, raw: bytes, chat: bool, max_tokens: int
    ) -> web.StreamResponse:
        """A request-counting mode: the reply honest, or padded (``pads``)."""
        arrival = self._arrive(max_tokens)
        try:
            if not pads(self.state.mode, arrival):
                self.state.kept_honest += 1
                return await self._streamed(request, raw, "", chat)
            self.state.padded += 1
            return await self._padded_stream(request, raw, chat, max_tokens)
        finally:
            self._leave()

    async def _padded_stream(
        self, request: web.Request, raw: bytes, chat: bool, max_tokens: int
    ) -> web.StreamResponse:
        """The upstream's first quarter of ``max_tokens``, then the filler up to ``max_tokens`` at once
        and a closing event whose ``usage`` says ``max_tokens``."""
        keep = max(1, max_tokens // 4)
        response: web.StreamResponse | None = None
        last: dict[str, Any] = {}
        kept = 0
        async with self._upstream(request, raw) as reply:
            if reply.status != 200:
                data = await reply.read()
                return web.Response(status=reply.status, body=data, content_type=reply.content_type)
            response = await _open_stream(request)
            async for event in _events(reply):
                payload = _payload(event)
                if payload and payload.get("choices") and _text_of(payload["choices"][0]):
                    await response.write(event)
                    last, kept = payload, kept + 1
                    if kept >= keep:
                        break  # leaves the upstream: its connection closes here
        tail = [_sse(_with_text(last, PAD_TEXT, chat)) for _ in range(max_tokens - kept)]
        closing = _with_text(last, "", chat)
        closing["choices"][0]["finish_reason"] = "length"
        closing["usage"] = {"completion_tokens": max_tokens}
        await response.write(b"".join([*tail, _sse(closing), _sse("[DONE]")]))
        await response.write_eof()
        return response

    def _upstream(self, request: web.Request, raw: bytes) -> Any:
        self.state.upstream_calls += 1
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS | {"host"}}
        url = self.state.upstream.rstrip("/") + request.path_qs
        return self._client().request(request.method, url, data=raw or None, headers=headers)

    async def _plain(self, request: web.Request, raw: bytes) -> web.Response:
        async with self._upstream(request, raw) as reply:
            data = await reply.read()
            headers = {k: v for k, v in reply.headers.items() if k.lower() not in HOP_HEADERS}
            return web.Response(status=reply.status, body=data, headers=headers)

    async def _whole(self, request: web.Request, raw: bytes, key: str, chat: bool) -> web.Response:
        async with self._upstream(request, raw) as reply:
            data = await reply.read()
            if reply.status != 200:
                return web.Response(status=reply.status, body=data, content_type=reply.content_type)
        if self.state.mode == "pad":
            data = _padded_body(data)
        if self.state.mode in CACHING and key:
            self.state.cache[key] = [data]
        return web.Response(status=200, body=data, content_type="application/json")

    async def _replay(self, request: web.Request, stored: list[bytes], stream: bool) -> web.StreamResponse:
        if not stream:
            return web.Response(status=200, body=stored[0], content_type="application/json")
        response = await _open_stream(request)
        await response.write(b"".join(stored))
        await response.write_eof()
        return response

    async def _streamed(self, request: web.Request, raw: bytes, key: str, chat: bool) -> web.StreamResponse:
        response: web.StreamResponse | None = None
        if self.state.mode == "filler":  # before the upstream is even asked
            response = await _open_stream(request)
            await response.write(_sse(_with_text({"object": "filler"}, FILLER_TEXT, chat)))
        async with self._upstream(request, raw) as reply:
            if reply.status != 200:
                data = await reply.read()
                if response is None:
                    return web.Response(status=reply.status, body=data, content_type=reply.content_type)
                await response.write(data)  # headers are gone: the error goes into the stream
                await response.write_eof()
                return response
            response = response or await _open_stream(request)
            stored = await self._relay(reply, response, chat)
        if self.state.mode in CACHING and key:
            self.state.cache[key] = stored
        await response.write_eof()
        return response

    async def _relay(self, reply: Any, response: web.StreamResponse, chat: bool) -> list[bytes]:
        """Send the upstream's events on as they come (``pad``: hold the usage event and ``[DONE]``,
        send the padding, then them with ``usage`` raised); return what was sent."""
        sent: list[bytes] = []
        held: list[bytes] = []
        content_events = 0
        last: dict[str, Any] = {}
        async for event in _events(reply):
            payload = _payload(event)
            text = _text_of(payload["choices"][0]) if payload and payload.get("choices") else None
            if self.state.mode == "pad" and _closing(event, payload, text):
                held.append(event)
                continue
            if text:
                content_events += 1
                last = payload or {}
            sent.append(event)
            await response.write(event)
        if self.state.mode == "pad":
            tail = _padding(held, last, content_events, chat)
            sent.extend(tail)
            await response.write(b"".join(tail))
        return sent


def _closing(event: bytes, payload: dict[str, Any] | None, text: str | None) -> bool:
    """``[DONE]``, or the event with the reply's ``usage`` and no text: what the pad goes before."""
    if payload is None:
        return bool(event.strip())
    return "usage" in payload and not text


async def _open_stream(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(
        status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    return response


def _padding(held: list[bytes], last: dict[str, Any], content_events: int, chat: bool) -> list[bytes]:
    """The pad events, then the held events with ``usage`` raised by the pad tokens."""
    usage_tokens = next(
        (p["usage"].get("completion_tokens") for e in held if (p := _payload(e)) and p.get("usage")), None
    )
    count = PAD_REPEATS * int(usage_tokens or content_events)
    tail = [_sse(_with_text(last, PAD_TEXT, chat)) for _ in range(count)]
    for event in held:
        payload = _payload(event)
        if payload is None:
            tail.append(event)
            continue
        tail.append(_sse(_bumped(payload, count)))
    return tail


def _bumped(payload: dict[str, Any], count: int) -> dict[str, Any]:
    raised = copy.deepcopy(payload)
    usage = raised.get("usage") or {}
    for name in ("completion_tokens", "total_tokens"):
        if isinstance(usage.get(name), int):
            usage[name] += count
    return raised


def _padded_body(data: bytes) -> bytes:
    """A whole (not streamed) reply with the pad appended to its text and ``usage`` raised."""
    reply = json.loads(data)
    tokens = int((reply.get("usage") or {}).get("completion_tokens") or 1)
    count = PAD_REPEATS * tokens
    choice = reply["choices"][0]
    if "text" in choice:
        choice["text"] += PAD_TEXT * count
    else:
        choice["message"]["content"] = (choice["message"].get("content") or "") + PAD_TEXT * count
    return json.dumps(_bumped(reply, count)).encode()


STOP_S = 5.0
"""How long a stop waits for the proxy's cleanup, then for its loop's thread."""


@dataclass(slots=True)
class RunningProxy:
    """A proxy serving from a thread of its own: its url and what it did."""

    url: str
    state: ProxyState


async def _serve(state: ProxyState, port: int) -> tuple[web.AppRunner, int]:
    # a stop closes what is still open after 2 s (aiohttp waits 60 s for open connections by default)
    runner = web.AppRunner(Proxy(state).app(), access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = runner.addresses[0][1]
    return runner, int(bound)


@contextlib.contextmanager
def planted_endpoint(upstream: str, mode: str, port: int = 0) -> Iterator[RunningProxy]:
    """Serve the planted ``mode`` in front of ``upstream`` on 127.0.0.1 (``port`` 0: a free one) from a
    thread with its own event loop; stopped on leaving the block."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
    state = ProxyState(upstream, mode)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name=f"planted-{mode}", daemon=True)
    thread.start()
    runner, bound = asyncio.run_coroutine_threadsafe(_serve(state, port), loop).result(timeout=30)
    try:
        yield RunningProxy(f"http://127.0.0.1:{bound}", state)
    finally:
        # bounded: make test once saw the command line's stop still running 60 s after SIGINT (a
        # cleanup waiting on an open connection); the loop's thread is a daemon, gone with the process
        with contextlib.suppress(concurrent.futures.TimeoutError):
            asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=STOP_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=STOP_S)
        if not thread.is_alive():
            loop.close()


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Bad input: one line, exit 2 (no usage block)."""
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(description="a planted dishonest OpenAI-compatible proxy")
    parser.add_argument("--upstream", required=True, help="the real server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", args.upstream):
        parser.error(f"--upstream {args.upstream!r} is not an http(s) URL")
    if not 0 <= args.port < 65536:
        parser.error(f"--port {args.port} is not a port")
    return args


def main(argv: list[str]) -> int:
    """Serve until interrupted; one line and exit 2 on bad input or a port that cannot be bound."""
    args = _parse(argv)
    # SIGINT stops it even when it was started where SIGINT is ignored (a non-interactive shell's
    # `cmd &`, whose children inherit SIG_IGN: make test run that way saw it still serving at 60 s)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with planted_endpoint(args.upstream, args.mode, args.port) as proxy:
            print(f"planted {args.mode} proxy on {proxy.url} -> {args.upstream}", flush=True)
            threading.Event().wait()
    except OSError as err:
        print(f"error: cannot serve on 127.0.0.1:{args.port}: {err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
