"""The chip record: ``Fact`` (one number with provenance and source), ``Chip`` (a chip's facts in SI units),
``ChipTable`` (all chips by key), the file columns they are read from, and the checks every fact and chip
passes on load (``make_fact``, ``validated``). Reading the files is ``accelbench.hardware.chips`` (the
table) and ``accelbench.hardware.chip_file`` (the TOML format of ``chip_facts.toml`` and ``--chips FILE``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from accelbench.errors import UserError
from accelbench.files import number_problem
from accelbench.ranges import PROVENANCES, Range

CHIP_FILE_SCHEMA_VERSION = 1
KINDS = ("cpu", "gpu", "accelerator")
MAX_DENSITY_MTR_PER_MM2 = 400.0
"""Above this many million transistors per mm² a transistor count and a die area contradict each other
(TSMC N3 logic reaches ~200-300; shipped chips are far below)."""

# file column -> (Chip attribute, factor from the file's unit to SI, whole number required)
FIELDS: dict[str, tuple[str, float, bool]] = {
    "process_node_nm": ("process_node_nm", 1.0, False),
    "transistors_billion": ("transistors", 1e9, False),
    "die_area_mm2": ("die_area_mm2", 1.0, False),
    "tdp_w": ("tdp_w", 1.0, False),
    "clock_mhz": ("clock_hz", 1e6, False),
    "base_clock_mhz": ("base_clock_hz", 1e6, False),
    "all_core_boost_mhz": ("all_core_boost_hz", 1e6, False),
    "max_boost_mhz": ("max_boost_hz", 1e6, False),
    "fp32_flop_per_cycle": ("fp32_flop_per_cycle", 1.0, False),
    "cores": ("cores", 1.0, True),
    "threads": ("threads", 1.0, True),
    "peak_dense_fp16_bf16_tflops": ("peak_fp16_flop_per_s", 1e12, False),
    "peak_fp32_tflops": ("peak_fp32_flop_per_s", 1e12, False),
    "int8_tops": ("peak_int8_op_per_s", 1e12, False),
    "memory_gb": ("memory_bytes", 1e9, False),
    "memory_bw_gbs": ("memory_bw_bytes_per_s", 1e9, False),
    "launch_price_usd": ("price_usd", 1.0, False),
}
SOURCE_CLASSES = ("vendor datasheet", "vendor announcement", "independent measurement", "review", "estimate")
"""Where a fact comes from, most trusted first: the vendor's datasheet or product page, the vendor's launch
announcement or paper, a measurement by someone else, a review or compilation, an estimate (derived,
recalled, leaked). A fact without a ``class`` takes the class of its provenance (``DEFAULT_CLASS``)."""
DEFAULT_CLASS = {"datasheet": "vendor datasheet", "paper": "vendor announcement", "estimate": "estimate"}


@dataclass(frozen=True, slots=True)
class Fact:
    """One number about a chip: its value (a range when uncertain), provenance and source."""

    value: Range
    provenance: str
    source: str
    source_class: str = "estimate"
    """One of ``SOURCE_CLASSES``."""


@dataclass(frozen=True, slots=True)
class Chip:
    """A chip's datasheet facts in SI units; every number is a ``Fact`` or None when unknown."""

    key: str
    vendor: str
    name: str
    kind: str
    source: str
    variant: str = ""
    year: int | None = None
    microarchitecture: str = ""
    """cpu: the ``accelbench.hardware.detect`` microarchitecture this chip represents (first row wins)."""
    system_vendor: str = ""
    """cpu: the DMI system vendor of the only place this chip is found (``Amazon EC2`` for Graviton)."""
    notes: str = ""
    uncertain: str = ""
    """The shared data's ``estimated_or_uncertain_fields`` text, kept as written."""
    origin: str = "bundled"
    process_node_nm: Fact | None = None
    transistors: Fact | None = None
    die_area_mm2: Fact | None = None
    tdp_w: Fact | None = None
    clock_hz: Fact | None = None
    base_clock_hz: Fact | None = None
    all_core_boost_hz: Fact | None = None
    """cpu: the clock every core holds under load (AMD's "all core boost"; Intel's all-core turbo)."""
    max_boost_hz: Fact | None = None
    """The highest clock, reached with few cores busy (GPUs: the boost clock of the datasheet peak)."""
    fp32_flop_per_cycle: Fact | None = None
    """cpu: FP32 FLOP per cycle per core (FMA units x lanes x 2)."""
    cores: Fact | None = None
    """cpu: cores per socket."""
    threads: Fact | None = None
    """cpu: hardware threads per socket (cores x SMT ways; hybrid parts: P-cores x 2 + E-cores)."""
    peak_fp16_flop_per_s: Fact | None = None
    peak_fp32_flop_per_s: Fact | None = None
    peak_int8_op_per_s: Fact | None = None
    memory_bytes: Fact | None = None
    memory_bw_bytes_per_s: Fact | None = None
    price_usd: Fact | None = None


