"""How often a rate point of a server that keeps up is marked behind (``accelbench.sessions.load``).

The rule: a rate point falls behind when a session is due while ``DEFAULT_IN_FLIGHT_CAP`` sessions are in
flight. A server whose session latency L does not grow with the load holds R x L sessions in flight on
average (an M/G/infinity queue) and never falls behind for good, yet a burst of Poisson arrivals can
reach the cap. This replays the rule on the driver's own arrival schedules (``arrival_times_s``, one per
input seed) with sessions of a fixed or an exponential latency, and prints the share of points marked.

    PYTHONPATH=. python benchmarks/session_behind_false_alarms.py [POINTS]
"""

from __future__ import annotations

import random
import sys

from accelbench.sessions.load import DEFAULT_IN_FLIGHT_CAP, DEFAULT_RATE_SESSIONS, arrival_times_s


def marked(arrivals_s: tuple[float, ...], latencies_s: list[float], cap: int) -> bool:
    """Whether some session is due while ``cap`` started ones have not ended (the driver's rule)."""
    ends: list[float] = []
    for start_s, latency_s in zip(arrivals_s, latencies_s, strict=True):
        ends = [end for end in ends if end > start_s]
        if len(ends) >= cap:
            return True
        ends.append(start_s + latency_s)
    return False


def main(points: int) -> None:
    draw = random.Random(0)
    count, cap = DEFAULT_RATE_SESSIONS, DEFAULT_IN_FLIGHT_CAP
    print(f"{points} points of {count} sessions at rate 1/s, cap {cap} in flight: share marked behind")
    print("R x L | fixed latency | exponential latency")
    for load in (1, 2, 3, 4, 6):
        shares = []
        for exponential in (False, True):
            hits = 0
            for seed in range(points):
                arrivals = arrival_times_s(seed, "rate-1", 1.0, count)
                lengths = [draw.expovariate(1 / load) if exponential else float(load) for _ in arrivals]
                hits += marked(arrivals, lengths, cap)
            shares.append(hits / points)
        print(f"{load} | {shares[0]:.2%} | {shares[1]:.2%}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
