"""Match what was detected (``Machine``) to chip facts (``Chip``), with the share of the chip that was used.

CPU, in this order:
    1. the model string's SKU (``EPYC 9654``, ``Xeon(R) Platinum 8480+``, ``Core(TM) i9-13900K``,
       ``Ryzen 9 7950X``, ``Apple M2 Pro``) names a ``cpu`` row whose key ends with it: ``model string``;
    2. else the detected microarchitecture (CPUID vendor/family/model/stepping or ARM implementer/part,
       else a codename in the model string, else ISA flags and caches; see ``accelbench.hardware.detect``)
       names its representative row: ``microarchitecture guess``, with a note saying why (cloud VMs print
       ``Intel Xeon Processor``, ``AMD EPYC 7B13``) and what the guess rests on;
    3. else ``unmatched``, with the reason.

Chips counted (``ChipMatch.count``, with its arithmetic in ``count_basis``): on bare metal, physical cores /
cores per socket; on a VM, vCPUs / threads per core / cores per socket (a cloud vCPU is one hardware
thread), e.g. ``2 vCPUs / 2 threads per core / 64 cores per socket = 0.0156 chips``. A guest cannot see
whether its vCPUs are sibling threads of one core or threads of different cores (this VM's kernel shows
2 cores of 1 thread), so on an SMT chip the count is a range (``count_high``) up to vCPUs / cores per
socket, each vCPU a whole core, and the per-chip figures carry it. Per-socket figures
(uncore included) are shared equally by the socket's cores. ``narrowed`` then decides the count
from the measured GEMM peak (``accelbench.hardware.share``: whole cores or SMT siblings, at which
clock). The energy estimate (``accelbench.meters.energy.cpu_tdp``) uses this same match, narrowed by the
run's measured peak (handed to each cell in its spec), so report and energy read one row and one share.
GPUs: the NVML name's model token (``H100``, ``A100``) names a chip; between variants (A100 40/80 GB) the
memory size decides.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from accelbench.hardware.chips import Chip, ChipTable, load_chips
from accelbench.hardware.detect import Gpu, Machine
from accelbench.hardware.share import ShareDecision, clock_aware, decide
from accelbench.ranges import Range

BASES = ("model string", "microarchitecture guess", "gpu name", "declared", "unmatched")
"""``declared``: a ``--serve-url`` server's chips as declared (``accelbench.hardware.declared``)."""

_SKUS = (  # (family word that the chip key must contain, pattern whose group "sku" ends the key)
    ("epyc", re.compile(r"\bEPYC\s+(?P<sku>\d[0-9A-Z]{3}[A-Z]?)(?![0-9A-Za-z])", re.IGNORECASE)),
    ("xeon", re.compile(r"\bXeon\b.*?\b(?P<sku>\d{4}[A-Z]{0,2}\+?)(?![0-9A-Za-z])", re.IGNORECASE)),
    ("core", re.compile(r"\bCore\b.*?\b(?P<sku>i[3579]-\d{4,5}[A-Z]{0,3})(?![0-9A-Za-z])", re.IGNORECASE)),
    ("core", re.compile(r"\bCore\b.*?\b(?P<sku>Ultra [3579] \d{3}[A-Z]{0,2})(?![0-9A-Za-z])", re.IGNORECASE)),
    ("ryzen", re.compile(r"\bRyzen\s+(?:\d\s+)?(?P<sku>\d{4}[A-Z0-9]{0,3})(?![0-9A-Za-z])", re.IGNORECASE)),
    ("apple", re.compile(r"\bApple\s+(?P<sku>M\d(?:\s+(?:Pro|Max|Ultra))?)(?![0-9A-Za-z])", re.IGNORECASE)),
)
_GPU_PREFIXES = ("Tesla ", "Instinct ")


@dataclass(frozen=True, slots=True)
class ChipMatch:
    """The chip a device was matched to, how many of it were used, and how the match was made."""

    chip: Chip | None
    count: float
    """Chips used: a whole number for GPUs, a share of one socket (see ``count_basis``) for CPUs."""
    basis: str
    """One of ``BASES``: how the chip was found."""
    detected: str
    """What was detected: the CPU model string (or vendor and part when empty) or the GPU name."""
    notes: tuple[str, ...] = ()
    count_basis: str = ""
    """The arithmetic of ``count``, e.g. ``2 vCPUs / 2 threads per core / 64 cores per socket = ...``."""
    threads_per_core: float = 1.0
    """Logical CPUs per core behind ``count``: the chip's on a VM, the machine's own on bare metal."""
    count_high: float | None = None
    """The largest count the machine allows when ``count`` is an estimate (a VM on an SMT chip: each vCPU
    a whole core); None when ``count`` is exact."""
    guest_threads_per_core: float | None = None
    """A VM's logical CPUs per core as the guest reports them (evidence, not proof); None on bare metal."""
    decision: ShareDecision | None = None
    """Whole cores or SMT siblings, at which clock, and why (``accelbench.hardware.share``); None when the
    chip has no clocks and FLOP/cycle (then ``narrowed`` compares the datasheet figure x count)."""

    @property
    def count_range(self) -> Range:
        """``count`` as a range: [count, count_high] with ``count`` as the central value."""
        return Range.up_to(self.count, self.count_high)


