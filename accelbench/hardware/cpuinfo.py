"""Read the CPU and memory of this machine from procfs and sysfs: ``/proc/cpuinfo`` blocks, CPUID identity,
topology, cpu0's caches and ``MemTotal``.

Every read goes through a ``root`` folder (``accelbench.hardware.detect`` passes its own, default ``/``),
so tests can point it at a fake tree; an unreadable file reads as empty text, never an exception. x86
blocks give the CPUID vendor/family/model/stepping; ARM blocks give implementer/architecture/part/revision
in the same slots (``_ARM_IMPLEMENTERS`` names the implementer). Cache sizes come from sysfs
(``/sys/devices/system/cpu/cpu0/cache/index*/``), not py-cpuinfo, whose sizes are wrong on cloud VMs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_ARM_IMPLEMENTERS = {0x41: "ARM", 0x61: "Apple", 0xC0: "Ampere", 0x48: "HiSilicon"}


@dataclass(frozen=True, slots=True)
class Cache:
    """One CPU cache as seen from cpu0 (``kind``: data, instruction or unified)."""

    level: int
    kind: str
    size_bytes: int
    shared_by_cpus: int


def read_text(path: Path) -> str:
    """The text of a procfs/sysfs file; empty when it is missing or unreadable."""
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


def cpuinfo_blocks(root: Path) -> list[dict[str, str]]:
    """One dict per ``processor`` entry of /proc/cpuinfo (ARM headers without one are merged in)."""
    blocks: list[dict[str, str]] = []
    shared: dict[str, str] = {}
    for chunk in read_text(root / "proc/cpuinfo").split("\n\n"):
        fields = dict(_field(line) for line in chunk.splitlines() if ":" in line)
        if "processor" in fields and fields["processor"].isdigit():
            blocks.append(fields)
        else:
            shared.update(fields)
    return [{**shared, **block} for block in blocks]


def _field(line: str) -> tuple[str, str]:
    key, _, value = line.partition(":")
    return key.strip(), value.strip()


def cpu_identity(block: Mapping[str, str]) -> tuple[str, int, int, int]:
    """(vendor, family, model, stepping) for x86 (``vendor_id``) or ARM (``CPU implementer``)."""
    if "vendor_id" in block:
        return (
            block["vendor_id"],
            parse_int(block.get("cpu family")),
            parse_int(block.get("model")),
            parse_int(block.get("stepping")),
        )
    implementer = parse_int(block.get("CPU implementer"))
    vendor = _ARM_IMPLEMENTERS.get(implementer, f"0x{implementer:x}" if implementer else "unknown")
    return (
        vendor,
        parse_int(block.get("CPU architecture")),
        parse_int(block.get("CPU part")),
        parse_int(block.get("CPU revision")),
    )


def parse_int(text: str | None) -> int:
    """An int from decimal or 0x-hex text; 0 when absent or unparsable."""
    try:
        return int(text or "0", 0)
    except ValueError:
        return 0


def cpu_topology(root: Path, blocks: list[dict[str, str]]) -> tuple[int, int]:
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
    core = read_text(topology / "core_id").strip()
    if not core:
        return "", ""
    return read_text(topology / "physical_package_id").strip() or "0", core


def cpu0_caches(root: Path) -> tuple[Cache, ...]:
    """The caches cpu0 sees, by sysfs index; entries without a readable size are left out."""
    folder = root / "sys/devices/system/cpu/cpu0/cache"
    caches = []
    for index in sorted(folder.glob("index*"), key=lambda p: parse_int(p.name.removeprefix("index"))):
        size = parse_size_bytes(read_text(index / "size"))
        if size:
            caches.append(
                Cache(
                    level=parse_int(read_text(index / "level").strip()),
                    kind=read_text(index / "type").strip().lower() or "unknown",
                    size_bytes=size,
                    shared_by_cpus=max(len(parse_cpu_list(read_text(index / "shared_cpu_list"))), 1),
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


def mem_total_bytes(root: Path) -> int:
    """``MemTotal`` of ``/proc/meminfo`` in bytes; 0 when unreadable."""
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", read_text(root / "proc/meminfo"), flags=re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0
