"""The MLPerf Training history: bundled ResNet-50 rows plus rows imported into a store, validated alike.

Bundled: ``accelbench/data/mlperf_resnet_training.csv`` (a verbatim copy of the shared data: the fastest
closed entry per round, 8-accelerator references, CPU baselines; every row has a source). Imported rows
live in ``<store>/mlperf_history.json`` (see ``accelbench.mlperf.importer``) in the same columns.

Entry ids are ``ROUND/SUBMITTER/SYSTEM_DIR`` with the submitter lower-cased, e.g.
``v0.5/nvidia/dgx1_multi_ngc18.11_mxnet``. Where several bundled rows share those three parts (v0.5 Google
rows all live in a ``tpu`` directory) each gets ``~`` and its system name as a slug:
``v0.5/google/tpu~tpuv3-512-tpuv2-8``. An imported row must have a fresh id, so ids never change.
Lookups ignore case.

Stored form: imported rows are kept as their CSV text (see ``accelbench.mlperf.importer``) and validated
again on every load, by the same ``parse_rows`` as the bundled file.
"""

from __future__ import annotations

import collections
import csv
import difflib
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

from accelbench.errors import UserError
from accelbench.files import number_problem

COLUMNS = (
    "round",
    "round_published_approx",
    "role_in_table",
    "submitter",
    "division",
    "availability",
    "system_name",
    "system_dir",
    "chip_key",
    "accelerator_model_raw",
    "accelerator_count",
    "num_nodes",
    "host_cpu",
    "host_cpu_sockets_total",
    "framework",
    "time_min_from_logs",
    "official_time_min",
    "accelerator_minutes",
    "runs_converged",
    "runs_total",
    "run_dates",
    "value_status",
    "notes",
    "source",
)
"""The bundled file's columns, in order."""
REQUIRED_COLUMNS = (
    "round",
    "submitter",
    "system_name",
    "system_dir",
    "chip_key",
    "accelerator_count",
    "source",
)
OPTIONAL_EXTRA_COLUMNS = ("benchmark",)
BENCHMARKS = ("resnet",)
MINUTES_CONSISTENCY = 0.01
"""``accelerator_minutes`` may differ from time x accelerator_count by at most this share."""

