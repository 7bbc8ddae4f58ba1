"""The meters of a cell's timed window: energy (``energy.choose_meter``) and device memory.

One window spans the scored trials of an attempt (``accelbench.scenarios.trials``), probes excluded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from accelbench.hardware.detect import detect_machine
from accelbench.head import ENERGY_PROVENANCES, DeviceMemory, Energy
from accelbench.meters import energy, memory


@dataclass(frozen=True, slots=True)
class Metered:
    """The readings of one window: energy, device memory, and notes on what could not be read."""

    energy: Energy | None
    device_memory: DeviceMemory | None
    warnings: tuple[str, ...] = ()


class CellMeters:
    """The energy meter (``energy.choose_meter``) and the device-memory meter of the cell."""

    def __init__(self, device: str, measured_fp32_flops_per_s: float | None = None):
        self.memory = memory.DeviceMemoryMeter(device)
        self.energy: energy.EnergyMeter | None = None
        self.missing = ""
        machine = detect_machine(probe_gpus=False)
        try:
            self.energy = energy.choose_meter(machine, device, measured_flops_per_s=measured_fp32_flops_per_s)
        except energy.MeterUnavailable as err:
            self.missing = f"energy unavailable: {err}"

    def begin(self, window: str) -> None:
        """Open ``window`` on both meters."""
        self.memory.begin_window(window)
        if self.energy is not None:
            self.energy.begin_window(window)

    def end(self, window: str, samples: int) -> Metered:
        """Close ``window``; the energy record divides by the ``samples`` completed in it."""
        reading = self.energy.end_window(window) if self.energy is not None else None
        record = reading.for_samples(samples) if reading is not None else None
        notes = (self.missing,) if self.missing else ()
        return Metered(record, self.memory.end_window(window), notes)

    def close(self) -> None:
        """Release the energy meter."""
        if self.energy is not None:
            self.energy.close()


def combined_energy(records: Sequence[Energy | None], windows: str = "trial windows") -> Energy | None:
    """One energy record of several windows (``windows`` names them in the formula): joules, seconds
    and samples summed; None when a window has none. Mixed provenances keep the weakest (estimated <
    polled < measured)."""
    if not records or any(r is None for r in records):
        return None
    present = [r for r in records if r is not None]
    if len(present) == 1:
        return present[0]
    energy_j = sum(r.energy_j for r in present)
    window_s = sum(r.window_s for r in present)
    samples = sum(r.samples for r in present)
    weakest = max(present, key=lambda r: ENERGY_PROVENANCES.index(r.provenance))
    domains: dict[str, float] = {}
    for record in present:
        for name, joules in record.domains.items():
            domains[name] = domains.get(name, 0.0) + joules
    return dataclasses.replace(
        weakest,
        energy_j=energy_j,
        power_w=energy_j / window_s if window_s > 0 else 0.0,
        energy_per_query_j=energy_j / samples if samples else 0.0,
        samples_per_j=samples / energy_j if energy_j > 0 else 0.0,
        window_s=window_s,
        samples=samples,
        domains=domains,
        formula=f"sum of {len(present)} {windows}; first window: {present[0].formula}",
    )


def max_memory(records: Sequence[DeviceMemory | None]) -> DeviceMemory | None:
    """The highest peak of several windows (None when none read one)."""
    present = [r for r in records if r is not None]
    return max(present, key=lambda r: r.peak_bytes) if present else None
