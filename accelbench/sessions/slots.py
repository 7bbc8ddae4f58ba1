"""A closed-loop point's slots: the forbidden-reuse audits' pairs take the sessions' places, never add.

A point of N sessions holds at most N requests in flight. A timed turn takes one slot while its request
is in flight; an audit pair (``accelbench.sessions.forbidden``: a probe and its control, sent at once)
takes two (one at a point of one session, where no timed turn is in flight beside it). A request that
finds too few slots free waits, first come first served (a pair waiting for two is not overtaken by
turns that need one), so a turn due while a pair is in flight is sent when the pair ends: its think
time grows by the wait, its TTFT holds none of it (a turn's clock starts when it is sent).

Why: on a real server the pairs are load. Sent beside the timed turns of a point "of 1 session", they
made it a point of three requests at once; stop 54 measured turns 2-3 (where the pairs fell) 4-10x
slower in TTFT than AIPerf's on the same trace, the turns no pair overlapped within 1%. A point's
figures are then of N sessions' worth of load, whatever audits ran in it. A rate point (an open loop)
has no slots: its pairs are arrivals beside its sessions', as any open loop's load.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

PAIR_SLOTS = 2
"""The slots an audit pair takes (its two requests at once), at most the point's sessions."""


class Slots:
    """A point's ``count`` slots, taken and given back in whole requests, waiters served in order."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.free = count
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @asynccontextmanager
    async def held(self, wanted: int) -> AsyncIterator[None]:
        """``wanted`` slots (at most ``count``) held for the body; waits its turn when too few are free."""
        wanted = min(wanted, self.count)
        await self._take(wanted)
        try:
            yield
        finally:
            self._give(wanted)

    async def _take(self, wanted: int) -> None:
        if not self._waiting and self.free >= wanted:
            self.free -= wanted
            return
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((wanted, ready))
        try:
            await ready
        except asyncio.CancelledError:
            if ready.done() and not ready.cancelled():  # handed the slots as it was cancelled
                self._give(wanted)
            else:
                self._waiting.remove((wanted, ready))
                self._give(0)  # the next waiter may fit now that this one left the head
            raise

    def _give(self, given: int) -> None:
        self.free += given
        while self._waiting and self.free >= self._waiting[0][0]:
            wanted, ready = self._waiting.popleft()
            self.free -= wanted
            ready.set_result(None)