_ROUND = re.compile(r"v([0-9]{1,3})\.([0-9]{1,3})")
_NAME_PART = re.compile(r"[^/\s~][^/~]{0,199}")


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One MLPerf Training result: a system, its accelerators and its time to train (SI seconds)."""

    id: str
    benchmark: str
    round: str
    submitter: str
    division: str
    availability: str
    system_name: str
    system_dir: str
    chip_key: str
    accelerator_count: int
    """0 when the file gives none (CPU-only systems)."""
    time_s_from_logs: float | None
    official_time_s: float | None
    source: str
    origin: str = "bundled"
    role: str = ""
    framework: str = ""
    host_cpu: str = ""
    runs_converged: int | None = None
    runs_total: int | None = None
    run_dates: str = ""
    value_status: str = ""
    notes: str = ""
    row: Mapping[str, str] = field(default_factory=dict)
    """The row as read (file column -> text), kept for export and re-validation."""

    @property
    def time_s(self) -> float | None:
        """Raw olympic mean of the logs when known, else the official score."""
        return self.time_s_from_logs if self.time_s_from_logs is not None else self.official_time_s

    @property
    def time_basis(self) -> str:
        """Where ``time_s`` comes from."""
        if self.time_s_from_logs is not None:
            return "raw olympic mean of the result logs"
        return "official MLCommons score" if self.official_time_s is not None else "none"

    @property
    def round_version(self) -> tuple[int, int]:
        """The round as (major, minor), e.g. (0, 5) for v0.5."""
        return round_version(self.round)


@dataclass(frozen=True, slots=True)
class History:
    """Bundled and imported entries, in file order."""

    entries: tuple[HistoryEntry, ...]

    def __iter__(self) -> Iterator[HistoryEntry]:
        return iter(self.entries)

    def get(self, entry_id: str) -> HistoryEntry | None:
        """The entry with this id (case-insensitive), or None."""
        wanted = entry_id.strip().lower()
        return next((e for e in self.entries if e.id.lower() == wanted), None)

    def require(self, entry_id: str) -> HistoryEntry:
        """The entry with this id; UserError naming close ids when unknown."""
        entry = self.get(entry_id)
        if entry is None:
            close = difflib.get_close_matches(entry_id, [e.id for e in self.entries], n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else "; list them with: accelbench history"
            raise UserError(f"unknown MLPerf history entry {entry_id!r}{hint}")
        return entry


def round_version(text: str) -> tuple[int, int]:
    """``v0.5`` -> (0, 5); ValueError for anything else."""
    found = _ROUND.fullmatch(text.strip())
    if found is None:
        raise ValueError(f"round {text!r} is not like v0.5 or v4.0")
    return int(found.group(1)), int(found.group(2))


@functools.cache
def bundled_history() -> History:
    """The shipped ResNet-50 training history."""
    text = (resources.files("accelbench") / "data" / "mlperf_resnet_training.csv").read_text("utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    return History(tuple(parse_rows(rows, "accelbench/data/mlperf_resnet_training.csv", "bundled", set())))


def parse_rows(
    rows: Sequence[Mapping[str, str]], where: str, origin: str, taken_ids: set[str], first_line: int = 2
) -> list[HistoryEntry]:
    """Validate rows (file column -> text) and build entries; UserError names the line and column.

    ``taken_ids`` holds the (lower-case) ids and base ids already in use; new ids must not collide.
    """
    shared: Mapping[str, int] = {}
    if origin == "bundled":
        shared = collections.Counter(_base_id(row) for row in rows if _has_id_parts(row))
    entries = []
    for offset, row in enumerate(rows):
        entry = _entry(row, f"{where} line {first_line + offset}", origin, shared)
        for taken in {entry.id.lower(), _base_id(row).lower()}:
            if taken in taken_ids and origin != "bundled":
                raise UserError(
                    f"{where} line {first_line + offset}: entry {entry.id!r} is already in the history"
                )
        taken_ids.update({entry.id.lower(), _base_id(row).lower()})
        entries.append(entry)
    return entries


def _has_id_parts(row: Mapping[str, str]) -> bool:
    return all(row.get(k) for k in ("round", "submitter", "system_dir"))


def _base_id(row: Mapping[str, str]) -> str:
    return f"{row['round'].strip()}/{row['submitter'].strip().lower()}/{row['system_dir'].strip()}"


def _entry(row: Mapping[str, str], where: str, origin: str, shared: Mapping[str, int]) -> HistoryEntry:
    text = {k: _text(row, k, where) for k in COLUMNS}
    for name in REQUIRED_COLUMNS:
        if not text[name]:
            raise UserError(f"{where} column {name!r}: a value is required")
    _check_round(text["round"], where)
    for name in ("submitter", "system_dir"):
        if not _NAME_PART.fullmatch(text[name]):
            raise UserError(
                f"{where} column {name!r}: {text[name]!r} may not contain '/', '~' or start blank"
            )
    benchmark = _text(row, "benchmark", where) or "resnet"
    if benchmark not in BENCHMARKS:
        raise UserError(f"{where} column 'benchmark': {benchmark!r} is not one of {', '.join(BENCHMARKS)}")
    logs_min = _number(text, "time_min_from_logs", where)
    official_min = _number(text, "official_time_min", where)
    count = _whole(text, "accelerator_count", where)
    assert count is not None  # required above
    _check_minutes(text, logs_min if logs_min is not None else official_min, count, where)
    converged, total = _whole(text, "runs_converged", where), _whole(text, "runs_total", where)
    if converged is not None and total is not None and converged > total:
        raise UserError(f"{where} column 'runs_converged': {converged} is more than runs_total {total}")
    base = _base_id(text)
    entry_id = f"{base}~{_slug(text['system_name'])}" if shared.get(base, 0) > 1 else base
    return HistoryEntry(
        id=entry_id,
        benchmark=benchmark,
        round=text["round"],
        submitter=text["submitter"],
        division=text["division"],
        availability=text["availability"],
        system_name=text["system_name"],
        system_dir=text["system_dir"],
        chip_key=text["chip_key"],
        accelerator_count=count,
        time_s_from_logs=None if logs_min is None else logs_min * 60.0,
        official_time_s=None if official_min is None else official_min * 60.0,
        source=text["source"],
        origin=origin,
        role=text["role_in_table"],
        framework=text["framework"],
        host_cpu=text["host_cpu"],
        runs_converged=converged,
        runs_total=total,
        run_dates=text["run_dates"],
        value_status=text["value_status"],
        notes=text["notes"],
        row={k: v for k, v in {**text, "benchmark": benchmark}.items() if v},
    )


def _text(row: Mapping[str, str], name: str, where: str) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UserError(f"{where} column {name!r}: expected text")
    if "\x00" in value or len(value) > 4000:
        raise UserError(f"{where} column {name!r}: not a plausible value (NUL byte or over 4000 characters)")
    return value.strip()


def _check_round(value: str, where: str) -> None:
    try:
        round_version(value)
    except ValueError as exc:
        raise UserError(f"{where} column 'round': {exc}") from None


def _number(text: Mapping[str, str], name: str, where: str) -> float | None:
    if not text[name]:
        return None
    try:
        value = float(text[name])
    except ValueError:
        raise UserError(f"{where} column {name!r}: {text[name][:40]!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{where} column {name!r}: {text[name][:40]!r} is not a positive number")
    extreme = number_problem(value, f"{where} column {name!r}")
    if extreme:
        raise UserError(extreme)
    return value


def _whole(text: Mapping[str, str], name: str, where: str) -> int | None:
    if not text[name]:
        return None
    if not (text[name].isascii() and text[name].isdigit()) or len(text[name]) > 9:
        raise UserError(f"{where} column {name!r}: {text[name][:40]!r} is not a whole number >= 0")
    return int(text[name])


def _check_minutes(text: Mapping[str, str], time_min: float | None, count: int, where: str) -> None:
    given = _number(text, "accelerator_minutes", where)
    if given is None or time_min is None or count == 0:
        return
    expected = time_min * count
    if abs(given - expected) > MINUTES_CONSISTENCY * expected:
        raise UserError(
            f"{where} column 'accelerator_minutes': {given:g} contradicts "
            f"time x accelerator_count = {expected:g}"
        )


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "system"