@dataclass(frozen=True, slots=True)
class ChipTable:
    """All known chips by key (keys compare case-insensitively)."""

    chips: Mapping[str, Chip] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Chip]:
        return iter(self.chips.values())

    def __len__(self) -> int:
        return len(self.chips)

    def get(self, key: str) -> Chip | None:
        """The chip with this key, or None."""
        wanted = key.strip().lower()
        return next((c for k, c in self.chips.items() if k.lower() == wanted), None)

    def require(self, key: str) -> Chip:
        """The chip with this key; UserError naming close keys when unknown."""
        chip = self.get(key)
        if chip is None:
            close = difflib.get_close_matches(key, list(self.chips), n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            raise UserError(f"unknown chip {key!r}{hint}")
        return chip

    def by_microarchitecture(self, name: str, system_vendor: str = "") -> Chip | None:
        """The representative CPU of a microarchitecture, or None.

        Among the CPUs declaring ``name``, the first whose ``system_vendor`` the machine's DMI vendor starts
        with (Neoverse N1 on ``Amazon EC2`` is a Graviton2), else the first without one (Ampere Altra),
        else the first.
        """
        rows = [c for c in self if c.kind == "cpu" and c.microarchitecture == name]
        vendor = system_vendor.strip().lower()
        placed = [c for c in rows if c.system_vendor and vendor.startswith(c.system_vendor.lower())]
        return next(iter(placed + [c for c in rows if not c.system_vendor] + rows), None)


def make_fact(
    raw: float | tuple[float, ...], name: str, key: str, where: str, provenance: str, source: str
) -> Fact:
    """A validated fact in SI units from a value (or low, high, central) in the file's unit."""
    prefix = f"chips file {where}: chip {key!r} field {name!r}"
    if provenance not in PROVENANCES:
        raise UserError(f"{prefix}: provenance {provenance!r} is not one of {', '.join(PROVENANCES)}")
    low, high, central = (raw, raw, raw) if isinstance(raw, float) else raw
    given = [v for v in (low, high, central) if not math.isnan(v)]
    if math.isnan(low) or math.isnan(high) or not all(math.isfinite(v) and v > 0 for v in given):
        raise UserError(f"{prefix}: values must be positive finite numbers")
    extreme = next(filter(None, (number_problem(v, "a value") for v in given)), None)
    if extreme:
        raise UserError(f"{prefix}: {extreme}")
    if low > high:
        raise UserError(f"{prefix}: low {low:g} is above high {high:g}")
    if not math.isnan(central) and not low <= central <= high:
        raise UserError(f"{prefix}: central {central:g} is outside low..high ({low:g}..{high:g})")
    _, scale, whole = FIELDS[name]
    if whole and any(v != int(v) for v in given):
        raise UserError(f"{prefix}: expected a whole number")
    value = Range.between(low * scale, high * scale, None if math.isnan(central) else central * scale)
    return Fact(value, provenance, source, DEFAULT_CLASS.get(provenance, "estimate"))


def validated(chip: Chip, where: str) -> Chip:
    """Cross-field checks: a transistor count and a die area that cannot both be true; threads < cores."""
    if chip.threads and chip.cores and chip.threads.value.high < chip.cores.value.low:
        raise UserError(
            f"chips file {where}: chip {chip.key!r} fields 'threads' and 'cores' contradict: "
            f"{chip.threads.value.high:g} threads for {chip.cores.value.low:g} cores"
        )
    if chip.transistors and chip.die_area_mm2:
        density = chip.transistors.value.low / chip.die_area_mm2.value.high / 1e6
        if density > MAX_DENSITY_MTR_PER_MM2:
            raise UserError(
                f"chips file {where}: chip {chip.key!r} fields 'transistors_billion' and 'die_area_mm2' "
                f"contradict: at least {density:.0f} million transistors per mm2 "
                f"(more than {MAX_DENSITY_MTR_PER_MM2:.0f})"
            )
    return chip
