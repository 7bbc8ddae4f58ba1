"""Chip facts: datasheet numbers with provenance, sources and ranges, shipped as package data.

The table is built from three layers, each validated on load:
    1. ``accelbench/data/chips.csv``: a verbatim copy of ``shared/data/chips.csv`` (every source column kept);
       each filled number is a ``datasheet`` figure from the row's ``source``, of source class ``review``
       (the rows quote vendor figures through compilations: Epoch AI's dataset, news and reviews).
    2. ``accelbench/data/chip_facts.toml``: ranges where sources disagree (TPU v4 transistors 22-41 B,
       TPU v4 TDP 192-340 W, MI250X TDP 500-560 W), provenances other than ``datasheet``, clocks, core
       and thread counts, microarchitectures, and extra chips: one representative SKU per CPU family a
       user meets in clouds and laptops (Xeon Skylake-SP to Granite Rapids, EPYC Rome to Turin, Graviton
       2-4, Ampere Altra and AmpereOne, Apple M1-M4, recent Core and Ryzen parts), each fact with its
       provenance.
       This is the only CPU table: the energy estimate (``accelbench.meters.energy``) reads its TDP,
       cores and threads through ``accelbench.hardware.match``, as the report does.
    3. an optional user file (``--chips FILE``) in the same TOML format: ``[[chip]]`` adds a chip,
       ``[[amend]]`` refines one; see ``docs/adding-a-chip.md``.

Numbers are stored in SI units (``transistors`` as a count, ``clock_hz``, ``memory_bytes``); the file
columns keep the units of the shared data (``transistors_billion``, ``clock_mhz``, ``memory_gb``).
A malformed or contradictory file is a one-line ``UserError`` naming the file, the chip and the field.
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
import logging
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.files import number_problem
from accelbench.inputs import parse_toml, read_input_text
from accelbench.ranges import PROVENANCES, Range

logger = logging.getLogger(__name__)

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
_TEXT_FIELDS = ("vendor", "name", "variant", "kind", "microarchitecture", "system_vendor", "source", "notes")
_CHIP_KEYS = {"key", "year", "class", *_TEXT_FIELDS, *FIELDS}
"""``class`` in a ``[[chip]]``: the source class of the row's plain numbers (its ``source``'s class:
``review`` for a news or review page); default ``vendor datasheet``."""
_AMEND_TEXTS = ("kind", "microarchitecture", "system_vendor", "notes")
_AMEND_KEYS = {"key", *_AMEND_TEXTS, *FIELDS}
_FACT_KEYS = {"value", "low", "high", "central", "provenance", "source", "class"}
SOURCE_CLASSES = ("vendor datasheet", "vendor announcement", "independent measurement", "review", "estimate")
"""Where a fact comes from, most trusted first: the vendor's datasheet or product page, the vendor's launch
announcement or paper, a measurement by someone else, a review or compilation, an estimate (derived,
recalled, leaked). A fact without a ``class`` takes the class of its provenance (``_DEFAULT_CLASS``)."""
_DEFAULT_CLASS = {"datasheet": "vendor datasheet", "paper": "vendor announcement", "estimate": "estimate"}


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


def load_chips(user_file: Path | str | None = None) -> ChipTable:
    """The bundled chips, plus (validated) the chips and amendments of a user TOML file."""
    table = bundled_chips()
    if user_file is None:
        return table
    path = Path(user_file)
    return ChipTable(_apply_toml(dict(table.chips), _read_toml(path), str(path)))


@functools.cache
def bundled_chips() -> ChipTable:
    """chips.csv refined by chip_facts.toml (read once per process)."""
    chips = _read_csv_chips()
    name = "accelbench/data/chip_facts.toml"
    document = _parse_toml(_data_text("chip_facts.toml"), name)
    return ChipTable(_apply_toml(chips, document, name))


def _data_text(name: str) -> str:
    return (resources.files("accelbench") / "data" / name).read_text(encoding="utf-8")


def _read_csv_chips() -> dict[str, Chip]:
    chips: dict[str, Chip] = {}
    for row in csv.DictReader(_data_text("chips.csv").splitlines()):
        chip = _csv_chip(row)
        chips[chip.key] = chip
    return chips


def _csv_chip(row: Mapping[str, str]) -> Chip:
    key, where = row["chip_key"], "accelbench/data/chips.csv"
    facts: dict[str, Any] = {  # vendor figures read through compilations (Epoch AI, news): class review
        FIELDS[column][0]: dataclasses.replace(
            _fact(float(text), column, key, where, "datasheet", row["source"]), source_class="review"
        )
        for column, text in row.items()
        if column in FIELDS and text.strip()
    }
    chip = Chip(
        key=key,
        vendor=row["vendor"],
        name=row["chip"],
        kind="cpu" if key.startswith("CPU:") else "accelerator",
        source=row["source"],
        variant=row["variant"],
        year=int(row["year"]) if row["year"].strip() else None,
        notes=row["notes"],
        uncertain=row["estimated_or_uncertain_fields"],
    )
    return dataclasses.replace(chip, **facts)


def _read_toml(path: Path) -> dict[str, Any]:
    return _parse_toml(read_input_text(path, "chips file"), str(path))


def _parse_toml(text: str, where: str) -> dict[str, Any]:
    document = parse_toml(text, f"chips file {where}")
    unknown = set(document) - {"schema_version", "chip", "amend"}
    if unknown:
        raise UserError(f"chips file {where}: unknown top-level key {sorted(unknown)[0]!r}")
    version = document.get("schema_version", CHIP_FILE_SCHEMA_VERSION)
    if version != CHIP_FILE_SCHEMA_VERSION:
        raise UserError(f"chips file {where}: schema_version {version!r} is not {CHIP_FILE_SCHEMA_VERSION}")
    for table in ("chip", "amend"):
        if not isinstance(document.get(table, []), list):
            raise UserError(f"chips file {where}: {table!r} must be an array of tables ([[{table}]])")
    return document


def _apply_toml(chips: dict[str, Chip], document: Mapping[str, Any], where: str) -> dict[str, Chip]:
    added: set[str] = set()
    for entry in document.get("chip", []):
        chip = _new_chip(entry, where)
        if chip.key in added:
            raise UserError(f"chips file {where}: chip {chip.key!r} is defined twice")
        if chip.key in chips:
            raise UserError(
                f"chips file {where}: chip {chip.key!r} already exists; use [[amend]] to change it"
            )
        chips[chip.key] = chip
        added.add(chip.key)
    for entry in document.get("amend", []):
        key = _key(entry, where, "amend")
        if key not in chips:
            raise UserError(f"chips file {where}: [[amend]] of unknown chip {key!r}")
        chips[key] = _amended(chips[key], entry, where)
    return chips


def _key(entry: Any, where: str, table: str) -> str:
    if not isinstance(entry, dict):
        raise UserError(f"chips file {where}: every [[{table}]] must be a table")
    key = entry.get("key")
    if not isinstance(key, str) or not key.strip():
        raise UserError(f"chips file {where}: a [[{table}]] has no 'key' (a non-empty string)")
    return key.strip()


def _new_chip(entry: Any, where: str) -> Chip:
    key = _key(entry, where, "chip")
    _check_names(entry, _CHIP_KEYS, key, where)
    for required in ("vendor", "name", "source"):
        if not isinstance(entry.get(required), str) or not entry[required].strip():
            raise UserError(
                f"chips file {where}: chip {key!r} field {required!r}: a non-empty string is required"
            )
    texts: dict[str, Any] = {name: _text(entry, name, key, where) for name in _TEXT_FIELDS if name in entry}
    chip = Chip(key=key, vendor="", name="", kind="accelerator", source="", origin=where)
    chip = dataclasses.replace(chip, year=_year(entry.get("year"), key, where), **texts)
    row_class = _row_class(entry, key, where)
    return _validated(_with_facts(chip, entry, where, row_class), where)


def _row_class(entry: Mapping[str, Any], key: str, where: str) -> str:
    """The source class of a ``[[chip]]``'s plain numbers (its ``class``, default vendor datasheet)."""
    kind = entry.get("class", _DEFAULT_CLASS["datasheet"])
    if kind not in SOURCE_CLASSES or kind == "estimate":
        raise UserError(
            f"chips file {where}: chip {key!r} field 'class': {kind!r} is not one of "
            f"{', '.join(SOURCE_CLASSES[:-1])} (an estimate is a fact's own provenance)"
        )
    return str(kind)


