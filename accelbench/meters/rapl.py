"""CPU package and DRAM energy from RAPL counters in the Linux powercap tree (Intel, and AMD since Zen).

Each zone ``/sys/class/powercap/intel-rapl:P[:S]`` has ``name`` (``package-P``, ``dram``, ``core``,
``uncore``, ``psys``), ``energy_uj`` (a counter in microjoules) and ``max_energy_range_uj`` (where the
counter wraps to 0). AMD CPUs expose the same tree through the same driver. Only package and DRAM zones are
read: ``core``/``uncore`` are inside the package and ``psys`` overlaps it.

Wrap-around: a delta that comes out negative had one wrap, so ``max_energy_range_uj`` is added (as zeus'
``RAPLFile`` does). A window may span several wraps (AMD's range is 2^32 uJ, about 4.3 kJ: under 10 s at
500 W), so a daemon thread reads the counters every ``poll_s`` seconds while the meter is open and adds up
the deltas; ``poll()`` does the same by hand (tests). Since Linux 5.10 ``energy_uj`` is readable by root
only; an unreadable tree is reported, not used. RAPL counts the whole socket: other processes and idle
power are in the figure.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accelbench.head import Energy
from accelbench.meters.energy_base import POWERCAP_ROOT, EnergyMeter

log = logging.getLogger(__name__)

POLL_S = 1.0
"""Seconds between background reads; must stay well under the wrap period of the counters."""


@dataclass(frozen=True, slots=True)
class RaplDomain:
    """One readable powercap zone: ``name`` is ``package-P`` or ``dram-P``."""

    name: str
    energy_path: Path
    max_energy_range_uj: int


def find_domains(root: Path = POWERCAP_ROOT) -> tuple[tuple[RaplDomain, ...], str]:
    """Readable package and DRAM zones under ``root``, and a one-line problem when there are none."""
    zones = sorted(Path(root).glob("intel-rapl:*"))
    if not zones:
        return (), f"no RAPL zones under {root}"
    domains, problems = [], []
    for zone in zones:
        try:
            domain = _domain(zone)
        except (OSError, ValueError) as err:
            problems.append(f"{zone.name}: {type(err).__name__}: {err}")
            continue
        if domain is not None:
            domains.append(domain)
    if domains:
        return tuple(domains), ""
    return (), "RAPL present but not readable (root only since Linux 5.10): " + "; ".join(problems[:2])


def _domain(zone: Path) -> RaplDomain | None:
    name = (zone / "name").read_text().strip()
    package = zone.name.split(":")[1]
    if name.startswith("package"):
        label = name
    elif name == "dram":
        label = f"dram-{package}"
    else:
        return None
    energy_path = zone / "energy_uj"
    int(energy_path.read_text())  # raises PermissionError where only root may read it
    return RaplDomain(label, energy_path, int((zone / "max_energy_range_uj").read_text()))


class _Counter:
    """Running total of one zone's counter, corrected for wrap-around."""

    def __init__(self, domain: RaplDomain):
        self.domain = domain
        self.last_uj = self._read()
        self.total_uj = 0

    def _read(self) -> int:
        return int(self.domain.energy_path.read_text())

    def update(self) -> None:
        now_uj = self._read()
        delta = now_uj - self.last_uj
        if delta < 0:
            delta += self.domain.max_energy_range_uj
        self.total_uj += delta
        self.last_uj = now_uj


class RaplMeter(EnergyMeter):
    """Energy of package and DRAM zones over a window, labelled ``measured``."""

    meter = "rapl"

    def __init__(
        self,
        domains: tuple[RaplDomain, ...],
        poll_s: float | None = POLL_S,
        sync: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        super().__init__(sync, clock)
        self._counters = [_Counter(domain) for domain in domains]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._poll_s = poll_s
        self._thread: threading.Thread | None = None
        if poll_s:
            self._thread = threading.Thread(target=self._poll_forever, name="rapl-poll", daemon=True)
            self._thread.start()

    def poll(self) -> None:
        """Read every counter now and add the deltas (wraps included) to the running totals."""
        with self._lock:
            for counter in self._counters:
                counter.update()

    def _poll_forever(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.poll()
            except (OSError, ValueError) as err:  # a torn read: the next poll catches up
                log.debug("RAPL poll failed: %s", err)

    def close(self) -> None:
        """Stop the background reads."""
        super().close()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * (self._poll_s or 0) + 1)

    def _begin(self) -> dict[str, int]:
        self.poll()
        return {c.domain.name: c.total_uj for c in self._counters}

    def _end(self, state: dict[str, int], start_s: float, end_s: float) -> Energy:
        self.poll()
        domains = {c.domain.name: (c.total_uj - state[c.domain.name]) / 1e6 for c in self._counters}
        poll = f"read every {self._poll_s:g} s" if self._poll_s else "read at the window edges only"
        return Energy.of_window(
            energy_j=sum(domains.values()),
            window_s=end_s - start_s,
            provenance="measured",
            meter=self.meter,
            formula=(
                f"sum of RAPL energy_uj deltas ({' + '.join(domains)}), wrap-around corrected with "
                f"max_energy_range_uj, {poll}; whole socket: other processes and idle power included"
            ),
            domains=domains,
        )
