"""Detect the machine a run executes on: CPU identity, topology, ISA, caches, memory, GPUs, counters.

Every procfs/sysfs read goes through a ``root`` folder (default ``/``) so tests can point detection at a
fake tree. The CPU is identified by vendor/family/model/stepping and flags, never by the model string
alone: VMs often hide the SKU (this project's VM reports just ``AMD EPYC``), which ``model_hidden`` records.
Cache sizes come from sysfs (``/sys/devices/system/cpu/cpu0/cache/index*/``); py-cpuinfo's are wrong on
these VMs. GPUs are read through NVML when ``pynvml`` (the ``nvidia-ml-py`` package) imports; anything
else gives an empty tuple, never a crash.

Stored form (``machine_to_dict``) history (bump ``MACHINE_SCHEMA_VERSION`` on every change):
    1  first format: the ``Machine`` fields, ``caches``/``gpus`` as lists of objects, plus
       ``fingerprint`` (informational, recomputed on load) and ``schema_version``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import platform
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MACHINE_SCHEMA_VERSION = 1

BUSY_LOAD_PER_CORE = 0.5
"""``busy_warning`` threshold: 1-minute load average per logical core before a cell.

0.5 per core means half the machine is already busy (on a 2-core VM: one core fully taken), which
made repeated measurements differ by up to 2x in the feasibility study (load 1.4-1.8 on 2 cores).
"""

_INTERESTING_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx_vnni", "neon", "asimd", "asimddp", "i8mm", "bf16")
_INTERESTING_PREFIXES = ("avx512", "amx", "sve")

_GENERIC_MODELS = ("qemu virtual cpu", "common kvm processor", "virtual cpu")

# (vendor, family, first model, last model, name); the first matching row wins.
_MICROARCHITECTURES: tuple[tuple[str, int, int, int, str], ...] = (
    ("AuthenticAMD", 0x17, 0x00, 0x2F, "Zen / Zen+ (Naples)"),
    ("AuthenticAMD", 0x17, 0x30, 0xFF, "Zen 2 (Rome)"),
    ("AuthenticAMD", 0x19, 0x00, 0x0F, "Zen 3 (Milan)"),
    ("AuthenticAMD", 0x19, 0x10, 0x1F, "Zen 4 (Genoa)"),
    ("AuthenticAMD", 0x19, 0x20, 0x5F, "Zen 3 (client)"),
    ("AuthenticAMD", 0x19, 0x60, 0x7F, "Zen 4 (client)"),
    ("AuthenticAMD", 0x19, 0xA0, 0xAF, "Zen 4c (Bergamo)"),
    ("AuthenticAMD", 0x1A, 0x00, 0x0F, "Zen 5 (Turin)"),
    ("AuthenticAMD", 0x1A, 0x10, 0x1F, "Zen 5c (Turin Dense)"),
    ("AuthenticAMD", 0x1A, 0x20, 0x7F, "Zen 5 (client)"),
    ("GenuineIntel", 6, 0x3F, 0x3F, "Haswell-EP"),
    ("GenuineIntel", 6, 0x4F, 0x4F, "Broadwell-EP"),
    ("GenuineIntel", 6, 0x55, 0x55, "Skylake-SP / Cascade Lake"),
    ("GenuineIntel", 6, 0x6A, 0x6C, "Ice Lake-SP"),
    ("GenuineIntel", 6, 0x8F, 0x8F, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0xCF, 0xCF, "Emerald Rapids"),
    ("GenuineIntel", 6, 0xAD, 0xAE, "Granite Rapids"),
    ("GenuineIntel", 6, 0xAF, 0xAF, "Sierra Forest"),
    ("GenuineIntel", 6, 0x97, 0x9A, "Alder Lake"),
    ("GenuineIntel", 6, 0xB7, 0xBF, "Raptor Lake"),
    ("ARM", 8, 0xD0C, 0xD0C, "Neoverse N1"),
    ("ARM", 8, 0xD40, 0xD40, "Neoverse V1"),
    ("ARM", 8, 0xD49, 0xD49, "Neoverse N2"),
    ("ARM", 8, 0xD4F, 0xD4F, "Neoverse V2"),
)

_ARM_IMPLEMENTERS = {0x41: "ARM", 0x61: "Apple", 0xC0: "Ampere", 0x48: "HiSilicon"}


@dataclass(frozen=True, slots=True)
class Cache:
    """One CPU cache as seen from cpu0 (``kind``: data, instruction or unified)."""

    level: int
    kind: str
    size_bytes: int
    shared_by_cpus: int


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU as NVML reports it."""

    index: int
    name: str
    mem_bytes: int
    driver: str


