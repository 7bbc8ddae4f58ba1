"""Detect the machine a run executes on: CPU identity, topology, ISA, caches, memory, GPUs, counters.

Every procfs/sysfs read goes through a ``root`` folder (default ``/``) so tests can point detection at a
fake tree; ``accelbench.hardware.cpuinfo`` parses those files. The CPU is identified by vendor/family/model/
stepping and flags, never by the model string alone: VMs often hide the SKU (this project's VM reports
just ``AMD EPYC``), which ``model_hidden`` records. Cache sizes come from sysfs
(``/sys/devices/system/cpu/cpu0/cache/index*/``); py-cpuinfo's are wrong on these VMs. GPUs are read
through NVML when ``pynvml`` (the ``nvidia-ml-py`` package) imports; anything else gives an empty tuple,
never a crash.

The microarchitecture comes from CPUID vendor/family/model/stepping (ARM: implementer/part) through
``_MICROARCHITECTURES``; when that names nothing, or names a part whose ISA contradicts the flags (a
hypervisor that reports a client model number for a server CPU with AMX), a codename in the model string
(``Intel Xeon Processor (Icelake)``, ``AMD EPYC-Milan Processor``) or the ISA flags and caches decide, and
``microarchitecture_basis`` says which. ``virtual_machine`` (x86 ``hypervisor`` flag, ``/sys/hypervisor``
or a DMI vendor/product of a VM) decides how ``accelbench.hardware.match`` counts chips.

Stored form (``machine_to_dict``) history (bump ``MACHINE_SCHEMA_VERSION`` on every change):
    1  first format: the ``Machine`` fields, ``caches``/``gpus`` as lists of objects, plus
       ``fingerprint`` (informational, recomputed on load) and ``schema_version``.
    2  adds ``microarchitecture_basis``, ``virtual_machine``, ``system_vendor``, ``system_product``;
       Intel family 6 model 0x55 is split by stepping (Skylake-SP / Cascade Lake / Cooper Lake). A version 1
       document still loads: its microarchitecture is identified again from the stored CPUID fields, flags
       and caches; ``virtual_machine`` is False (unknown then), so its chip count stays cores / socket cores.
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

from accelbench.files import check_schema_version
from accelbench.hardware.cpuid import identify_microarchitecture
from accelbench.hardware.cpuinfo import (
    Cache,
    cpu0_caches,
    cpu_identity,
    cpu_topology,
    cpuinfo_blocks,
    mem_total_bytes,
    parse_int,
    read_text,
)

logger = logging.getLogger(__name__)

MACHINE_SCHEMA_VERSION = 2
READABLE_SCHEMA_VERSIONS = (1, 2)

BUSY_LOAD_PER_CORE = 0.5
"""``busy_warning`` threshold: 1-minute load average per logical core before a cell.

