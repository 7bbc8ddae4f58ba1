"""The energy meter's interface: ``EnergyMeter`` (named windows, zeus-style), each window's reading an
``Energy`` of its own (``Energy.of_window``; ``Energy.for_samples`` divides it by a cell's samples).
The meters (``rapl``, ``gpu_power``, ``nvml``, ``amd_gpu``, the estimate in ``energy``) import this
module; ``accelbench.meters.energy`` chooses among them."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from accelbench.errors import AccelbenchError
from accelbench.head import Energy

POWERCAP_ROOT = Path("/sys/class/powercap")


class MeterUnavailable(AccelbenchError):
    """No energy meter can be built for this device here; the message says why."""


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

    def end_window(self, name: str) -> Energy:
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
    def _end(self, state: Any, start_s: float, end_s: float) -> Energy:
        """Read the counters at the end of a window that began with ``state`` at ``start_s``."""
