"""The GPU meter shared by NVML and amdsmi: an energy counter when the device has one, else polled power.

A vendor module (``accelbench.meters.nvml``, ``accelbench.meters.amd_gpu``) only supplies two readers:
``read_energy_j`` (a monotonic counter in joules, or None when the device has none) and ``read_power_w``,
and hands them to ``open_gpu_meter`` with its ``GpuOptions``.
With a counter the reading is ``measured``; without, a ``PowerSampler`` thread reads the power every
``poll_s`` seconds and the window is the integral of the piecewise-linear power curve (``polled``).

Idle baseline: before each window the meter samples the power for ``idle_s`` seconds (the device has just
been synchronised, so it is idle) and records the mean as ``idle_power_w``. It is subtracted only when the
meter was built with ``subtract_idle=True``; the reading says which (``idle_subtracted``).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import TypedDict

from accelbench.head import Energy
from accelbench.meters.energy_base import EnergyMeter, MeterUnavailable

log = logging.getLogger(__name__)

IDLE_S = 1.0
"""Seconds of idle power sampled before each window."""
POLL_S = 0.1
"""Seconds between power samples when there is no energy counter (NVML updates power about every 0.1 s)."""

Readers = tuple[Callable[[], float], Callable[[], float] | None]
"""A GPU's ``read_power_w`` and ``read_energy_j`` (None when it has no energy counter)."""


class GpuOptions(TypedDict, total=False):
    """How a GPU meter measures: ``GpuMeter``'s keywords (defaults there) that vendor factories pass on."""

    sync: Callable[[], None] | None
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    idle_s: float
    poll_s: float | None
    subtract_idle: bool


def cuda_index(device: str) -> int:
    """N of ``cuda:N`` (0 for a bare ``cuda``)."""
    _, _, index = device.partition(":")
    return int(index or 0)


def open_gpu_meter(
    meter: str,
    library: str,
    device: str,
    open_readers: Callable[[], Readers],
    shutdown: Callable[[], None],
    options: GpuOptions,
) -> GpuMeter:
    """A ``GpuMeter`` called ``meter`` on ``device`` with the readers ``open_readers`` returns.

    When ``open_readers`` fails, ``shutdown`` releases the vendor ``library`` and the failure becomes
    MeterUnavailable; otherwise the meter calls ``shutdown`` when it is closed. A failed shutdown is logged.
    """

    def close() -> None:
        try:
            shutdown()
        except Exception as err:
            log.debug("%s shutdown failed: %s", library, err)

    try:
        read_power_w, read_energy_j = open_readers()
    except Exception as err:
        close()
        raise MeterUnavailable(f"{library} has no usable {device}: {err}") from err
    domain = f"gpu{cuda_index(device)}"
    return GpuMeter(meter, domain, read_power_w, read_energy_j, close=close, **options)


def integrate_w(samples: list[tuple[float, float]], start_s: float, end_s: float) -> float:
    """Joules under the piecewise-linear curve through ``(time_s, power_w)`` samples from start to end.

    Before the first and after the last sample the power is held constant.
    """
    if not samples or end_s <= start_s:
        return 0.0
    ordered = sorted(samples)
    inner = [(t, w) for t, w in ordered if start_s < t < end_s]
    points = [(start_s, _power_at(ordered, start_s)), *inner, (end_s, _power_at(ordered, end_s))]
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(points))


def _power_at(ordered: list[tuple[float, float]], at_s: float) -> float:
    if at_s <= ordered[0][0]:
        return ordered[0][1]
    for (t0, w0), (t1, w1) in itertools.pairwise(ordered):
        if t0 <= at_s <= t1:
            return w0 if t1 == t0 else w0 + (w1 - w0) * (at_s - t0) / (t1 - t0)
    return ordered[-1][1]


class PowerSampler:
    """Reads a power in watts every ``period_s`` in a daemon thread (none when ``period_s`` is None)."""

    def __init__(self, read_power_w: Callable[[], float], clock: Callable[[], float], period_s: float | None):
        self._read, self._clock, self._period_s = read_power_w, clock, period_s
        self._samples: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if period_s:
            self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)
            self._thread.start()

    def sample(self) -> None:
        """Take one sample now."""
        at_s, power_w = self._clock(), self._read()
        with self._lock:
            self._samples.append((at_s, power_w))

    def energy_j(self, start_s: float, end_s: float) -> tuple[float, int]:
        """Integral over the window, and how many samples fell inside it."""
        with self._lock:
            samples = list(self._samples)
        inside = sum(1 for t, _ in samples if start_s <= t <= end_s)
        return integrate_w(samples, start_s, end_s), inside

    def forget_before(self, at_s: float) -> None:
        """Drop samples older than ``at_s`` except the last one before it (keeps memory bounded)."""
        with self._lock:
            older = [s for s in self._samples if s[0] < at_s]
            self._samples = older[-1:] + [s for s in self._samples if s[0] >= at_s]

    def _run(self) -> None:
        while not self._stop.wait(self._period_s):
            try:
                self.sample()
            except Exception as err:  # a failed read loses one sample, not the window
                log.debug("power sample failed: %s", err)

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * (self._period_s or 0) + 1)


