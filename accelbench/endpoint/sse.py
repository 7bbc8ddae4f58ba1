"""Server-sent events of an OpenAI streaming reply: lines in, one JSON chunk per ``data:`` event out.

The stream ends on ``data: [DONE]`` or when the connection closes (``transformers serve`` sends no
``[DONE]``). A ``data:`` line that is not JSON is an error of the server, reported with its text.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

DONE = "[DONE]"


@dataclass(frozen=True, slots=True)
class Event:
    """One parsed ``data:`` event: its JSON chunk, or ``done`` for ``[DONE]``."""

    chunk: dict[str, Any] | None
    done: bool = False


class SseError(ValueError):
    """A ``data:`` event that is neither JSON nor ``[DONE]``."""


def parse_line(line: bytes | str) -> Event | None:
    """The event of one line of the stream, or None for blank lines, comments and other fields."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    text = text.rstrip("\r\n")
    if not text.startswith("data:"):
        return None
    payload = text[5:].strip()
    if payload == DONE:
        return Event(None, done=True)
    if not payload:
        return None
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        raise SseError(f"not JSON in a data event: {payload[:120]!r}") from None
    if not isinstance(chunk, dict):
        raise SseError(f"a data event that is not an object: {payload[:120]!r}")
    return Event(chunk)


def chunk_text(chunk: dict[str, Any]) -> str:
    """The text a chunk adds: ``choices[0].text`` (completions) or ``choices[0].delta.content`` (chat)."""
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    first = choices[0]
    delta = first.get("delta")
    piece = delta.get("content") if isinstance(delta, dict) else first.get("text")
    return piece if isinstance(piece, str) else ""


def finish_reason(chunk: dict[str, Any]) -> str:
    """``choices[0].finish_reason`` when the chunk gives one, else ""."""
    choices = chunk.get("choices") or []
    reason = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else None
    return reason if isinstance(reason, str) else ""


def error_of(chunk: dict[str, Any]) -> str:
    """The error an event carries instead of a chunk (``{"error": ...}``), else ""."""
    error = chunk.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error) if error else ""


def visible(text: str) -> bool:
    """True when ``text`` holds a letter, digit or symbol: whitespace or punctuation only is a filler
    chunk (it stops the TTFT clock, and the reply is judged against the reference: ``accuracy``)."""
    return any(not ch.isspace() and not unicodedata.category(ch).startswith("P") for ch in text)


def usage_of(chunk: dict[str, Any]) -> dict[str, int] | None:
    """The chunk's ``usage`` counts (``prompt_tokens``, ``completion_tokens``, and ``cached_tokens`` from
    ``prompt_tokens_details`` when the server reports its prefix-cache hits) when it carries them."""
    usage = chunk.get("usage")
    if not isinstance(usage, dict):
        return None
    kept = ("prompt_tokens", "completion_tokens")
    found = {k: int(v) for k, v in usage.items() if k in kept and isinstance(v, int)}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return {**found, "cached_tokens": cached} if isinstance(cached, int) else found
