"""The noise guard's false-alarm and detection rates on this machine, the old guard against the new one.

A synthetic cell: the guard's observations before, then a spawned process (as a trial runs) timing a fixed
float64 matmul on every core for about ``--seconds``, then the guard's observations after. Cells run
interleaved in rounds of four: idle, one core of background load, idle, both cores of background load.
A background load is one spinning process per core, started outside the run's process tree (detached,
its own session) when the cell's timed loop begins, for a random 30-50% of the cell's length starting in
its first half. Both guards judge the same cell (their probes nest, the inner one alternating):

- BEFORE: the guard as of commit 592e5bc: best-of-9 probe, unstable when it drifted > 5%; "machine busy"
  when the machine's CPU time minus the cell process's own exceeded 0.25 cores;
- ROUND1: the guard of round 1 (issue 34): the run's tree is its own, but a child the kernel reaped for a
  parent that ignores SIGCHLD (Ray's workers) drops out of the tree's sum;
- AFTER: ``accelbench.meters.noise`` (the run's tree is its own, those children too, steal judged by what
  the measurement shows, floor-derived limit, samples).
- PROBE1 / PROBE3: the same guard for a cell with no samples to judge (a served curve): other load,
  steal and the probe's drift alone, from one probe at each end or the median of ``PROBES``
  (three probes taken just inside the AFTER guard's own, at each end).
- CURVE: the served-LLM curve's whole guard: PROBE1, and when it flags the drift alone the confirm run
  (``accelbench.endpoint.confirm``): the first third of the loop measured again at once, the two runs'
  latencies compared by ``noise.runs_shift``; its retries column counts the confirm runs spent.

- TRAIN: a training cell's guard: AFTER's observations with no samples to judge, a drift alone kept as a
  warning (``noise.drift_as_warning``): other load and steal decide. Retries: training measures no
  second attempt (the column counts the cells it would mark).

The in-process LLM cells are judged as AFTER (their samples: the replies' times per output token).

A loaded cell "moved" when its headline (samples/s) is more than 5% off the median of the idle cells.
Printed: false alarms among idle cells, detection among the loaded cells that moved, "machine busy"
warnings among idle cells, and the cells each guard would measure again. Goal (issue 34): false alarms
<= 1% per cell, detection >= 95%.

``--kind served`` times the loop in a worker that a launcher ignoring SIGCHLD forks (Ray Serve's
pattern: the replica's CPU time is the cell's own work), ``in-process`` (default) in the spawned process.

Usage: ``python benchmarks/noise_guard.py [--rounds 25] [--seconds 2.0] [--kind served]`` (25 rounds =
50 idle cells, about 5 minutes on a 2-vCPU VM); ``--rounds 2 --seconds 1`` checks it works in under a minute.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _guard_columns import (
    PROBES,
    Cell,
    busy,
    curve_flag,
    new_flag,
    old_flag,
    probe_evidence,
    probe_only,
    retried,
    round1_flag,
    training_flag,
)
from _old_guard import OldGuard

from accelbench.head import NoiseProbe
from accelbench.meters import cputime, noise, reference_probe

REPLICA_IDLE_S = 1.2
"""How long the served kind's worker idles after its timed loop before it exits: a Ray replica is
stopped with its server, idle, never right after its last request. ``AutoReapedWatch`` reads the tree
every ``cputime.WATCH_S``: a worker that exits while still computing loses up to that long of its CPU
time to "other load" (without this rest: 43 of 50 idle served cells alarmed at 0.30 cores, 2026-12-05;
the real Ray Serve cell: 5 of 5 ok at 0.00-0.04 cores)."""
_LOAD = """
import os, sys, time
delay_s, duration_s = float(sys.argv[1]), float(sys.argv[2])
if os.fork():
    os._exit(0)
os.setsid()
time.sleep(delay_s)
stop = time.monotonic() + duration_s
while time.monotonic() < stop:
    pass
"""
"""A spinner that detaches (fork, setsid) so it is no part of the run's process tree, as another
user's process would not be."""


def _timed_loop(conn: Any, items: int, threads: int) -> None:
    """In the spawned cell process: warm up, say "go", time ``items`` matmuls on ``threads`` threads."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    latencies = []
    with threadpool_limits(limits=threads):
        for _ in range(5):
            a @ b
        conn.send("go")
        for _ in range(items):
            start = time.perf_counter()
            a @ b
            latencies.append(time.perf_counter() - start)
    conn.send(latencies)
    conn.close()


def _served_loop(conn: Any, items: int, threads: int) -> None:
    """The served kind: a launcher that ignores SIGCHLD, as Ray's raylet does, forks the worker that
    times the matmuls; the kernel reaps the worker at its exit into nobody's ``cutime``."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    worker = os.fork()
    if worker == 0:
        _timed_loop(conn, items, threads)
        time.sleep(REPLICA_IDLE_S)  # a replica serves its last request, then idles until the server stops
        os._exit(0)
    while os.path.exists(f"/proc/{worker}"):
        time.sleep(0.05)


