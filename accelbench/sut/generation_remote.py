"""The harness's side of a generating stack in its SUT process: a ``Generator`` whose calls cross the wire.

``describe`` asks the stack whether it runs on the device; ``prepare`` has it prepare a generator for
the model the harness built (``accelbench.sut.generation_host``) and returns a ``RemoteGenerator``.
Each ``generate`` sends one prompt with a call number drawn with ``secrets`` and reads back three
frames that must carry it: "received" (sent by accelbench's code before any stack code runs), the first
token, the moment the stack reported it, then every token.

**Which clock.** The reply's times are the harness's (``time.perf_counter`` in this process): the start
is read just before the prompt is sent, the time to first token when the first-token frame has
arrived, the latency when the last frame has arrived; ``on_first_token`` (LoadGen's
``FirstTokenComplete``, whose own clock runs from the query's issue) is called right then. The SUT
process sends no time at all, so it cannot claim one: its first token counts when it reaches the
harness. The "received" frame's time (``Reply.wire_s``, at least a round trip of the wire): the
first-token audit takes the run's fastest off each time to first token
(``accelbench.generation.timing_audits``); a stack that delays it only makes its first tokens look
earlier. When the harness reads the first-token frame only after the last frame has come (it woke
late: a loaded machine), the split between TTFT and TPOT is unknown (``Reply.read_late``): the TTFT is
an upper bound, the TPOT a lower one. A frame it sent ahead of its request (to be read the moment the
next call starts) cannot carry the call's number, and a frame of no call in flight, a second first
token or a reply before its first token ends the cell (``SutFailure``, crashed: the protocol broken).
"""

from __future__ import annotations

import secrets
import select
import socket
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from accelbench.generation.base import FirstTokenCallback, GenerationContext, Generator, Reply
from accelbench.generation.models import LlmModel
from accelbench.sut import generation_host, wire
from accelbench.sut.remote import SutFailure, SutProcess, checked


def describe(sut: SutProcess, device: str) -> str | None:
    """The stack's reason it cannot run on ``device`` (asked in its SUT process), or None."""
    posted = [m for m in sut.replies() if "unavailable_reason" in m.header]  # a posted request's reply
    if posted:
        header = checked(posted[0]).header
    else:
        header = sut.request({"op": "generation_describe", "device": device}).header
    reason = header.get("unavailable_reason")
    return str(reason) if reason else None


def prepare(sut: SutProcess, model: LlmModel, ctx: GenerationContext) -> RemoteGenerator:
    """A generator prepared by the stack in its SUT process."""
    request = {
        "op": "generation_prepare",
        "model": generation_host.model_document(model),
        **generation_host.context_request(ctx),
    }
    return RemoteGenerator(sut, sut.request(request).header)


class RemoteGenerator(Generator):
    """A generator in a SUT process; ``generate`` is timed on the harness's clock (module text)."""

    def __init__(self, sut: SutProcess, prepared: Mapping[str, Any]) -> None:
        self.sut = sut
        self.number = int(prepared["generator"])
        self.precision = str(prepared["precision"])
        self.weight_format = str(prepared["weight_format"])
        self.conversion_s = float(prepared["conversion_s"])
        self.details = wire.texts(prepared["details"])
        self.versions = wire.texts(prepared["versions"])

    def _run(self, prompt: Sequence[int], max_new_tokens: int, first: FirstTokenCallback) -> list[int]:
        raise NotImplementedError("a remote generator's calls are timed by _timed_reply")

    def _timed_reply(
        self, prompt: Sequence[int], max_new_tokens: int, on_first_token: FirstTokenCallback | None
    ) -> Reply:
        """Greedy reply to ``prompt`` from the SUT process, timed here."""
        call = secrets.randbits(63)
        header = {"op": "generate", "generator": self.number, "call": call, "max_new_tokens": max_new_tokens}
        ids = np.asarray(prompt, dtype=np.int64)
        with self.sut.call() as conn:
            start = time.perf_counter()
            wire.send(conn, header, (ids,))
            if "received" not in _frame(conn, call).header:
                raise SutFailure("crashed", "the SUT process replied before it said it received the prompt")
            wire_s = time.perf_counter() - start
            first = _frame(conn, call)
            first_token_s = time.perf_counter() - start
            late = bool(select.select([conn], [], [], 0)[0])  # the last frame came before this read
            if "first" not in first.header:
                raise SutFailure("crashed", "the SUT process replied before it reported its first token")
            token = first.header["first"]
            if not isinstance(token, int):
                raise SutFailure("crashed", "the SUT process sent a first token that is not a token id")
            try:
                if on_first_token is not None:
                    on_first_token(token)
            finally:
                last = _frame(conn, call)  # read even when the callback failed: the wire stays in step
            latency_s = time.perf_counter() - start
        found = last.header.get("tokens")
        if not isinstance(found, list) or not all(isinstance(t, int) for t in found):
            raise SutFailure("crashed", "the SUT process sent a frame that is not the reply's tokens")
        tokens = tuple(found)
        return Reply(
            tokens=tokens,
            first_token_s=first_token_s,
            latency_s=latency_s,
            first_reported=token,
            wire_s=wire_s,
            read_late=late,
        )

    def close(self) -> None:
        """Let the SUT process drop the generator."""
        self.sut.request({"op": "generation_close", "generator": self.number})


def _frame(conn: socket.socket, call: int) -> wire.Message:
    """The next frame, which must belong to call ``call`` (a failure raises ``SutFailure``)."""
    message = wire.receive(conn)
    if message.header.get("call") != call:
        raise SutFailure("crashed", "the SUT process sent a frame of no call in flight (sent ahead?)")
    return checked(message)