def _amended(chip: Chip, entry: Mapping[str, Any], where: str) -> Chip:
    _check_names(entry, _AMEND_KEYS, chip.key, where)
    names = [name for name in _AMEND_TEXTS if name in entry]
    texts: dict[str, Any] = {name: _text(entry, name, chip.key, where) for name in names}
    changed = dataclasses.replace(chip, **texts)
    return _validated(_with_facts(changed, entry, where), where)


def _check_names(entry: Mapping[str, Any], allowed: set[str], key: str, where: str) -> None:
    unknown = sorted(set(entry) - allowed)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UserError(f"chips file {where}: chip {key!r} field {unknown[0]!r}: unknown field{hint}")


def _text(entry: Mapping[str, Any], name: str, key: str, where: str) -> str:
    value = entry.get(name, "")
    if not isinstance(value, str):
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: expected a string")
    if name == "kind" and value not in KINDS:
        raise UserError(f"chips file {where}: chip {key!r} field 'kind': {value!r} is not one of {KINDS}")
    return value


def _year(value: Any, key: str, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1950 <= value <= 2100:
        raise UserError(f"chips file {where}: chip {key!r} field 'year': expected a year like 2024")
    return value


def _with_facts(
    chip: Chip, entry: Mapping[str, Any], where: str, row_class: str = "vendor datasheet"
) -> Chip:
    facts: dict[str, Any] = {
        FIELDS[name][0]: _toml_fact(entry[name], name, chip.key, where, chip.source, row_class)
        for name in FIELDS
        if name in entry
    }
    return dataclasses.replace(chip, **facts)


def _toml_fact(
    raw: Any, name: str, key: str, where: str, chip_source: str, row_class: str = "vendor datasheet"
) -> Fact:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        fact = _fact(float(raw), name, key, where, "datasheet", chip_source)
        return dataclasses.replace(fact, source_class=row_class)
    if not isinstance(raw, dict):
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: expected a number or a table")
    unknown = sorted(set(raw) - _FACT_KEYS)
    if unknown:
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: unknown entry {unknown[0]!r}")
    provenance = raw.get("provenance", "datasheet")
    source = raw.get("source", chip_source)
    kind = raw.get("class", _DEFAULT_CLASS.get(provenance, "estimate"))
    if not all(isinstance(text, str) for text in (source, provenance, kind)):
        raise UserError(
            f"chips file {where}: chip {key!r} field {name!r}: provenance, source and class are strings"
        )
    if kind not in SOURCE_CLASSES:
        raise UserError(
            f"chips file {where}: chip {key!r} field {name!r}: class {kind!r} is not one of "
            f"{', '.join(SOURCE_CLASSES)}"
        )
    if provenance == "estimate" and kind != "estimate":
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: an estimate has class 'estimate'")
    fact = _fact(_range_of(raw, name, key, where), name, key, where, provenance, source)
    return dataclasses.replace(fact, source_class=kind)


def _range_of(raw: Mapping[str, Any], name: str, key: str, where: str) -> float | tuple[float, ...]:
    numbers = {k: raw[k] for k in ("value", "low", "high", "central") if k in raw}
    for part, number in numbers.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            raise UserError(f"chips file {where}: chip {key!r} field {name!r}: {part!r} must be a number")
    if "value" in numbers:
        if len(numbers) > 1:
            raise UserError(f"chips file {where}: chip {key!r} field {name!r}: give 'value' or 'low'/'high'")
        return float(numbers["value"])
    if "low" not in numbers or "high" not in numbers:
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: a range needs 'low' and 'high'")
    bounds = (numbers["low"], numbers["high"], numbers.get("central", math.nan))
    return tuple(float(b) for b in bounds)


def _fact(
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
    return Fact(value, provenance, source, _DEFAULT_CLASS.get(provenance, "estimate"))


def _validated(chip: Chip, where: str) -> Chip:
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
