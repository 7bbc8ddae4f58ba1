"""The fixed-concurrency driver (the MLPerf Endpoints definition): N requests in flight, the next one
sent as soon as one ends, until the point's requests are all sent.

One asyncio loop per point in the calling thread, one aiohttp session with a new connection per
request; each request's issue time is when its slot freed, its send time when the client began to send
(the client's own queueing is kept in TTFT, no coordinated omission). ``run_point`` never raises for a
failed request: the failure is the record's status.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelbench.endpoint.client import Prompt, Slot, Target, send
from accelbench.endpoint.records import RequestRecord

TIMED = "timed"


@dataclass(frozen=True, slots=True)
class Load:
    """One point of the curve: its concurrency, and the tokens each reply may have."""

    concurrency: int
    max_tokens: int


def run_point(
    target: Target,
    prompts: Sequence[Prompt],
    load: Load,
    count_tokens: Callable[[str], int],
    roles: Sequence[str] = (),
) -> list[RequestRecord]:
    """Send every prompt at ``load.concurrency`` in flight; the records in prompt order."""
    return asyncio.run(_point(target, prompts, load, count_tokens, roles or [TIMED] * len(prompts)))


async def _point(
    target: Target,
    prompts: Sequence[Prompt],
    load: Load,
    count_tokens: Callable[[str], int],
    roles: Sequence[str],
) -> list[RequestRecord]:
    import aiohttp

    clock0 = time.perf_counter()
    pending = iter(range(len(prompts)))
    records: list[RequestRecord] = []
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def user() -> None:
            for i in pending:  # one iterator shared by the users: each index is sent once
                slot = Slot(load.concurrency, i, roles[i], time.perf_counter() - clock0)
                sent = await send(session, target, prompts[i], load.max_tokens, slot, count_tokens, clock0)
                records.append(sent)

        await asyncio.gather(*(user() for _ in range(max(1, load.concurrency))))
    return sorted(records, key=lambda r: r.index)
