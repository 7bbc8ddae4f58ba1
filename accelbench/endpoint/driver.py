"""The fixed-concurrency driver (the MLPerf Endpoints definition): N requests in flight, the next one
sent as soon as one ends, until the point's requests are all sent; with an ``Extension``, more requests
follow without a pause while it wants them (the point's medians not yet narrow, its time cap not
reached: ``accelbench.endpoint.extension``).

One asyncio loop per point in the calling thread, one aiohttp session with a new connection per
request; each request's issue time is when its slot freed, its send time when the client began to send
(the client's own queueing is kept in TTFT, no coordinated omission). ``run_point`` never raises for a
failed request: the failure is the record's status.

The open loop of the max-QPS search (``run_arrivals``, MLPerf's server scenario): request i is issued at
its scheduled time (``arrival_times_s``: exponential gaps of mean 1 / qps from a seed the server cannot
know), whether or not the earlier ones ended, with no cap on the requests in flight. Its record's issue
time is the scheduled one and its send time when sending began, so a client that lags behind the
schedule counts against the server (no coordinated omission).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from accelbench.endpoint.client import Prompt, Slot, Target, send
from accelbench.endpoint.records import RequestRecord

TIMED = "timed"
POISSON = "poisson"
"""The role of the max-QPS search's requests."""


@dataclass(frozen=True, slots=True)
class Load:
    """One point of the curve: its concurrency, and the tokens each reply may have."""

    concurrency: int
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Extension:
    """The requests a point may send after its first ones: the ``k``-th extra prompt (drawn when it is
    needed), sent while ``wanted(the records so far, seconds since the point began)`` holds, ``most`` at
    most."""

    prompt: Callable[[int], Prompt]
    wanted: Callable[[Sequence[RequestRecord], float], bool]
    most: int


def run_point(
    target: Target,
    prompts: Sequence[Prompt],
    load: Load,
    count_tokens: Callable[[str], int],
    roles: Sequence[str] = (),
    extension: Extension | None = None,
) -> list[RequestRecord]:
    """Send every prompt at ``load.concurrency`` in flight, then ``extension``'s while it wants them; the
    records in prompt order (the extra ones after the others, ``timed``)."""
    roles = roles or [TIMED] * len(prompts)
    return asyncio.run(_point(target, prompts, load, count_tokens, roles, extension))


async def _point(
    target: Target,
    prompts: Sequence[Prompt],
    load: Load,
    count_tokens: Callable[[str], int],
    roles: Sequence[str],
    extension: Extension | None,
) -> list[RequestRecord]:
    import aiohttp

    clock0 = time.perf_counter()
    records: list[RequestRecord] = []

    def indices() -> Iterator[tuple[int, Prompt, str]]:
        yield from ((i, prompts[i], roles[i]) for i in range(len(prompts)))
        for k in range(extension.most if extension else 0):
            if extension is None or not extension.wanted(records, time.perf_counter() - clock0):
                return
            yield len(prompts) + k, extension.prompt(k), TIMED

    pending = indices()
    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def user() -> None:
            for i, prompt, role in pending:  # one iterator shared by the users: each index is sent once
                slot = Slot(load.concurrency, i, role, time.perf_counter() - clock0)
                sent = await send(session, target, prompt, load.max_tokens, slot, count_tokens, clock0)
                records.append(sent)

        await asyncio.gather(*(user() for _ in range(max(1, load.concurrency))))
    return sorted(records, key=lambda r: r.index)


def arrival_times_s(qps: float, count: int, seed: int) -> list[float]:
    """When each of ``count`` requests is due, in seconds from the loop's start: the arrivals of a
    Poisson process of rate ``qps`` (exponential gaps of mean 1 / qps) drawn from ``seed``."""
    if qps <= 0:
        raise ValueError(f"an arrival rate must be positive, got {qps}")
    gaps_s = np.random.default_rng(seed).exponential(1.0 / qps, size=count)
    return [float(t) for t in np.cumsum(gaps_s)]


def run_arrivals(
    target: Target,
    prompts: Sequence[Prompt],
    schedule_s: Sequence[float],
    max_tokens: int,
    count_tokens: Callable[[str], int],
    target_qps: float,
) -> list[RequestRecord]:
    """Send prompt i at ``schedule_s[i]`` (seconds from the start) whatever is in flight; the records in
    prompt order, with the scheduled issue times and ``target_qps``."""
    if len(schedule_s) != len(prompts):
        raise ValueError(f"{len(prompts)} prompts for {len(schedule_s)} arrival times")
    done = asyncio.run(_arrivals(target, prompts, schedule_s, max_tokens, count_tokens))
    return [dataclasses.replace(r, target_qps=target_qps) for r in done]


async def _arrivals(
    target: Target,
    prompts: Sequence[Prompt],
    schedule_s: Sequence[float],
    max_tokens: int,
    count_tokens: Callable[[str], int],
) -> list[RequestRecord]:
    import aiohttp

    connector = aiohttp.TCPConnector(force_close=True, limit=0)
    timeout = aiohttp.ClientTimeout(total=target.timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        clock0 = time.perf_counter()
        sending = []
        for i, due_s in enumerate(schedule_s):
            await asyncio.sleep(max(0.0, due_s - (time.perf_counter() - clock0)))
            slot = Slot(0, i, POISSON, due_s)
            request = send(session, target, prompts[i], max_tokens, slot, count_tokens, clock0)
            sending.append(asyncio.create_task(request))
        return list(await asyncio.gather(*sending))
