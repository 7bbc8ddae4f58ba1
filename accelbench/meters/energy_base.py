"""The energy meter's interface: ``EnergyMeter`` (named windows, zeus-style), ``EnergyReading`` and the
stored ``Energy`` record of a reading. The meters (``rapl``, ``gpu_power``, ``nvml``, ``amd_gpu``, the
estimate in ``energy``) import this module; ``accelbench.meters.energy`` chooses among them."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelbench.errors import AccelbenchError
from accelbench.head import ENERGY_PROVENANCES, Energy

POWERCAP_ROOT = Path("/sys/class/powercap")


class MeterUnavailable(AccelbenchError):
    """No energy meter can be built for this device here; the message says why."""


@dataclass(frozen=True, slots=True)
class EnergyReading:
    """What one window consumed, before it is divided by the samples of the cell."""

    energy_j: float
    window_s: float
    provenance: str
    meter: str
    formula: str
    domains: Mapping[str, float] = field(default_factory=dict)
    idle_power_w: float | None = None
    idle_subtracted: bool = False

    def __post_init__(self) -> None:
        if self.provenance not in ENERGY_PROVENANCES:
            raise ValueError(f"unknown energy provenance {self.provenance!r}")

    @property
    def power_w(self) -> float:
        """Average power over the window (0 for an empty window)."""
        return self.energy_j / self.window_s if self.window_s > 0 else 0.0


def energy_record(reading: EnergyReading, samples: int) -> Energy:
    """The stored ``Energy`` of a window in which ``samples`` samples were completed."""
    return Energy(
        energy_j=reading.energy_j,
        power_w=reading.power_w,
        energy_per_query_j=reading.energy_j / samples if samples > 0 else 0.0,
        samples_per_j=samples / reading.energy_j if reading.energy_j > 0 else 0.0,
        window_s=reading.window_s,
        samples=samples,
        provenance=reading.provenance,
        meter=reading.meter,
        formula=reading.formula,
        domains=dict(reading.domains),
        idle_power_w=reading.idle_power_w,
        idle_subtracted=reading.idle_subtracted,
    )


def _no_sync() -> None:
    """CPU work is synchronous: nothing to wait for."""


class EnergyMeter(ABC):
    """Measure the energy of named windows; subclasses read one kind of counter (or estimate)."""

    meter: str
    """Short name stored with every reading (``rapl``, ``nvml``, ``cpu-estimate``, ...)."""

    def __init__(self, sync: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic):
        self._sync = sync or _no_sync
        self._clock = clock
        self._windows: dict[str, tuple[Any, float]] = {}

    def begin_window(self, name: str) -> None:
        """Synchronise the device, then read the counters; ``name`` must not be open already."""
        if name in self._windows:
            raise ValueError(f"energy window {name!r} is already open")
        self._sync()
        state = self._begin()
        self._windows[name] = (state, self._clock())

    def end_window(self, name: str) -> EnergyReading:
        """Synchronise the device, read the counters again and return what the window consumed."""
        if name not in self._windows:
            raise ValueError(f"energy window {name!r} was not begun")
        state, start_s = self._windows.pop(name)
        self._sync()
        return self._end(state, start_s, self._clock())

    def close(self) -> None:
        """Release the device and stop background threads; open windows are dropped."""
        self._windows.clear()

    @abstractmethod
    def _begin(self) -> Any:
        """Read the counters at the start of a window; the result is given back to ``_end``."""

    @abstractmethod
    def _end(self, state: Any, start_s: float, end_s: float) -> EnergyReading:
        """Read the counters at the end of a window that began with ``state`` at ``start_s``."""