class GpuMeter(EnergyMeter):
    """Energy of one GPU over a window, from its counter (``measured``) or polled power (``polled``)."""

    meter = "gpu"

    def __init__(
        self,
        meter: str,
        domain: str,
        read_power_w: Callable[[], float],
        read_energy_j: Callable[[], float] | None,
        *,
        sync: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        idle_s: float = IDLE_S,
        poll_s: float | None = POLL_S,
        subtract_idle: bool = False,
        close: Callable[[], None] = lambda: None,
    ):
        super().__init__(sync, clock)
        self.meter, self.domain = meter, domain
        self._read_power_w, self._read_energy_j = read_power_w, read_energy_j
        self._sleep, self._idle_s, self._subtract_idle = sleep, idle_s, subtract_idle
        self._close = close
        self._sampler = None if read_energy_j else PowerSampler(read_power_w, clock, poll_s)
        self._poll_s = poll_s

    def idle_power_w(self) -> float | None:
        """Mean power over ``idle_s`` seconds, sampled every ``POLL_S`` (None when ``idle_s`` is 0)."""
        count = round(self._idle_s / POLL_S)
        if count <= 0:
            return None
        readings = []
        for _ in range(count):
            readings.append(self._read_power_w())
            self._sleep(POLL_S)
        return sum(readings) / len(readings)

    def sample_power(self) -> None:
        """Take a power sample now (polled mode only; the background thread does this every ``poll_s``)."""
        if self._sampler is not None:
            self._sampler.sample()

    def close(self) -> None:
        """Stop the sampler and release the vendor library."""
        super().close()
        if self._sampler is not None:
            self._sampler.close()
        self._close()

    def _begin(self) -> tuple[float | None, float | None]:
        idle_w = self.idle_power_w()
        if self._sampler is not None:
            self._sampler.sample()
            return idle_w, None
        assert self._read_energy_j is not None
        return idle_w, self._read_energy_j()

    def _end(self, state: tuple[float | None, float | None], start_s: float, end_s: float) -> Energy:
        idle_w, start_j = state
        window_s = end_s - start_s
        provenance, total_j, how = self._window_energy(start_j, start_s, end_s)
        subtract = self._subtract_idle and idle_w is not None
        energy_j = max(total_j - idle_w * window_s, 0.0) if subtract and idle_w is not None else total_j
        idle = "no idle baseline"
        if idle_w is not None:
            idle = f"idle {idle_w:.1f} W over {self._idle_s:g} s before the window"
        subtracted = "subtracted" if subtract else "recorded, not subtracted"
        return Energy.of_window(
            energy_j=energy_j,
            window_s=window_s,
            provenance=provenance,
            meter=self.meter,
            formula=f"{how}; {idle} ({subtracted}); this GPU only, host CPU not counted",
            domains={self.domain: total_j},
            idle_power_w=idle_w,
            idle_subtracted=subtract,
        )

    def _window_energy(self, start_j: float | None, start_s: float, end_s: float) -> tuple[str, float, str]:
        if self._sampler is not None:
            self._sampler.sample()
            energy_j, inside = self._sampler.energy_j(start_s, end_s)
            self._sampler.forget_before(end_s)
            every = f"every {self._poll_s:g} s" if self._poll_s else "at the window edges"
            how = f"power sampled {every} ({inside} samples) and integrated (trapezoid)"
            return "polled", energy_j, how
        assert self._read_energy_j is not None and start_j is not None
        energy_j = self._read_energy_j() - start_j
        if energy_j > 0:
            return "measured", energy_j, f"{self.meter} total-energy counter delta"
        # shorter than the counter's update period: approximate as zeus' approx_instant_energy does
        power_w = self._read_power_w()
        return "polled", power_w * (end_s - start_s), "counter did not advance: instant power x window"