def start_load(cores: int, delay_s: float, duration_s: float) -> None:
    """``cores`` detached spinners, each busy for ``duration_s`` after ``delay_s``."""
    for _ in range(cores):
        subprocess.run([sys.executable, "-c", _LOAD, str(delay_s), str(duration_s)], check=True)


def timed_cell(items: int, on_go: Callable[[], float], served: bool = False) -> list[float]:
    """Spawn the cell's timed loop (``served``: in a worker behind a launcher, ``_served_loop``); ``on_go``
    runs when it starts timing and returns seconds to wait after it (for the load to end). Returns the
    latencies."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    target = _served_loop if served else _timed_loop
    process = context.Process(target=target, args=(sender, items, os.cpu_count() or 1))
    process.start()
    sender.close()
    receiver.recv()
    linger_s = on_go()
    latencies: list[float] = receiver.recv()
    process.join()
    time.sleep(linger_s)
    return latencies


def run_cell(
    load_cores: int,
    items: int,
    seconds: float,
    floor: reference_probe.NoiseFloor,
    old_inside: bool,
    served: bool = False,
) -> Cell:
    """One cell under ``load_cores`` background spinners (0: idle), judged by both guards."""
    old, rng = OldGuard(), random.Random()

    def go() -> float:
        if not load_cores:
            return 0.0
        delay_s, duration_s = rng.uniform(0.0, 0.5) * seconds, rng.uniform(0.3, 0.5) * seconds
        start_load(load_cores, delay_s, duration_s)
        return max(0.0, delay_s + duration_s - seconds) + 0.2

    def probes() -> tuple[float, ...]:
        return tuple(reference_probe.probe_s() for _ in range(PROBES))

    if old_inside:
        start = _begin(floor)
        old.begin()
        opening = probes()
        latencies = timed_cell(items, go, served)
        closing = probes()
        old_verdict = old.end()
        new, round1 = _end(start, latencies)
    else:
        old.begin()
        start = _begin(floor)
        opening = probes()
        latencies = timed_cell(items, go, served)
        closing = probes()
        new, round1 = _end(start, latencies)
        old_verdict = old.end()
    name = ("idle", "one core", "both cores")[min(load_cores, 2)]
    rate = len(latencies) / sum(latencies)
    cell = Cell(name, rate, old_verdict, new, round1=round1, opening_s=opening, closing_s=closing)
    return _curve_verdict(cell, latencies, served)


def _curve_verdict(cell: Cell, latencies: list[float], served: bool) -> Cell:
    """``cell`` with the served curve's verdict: the probe-only guard, corroborated by a confirm run when
    it flagged the drift alone (the first third of the loop again, judged against the first third)."""
    evidence = probe_evidence(cell, 1)
    if not noise.disturbance(evidence):
        return cell
    quiet = evidence.other_cores < evidence.other_limit_cores
    if not quiet or evidence.steal_cores >= max(noise.STEAL_LIMIT_CORES, evidence.other_limit_cores):
        return dataclasses.replace(cell, curve=True)
    first = latencies[: max(1, len(latencies) // 3)]
    again = timed_cell(len(first), lambda: 0.0, served)
    shift = noise.runs_shift(first, again)
    rejudged = dataclasses.replace(evidence, shift=shift)
    return dataclasses.replace(cell, curve=bool(noise.disturbance(rejudged)), confirmed=True)


def _begin(floor: reference_probe.NoiseFloor) -> noise.ProbeStart:
    """``noise.begin``, then this process gives up being the subreaper it became: its planted loads
    detach (fork, setsid) to stand for other users' processes, which a run never adopts."""
    start = noise.begin(floor)
    cputime.adopt_orphans(False)
    return start


def _end(start: noise.ProbeStart, latencies: list[float]) -> tuple[NoiseProbe, NoiseProbe]:
    """This round's verdict and round 1's: the same observations with the auto-reaped children's time
    (``cputime.AutoReapedWatch``) read as other load again."""
    new = noise.end(start, latencies)
    gone_s = start.watch.gone_s() if start.watch is not None else 0.0
    other = new.other_load_cores + gone_s / (time.monotonic() - start.clock.wall_s)
    evidence = noise.Evidence(
        other_cores=other,
        steal_cores=new.steal_cores or 0.0,
        drift=new.drift,
        threshold=new.threshold,
        shift=noise.samples_shift(latencies),
        probe_slower=new.after_s > new.before_s,
        other_limit_cores=noise.other_load_limit_cores(),
    )
    reason = noise.disturbance(evidence)
    return new, dataclasses.replace(new, other_load_cores=other, unstable=bool(reason), reason=reason)


def calibrate_items(seconds: float) -> int:
    """How many timed matmuls last about ``seconds`` on this machine (idle)."""
    latencies = timed_cell(20, lambda: 0.0)
    return max(30, int(seconds / statistics.median(latencies)))