def narrowed(match: ChipMatch, measured_flops_per_s: float | None, dtype: str = "fp32") -> ChipMatch:
    """``match`` with the counts the machine's measured peak rules out removed.

    A CPU whose facts give clocks and FP32 FLOP/cycle is decided by ``accelbench.hardware.share.decide``
    (whole cores or SMT siblings, judged at the clock its cores can reach), the decision stored in
    ``decision`` and summarised in ``count_basis``. Otherwise:

    A part cannot beat its own datasheet: when the measured GEMM peak is above the datasheet peak of the
    low count (the chip's best figure x ``count``), that count is impossible, and a VM's count becomes its
    high end (each vCPU a whole core), with the reason in ``notes`` and ``count_basis``. When even the
    highest count is beaten, nothing is narrowed and the note says so (the datasheet shares are then
    suspect). Unchanged without a chip, a datasheet peak or a measurement.
    """
    if match.chip is not None and match.chip.kind == "cpu" and clock_aware(match.chip) and match.count > 0:
        return _decided(match, match.chip, measured_flops_per_s)
    fact = match.chip.peak_fp32_flop_per_s if match.chip is not None else None
    if fact is None or match.count <= 0 or measured_flops_per_s is None or not measured_flops_per_s > 0:
        return match
    per_chip = fact.value.high
    if measured_flops_per_s <= per_chip * match.count:
        return match
    seen = (
        f"the measured {dtype} GEMM peak {measured_flops_per_s / 1e9:.1f} GFLOP/s is above the datasheet "
        f"peak of {match.count:.3g} chips ({per_chip * match.count / 1e9:.1f} GFLOP/s)"
    )
    high = match.count_high
    if high is None or measured_flops_per_s > per_chip * high:
        most = f"{high:.3g}" if high is not None else f"{match.count:.3g}"
        note = f"{seen} and of the highest count ({most} chips): the datasheet shares are not plausible"
        return dataclasses.replace(match, notes=(*match.notes, note))
    note = f"{seen}: that count is ruled out, {high:.3g} chips counted (each vCPU a whole core)"
    basis = f"{match.count_basis}; {note}"
    notes = (*match.notes, note)
    return dataclasses.replace(
        match, count=high, count_high=None, count_basis=basis, notes=notes, threads_per_core=1.0
    )


def _decided(match: ChipMatch, chip: Chip, measured_flops_per_s: float | None) -> ChipMatch:
    high = match.count_high if match.count_high is not None else match.count
    decision = decide(chip, match.count, high, measured_flops_per_s, match.guest_threads_per_core)
    exact = decision.count_high <= decision.count_low
    return dataclasses.replace(
        match,
        count=decision.count,
        count_high=None if exact else decision.count_high,
        count_basis=f"{match.count_basis}; decided: {decision.summary()}",
        notes=(*match.notes, decision.failed) if decision.failed else match.notes,
        threads_per_core=1.0 if decision.model == "whole cores" else match.threads_per_core,
        decision=decision,
    )


def match_machine(machine: Machine, chips: ChipTable | None = None) -> ChipMatch:
    """The CPU of a machine matched to a chip (by SKU, else by microarchitecture), with its socket share."""
    table = chips or load_chips()
    detected = cpu_description(machine)
    sku = _sku(machine.cpu_model)
    chip = _cpu_by_sku(sku, table) if sku else None
    if chip is not None:
        return _cpu_match(chip, machine, "model string", (), detected)
    why = f"the CPU model string {machine.cpu_model!r} does not name the SKU"
    if sku:
        why = f"no chip row matches the CPU model {machine.cpu_model!r} (SKU {sku[1]})"
    found = (
        machine.microarchitecture_basis
        or f"CPUID family {machine.cpu_family:#x} model {machine.cpu_model_number:#x}"
    )
    guess = table.by_microarchitecture(machine.microarchitecture, machine.system_vendor)
    if guess is None:
        note = f"{why}, and no chip row represents microarchitecture {machine.microarchitecture!r} ({found})"
        return ChipMatch(
            chip=None,
            count=0.0,
            basis="unmatched",
            detected=detected,
            notes=(note,),
            count_basis="no chip: 0 chips counted",
        )
    note = f"{why}; {found} gives {machine.microarchitecture}, so its representative {guess.key} is assumed"
    return _cpu_match(guess, machine, "microarchitecture guess", (note,), detected)


def cpu_description(machine: Machine) -> str:
    """The CPU as detected: its model string, or vendor, part and microarchitecture when it has none."""
    if machine.cpu_model.strip():
        return machine.cpu_model
    return f"{machine.cpu_vendor} CPU part {machine.cpu_model_number:#x} ({machine.microarchitecture})"


