"""The energy of each point of a served-LLM curve (issue 31): joules per output token and per token.

A server on this machine (one the cell started, or a ``--serve-url`` server found listening here,
``accelbench.meters.cputime.server_roots``) is metered over each point's window by the cell's meter
(``accelbench.meters.energy.choose_meter``): RAPL where the kernel exposes it (``measured``: the whole
package, server, client and anything else running), else the estimate from the socket's TDP scaled by
the CPU seconds of the run's process tree (``estimated``: the server's and the client's, as the noise
guard counts them; on one machine the client's work is part of serving the curve). A remote server's
energy is not this machine's: its points carry none, and ``EndpointFigures.energy_note`` says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accelbench.meters.energy_base import EnergyMeter, MeterUnavailable


@dataclass(frozen=True, slots=True)
class PointEnergy:
    """What one point's window consumed."""

    energy_j: float
    provenance: str
    """``measured`` (a counter) or ``estimated`` (``accelbench.meters.energy.CpuEstimateMeter``)."""


class PointMeter:
    """Opens and closes the energy window of each point; without a meter every point has none."""

    def __init__(self, meter: EnergyMeter | None, note: str) -> None:
        self.meter = meter
        self.note = note
        """What the points' energy is (the meter and what it counts), or why there is none."""
        self.formula = ""
        """The last window's formula (the estimate's inputs), kept for the note."""

    def begin(self, concurrency: int) -> None:
        """Open the window of the point at ``concurrency``."""
        if self.meter is not None:
            self.meter.begin_window(f"point-{concurrency}")

    def end(self, concurrency: int) -> PointEnergy | None:
        """Close the window of the point at ``concurrency``; its energy (None without a meter)."""
        if self.meter is None:
            return None
        reading = self.meter.end_window(f"point-{concurrency}")
        self.formula = reading.formula
        return PointEnergy(reading.energy_j, reading.provenance)

    def close(self) -> None:
        """Release the meter."""
        if self.meter is not None:
            self.meter.close()


def point_meter(
    serve_url: str | None, started_here: bool, measured_fp32_flops_per_s: float | None = None
) -> PointMeter:
    """The meter of a curve's points: the server was started by the cell (``started_here``), or is the
    one behind ``serve_url``, metered only when it listens on this machine; the CPU estimate's share of
    the socket is decided from the run's measured GEMM peak (``choose_meter``)."""
    from accelbench.hardware.detect import detect_machine
    from accelbench.meters.cputime import own_cpu_s, server_roots
    from accelbench.meters.energy import choose_meter

    servers = frozenset() if started_here else server_roots(serve_url)
    if not started_here and not servers:
        where = f"the server at {serve_url} is not a process of this machine"
        return PointMeter(None, f"energy not measured: {where}")
    cpu_s: Callable[[], float] = lambda: own_cpu_s(servers=servers)  # noqa: E731
    try:
        machine = detect_machine(probe_gpus=False)
        meter = choose_meter(machine, "cpu", cpu_s=cpu_s, measured_flops_per_s=measured_fp32_flops_per_s)
    except MeterUnavailable as err:
        return PointMeter(None, f"energy unavailable: {err}")
    counted = "the run's process tree (server and client)" if meter.meter == "cpu-estimate" else "the package"
    return PointMeter(meter, f"{meter.meter}: {counted}")
