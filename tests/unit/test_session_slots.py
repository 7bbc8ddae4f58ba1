"""A closed-loop point's slots (``accelbench.sessions.slots``): the audit pairs take the sessions' places.

The pool on its own (a pair is not overtaken, a cancelled waiter gives its place up), and the real
session driver on a stub server: at a point of N sessions no more than N requests are in flight at any
moment, pairs included, and at a point of one session no timed turn is in flight beside a pair."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from accelbench.endpoint.client import Target
from accelbench.sessions import forbidden
from accelbench.sessions.driver import TURN, run_load
from accelbench.sessions.records import TurnRecord
from accelbench.sessions.slots import Slots
from accelbench.sessions.workload import Shape, make_sessions
from tests.unit.session_stub import HONEST, session_stub
from tests.unit.test_forbidden_reuse import words


def test_a_pair_waiting_for_two_slots_is_not_overtaken_by_turns() -> None:
    async def scenario() -> list[str]:
        slots, order = Slots(2), []

        async def hold(name: str, wanted: int, start_s: float, for_s: float) -> None:
            await asyncio.sleep(start_s)
            async with slots.held(wanted):
                order.append(name)
                await asyncio.sleep(for_s)

        await asyncio.gather(
            hold("turn-a", 1, 0.0, 0.05), hold("pair", 2, 0.01, 0.01), hold("turn-b", 1, 0.02, 0.01)
        )
        assert slots.free == 2
        return order

    # turn-b found one slot free but the pair waited first: it goes after the pair
    assert asyncio.run(scenario()) == ["turn-a", "pair", "turn-b"]


def test_a_cancelled_waiter_gives_its_place_up_and_one_slot_point_takes_a_pair() -> None:
    async def scenario() -> int:
        slots = Slots(1)
        async with slots.held(2):  # a point of one session: the pair takes its one slot
            assert slots.free == 0
            waiter = asyncio.ensure_future(_enter(slots, 1))
            await asyncio.sleep(0.01)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        await asyncio.wait_for(_enter(slots, 1), 1.0)  # not blocked by the cancelled one
        return slots.free

    assert asyncio.run(scenario()) == 1


async def _enter(slots: Slots, wanted: int) -> None:
    async with slots.held(wanted):
        pass


def _peak_in_flight(records: Sequence[TurnRecord]) -> int:
    """The most requests in flight together, from the client's send and end times."""
    edges = sorted([(r.request.send_s, 1) for r in records] + [(r.request.end_s, -1) for r in records])
    peak = level = 0
    for _, step in edges:  # an end sorts before a send at the same instant
        level += step
        peak = max(peak, level)
    return peak


@pytest.mark.parametrize("load", [1, 2, 3])
def test_a_points_requests_in_flight_never_exceed_its_sessions(load: int) -> None:
    shape = Shape(turns=4, delay_s=(0.0, 0.01))
    sessions = make_sessions(3, f"load-{load}", load, shape)
    planned = forbidden.plan((load,), shape.turns, (0.0, 0.01))[load]
    with session_stub(HONEST, base_s=0.03) as url:
        records = run_load(Target(url, "stub", timeout_s=30.0), sessions, 6, lambda t: len(t.split()), words)
        records_with_pairs = run_load(
            Target(url, "stub", timeout_s=30.0), sessions, 6, lambda t: len(t.split()), words, planned
        )
    pairs = [r for r in records_with_pairs if r.request.role != TURN]
    assert len(pairs) == 2 * len(planned) and all(r.request.ok for r in records_with_pairs)
    assert _peak_in_flight(records) <= load
    if load == 1:  # the pair holds the session's slot: two requests, but never beside a timed turn
        turns = [r.request for r in records_with_pairs if r.request.role == TURN]
        for pair in pairs:
            assert not any(t.send_s < pair.request.end_s and pair.request.send_s < t.end_s for t in turns)
    else:
        assert _peak_in_flight(records_with_pairs) <= load
