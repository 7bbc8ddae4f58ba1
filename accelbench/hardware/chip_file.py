"""The chip file format (``accelbench/data/chip_facts.toml`` and a user's ``--chips FILE``): ``[[chip]]``
adds a chip, ``[[amend]]`` refines one; each entry validated on load, a malformed or contradictory file a
one-line ``UserError`` naming the file, the chip and the field. See ``docs/adding-a-chip.md``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.hardware.chip_record import (
    CHIP_FILE_SCHEMA_VERSION,
    DEFAULT_CLASS,
    FIELDS,
    KINDS,
    SOURCE_CLASSES,
    Chip,
    Fact,
    make_fact,
    validated,
)
from accelbench.inputs import parse_toml, read_input_text

_TEXT_FIELDS = ("vendor", "name", "variant", "kind", "microarchitecture", "system_vendor", "source", "notes")
_CHIP_KEYS = {"key", "year", "class", *_TEXT_FIELDS, *FIELDS}
"""``class`` in a ``[[chip]]``: the source class of the row's plain numbers (its ``source``'s class:
``review`` for a news or review page); default ``vendor datasheet``."""
_AMEND_TEXTS = ("kind", "microarchitecture", "system_vendor", "notes")
_AMEND_KEYS = {"key", *_AMEND_TEXTS, *FIELDS}
_FACT_KEYS = {"value", "low", "high", "central", "provenance", "source", "class"}


def read_chip_toml(path: Path) -> dict[str, Any]:
    return parse_chip_toml(read_input_text(path, "chips file"), str(path))


def parse_chip_toml(text: str, where: str) -> dict[str, Any]:
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


def apply_chip_toml(chips: dict[str, Chip], document: Mapping[str, Any], where: str) -> dict[str, Chip]:
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
    return validated(_with_facts(chip, entry, where, row_class), where)


def _row_class(entry: Mapping[str, Any], key: str, where: str) -> str:
    """The source class of a ``[[chip]]``'s plain numbers (its ``class``, default vendor datasheet)."""
    kind = entry.get("class", DEFAULT_CLASS["datasheet"])
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
    return validated(_with_facts(changed, entry, where), where)


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
        FIELDS[name][0]: _tomlmake_fact(entry[name], name, chip.key, where, chip.source, row_class)
        for name in FIELDS
        if name in entry
    }
    return dataclasses.replace(chip, **facts)


def _tomlmake_fact(
    raw: Any, name: str, key: str, where: str, chip_source: str, row_class: str = "vendor datasheet"
) -> Fact:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        fact = make_fact(float(raw), name, key, where, "datasheet", chip_source)
        return dataclasses.replace(fact, source_class=row_class)
    if not isinstance(raw, dict):
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: expected a number or a table")
    unknown = sorted(set(raw) - _FACT_KEYS)
    if unknown:
        raise UserError(f"chips file {where}: chip {key!r} field {name!r}: unknown entry {unknown[0]!r}")
    provenance = raw.get("provenance", "datasheet")
    source = raw.get("source", chip_source)
    kind = raw.get("class", DEFAULT_CLASS.get(provenance, "estimate"))
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
    fact = make_fact(_range_of(raw, name, key, where), name, key, where, provenance, source)
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
