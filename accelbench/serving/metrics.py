"""The server's own timings, read from its Prometheus text and kept as ``Session.details`` strings.

``histogram_means`` turns ``<name>_sum`` / ``<name>_count`` lines (summed over their label sets) into a
mean per histogram. ``LiveDetails`` is the session's ``details`` mapping: fixed entries plus the
server's figures, read when the mapping is first iterated (the cell copies the details after the timed
run, so the server's figures cover it). Ray exports its metrics some seconds late: its figures may miss
the last seconds of the run (their ``_count`` says how many requests they cover).
"""

from __future__ import annotations

import logging
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_S = 5.0


def totals(text: str, names: Sequence[str]) -> dict[str, float]:
    """``name -> value`` of each metric in ``names`` found in the Prometheus ``text``, summed over its
    label sets."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        metric, _, value = line.rpartition(" ")
        base = metric.partition("{")[0]
        if base in names:
            found[base] = found.get(base, 0.0) + float(value)
    return found


def histogram_means(text: str, names: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``name -> (mean, count)`` of each histogram in ``names`` found in the Prometheus ``text``."""
    found = totals(text, [f"{name}{part}" for name in names for part in ("_sum", "_count")])
    pairs = {name: (found.get(f"{name}_sum"), found.get(f"{name}_count")) for name in names}
    return {
        name: (total / count, count) for name, (total, count) in pairs.items() if count and total is not None
    }


def http_text(url: str, headers: Mapping[str, str] | None = None, settle_s: float = 0.0) -> str:
    """The body of GET ``url`` as text, after waiting ``settle_s`` (raises on failure or timeout)."""
    time.sleep(settle_s)
    request = urllib.request.Request(url, headers=dict(headers or {}))
    with urllib.request.urlopen(request, timeout=SCRAPE_TIMEOUT_S) as reply:
        return str(reply.read().decode())


def http_ok(url: str) -> bool:
    """True when GET ``url`` answers 200 (the readiness probe)."""
    request = urllib.request.Request(url)
    with urllib.request.urlopen(request, timeout=SCRAPE_TIMEOUT_S) as reply:
        return bool(reply.status == 200)


class LiveDetails(Mapping[str, str]):
    """``fixed`` entries plus ``read()``'s, read once, at the first iteration (a failed read is noted)."""

    def __init__(self, fixed: Mapping[str, str], read: Callable[[], Mapping[str, str]]) -> None:
        self.fixed = dict(fixed)
        self.read = read
        self.snapshot: dict[str, str] | None = None

    def _current(self) -> dict[str, str]:
        if self.snapshot is None:
            try:
                extra = dict(self.read())
            except Exception as err:  # the server's figures are a bonus; their absence is recorded
                extra = {"server_stats": f"not read: {type(err).__name__}: {err}"[:200]}
            self.snapshot = {**self.fixed, **extra}
        return self.snapshot

    def __getitem__(self, key: str) -> str:
        return self._current()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())
