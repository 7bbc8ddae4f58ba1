"""Energy to train: one meter window per timed run, read by the process of rank 0.

The meter is ``accelbench.meters.energy.choose_meter``'s (RAPL, NVML, amdsmi, else the CPU estimate). The
CPU estimate scales with the CPU time of the cell; with several processes it is given the CPU seconds of
the whole group (summed over processes by the caller), so static power is counted once and every
process's work is counted. A GPU meter reads the device of rank 0 only (stated in ``note``).
"""

from __future__ import annotations

import os
from dataclasses import replace

from accelbench.hardware.detect import detect_machine
from accelbench.head import Energy
from accelbench.meters import energy


def own_cpu_s() -> float:
    """CPU seconds (user + system) of this process."""
    times = os.times()
    return times.user + times.system


class RunMeter:
    """Energy windows around timed runs; ``group_cpu_s`` is the group's CPU seconds at each call."""

    def __init__(self, device: str, processes: int):
        self.group_cpu_s = 0.0
        self.note = ""
        self.meter: energy.EnergyMeter | None = None
        try:
            chosen = energy.choose_meter(detect_machine(probe_gpus=False), device)
        except energy.MeterUnavailable as err:
            self.note = f"energy unavailable: {err}"
            return
        if isinstance(chosen, energy.CpuEstimateMeter):
            chosen = energy.CpuEstimateMeter(
                chosen.tdp,
                chosen.cores,
                chosen.sockets,
                cpu_s=lambda: self.group_cpu_s,
                note=f"CPU time summed over {processes} training process(es)",
            )
        elif processes > 1:
            self.note = f"energy counts the device of rank 0 only ({chosen.meter})"
        self.meter = chosen

    def begin(self, name: str, group_cpu_s: float) -> None:
        """Open window ``name``."""
        self.group_cpu_s = group_cpu_s
        if self.meter is not None:
            self.meter.begin_window(name)

    def end(self, name: str, group_cpu_s: float, samples: int) -> Energy | None:
        """Close window ``name``: the energy record of ``samples`` training samples."""
        self.group_cpu_s = group_cpu_s
        if self.meter is None:
            return None
        record = self.meter.end_window(name).for_samples(samples)
        return replace(record, formula=f"{record.formula}; {self.note}") if self.note else record

    def close(self) -> None:
        """Release the meter."""
        if self.meter is not None:
            self.meter.close()