@dataclass(frozen=True, slots=True)
class Machine:
    """What this computer actually has, as detected (not datasheet facts: see the chips table)."""

    cpu_model: str
    cpu_vendor: str
    cpu_family: int
    cpu_model_number: int
    cpu_stepping: int
    microarchitecture: str
    model_hidden: bool
    """True when ``cpu_model`` does not name the SKU (e.g. ``AMD EPYC`` under KVM)."""
    logical_cores: int
    physical_cores: int
    sockets: int
    isa_flags: tuple[str, ...]
    caches: tuple[Cache, ...]
    mem_bytes: int
    os_name: str
    kernel: str
    python_version: str
    gpus: tuple[Gpu, ...] = ()
    energy_counters: tuple[str, ...] = ()

    @property
    def fingerprint(self) -> str:
        """16 hex chars of sha256 over the stable identity (no clocks, load, kernel or Python version)."""
        identity = [
            self.cpu_vendor,
            self.cpu_model,
            self.cpu_family,
            self.cpu_model_number,
            self.cpu_stepping,
            self.logical_cores,
            round(self.mem_bytes / 2**30),
            sorted(gpu.name for gpu in self.gpus),
            self.os_name,
        ]
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def detect_machine(root: str | Path = "/", *, probe_gpus: bool = True) -> Machine:
    """Detect the machine; ``root`` relocates every procfs/sysfs read (tests use a fake tree)."""
    base = Path(root)
    blocks = _cpuinfo_blocks(base)
    first = blocks[0] if blocks else {}
    vendor, family, model, stepping = _cpu_identity(first)
    cpu_model = first.get("model name", "")
    physical, sockets = _topology(base, blocks)
    gpus = detect_gpus() if probe_gpus else ()
    return Machine(
        cpu_model=cpu_model,
        cpu_vendor=vendor,
        cpu_family=family,
        cpu_model_number=model,
        cpu_stepping=stepping,
        microarchitecture=microarchitecture(vendor, family, model),
        model_hidden=is_model_hidden(cpu_model),
        logical_cores=max(len(blocks), 1),
        physical_cores=physical,
        sockets=sockets,
        isa_flags=interesting_flags(first.get("flags", first.get("Features", "")).split()),
        caches=_caches(base),
        mem_bytes=_mem_bytes(base),
        os_name=platform.system(),
        kernel=platform.release(),
        python_version=platform.python_version(),
        gpus=gpus,
        energy_counters=_energy_counters(base, gpus),
    )


def microarchitecture(vendor: str, family: int, model: int) -> str:
    """Best guess of the microarchitecture from CPUID vendor/family/model; ``unknown`` otherwise."""
    for row_vendor, row_family, low, high, name in _MICROARCHITECTURES:
        if vendor == row_vendor and family == row_family and low <= model <= high:
            return name
    return "unknown"


def is_model_hidden(cpu_model: str) -> bool:
    """True when the model string names no SKU: empty, no digit in it, or a known hypervisor default."""
    lowered = cpu_model.strip().lower()
    if not lowered or not re.search(r"\d", lowered):
        return True
    return any(lowered.startswith(generic) for generic in _GENERIC_MODELS)


