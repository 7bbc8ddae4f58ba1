"""The streaming client of an OpenAI-compatible endpoint: one request in, one ``RequestRecord`` out.

``/v1/chat/completions`` (messages) or ``/v1/completions`` (the chat template's text), ``stream: true``,
greedy, ``max_tokens`` and the server's own extra fields (``Target.extra_body``: no field outside the
OpenAI schema is sent otherwise; ``transformers serve`` answers 422 to one). A new connection per
request (llama.cpp drops kept-alive connections after 5 s). The API key comes from an environment
variable and goes in the ``Authorization`` header only: it is never logged, stored or put in an error.
Every failure becomes the record's ``status`` and one-line ``error``; nothing here raises.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from accelbench.endpoint.records import OK, RequestRecord
from accelbench.endpoint.sse import (
    SseError,
    chunk_text,
    error_of,
    finish_reason,
    parse_line,
    usage_of,
    visible,
)
from accelbench.errors import first_text_line

PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class Target:
    """Where and how requests are sent (never stored: it holds the API key)."""

    url: str
    """The server's base address, ``http://host:port`` (a trailing ``/v1`` is accepted)."""
    model: str
    api: str = "chat"
    """``chat`` or ``completions``."""
    api_key: str | None = field(default=None, repr=False)
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 600.0

    @property
    def endpoint(self) -> str:
        """The full address requests are posted to."""
        base = self.url.rstrip("/")
        base = base[: -len("/v1")] if base.endswith("/v1") else base
        return base + PATHS[self.api]

    def headers(self) -> dict[str, str]:
        """The request headers (with the key, when there is one)."""
        found = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        return {**found, "Authorization": f"Bearer {self.api_key}"} if self.api_key else found


@dataclass(frozen=True, slots=True)
class Prompt:
    """A salted request: the chat messages and the same as the chat template's text."""

    salt: str
    messages: tuple[Mapping[str, str], ...]
    text: str
    """The chat template applied to ``messages`` (the ``/v1/completions`` prompt)."""
    session_id: str = ""
    """A multi-turn session's id, sent as the ``X-Session-ID`` header (MLPerf Endpoints' routing hint:
    ``accelbench.sessions``); empty: a single-turn request, no header."""


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a request stands in the load: its point, number and role, and when it became due."""

    concurrency: int
    index: int
    role: str
    issue_s: float


def sized(target: Target, max_tokens: int) -> Target:
    """``target`` with its extra fields forcing replies of ``max_tokens``: a ``generation_config``
    (``transformers serve``: a JSON string) gets that ``max_new_tokens``; other fields (``ignore_eos``)
    hold for any length. ``target`` itself when nothing changes."""
    config = target.extra_body.get("generation_config")
    if not isinstance(config, str):
        return target
    fields = json.loads(config)
    if not isinstance(fields, dict) or fields.get("max_new_tokens") in (None, max_tokens):
        return target
    resized = json.dumps({**fields, "max_new_tokens": max_tokens})
    return replace(target, extra_body={**target.extra_body, "generation_config": resized})


def body(target: Target, prompt: Prompt, max_tokens: int) -> dict[str, Any]:
    """The JSON body of ``prompt`` for ``target``'s API."""
    common = {"model": target.model, "stream": True, "max_tokens": max_tokens, "temperature": 0.0}
    common["stream_options"] = {"include_usage": True}
    if target.api == "chat":
        return {**common, "messages": [dict(m) for m in prompt.messages], **target.extra_body}
    return {**common, "prompt": prompt.text, **target.extra_body}


@dataclass(slots=True)
class _Stream:
    """What has arrived so far."""

    pieces: list[str] = field(default_factory=list)
    chunk_s: list[float] = field(default_factory=list)
    first_content_s: float | None = None
    filler: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str = ""

    def add(self, chunk: dict[str, Any], at_s: float) -> None:
        if error_of(chunk):
            raise SseError(f"error event: {error_of(chunk)}")
        self.finish_reason = finish_reason(chunk) or self.finish_reason
        text = chunk_text(chunk)
        self.usage.update(usage_of(chunk) or {})
        if not text:
            return
        if not self.pieces and not visible(text):
            self.filler = True
        self.pieces.append(text)
        self.chunk_s.append(at_s)
        if self.first_content_s is None:  # the first non-empty chunk, as MLPerf and AIPerf time it
            self.first_content_s = at_s


async def send(
    session: Any,
    target: Target,
    prompt: Prompt,
    max_tokens: int,
    slot: Slot,
    count_tokens: Callable[[str], int],
    clock0: float,
) -> RequestRecord:
    """Send ``prompt`` on the aiohttp ``session`` and record the reply (times from ``clock0``)."""
    import aiohttp

    stream = _Stream()
    send_s = time.perf_counter() - clock0
    status, error = OK, ""
    try:
        async with session.post(
            target.endpoint, json=body(target, prompt, max_tokens), headers=_headers(target, prompt)
        ) as r:
            if r.status != 200:
                status, error = f"http {r.status}", first_text_line(await r.text(), ERROR_CHARS)
            elif "text/event-stream" not in r.headers.get("Content-Type", ""):
                status, error = "not streaming", f"Content-Type {r.headers.get('Content-Type', '?')}"
            else:
                await _read(r, stream, clock0)
                if not stream.finish_reason:
                    status, error = "truncated", "the stream ended without a finish_reason"
    except (TimeoutError, aiohttp.ClientError, SseError, OSError) as err:
        status, error = type(err).__name__, first_text_line(str(err), ERROR_CHARS) or type(err).__name__
    end_s = time.perf_counter() - clock0
    if target.api_key:  # a server that echoes the key in its error does not get it stored
        error = error.replace(target.api_key, "***")
    text = "".join(stream.pieces)
    return RequestRecord(
        concurrency=slot.concurrency,
        index=slot.index,
        role=slot.role,
        salt=prompt.salt,
        issue_s=slot.issue_s,
        send_s=send_s,
        first_content_s=stream.first_content_s,
        end_s=end_s,
        chunk_s=tuple(stream.chunk_s),
        text=text,
        output_tokens=count_tokens(text) if text else 0,
        usage_output_tokens=stream.usage.get("completion_tokens"),
        usage_prompt_tokens=stream.usage.get("prompt_tokens"),
        usage_cached_tokens=stream.usage.get("cached_tokens"),
        status=status,
        error=error,
        finish_reason=stream.finish_reason,
        filler_first_chunk=stream.filler,
        first_chunk_text=stream.pieces[0] if stream.pieces else "",
    )


def _headers(target: Target, prompt: Prompt) -> dict[str, str]:
    """The target's headers, and the prompt's session id when it has one."""
    found = target.headers()
    return {**found, "X-Session-ID": prompt.session_id} if prompt.session_id else found


async def _read(response: Any, stream: _Stream, clock0: float) -> None:
    """Read SSE lines until ``[DONE]`` or the connection closes."""
    async for line in response.content:
        event = parse_line(line)
        if event is None:
            continue
        if event.done:
            return
        assert event.chunk is not None
        stream.add(event.chunk, time.perf_counter() - clock0)
