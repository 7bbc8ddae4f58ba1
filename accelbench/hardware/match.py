"""Match what was detected (``Machine``) to chip facts (``Chip``), with the share of the chip that was used.

CPU: the model string's SKU number (``EPYC 9654``, ``Xeon(R) Platinum 8380``) names a chip; the count is
the share of one socket the machine has (physical cores / cores per socket), so per-transistor figures of a
2-vCPU VM use 2/96 of a 96-core socket. When the model string is hidden (VMs print just ``AMD EPYC``) the
match says so and falls back to the representative chip of the detected microarchitecture (from CPUID
family/model), marked ``microarchitecture guess``. GPUs: the NVML name's model token (``H100``, ``A100``)
names a chip; between variants (A100 40/80 GB) the memory size decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelbench.hardware.chips import Chip, ChipTable, load_chips
from accelbench.hardware.detect import Gpu, Machine

BASES = ("model string", "microarchitecture guess", "gpu name", "unmatched")

_SKU = re.compile(r"\b(EPYC|Xeon)\b.*?\b(\d{4}[A-Z]{0,2}\+?)\b", re.IGNORECASE)
_GPU_PREFIXES = ("Tesla ", "Instinct ")


@dataclass(frozen=True, slots=True)
class ChipMatch:
    """The chip a device was matched to, how many of it were used, and how the match was made."""

    chip: Chip | None
    count: float
    """Chips used: a whole number for GPUs, a share of one socket (cores / socket cores) for CPUs."""
    basis: str
    """One of ``BASES``: how the chip was found."""
    detected: str
    """What was detected: the CPU model string or the GPU name."""
    notes: tuple[str, ...] = ()


def match_machine(machine: Machine, chips: ChipTable | None = None) -> ChipMatch:
    """The CPU of a machine matched to a chip (by SKU, else by microarchitecture), with its core share."""
    table = chips or load_chips()
    chip = None if machine.model_hidden else _cpu_by_model(machine.cpu_model, table)
    if chip is not None:
        return _cpu_match(chip, machine, "model string", ())
    hidden = f"the CPU model string {machine.cpu_model!r} does not name the SKU"
    if not machine.model_hidden:
        hidden = f"no chip row matches the CPU model {machine.cpu_model!r}"
    guess = table.by_microarchitecture(machine.microarchitecture)
    if guess is None:
        note = f"{hidden}, and no chip row represents microarchitecture {machine.microarchitecture!r}"
        return ChipMatch(None, 0.0, "unmatched", machine.cpu_model, (note,))
    note = (
        f"{hidden}; CPUID family {machine.cpu_family:#x} model {machine.cpu_model_number:#x} is "
        f"{machine.microarchitecture}, so its representative {guess.key} is assumed"
    )
    return _cpu_match(guess, machine, "microarchitecture guess", (note,))


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


def _cpu_match(chip: Chip, machine: Machine, basis: str, notes: tuple[str, ...]) -> ChipMatch:
    if chip.cores is None:
        extra = f"{chip.key} has no core count: the whole socket is counted"
        return ChipMatch(chip, float(machine.sockets), basis, machine.cpu_model, (*notes, extra))
    socket_cores = chip.cores.value.central
    share = machine.physical_cores / socket_cores
    extra = (
        f"{machine.physical_cores} cores of a {socket_cores:.0f}-core socket: per-socket figures "
        "(uncore included) are shared equally by its cores; a VM's vCPUs may be SMT threads"
    )
    return ChipMatch(chip, share, basis, machine.cpu_model, (*notes, extra))


def _cpu_by_model(model: str, table: ChipTable) -> Chip | None:
    found = _SKU.search(model)
    if found is None:
        return None
    family, sku = found.group(1).lower(), found.group(2).upper()
    for chip in table:
        if (
            chip.kind == "cpu"
            and family in chip.key.lower()
            and re.search(rf"\b{re.escape(sku)}\b", chip.key)
        ):
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