0.5 per core means half the machine is already busy (on a 2-core VM: one core fully taken), which
made repeated measurements differ by up to 2x in the feasibility study (load 1.4-1.8 on 2 cores).
"""

_INTERESTING_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx_vnni", "neon", "asimd", "asimddp", "i8mm", "bf16")
_INTERESTING_PREFIXES = ("avx512", "amx", "sve")

_GENERIC_MODELS = ("qemu virtual cpu", "common kvm processor", "virtual cpu")

_VM_VENDORS = ("qemu", "xen", "vmware", "innotek", "google", "red hat", "openstack", "nutanix")
_VM_PRODUCTS = ("kvm", "virtual machine", "standard pc", "hvm domu", "virtualbox", "google compute engine")


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
    microarchitecture_basis: str = ""
    """How ``microarchitecture`` was found: CPUID row, model-string codename or ISA flags and caches."""
    virtual_machine: bool = False
    """True under a hypervisor: its vCPUs are then a share of a host socket's hardware threads."""
    system_vendor: str = ""
    """DMI ``sys_vendor`` (``Amazon EC2``, ``Google``, ``QEMU``, ...); empty when unreadable."""
    system_product: str = ""
    """DMI ``product_name`` (an EC2 instance type, ``Google Compute Engine``, ...)."""

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
    blocks = cpuinfo_blocks(base)
    first = blocks[0] if blocks else {}
    vendor, family, model, stepping = cpu_identity(first)
    cpu_model = first.get("model name", "")
    physical, sockets = cpu_topology(base, blocks)
    logical = max(len(blocks), 1)
    if not blocks and platform.system() == "Darwin":  # macOS: no procfs, sysctl names the chip
        cpu_model, vendor, logical, physical = _darwin_cpu()
    raw_flags = first.get("flags", first.get("Features", "")).split()
    flags, caches = interesting_flags(raw_flags), cpu0_caches(base)
    system_vendor, system_product = _dmi(base, "sys_vendor"), _dmi(base, "product_name")
    name, basis = identify_microarchitecture(vendor, family, model, stepping, cpu_model, flags, caches)
    gpus = detect_gpus() if probe_gpus else ()
    return Machine(
        cpu_model=cpu_model,
        cpu_vendor=vendor,
        cpu_family=family,
        cpu_model_number=model,
        cpu_stepping=stepping,
        microarchitecture=name,
        model_hidden=is_model_hidden(cpu_model),
        logical_cores=logical,
        physical_cores=physical,
        sockets=sockets,
        isa_flags=flags,
        caches=caches,
        mem_bytes=mem_total_bytes(base),
        os_name=platform.system(),
        kernel=platform.release(),
        python_version=platform.python_version(),
        gpus=gpus,
        energy_counters=_energy_counters(base, gpus),
        microarchitecture_basis=basis,
        virtual_machine=is_virtual_machine(base, raw_flags, system_vendor, system_product),
        system_vendor=system_vendor,
        system_product=system_product,
    )


def is_virtual_machine(root: Path, raw_flags: list[str], system_vendor: str, system_product: str) -> bool:
    """True under a hypervisor: the x86 ``hypervisor`` flag, ``/sys/hypervisor/type``, or a VM's DMI."""
    if "hypervisor" in raw_flags or read_text(root / "sys/hypervisor/type").strip():
        return True
    vendor, product = system_vendor.lower(), system_product.lower()
    if vendor.startswith("amazon ec2"):
        return bool(product) and "metal" not in product
    if vendor.startswith("microsoft") and "virtual machine" in product:
        return True
    return vendor.startswith(_VM_VENDORS) or any(word in product for word in _VM_PRODUCTS)


def _dmi(root: Path, name: str) -> str:
    return read_text(root / "sys/class/dmi/id" / name).strip()


def _darwin_cpu() -> tuple[str, str, int, int]:
    """(model string, vendor, logical CPUs, physical cores) from macOS ``sysctl``."""
    brand = _sysctl("machdep.cpu.brand_string")
    vendor = "Apple" if brand.startswith("Apple") else _sysctl("machdep.cpu.vendor") or "unknown"
    logical = parse_int(_sysctl("hw.logicalcpu")) or os.cpu_count() or 1
    return brand, vendor, logical, parse_int(_sysctl("hw.physicalcpu")) or logical


def _sysctl(name: str) -> str:
    import subprocess

    try:
        done = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


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
    text = read_text(Path(root) / "proc/loadavg")
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
    version = check_schema_version(doc, READABLE_SCHEMA_VERSIONS, "machine")
    data = {k: v for k, v in doc.items() if k not in ("fingerprint", "schema_version")}
    data["isa_flags"] = tuple(data["isa_flags"])
    data["caches"] = tuple(Cache(**c) for c in data["caches"])
    data["gpus"] = tuple(Gpu(**g) for g in data.get("gpus", ()))
    data["energy_counters"] = tuple(data.get("energy_counters", ()))
    machine = Machine(**data)
    if version == 1:  # identified again: version 2 splits model 0x55 and believes flags over odd models
        name, basis = identify_microarchitecture(
            machine.cpu_vendor,
            machine.cpu_family,
            machine.cpu_model_number,
            machine.cpu_stepping,
            machine.cpu_model,
            machine.isa_flags,
            machine.caches,
        )
        machine = dataclasses.replace(machine, microarchitecture=name, microarchitecture_basis=basis)
    return machine


def _energy_counters(root: Path, gpus: tuple[Gpu, ...]) -> tuple[str, ...]:
    counters = []
    if any((root / "sys/class/powercap").glob("intel-rapl*")):
        counters.append("rapl")
    if gpus:
        counters.append("nvml")
    return tuple(counters)
