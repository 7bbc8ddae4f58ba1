"""The client of a served model: v2 requests over HTTP from one asyncio loop in a daemon thread.

``ServedInfer`` is what a served session's ``infer`` is. Called, it sends one request and waits for the
reply (calibration, audits, sanity checks). ``submit(inputs, done)`` only schedules the request on the
loop and returns; ``done(output, error)`` is called on the loop thread when the reply (or a failure)
arrives. LoadGen's SUT uses ``submit`` when ``infer`` has it (``accelbench.scenarios.loadgen``), so
queries are sent when LoadGen issues them, however slow earlier replies are: no coordinated omission.
One pooled ``aiohttp`` session (aiohttp, not httpx: 10x less client overhead, see docs/serving.md)
holds up to ``connections`` connections; every request has a timeout, so a dead server fails requests
instead of hanging the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from accelbench.serving import protocol
from accelbench.workloads.base import Inputs

Done = Callable[[np.ndarray | None, BaseException | None], None]
"""Completion callback of ``submit``: the output, or None and the error."""

REQUEST_TIMEOUT_S = 30.0


class ServedInfer:
    """``infer`` over the v2 protocol at ``url`` (``http://host:port``) for model ``model``; ``endpoint``
    replaces the v2 route for a server that takes v2 messages elsewhere (TorchServe's predictions)."""

    def __init__(
        self,
        url: str,
        model: str,
        input_names: Sequence[str],
        connections: int = 256,
        timeout_s: float = REQUEST_TIMEOUT_S,
        output: str = "output",
        on_close: Callable[[], object] | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.endpoint = endpoint or f"{url.rstrip('/')}/v2/models/{model}/infer"
        self.input_names = tuple(input_names)
        self.output = output
        self.timeout_s = timeout_s
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="accelbench-client", daemon=True)
        self.thread.start()
        self.session: Any = self._on_loop(self._open(connections)).result(timeout_s)
        self._release = weakref.finalize(self, _release, self.loop, self.thread, self.session, on_close)

    def __call__(self, inputs: Inputs) -> np.ndarray:
        """Send one request and wait for its output (raises what the request raised)."""
        return self._on_loop(self.request(inputs)).result(self.timeout_s + 5.0)

    def submit(self, inputs: Inputs, done: Done) -> None:
        """Schedule one request; ``done`` is called on the loop thread with its outcome."""
        body = self._body(inputs)  # encoded here: the loop thread only waits on the network
        self.loop.call_soon_threadsafe(self.loop.create_task, self._complete(body, done))

    async def request(self, inputs: Inputs) -> np.ndarray:
        """The output of one request (on the loop)."""
        return await self._post(self._body(inputs))

    def close(self) -> None:
        """Close the connections, stop the loop thread, then call ``on_close`` (stops the server).
        Also done when the client is garbage-collected (the trial that made it is over), so a cell's
        next trial never shares the machine with the previous trial's server. Safe to call twice."""
        self._release()

    async def _open(self, connections: int) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=connections)
        return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    def _on_loop(self, coroutine: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def _body(self, inputs: Inputs) -> tuple[bytes, int]:
        return protocol.encode(dict(zip(self.input_names, inputs, strict=True)), "inputs", (self.output,))

    async def _complete(self, body: tuple[bytes, int], done: Done) -> None:
        try:
            output = await self._post(body)
        except BaseException as error:  # handed to the caller, who decides
            done(None, error)
        else:
            done(output, None)

    async def _post(self, body: tuple[bytes, int]) -> np.ndarray:
        payload, length = body
        headers = {protocol.HEADER_LENGTH: str(length), "Content-Type": protocol.CONTENT_TYPE}
        async with self.session.post(self.endpoint, data=payload, headers=headers) as reply:
            content = await reply.read()
            if reply.status != 200:
                raise RuntimeError(f"HTTP {reply.status} from {self.endpoint}: {content[:200]!r}")
            header = reply.headers.get(protocol.HEADER_LENGTH)
        outputs = protocol.decode(content, int(header) if header else None, "outputs")
        return outputs[self.output] if self.output in outputs else next(iter(outputs.values()))


def _release(
    loop: asyncio.AbstractEventLoop,
    thread: threading.Thread,
    session: Any,
    on_close: Callable[[], object] | None,
) -> None:
    """Close ``session`` on ``loop``, stop the loop and its thread, then call ``on_close``."""
    if loop.is_running():
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(session.close(), loop).result(REQUEST_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(REQUEST_TIMEOUT_S)
    if not loop.is_running():
        loop.close()
    if on_close is not None:
        on_close()
