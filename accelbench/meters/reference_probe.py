"""The noise guard's reference probe, and the run's noise floor: how much the probe differs on its own.

The probe times a fixed amount of one-thread float64 arithmetic. Two idle probes a second apart are not
equal on these VMs (the machine drifts between faster and slower phases): the guard's first probe,
a best of 9 matmuls, differed by a median 2.8% and by more than 5% in 30% of 40 idle pairs on a quiet
2-vCPU EPYC VM. So each run takes a floor once, at its start: ``FLOOR_PAIRS`` pairs of probes, and the
guard's drift limit is ``FLOOR_FACTOR`` times their median drift, within ``DRIFT_MIN`` and ``DRIFT_MAX``.

The parent takes it before the first cell (``host_floor``) and hands it to every cell in its spec
(``CellSpec.noise_floor``, through the fork's arguments); a cell derives the limit again from the pairs
(``floor_from_dict``) and reads no file: a floor in the run folder or the user's cache is writable by any
stack's process, and a forged one switched the drift check off for every later cell (issue 40). The
parent may reuse the floor it wrote to the user's cache less than ``FLOOR_REUSE_S`` ago, once
``FRESH_PAIRS`` fresh pairs do not contradict it (``checked_floor``: ~1.4 s instead of ~3.4 s); a
forged cache can then loosen the limit at most to the largest fresh idle drift's. A cell whose spec has
no floor measures one itself.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.files import read_json

DRIFT_MIN = 0.05
"""The smallest drift limit: a headline is judged on 5% moves."""
DRIFT_MAX = 0.20
"""The largest drift limit, however noisy the machine: a drift beyond it is never the floor."""
FLOOR_FACTOR = 4.0
"""Drift limit = this x the median idle pair drift. For a normal difference of two probes the median
absolute difference is 0.674 sigma, so the limit sits at 2.7 sigma: about 0.7% of idle pairs beyond it."""
FLOOR_PAIRS = 8
FLOOR_PAUSE_S = 0.25
"""Seconds between the two probes of a pair (a measurement's probes are seconds apart, the drift
between phases is what is measured)."""

FRESH_PAIRS = 3
"""Fresh pairs a reused floor is checked against (``checked_floor``): ~1.4 s instead of ~3.4 s."""
FLOOR_REUSE_S = 600.0
"""A floor measured on this host less than this long ago is reused by a new run (``cached_floor``)."""

_taken: tuple[float, NoiseFloor] | None = None
"""(monotonic time, floor) of the last floor ``host_floor`` returned in this process."""

_PROBE_N = 384
_PROBE_REPEATS = 5
_PROBE_ROUNDS = 7


def probe_s() -> float:
    """Median over ``_PROBE_ROUNDS`` rounds of the best of ``_PROBE_REPEATS`` calls of a fixed float64
    384x384 matmul on one BLAS thread (~2 ms each, ~0.1 s in all).

    One thread, because a multi-threaded BLAS call right after a framework's own thread pool has run
    reads 4-12% slower on this 2-core VM for reasons that are not the machine's drift. Rounds and a
    median, because a single best-of-9 (the guard's first probe) differed by more than 5% between two
    idle calls in 20-30% of pairs; the median of rounds cut the tail (p90 6.7% -> 5.4%, max 12% -> 8%
    on a busy 2-vCPU VM, 30 pairs each).
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a = rng.standard_normal((_PROBE_N, _PROBE_N))
    b = rng.standard_normal((_PROBE_N, _PROBE_N))
    rounds = []
    with threadpool_limits(limits=1):
        for _ in range(_PROBE_ROUNDS):
            best = float("inf")
            for _ in range(_PROBE_REPEATS):
                start = time.perf_counter()
                a @ b
                best = min(best, time.perf_counter() - start)
            rounds.append(best)
    return float(np.median(rounds))


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """The probe's own noise on this machine at the run's start, and the drift limit derived from it."""

    pair_drifts: tuple[float, ...]
    """``|b - a| / a`` of each idle pair of probes."""
    median_drift: float
    threshold: float
    """The drift limit of this run's cells: ``drift_limit(median_drift)``."""
    probe_s: float
    """Median probe time over the pairs."""
    measured_at: str


def drift_limit(median_drift: float) -> float:
    """``FLOOR_FACTOR`` x the median idle drift, within ``DRIFT_MIN`` and ``DRIFT_MAX``."""
    return min(DRIFT_MAX, max(DRIFT_MIN, FLOOR_FACTOR * median_drift))


def floor_of(pairs: list[tuple[float, float]]) -> NoiseFloor:
    """The floor of measured pairs of probe times (seconds)."""
    drifts = tuple(abs(b - a) / a for a, b in pairs if a > 0)
    median = float(np.median(drifts)) if drifts else 0.0
    times = [t for pair in pairs for t in pair]
    probe = float(np.median(times)) if times else 0.0
    measured_at = datetime.now(UTC).isoformat(timespec="seconds")
    return NoiseFloor(drifts, median, drift_limit(median), probe, measured_at)


def measure_floor(pairs: int = FLOOR_PAIRS, pause_s: float = FLOOR_PAUSE_S) -> NoiseFloor:
    """Time ``pairs`` pairs of probes ``pause_s`` apart (~0.45 s a pair)."""
    return floor_of([measure_pair(pause_s) for _ in range(pairs)])


def host_floor(cache: Path | None = None) -> NoiseFloor:
    """This host's floor, taken by the parent before the run's first cell: the one in ``cache`` when it
    is younger than ``FLOOR_REUSE_S`` and ``FRESH_PAIRS`` fresh pairs do not contradict it
    (``checked_floor``), else measured now (and written to ``cache``). Nothing a cell reads: the floor
    travels to each cell in its spec (``CellSpec.noise_floor``). A floor this process took less than
    ``FLOOR_REUSE_S`` ago is reused as it is (its memory is no stack's to write: tune's and a fleet
    node's cells)."""
    global _taken
    if _taken is not None and time.monotonic() - _taken[0] < FLOOR_REUSE_S:
        return _taken[1]
    floor = cached_floor(cache) if cache is not None else None
    if floor is not None:
        floor = checked_floor(floor, [measure_pair() for _ in range(FRESH_PAIRS)])
    if floor is None:
        floor = measure_floor()
        if cache is not None:
            with contextlib.suppress(OSError):  # a read-only cache: the next run measures its own
                _write_floor(cache, floor)
    _taken = (time.monotonic(), floor)
    return floor


def checked_floor(cached: NoiseFloor | None, fresh: list[tuple[float, float]]) -> NoiseFloor | None:
    """``cached`` when its median drift is no more than the largest drift of the ``fresh`` pairs, else
    None. A file anyone of this user can write (a stack's process too) can thus loosen the limit at
    most to ``drift_limit`` of the largest of ``FRESH_PAIRS`` fresh idle drifts, never beyond
    ``DRIFT_MAX``; an honest cache fails the check when all its fresh pairs drift less than its median
    (1 in 2^``FRESH_PAIRS``), and the floor is then measured again."""
    drifts = [abs(b - a) / a for a, b in fresh if a > 0]
    if cached is None or not drifts or cached.median_drift > max(drifts):
        return None
    return cached


def measure_pair(pause_s: float = FLOOR_PAUSE_S) -> tuple[float, float]:
    """Two probe times ``pause_s`` apart."""
    first = probe_s()
    time.sleep(pause_s)
    return first, probe_s()


def floor_to_dict(floor: NoiseFloor) -> dict[str, Any]:
    """The plain form a cell's spec carries."""
    return asdict(floor)


def floor_from_dict(document: Mapping[str, Any]) -> NoiseFloor:
    """The floor of a spec (or a file), its median and limit derived again from its own pairs: the limit
    is always ``drift_limit`` of the pairs' median, within ``DRIFT_MIN`` and ``DRIFT_MAX``, whatever the
    document says. ValueError when the pairs are missing or not finite non-negative drifts."""
    drifts = tuple(float(d) for d in document["pair_drifts"])
    if not drifts or not all(math.isfinite(d) and d >= 0 for d in drifts):
        raise ValueError("a noise floor needs finite, non-negative pair drifts")
    median = float(np.median(drifts))
    probe = float(document.get("probe_s", 0.0))
    return NoiseFloor(drifts, median, drift_limit(median), probe, str(document.get("measured_at", "")))


def user_cache() -> Path:
    """This host's floor in the user's cache (``$XDG_CACHE_HOME/accelbench``, else ``~/.cache``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "accelbench" / f"noise-floor-{socket.gethostname()}.json"


def cached_floor(path: Path, now: datetime | None = None) -> NoiseFloor | None:
    """The floor stored at ``path`` when it was measured less than ``FLOOR_REUSE_S`` ago and its limit
    follows from its own pairs, else None."""
    floor = _read_floor(path)
    if floor is None or len(floor.pair_drifts) != FLOOR_PAIRS or floor != floor_from_dict(asdict(floor)):
        return None
    try:
        age_s = ((now or datetime.now(UTC)) - datetime.fromisoformat(floor.measured_at)).total_seconds()
    except (ValueError, TypeError):
        return None
    return floor if 0 <= age_s < FLOOR_REUSE_S else None


def _write_floor(path: Path, floor: NoiseFloor) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(floor), indent=1))
    os.replace(tmp, path)


def _read_floor(path: Path) -> NoiseFloor | None:
    try:
        document = read_json(path, "noise floor cache", finite=False)
        document["pair_drifts"] = tuple(document["pair_drifts"])
        return NoiseFloor(**document)
    except (OSError, ValueError, TypeError, KeyError):
        return None