def interesting_flags(flags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The ISA flags that matter for AI kernels (SSE4.2 to AVX-512/AMX, NEON/SVE), sorted."""
    kept = {f for f in flags if f in _INTERESTING_FLAGS or f.startswith(_INTERESTING_PREFIXES)}
    return tuple(sorted(kept))


def detect_gpus() -> tuple[Gpu, ...]:
    """GPUs through NVML; an empty tuple when pynvml is missing, no driver or no GPU (never raises)."""
    try:
        import pynvml
    except ImportError:
        return ()
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVMLError when no driver: absent hardware is not an error
        logger.debug("NVML unavailable: %s", exc)
        return ()
    try:
        return tuple(_nvml_gpu(pynvml, index) for index in range(pynvml.nvmlDeviceGetCount()))
    except Exception as exc:
        logger.warning("NVML query failed, reporting no GPUs: %s", exc)
        return ()
    finally:
        _nvml_shutdown(pynvml)


def _nvml_gpu(nvml: Any, index: int) -> Gpu:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    return Gpu(
        index=index,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        mem_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        driver=_text(nvml.nvmlSystemGetDriverVersion()),
    )


def _nvml_shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception as exc:
        logger.debug("nvmlShutdown failed: %s", exc)


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def loadavg_1m(root: str | Path = "/") -> float:
    """The 1-minute load average from ``/proc/loadavg`` (``os.getloadavg`` when it is unreadable)."""
    text = _read(Path(root) / "proc/loadavg")
    if text:
        return float(text.split()[0])
    return os.getloadavg()[0]


def busy_warning(loadavg: float, cores: int, per_core: float = BUSY_LOAD_PER_CORE) -> str | None:
    """A warning when the load average before a cell exceeds ``per_core`` x ``cores``, else None.

    The 1-minute average decays with a one-minute time constant, so the harness's own previous cell
    still shows in it for about a minute; call this after a pause, or read it as a hint, not a verdict.
    """
    limit = per_core * max(cores, 1)
    if loadavg <= limit:
        return None
    return (
        f"machine busy before the measurement: 1-minute load average {loadavg:.2f} "
        f"> {limit:.2f} ({per_core} per core x {cores} cores); timings may be slowed by other work"
    )


def machine_to_dict(machine: Machine) -> dict[str, Any]:
    """The stored JSON document of a machine (with its fingerprint and ``schema_version``)."""
    doc = dataclasses.asdict(machine)
    doc["fingerprint"] = machine.fingerprint
    doc["schema_version"] = MACHINE_SCHEMA_VERSION
    return doc


def machine_from_dict(doc: Mapping[str, Any]) -> Machine:
    """Rebuild a machine from ``machine_to_dict``; raises ValueError on an unknown schema_version."""
    version = doc.get("schema_version")
    if version != MACHINE_SCHEMA_VERSION:
        raise ValueError(f"machine schema_version {version!r} is not {MACHINE_SCHEMA_VERSION}")
    data = {k: v for k, v in doc.items() if k not in ("fingerprint", "schema_version")}
    data["isa_flags"] = tuple(data["isa_flags"])
    data["caches"] = tuple(Cache(**c) for c in data["caches"])
    data["gpus"] = tuple(Gpu(**g) for g in data.get("gpus", ()))
    data["energy_counters"] = tuple(data.get("energy_counters", ()))
    return Machine(**data)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def _cpuinfo_blocks(root: Path) -> list[dict[str, str]]:
    """One dict per ``processor`` entry of /proc/cpuinfo (ARM headers without one are merged in)."""
    blocks: list[dict[str, str]] = []
    shared: dict[str, str] = {}
    for chunk in _read(root / "proc/cpuinfo").split("\n\n"):
        fields = dict(_field(line) for line in chunk.splitlines() if ":" in line)
        if "processor" in fields and fields["processor"].isdigit():
            blocks.append(fields)
        else:
            shared.update(fields)
    return [{**shared, **block} for block in blocks]


def _field(line: str) -> tuple[str, str]:
    key, _, value = line.partition(":")
    return key.strip(), value.strip()


def _cpu_identity(block: Mapping[str, str]) -> tuple[str, int, int, int]:
    """(vendor, family, model, stepping) for x86 (``vendor_id``) or ARM (``CPU implementer``)."""
    if "vendor_id" in block:
        return (
            block["vendor_id"],
            _int(block.get("cpu family")),
            _int(block.get("model")),
            _int(block.get("stepping")),
        )
    implementer = _int(block.get("CPU implementer"))
    vendor = _ARM_IMPLEMENTERS.get(implementer, f"0x{implementer:x}" if implementer else "unknown")
    return (
        vendor,
        _int(block.get("CPU architecture")),
        _int(block.get("CPU part")),
        _int(block.get("CPU revision")),
    )


def _int(text: str | None) -> int:
    """An int from decimal or 0x-hex text; 0 when absent or unparsable."""
    try:
        return int(text or "0", 0)
    except ValueError:
        return 0


def _topology(root: Path, blocks: list[dict[str, str]]) -> tuple[int, int]:
    """(physical cores, sockets) from cpuinfo ids, else from sysfs topology, else (logical, 1)."""
    pairs = {(b.get("physical id", "0"), b["core id"]) for b in blocks if "core id" in b}
    if not pairs:
        pairs = {_sysfs_core(root, b["processor"]) for b in blocks}
        pairs.discard(("", ""))
    if not pairs:
        return max(len(blocks), 1), 1
    return len(pairs), len({socket for socket, _ in pairs})


def _sysfs_core(root: Path, cpu: str) -> tuple[str, str]:
    topology = root / f"sys/devices/system/cpu/cpu{cpu}/topology"
    core = _read(topology / "core_id").strip()
    if not core:
        return "", ""
    return _read(topology / "physical_package_id").strip() or "0", core


def _caches(root: Path) -> tuple[Cache, ...]:
    folder = root / "sys/devices/system/cpu/cpu0/cache"
    caches = []
    for index in sorted(folder.glob("index*"), key=lambda p: _int(p.name.removeprefix("index"))):
        size = parse_size_bytes(_read(index / "size"))
        if size:
            caches.append(
                Cache(
                    level=_int(_read(index / "level").strip()),
                    kind=_read(index / "type").strip().lower() or "unknown",
                    size_bytes=size,
                    shared_by_cpus=max(len(parse_cpu_list(_read(index / "shared_cpu_list"))), 1),
                )
            )
    return tuple(caches)


def parse_size_bytes(text: str) -> int:
    """Bytes from a sysfs size like ``48K``, ``32768K``, ``1M`` or ``512``; 0 when unparsable."""
    match = re.fullmatch(r"(\d+)\s*([KMG]?)i?B?", text.strip(), flags=re.IGNORECASE)
    if not match:
        return 0
    scale = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2).upper()]
    return int(match.group(1)) * scale


def parse_cpu_list(text: str) -> set[int]:
    """CPU numbers from a sysfs list like ``0-3,8,10-11``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        if low.strip().isdigit():
            cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def _mem_bytes(root: Path) -> int:
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", _read(root / "proc/meminfo"), flags=re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0


def _energy_counters(root: Path, gpus: tuple[Gpu, ...]) -> tuple[str, ...]:
    counters = []
    if any((root / "sys/class/powercap").glob("intel-rapl*")):
        counters.append("rapl")
    if gpus:
        counters.append("nvml")
    return tuple(counters)
