"""A load point of a sessions cell: a number of sessions at once (closed loop, ``--sessions``) or a session
arrival rate (open loop, ``--session-rate``), and the arrival schedule of a rate point.

A rate point starts its sessions at the times of a Poisson process: the gaps between two starts are
exponential with mean 1 / rate, drawn from a stream keyed by the secret input seed and the point's pass
(``accelbench.cell.seeds.sub_seed``), so neither the code nor the trace tells a server when a session
will come. The first session starts at once (the point's clock 0). Each session then runs its turns as
a closed-loop one does (its delays, the server's real replies). The point falls *behind* when a session
is due while ``in_flight_cap`` sessions are still in flight (the server is not keeping up: an open loop
piles sessions up without bound): it starts no more sessions, lets those in flight finish and is
marked. A server that keeps up holds about rate x session latency sessions in flight (Little's law).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from accelbench.cell.seeds import sub_seed
from accelbench.endpoint.records import RequestRecord
from accelbench.session_figures import SessionPoint

DEFAULT_RATE_SESSIONS = 16
"""The sessions a rate point starts (``--session-count``) unless it falls behind."""
DEFAULT_IN_FLIGHT_CAP = 8
"""A rate point falls behind when a session is due while this many are in flight."""
MAX_RATE_PER_S = 1000.0


@dataclass(frozen=True, slots=True, order=True)
class Load:
    """What a load point holds: ``sessions`` at once (a closed loop), or, with ``rate_per_s`` set, sessions
    arriving at that rate (an open loop; ``sessions`` 0, as the stored requests' ``concurrency``). The key
    of a point's sessions and records: a request's ``Load.of`` is the point it belongs to."""

    sessions: int
    rate_per_s: float | None = None

    @classmethod
    def of(cls, request: RequestRecord) -> Load:
        """The load point of a stored request: its ``concurrency`` and ``target_qps``."""
        return cls(request.concurrency, request.target_qps)

    @classmethod
    def of_point(cls, point: SessionPoint) -> Load:
        """The load of a stored point."""
        return cls(0, point.rate_per_s) if point.rate_per_s is not None else cls(point.sessions)

    @property
    def pass_name(self) -> str:
        """The pass its sessions are drawn in (their salts, texts and arrival times): ``load-<n>`` or
        ``rate-<r>``."""
        return f"load-{self.sessions}" if self.rate_per_s is None else f"rate-{self.rate_per_s:g}"

    def __str__(self) -> str:
        if self.rate_per_s is None:
            return f"{self.sessions} sessions"
        return f"{self.rate_per_s:g} sessions/s"


@dataclass(frozen=True, slots=True)
class Opening:
    """How a rate point opens its sessions: when each is due and the cap on sessions in flight."""

    rate_per_s: float
    arrivals_s: tuple[float, ...]
    """Each session's start on the point's clock (seconds, ascending; the first 0)."""
    in_flight_cap: int


@dataclass(frozen=True, slots=True)
class Opened:
    """What a rate point did: the sessions it started, how many were in flight at most, and whether it
    fell behind."""

    rate_per_s: float
    """The offered rate."""
    started: int
    started_s: tuple[float, ...]
    """Each started session's first send on the point's clock."""
    peak_in_flight: int
    behind: str
    """Why the point stopped starting sessions ("" if it started them all)."""

    @property
    def achieved_rate_per_s(self) -> float:
        """Sessions started per second: the started sessions after the first over the time from the first
        start to the last (0.0 with fewer than 2)."""
        if self.started < 2:
            return 0.0
        span_s = max(self.started_s) - min(self.started_s)
        return (self.started - 1) / span_s if span_s > 0 else 0.0


def arrival_times_s(input_seed: int, pass_name: str, rate_per_s: float, count: int) -> tuple[float, ...]:
    """``count`` session starts of a Poisson process of ``rate_per_s`` (the first at 0), drawn from the
    input seed and the pass: deterministic in its arguments."""
    rng = np.random.default_rng(sub_seed(input_seed, "session-arrivals", pass_name))
    gaps = rng.exponential(1.0 / rate_per_s, size=max(count - 1, 0))
    return (0.0, *(float(t) for t in np.cumsum(gaps)))[:count]


def opening(input_seed: int, load: Load, count: int, in_flight_cap: int) -> Opening | None:
    """The opening of ``load``'s ``count`` sessions (None: a closed-loop point)."""
    if load.rate_per_s is None:
        return None
    arrivals = arrival_times_s(input_seed, load.pass_name, load.rate_per_s, count)
    return Opening(load.rate_per_s, arrivals, in_flight_cap)
