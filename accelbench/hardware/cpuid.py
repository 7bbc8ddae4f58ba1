"""Which microarchitecture a CPU is: its CPUID row (vendor, family, model, stepping; ARM implementer and
part), unless its ISA flags contradict the row; then a codename in its model string, then its ISA
extensions and cache sizes (cloud VMs often hide the model and sometimes report a wrong CPUID model).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from accelbench.hardware.cpuinfo import Cache

# (vendor, family, first model, last model, first stepping, last stepping, name); the first matching row
# wins. ARM rows: family = CPU architecture (8), model = CPU part. Apple parts as in Linux
# arch/arm64/include/asm/cputype.h (an M1/M2 under Asahi Linux; macOS has no /proc/cpuinfo).
_ANY = (0, 0xFF)
_MICROARCHITECTURES: tuple[tuple[str, int, int, int, int, int, str], ...] = (
    ("AuthenticAMD", 0x17, 0x00, 0x2F, *_ANY, "Zen / Zen+ (Naples)"),
    ("AuthenticAMD", 0x17, 0x30, 0x3F, *_ANY, "Zen 2 (Rome)"),
    ("AuthenticAMD", 0x17, 0x40, 0xFF, *_ANY, "Zen 2 (client)"),
    ("AuthenticAMD", 0x19, 0x00, 0x0F, *_ANY, "Zen 3 (Milan)"),
    ("AuthenticAMD", 0x19, 0x10, 0x1F, *_ANY, "Zen 4 (Genoa)"),
    ("AuthenticAMD", 0x19, 0x20, 0x5F, *_ANY, "Zen 3 (client)"),
    ("AuthenticAMD", 0x19, 0x60, 0x7F, *_ANY, "Zen 4 (client)"),
    ("AuthenticAMD", 0x19, 0xA0, 0xAF, *_ANY, "Zen 4c (Bergamo)"),
    ("AuthenticAMD", 0x1A, 0x00, 0x0F, *_ANY, "Zen 5 (Turin)"),
    ("AuthenticAMD", 0x1A, 0x10, 0x1F, *_ANY, "Zen 5c (Turin Dense)"),
    ("AuthenticAMD", 0x1A, 0x20, 0x7F, *_ANY, "Zen 5 (client)"),
    ("GenuineIntel", 6, 0x3F, 0x3F, *_ANY, "Haswell-EP"),
    ("GenuineIntel", 6, 0x4F, 0x4F, *_ANY, "Broadwell-EP"),
    ("GenuineIntel", 6, 0x55, 0x55, 0, 4, "Skylake-SP"),
    ("GenuineIntel", 6, 0x55, 0x55, 5, 7, "Cascade Lake"),
    ("GenuineIntel", 6, 0x55, 0x55, 10, 11, "Cooper Lake"),
    ("GenuineIntel", 6, 0x6A, 0x6C, *_ANY, "Ice Lake-SP"),
    ("GenuineIntel", 6, 0x8F, 0x8F, *_ANY, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0xCF, 0xCF, *_ANY, "Emerald Rapids"),
    ("GenuineIntel", 6, 0xAD, 0xAE, *_ANY, "Granite Rapids"),
    ("GenuineIntel", 6, 0xAF, 0xAF, *_ANY, "Sierra Forest"),
    ("GenuineIntel", 6, 0xA7, 0xA7, *_ANY, "Rocket Lake"),
    ("GenuineIntel", 6, 0x97, 0x9A, *_ANY, "Alder Lake"),
    ("GenuineIntel", 6, 0xB7, 0xB7, *_ANY, "Raptor Lake"),
    ("GenuineIntel", 6, 0xBA, 0xBA, *_ANY, "Raptor Lake"),
    ("GenuineIntel", 6, 0xBF, 0xBF, *_ANY, "Raptor Lake"),
    ("GenuineIntel", 6, 0xAA, 0xAC, *_ANY, "Meteor Lake"),
    ("GenuineIntel", 6, 0xBD, 0xBD, *_ANY, "Lunar Lake"),
    ("GenuineIntel", 6, 0xC5, 0xC6, *_ANY, "Arrow Lake"),
    ("ARM", 8, 0xD0C, 0xD0C, *_ANY, "Neoverse N1"),
    ("ARM", 8, 0xD40, 0xD40, *_ANY, "Neoverse V1"),
    ("ARM", 8, 0xD49, 0xD49, *_ANY, "Neoverse N2"),
    ("ARM", 8, 0xD4F, 0xD4F, *_ANY, "Neoverse V2"),
    ("Ampere", 8, 0xAC3, 0xAC3, *_ANY, "AmpereOne"),  # AMPERE_CPU_PART_AMPERE1 (implementer 0xC0)
    ("Apple", 8, 0x022, 0x023, *_ANY, "Apple M1"),
    ("Apple", 8, 0x024, 0x025, *_ANY, "Apple M1 Pro"),
    ("Apple", 8, 0x028, 0x029, *_ANY, "Apple M1 Max"),
    ("Apple", 8, 0x032, 0x033, *_ANY, "Apple M2"),
    ("Apple", 8, 0x034, 0x035, *_ANY, "Apple M2 Pro"),
    ("Apple", 8, 0x038, 0x039, *_ANY, "Apple M2 Max"),
)

_AMX = frozenset({"Sapphire Rapids", "Emerald Rapids", "Granite Rapids"})
"""Microarchitectures with AMX: a CPUID row outside this set on a CPU with ``amx_tile`` is not believed."""

_CODENAMES = {  # a codename in the model string (spaces, hyphens and case ignored) -> microarchitecture
    "skylake": "Skylake-SP",
    "cascadelake": "Cascade Lake",
    "cooperlake": "Cooper Lake",
    "icelake": "Ice Lake-SP",
    "sapphirerapids": "Sapphire Rapids",
    "emeraldrapids": "Emerald Rapids",
    "graniterapids": "Granite Rapids",
    "sierraforest": "Sierra Forest",
    "rome": "Zen 2 (Rome)",
    "milan": "Zen 3 (Milan)",
    "genoa": "Zen 4 (Genoa)",
    "bergamo": "Zen 4c (Bergamo)",
    "turin": "Zen 5 (Turin)",
}


def microarchitecture(vendor: str, family: int, model: int, stepping: int | None = None) -> str:
    """The CPUID row's microarchitecture for vendor/family/model(/stepping); ``unknown`` otherwise.

    Without a stepping, the first row of the model is taken (family 6 model 0x55: Skylake-SP).
    """
    for row_vendor, row_family, low, high, first_step, last_step, name in _MICROARCHITECTURES:
        steps = stepping is None or first_step <= stepping <= last_step
        if vendor == row_vendor and family == row_family and low <= model <= high and steps:
            return name
    return "unknown"


def identify_microarchitecture(
    vendor: str,
    family: int,
    model: int,
    stepping: int,
    cpu_model: str,
    flags: tuple[str, ...],
    caches: tuple[Cache, ...],
) -> tuple[str, str]:
    """(microarchitecture, basis): the CPUID row unless the flags contradict it, else codename, else ISA."""
    by_cpuid = microarchitecture(vendor, family, model, stepping)
    cpuid = f"CPUID {vendor} family {family:#x} model {model:#x} stepping {stepping}"
    amx = "amx_tile" in flags
    if by_cpuid != "unknown" and (by_cpuid in _AMX or not amx):
        return by_cpuid, cpuid
    doubt = f"{cpuid} is {by_cpuid}, which has no AMX" if by_cpuid != "unknown" else f"{cpuid} is in no row"
    codename = _codename(cpu_model)
    if codename:
        return codename, f"codename in the model string {cpu_model!r} ({doubt})"
    guessed = _isa_guess(vendor, flags, caches)
    if guessed:
        return guessed[0], f"{guessed[1]} ({doubt})"
    return "unknown", doubt


def _codename(cpu_model: str) -> str:
    squeezed = re.sub(r"[^a-z]", "", cpu_model.lower())
    return next((name for key, name in _CODENAMES.items() if key in squeezed), "")


def _isa_guess(vendor: str, flags: tuple[str, ...], caches: tuple[Cache, ...]) -> tuple[str, str] | None:
    """An Intel server microarchitecture from its ISA extensions and cache sizes (newest first)."""
    if vendor != "GenuineIntel" or "avx512f" not in flags:
        return None
    l1i = next((c.size_bytes for c in caches if c.level == 1 and c.kind == "instruction"), 0)
    l3 = max((c.size_bytes for c in caches if c.level == 3), default=0)
    if "amx_tile" in flags and l1i >= 64 * 2**10:
        return "Granite Rapids", "ISA flags and caches: AMX and a 64 KiB L1i (Redwood Cove cores)"
    if "amx_tile" in flags and l3 > 113 * 2**20:
        return "Emerald Rapids", "ISA flags and caches: AMX, 32 KiB L1i and more L3 than Sapphire Rapids has"
    if "amx_tile" in flags:
        return "Sapphire Rapids", "ISA flags: AMX with a 32 KiB L1i (Golden Cove cores)"
    if "avx512ifma" in flags:
        return "Ice Lake-SP", "ISA flags: AVX-512 IFMA without AMX"
    if "avx512_bf16" in flags:
        return "Cooper Lake", "ISA flags: AVX-512 BF16 without IFMA"
    if "avx512_vnni" in flags:
        return "Cascade Lake", "ISA flags: AVX-512 VNNI without IFMA or BF16"
    return "Skylake-SP", "ISA flags: AVX-512 without VNNI"