def match_gpu(gpu: Gpu, chips: ChipTable | None = None) -> ChipMatch:
    """A GPU (as NVML names it) matched to a chip; the count is 1."""
    table = chips or load_chips()
    candidates = [c for c in table if c.kind == "gpu" and _gpu_token(c) and _names(gpu.name, _gpu_token(c))]
    if not candidates:
        return ChipMatch(None, 0.0, "unmatched", gpu.name, (f"no chip row matches GPU {gpu.name!r}",))
    chip = min(candidates, key=lambda c: _memory_gap(c, gpu.mem_bytes))
    notes: tuple[str, ...] = ()
    if "pcie" in gpu.name.lower() and "pcie" not in chip.variant.lower():
        notes = (f"{gpu.name} is a PCIe card; {chip.key} figures are for the {chip.variant} part",)
    return ChipMatch(chip, 1.0, "gpu name", gpu.name, notes)


def match_device(machine: Machine, device: str, chips: ChipTable | None = None) -> ChipMatch:
    """The chip behind a result's device: ``cpu`` or ``cuda:N`` (the N-th NVML GPU)."""
    if device == "cpu":
        return match_machine(machine, chips)
    index = device.partition(":")[2]
    gpu = next((g for g in machine.gpus if str(g.index) == (index or "0")), None)
    if gpu is None:
        return ChipMatch(None, 0.0, "unmatched", device, (f"device {device} is not among the detected GPUs",))
    return match_gpu(gpu, chips)


def _cpu_match(chip: Chip, machine: Machine, basis: str, notes: tuple[str, ...], detected: str) -> ChipMatch:
    share = _socket_share(chip, machine)
    return ChipMatch(
        chip=chip,
        count=share.count,
        basis=basis,
        detected=detected,
        notes=(*notes, share.note),
        count_basis=share.count_basis,
        threads_per_core=share.threads_per_core,
        count_high=share.count_high,
        guest_threads_per_core=share.guest_threads_per_core,
    )


@dataclass(frozen=True, slots=True)
class _SocketShare:
    """How much of ``chip`` a CPU match counts: ``ChipMatch``'s fields of the same names, and the note
    saying how the socket's figures are shared."""

    count: float
    count_basis: str
    note: str
    threads_per_core: float = 1.0
    count_high: float | None = None
    guest_threads_per_core: float | None = None


def _socket_share(chip: Chip, machine: Machine) -> _SocketShare:
    if chip.cores is None:
        return _SocketShare(
            count=float(machine.sockets),
            count_basis=f"{machine.sockets} socket(s) counted whole ({chip.key} has no core count)",
            note=f"{chip.key} has no core count: the whole socket is counted",
        )
    socket_cores = chip.cores.value.central
    shared = "per-socket figures (uncore included) are shared equally by its cores"
    if machine.virtual_machine:
        return _vm_share(chip, machine, socket_cores, shared)
    count = machine.physical_cores / socket_cores
    return _SocketShare(
        count=count,
        count_basis=f"{machine.physical_cores} cores / {socket_cores:g} cores per socket = {count:.3g} chips",
        note=f"{machine.physical_cores} cores of a {socket_cores:.0f}-core socket: {shared}",
        threads_per_core=machine.logical_cores / max(machine.physical_cores, 1),
    )


def _vm_share(chip: Chip, machine: Machine, socket_cores: float, shared: str) -> _SocketShare:
    known = chip.threads is not None
    per_core = chip.threads.value.central / socket_cores if chip.threads else 1.0
    count = machine.logical_cores / per_core / socket_cores
    high = machine.logical_cores / socket_cores if per_core > 1 else None
    text = (
        f"{machine.logical_cores} vCPUs / {per_core:g} threads per core / {socket_cores:g} cores per "
        f"socket = {count:.3g} chips (estimate: VM share of one socket"
        f"{'' if known else '; threads per core unknown, 1 assumed'}"
        f"{f'; up to {high:.3g} if each vCPU is a whole core' if high else ''})"
    )
    return _SocketShare(
        count=count,
        count_basis=text,
        note=f"a VM's vCPUs are hardware threads of a {socket_cores:g}-core {chip.key} socket; {shared}",
        threads_per_core=per_core,
        count_high=high,
        guest_threads_per_core=machine.logical_cores / max(machine.physical_cores, 1),
    )


def _sku(model: str) -> tuple[str, str] | None:
    """(family word, SKU) named by a CPU model string, e.g. ("xeon", "8480+"); None when it names none."""
    for family, pattern in _SKUS:
        found = pattern.search(model)
        if found:
            return family, " ".join(found.group("sku").split())
    return None


def _cpu_by_sku(sku: tuple[str, str], table: ChipTable) -> Chip | None:
    family, name = sku[0], sku[1].lower()
    for chip in table:
        key = chip.key.lower()
        if chip.kind == "cpu" and family in key and key.endswith(f" {name}"):
            return chip
    return None


def _gpu_token(chip: Chip) -> str:
    name = chip.name
    for prefix in _GPU_PREFIXES:
        name = name.removeprefix(prefix)
    return name.split(" ")[0]


def _names(text: str, token: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(token)}(?![0-9])", text, re.IGNORECASE) is not None


def _memory_gap(chip: Chip, mem_bytes: int) -> float:
    if chip.memory_bytes is None or mem_bytes <= 0:
        return 0.0
    return abs(chip.memory_bytes.value.central - mem_bytes)