def _rate(hits: int, total: int) -> str:
    return f"{hits}/{total} ({hits / total:.0%})" if total else "-"


def report(cells: list[Cell]) -> None:
    """The table: false alarms idle, detection under each load, busy warnings idle."""
    idle = [c for c in cells if c.load == "idle"]
    reference = statistics.median(c.samples_per_s for c in idle)
    print(f"\nidle headline median {reference:.1f} samples/s over {len(idle)} idle cells")
    loads = ("one core", "both cores")
    moved = {
        name: [c for c in cells if c.load == name and abs(c.samples_per_s / reference - 1) > 0.05]
        for name in loads
    }
    for name in loads:
        every = [c for c in cells if c.load == name]
        shares = sorted(c.samples_per_s / reference - 1 for c in every)
        print(f"{name}: {len(moved[name])}/{len(every)} moved the headline > 5% (moves {_moves(shares)})")
    header = f"{'guard':<7} {'idle false alarms':>18} {'idle busy warnings':>19}"
    header += "".join(f" {'detected, ' + n:>22}" for n in loads) + f" {'retries, all cells':>19}"
    print("\n" + header)
    guards = (
        ("BEFORE", old_flag),
        ("ROUND1", round1_flag),
        ("AFTER", new_flag),
        ("PROBE1", probe_only(1)),
    )
    more = (("PROBE3", probe_only(PROBES)), ("CURVE", curve_flag), ("TRAIN", training_flag))
    for label, verdict in (*guards, *more):
        row = f"{label:<7} {_rate(sum(verdict(c) for c in idle), len(idle)):>18}"
        warned = sum(busy(c, label) for c in idle)
        row += f" {_rate(warned, len(idle)):>19}"
        row += "".join(f" {_rate(sum(verdict(c) for c in moved[n]), len(moved[n])):>22}" for n in loads)
        again = sum(retried(c, label) for c in cells)
        print(row + f" {_rate(again, len(cells)):>19}")
    _details(idle, reference)


def _moves(shares: list[float]) -> str:
    return ", ".join(f"{s:+.0%}" for s in shares[:3]) + (" ..." if len(shares) > 3 else "")


def _details(idle: list[Cell], reference: float) -> None:
    new_other = sorted(c.new.other_load_cores for c in idle)
    old_other = sorted(c.old.other_cores for c in idle)
    drifts = sorted(c.new.drift for c in idle)
    print(
        f"\nidle other load, cores: BEFORE median {statistics.median(old_other):.2f} "
        f"max {old_other[-1]:.2f}; AFTER median {statistics.median(new_other):.3f} max {new_other[-1]:.3f}"
    )
    print(f"idle new-probe drift: median {statistics.median(drifts):.1%} max {drifts[-1]:.1%}")
    misread = sorted(c.round1.other_load_cores - c.new.other_load_cores for c in idle if c.round1)
    if misread:
        print(
            f"the cell's own work ROUND1 read as other load (AFTER keeps it own), cores: median "
            f"{statistics.median(misread):.3f} max {misread[-1]:.3f}"
        )
    busy = sum(c.new.other_load_cores >= noise.other_load_limit_cores() for c in idle)
    if busy:
        print(
            f"NOTE: in {busy} of {len(idle)} idle cells other processes kept the machine busy (the new "
            "guard's other load past its limit): this machine was not quiet, rerun it on a quiet one"
        )
    for cell in (c for c in idle if c.new.unstable):  # a true alarm moved the headline too
        move = cell.samples_per_s / reference - 1
        print(f"  AFTER idle alarm (headline {move:+.1%} off the idle median): {cell.new.reason}")


def main() -> None:
    """Parse the arguments, run the rounds, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=25, help="rounds of idle, one core, idle, both")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of a cell's timed loop")
    parser.add_argument(
        "--kind",
        choices=("in-process", "served"),
        default="in-process",
        help="served: the timed loop in a worker that a SIGCHLD-ignoring launcher starts (Ray's pattern)",
    )
    args = parser.parse_args()
    if args.rounds < 1 or args.seconds <= 0:
        print("noise_guard.py: --rounds must be at least 1 and --seconds positive", file=sys.stderr)
        sys.exit(2)
    started = time.monotonic()
    floor = reference_probe.measure_floor()
    items = calibrate_items(args.seconds)
    print(
        f"run floor: median pair drift {floor.median_drift:.1%} -> drift limit {floor.threshold:.1%}; "
        f"{items} timed matmuls per cell; {os.cpu_count()} CPUs; cells {args.kind}"
    )
    cells = []
    for number in range(args.rounds):
        for step, cores in enumerate((0, 1, 0, 2)):
            cells.append(
                run_cell(cores, items, args.seconds, floor, (number + step) % 2 == 0, args.kind == "served")
            )
        print(f"round {number + 1}/{args.rounds} done ({time.monotonic() - started:.0f} s)", flush=True)
    report(cells)
    print(f"\n{time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
