"""Energy meters: one window around the timed trials, read from a counter or honestly estimated.

The design follows zeus (``ml-energy/zeus: zeus/monitor/energy.py``): ``begin_window(name)`` and
``end_window(name)`` synchronise the device (a ``sync`` callable, e.g. ``torch.cuda.synchronize``) before
reading, so asynchronously queued work is counted in the window it was issued in. Every reading carries a
provenance (``accelbench.head.ENERGY_PROVENANCES``) and the formula or counter it came from:

- ``measured``: RAPL package/DRAM counters (``accelbench.meters.rapl``), NVML's total-energy counter
  (``accelbench.meters.nvml``), amdsmi's energy accumulator (``accelbench.meters.amd_gpu``);
- ``polled``: device power sampled in a background thread and integrated (``accelbench.meters.gpu_power``);
- ``estimated``: no counter at all (this project's VM): ``CpuEstimateMeter`` below.

The estimate, for a CPU cell::

    E = W x (s + (1 - s) x u) x t
    W = TDP_socket x min(cpus / (socket_cores x threads_per_core), sockets)   the machine's socket share
    u = process CPU s / (t x cpus)                           CPU utilisation of the cell process, in [0, 1]
    s = STATIC_FRACTION                                      idle/static power as a fraction of TDP

The socket TDP, cores and threads per core come from the one chip table (``accelbench/data/``), through
``accelbench.hardware.match.match_machine``, narrowed by the run's measured FP32 GEMM peak
(``match.narrowed``): the same row, and the same share decision, as the report's chip count (on a VM:
vCPUs / threads per core / cores per socket, each vCPU a whole core when the measured peak rules SMT
siblings out; on bare metal: physical cores / cores per socket).
``tdp_w``/``socket_cores`` override the row; a machine with no matched row (or a row without TDP) is
charged ``FALLBACK_W_PER_CORE`` per logical CPU, and says so. Static power is charged to the cell whatever
other processes do; DRAM, fans and PSU losses are not counted.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accelbench.hardware.chips import ChipTable
from accelbench.hardware.detect import Machine
from accelbench.hardware.match import match_machine, narrowed
from accelbench.head import Energy
from accelbench.meters import amd_gpu, nvml, rapl
from accelbench.meters.energy_base import (
    POWERCAP_ROOT,
    EnergyMeter,
    MeterUnavailable,
)

__all__ = [
    "POWERCAP_ROOT",
    "CpuEstimateMeter",
    "CpuTdp",
    "EnergyMeter",
    "MeterUnavailable",
    "choose_meter",
    "cpu_tdp",
]

log = logging.getLogger(__name__)

STATIC_FRACTION = 0.3
"""Idle/static power of a server CPU as a fraction of its TDP (EPYC/Xeon idle package power is roughly
20-35 % of TDP); the estimate charges it for the whole window."""
FALLBACK_W_PER_CORE = 4.0
"""Watts per logical CPU when no chip row with a TDP matches the machine (codecarbon's default too)."""


@dataclass(frozen=True, slots=True)
class CpuTdp:
    """A socket's TDP and core count, the threads per core its logical CPUs stand for, and the source."""

    tdp_w: float
    socket_cores: int
    source: str
    threads_per_core: float = 1.0
    """Logical CPUs per core: the chip's SMT ways on a VM (a vCPU is a thread), the machine's own on bare
    metal; 1 for a given ``socket_cores`` (then each logical CPU counts as one core)."""
    chip_key: str = ""
    """The chip table row the figures come from (empty for a given or fallback figure)."""


def cpu_tdp(
    machine: Machine, chips: ChipTable | None = None, measured_flops_per_s: float | None = None
) -> CpuTdp:
    """The matched chip row's TDP and cores (``match_machine``), else ``FALLBACK_W_PER_CORE`` per CPU.

    The threads per core behind the share are the per-chip figures' decision (``match.narrowed``): with
    a measured FP32 GEMM peak above the SMT-sibling datasheet peak, each vCPU is a whole core (1 thread
    per core); without one (or within it), the chip's SMT ways, the low count.
    """
    match = narrowed(match_machine(machine, chips), measured_flops_per_s)
    chip = match.chip
    if chip is not None and chip.tdp_w is not None and chip.cores is not None:
        fact = chip.tdp_w
        decided = f"; {match.decision.summary()}" if match.decision is not None else ""
        source = f"{chip.key}, {match.basis}; TDP {fact.provenance}: {fact.source}{decided}"
        cores = int(chip.cores.value.central)
        return CpuTdp(fact.value.central, cores, source, match.threads_per_core, chip.key)
    reason = match.notes[0] if chip is None else f"{chip.key} has no TDP or core count"
    per_socket = max(machine.logical_cores // max(machine.sockets, 1), 1)
    source = f"fallback {FALLBACK_W_PER_CORE:g} W per core ({reason})"
    return CpuTdp(FALLBACK_W_PER_CORE * per_socket, per_socket, source)


def process_cpu_s() -> float:
    """CPU seconds (user + system, all threads) this process has used."""
    times = os.times()
    return times.user + times.system


class CpuEstimateMeter(EnergyMeter):
    """No counter: the machine's share of the socket TDP, scaled by the cell process's CPU utilisation."""

    meter = "cpu-estimate"

    def __init__(
        self,
        tdp: CpuTdp,
        cores: int,
        sockets: int = 1,
        static_fraction: float = STATIC_FRACTION,
        cpu_s: Callable[[], float] = process_cpu_s,
        clock: Callable[[], float] = time.monotonic,
        note: str = "",
    ):
        super().__init__(None, clock)
        self.tdp, self.cores, self.sockets = tdp, max(cores, 1), max(sockets, 1)
        self.static_fraction = static_fraction
        per_socket = tdp.socket_cores * tdp.threads_per_core
        self.share_w = tdp.tdp_w * min(self.cores / per_socket, self.sockets)
        self._cpu_s, self._note = cpu_s, note

    def _begin(self) -> float:
        return self._cpu_s()

    def _end(self, state: float, start_s: float, end_s: float) -> Energy:
        wall_s, cpu_s = end_s - start_s, self._cpu_s() - state
        utilisation = min(max(cpu_s / (wall_s * self.cores), 0.0), 1.0) if wall_s > 0 else 0.0
        static_j = self.share_w * self.static_fraction * wall_s
        dynamic_j = self.share_w * (1 - self.static_fraction) * utilisation * wall_s
        return Energy.of_window(
            energy_j=static_j + dynamic_j,
            window_s=wall_s,
            provenance="estimated",
            meter=self.meter,
            formula=self._formula(wall_s, cpu_s, utilisation),
            domains={"cpu_static": static_j, "cpu_dynamic": dynamic_j},
        )

    def _formula(self, wall_s: float, cpu_s: float, utilisation: float) -> str:
        tdp = self.tdp
        text = (
            f"E = W x (s + (1 - s) x u) x t; W = {tdp.tdp_w:g} W socket TDP ({tdp.source}) "
            f"x min({self.cores} cores / ({tdp.socket_cores} per socket x {tdp.threads_per_core:g} threads "
            f"per core), {self.sockets} sockets) "
            f"= {self.share_w:.3g} W; "
            f"s = {self.static_fraction:g} static fraction of TDP; u = process CPU s / (t x cores) "
            f"= {cpu_s:.3f} / ({wall_s:.3f} x {self.cores}) = {utilisation:.3f}; t = {wall_s:.3f} s"
        )
        return f"{text}; {self._note}" if self._note else text


def choose_meter(
    machine: Machine,
    device: str,
    *,
    tdp_w: float | None = None,
    socket_cores: int | None = None,
    powercap_root: Path = POWERCAP_ROOT,
    sync: Callable[[], None] | None = None,
    cpu_s: Callable[[], float] = process_cpu_s,
    measured_flops_per_s: float | None = None,
) -> EnergyMeter:
    """The best meter for ``device``: NVML or amdsmi on ``cuda:N``; RAPL, else the estimate, on ``cpu``.

    ``tdp_w`` (socket TDP) and ``socket_cores`` override the matched chip row (``cpu_tdp``); with
    ``socket_cores`` given, each logical CPU counts as one core. A GPU without a readable counter raises
    ``MeterUnavailable``: a CPU estimate would pass off host power as the GPU's. ``cpu_s``: the CPU
    seconds the estimate scales with (default this process's; a served cell's: its process tree's).
    ``measured_flops_per_s``: the run's measured FP32 GEMM peak, which decides whole cores vs SMT
    siblings for the estimate's share as for the per-chip figures (``cpu_tdp``).
    """
    if device.startswith("cuda"):
        return _gpu_meter(device, sync or _cuda_sync(device))
    domains, problem = rapl.find_domains(powercap_root)
    if domains:
        return rapl.RaplMeter(domains, sync=sync)
    table = cpu_tdp(machine, measured_flops_per_s=measured_flops_per_s)
    tdp = table
    if tdp_w or socket_cores:
        per_core = 1.0 if socket_cores else table.threads_per_core
        tdp = CpuTdp(tdp_w or table.tdp_w, socket_cores or table.socket_cores, "given", per_core)
    note = f"no hardware energy counter ({problem})" if problem else "no hardware energy counter"
    return CpuEstimateMeter(tdp, machine.logical_cores, machine.sockets, cpu_s=cpu_s, note=note)


def _gpu_meter(device: str, sync: Callable[[], None]) -> EnergyMeter:
    reasons = []
    for build in (nvml.nvml_meter, amd_gpu.amd_meter):
        try:
            return build(device, sync=sync)
        except MeterUnavailable as err:
            reasons.append(str(err))
    raise MeterUnavailable(f"no energy counter for {device}: {'; '.join(reasons)}")


def _cuda_sync(device: str) -> Callable[[], None]:
    def sync() -> None:
        import torch

        torch.cuda.synchronize(device)

    return sync
