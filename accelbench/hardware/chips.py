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

This module reads the table; the record and its checks are ``accelbench.hardware.chip_record``, the TOML
format ``accelbench.hardware.chip_file``. Import the record from here (it is re-exported).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import logging
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from accelbench.hardware.chip_file import apply_chip_toml, parse_chip_toml, read_chip_toml
from accelbench.hardware.chip_record import (
    CHIP_FILE_SCHEMA_VERSION,
    FIELDS,
    KINDS,
    MAX_DENSITY_MTR_PER_MM2,
    SOURCE_CLASSES,
    Chip,
    ChipTable,
    Fact,
    make_fact,
)

__all__ = [
    "CHIP_FILE_SCHEMA_VERSION",
    "FIELDS",
    "KINDS",
    "MAX_DENSITY_MTR_PER_MM2",
    "SOURCE_CLASSES",
    "Chip",
    "ChipTable",
    "Fact",
    "bundled_chips",
    "load_chips",
]

logger = logging.getLogger(__name__)


def load_chips(user_file: Path | str | None = None) -> ChipTable:
    """The bundled chips, plus (validated) the chips and amendments of a user TOML file."""
    table = bundled_chips()
    if user_file is None:
        return table
    path = Path(user_file)
    return ChipTable(apply_chip_toml(dict(table.chips), read_chip_toml(path), str(path)))


@functools.cache
def bundled_chips() -> ChipTable:
    """chips.csv refined by chip_facts.toml (read once per process)."""
    chips = _read_csv_chips()
    name = "accelbench/data/chip_facts.toml"
    document = parse_chip_toml(_data_text("chip_facts.toml"), name)
    return ChipTable(apply_chip_toml(chips, document, name))


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
            make_fact(float(text), column, key, where, "datasheet", row["source"]), source_class="review"
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
