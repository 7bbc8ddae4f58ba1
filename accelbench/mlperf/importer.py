"""Import MLPerf Training results into a store: CSV rows in the bundled columns, or a folder of result logs.

Imported rows are kept in ``<store>/mlperf_history.json`` (a sibling of ``results.sqlite``; no SQLite
migration, so the results schema is untouched). Everything is validated before anything is written, and
the file is replaced atomically, so a bad CSV or log leaves the store exactly as it was.

``mlperf_history.json`` history (bump ``IMPORT_SCHEMA_VERSION`` on every change):
    1  ``{"schema_version": 1, "rows": [{column: text, ...}, ...]}``, columns as in ``history.COLUMNS``
       plus ``benchmark``; rows are re-validated on every load.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.inputs import parse_json, read_input, read_input_text
from accelbench.mlperf.history import (
    COLUMNS,
    OPTIONAL_EXTRA_COLUMNS,
    REQUIRED_COLUMNS,
    History,
    HistoryEntry,
    bundled_history,
    parse_rows,
)
from accelbench.mlperf.logs import Score, score_directory
from accelbench.store import open_store

IMPORTED_FILE = "mlperf_history.json"
IMPORT_SCHEMA_VERSION = 1
MAX_CSV_BYTES = 16 * 2**20
_ROUND_OF_FORMAT = {"v0.5": "v0.5", "v0.6": "v0.6"}


@dataclass(frozen=True, slots=True)
class LogImport:
    """What the logs do not say, given by the user, for a folder of result logs."""

    chip_key: str
    accelerator_count: int
    round: str = ""
    submitter: str = ""
    system_name: str = ""
    system_dir: str = ""
    division: str = "closed"
    availability: str = ""
    source: str = ""


def load_history(store_dir: Path | None) -> History:
    """Bundled entries plus those imported into the store folder (when given and present)."""
    bundled = bundled_history()
    if store_dir is None or not (store_dir / IMPORTED_FILE).exists():
        return bundled
    rows = _stored_rows(store_dir / IMPORTED_FILE)
    taken = {key for e in bundled for key in (e.id.lower(), _base(e).lower())}
    imported = parse_rows(rows, str(store_dir / IMPORTED_FILE), "imported", taken, first_line=1)
    return History(bundled.entries + tuple(imported))


def import_csv(path: Path, store_dir: Path) -> list[HistoryEntry]:
    """Validate a CSV of history rows and add them to the store; UserError leaves the store unchanged."""
    rows = _csv_rows(_read_text(path), path)
    return _store_rows(rows, str(path), store_dir, first_line=2)


def import_logs(folder: Path, store_dir: Path, given: LogImport) -> list[HistoryEntry]:
    """Score a folder of ``result_*.txt`` (olympic mean) and add it as one history row."""
    score = score_directory(folder)
    row = _log_row(score, folder, given)
    return _store_rows([row], str(folder), store_dir, first_line=1)


def _store_rows(
    rows: list[dict[str, str]], where: str, store_dir: Path, first_line: int
) -> list[HistoryEntry]:
    history = load_history(store_dir)
    taken = {key for e in history for key in (e.id.lower(), _base(e).lower())}
    entries = parse_rows(rows, where, "imported", taken, first_line=first_line)
    if not entries:
        raise UserError(f"{where}: no rows to import")
    open_store(store_dir).close()  # creates a new store, or refuses an unusable folder, before writing
    existing = _stored_rows(store_dir / IMPORTED_FILE) if (store_dir / IMPORTED_FILE).exists() else []
    _write_atomically(store_dir / IMPORTED_FILE, [*existing, *(dict(e.row) for e in entries)])
    return entries


def _base(entry: HistoryEntry) -> str:
    return f"{entry.round}/{entry.submitter.lower()}/{entry.system_dir}"


def _read_text(path: Path) -> str:
    try:
        return read_input(path, "MLPerf history CSV", MAX_CSV_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _csv_rows(text: str, path: Path) -> list[dict[str, str]]:
    """Rows as dicts; UserError for a bad header, ragged rows or anything the csv module rejects."""
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        table = list(reader)
    except csv.Error as exc:
        raise UserError(f"{path}: not valid CSV ({exc})") from None
    if not table:
        raise UserError(f"{path}: empty file; expected a header with {', '.join(REQUIRED_COLUMNS)}")
    header = [name.strip() for name in table[0]]
    _check_header(header, path)
    rows = []
    for number, cells in enumerate(table[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise UserError(f"{path} line {number}: {len(cells)} fields, the header has {len(header)}")
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _check_header(header: list[str], path: Path) -> None:
    known = set(COLUMNS) | set(OPTIONAL_EXTRA_COLUMNS)
    unknown = [name for name in header if name not in known]
    if unknown:
        raise UserError(
            f"{path}: unknown column {unknown[0][:40]!r}; columns are those of the bundled history"
        )
    duplicated = [name for name in header if header.count(name) > 1]
    if duplicated:
        raise UserError(f"{path}: column {duplicated[0]!r} appears twice")
    missing = [name for name in REQUIRED_COLUMNS if name not in header]
    if missing:
        raise UserError(f"{path}: missing column {missing[0]!r} (required: {', '.join(REQUIRED_COLUMNS)})")


def _stored_rows(path: Path) -> list[dict[str, str]]:
    try:
        document = parse_json(read_input_text(path, "MLPerf import file"), str(path))
    except UserError as exc:
        raise UserError(f"{exc}; left untouched") from None
    if not isinstance(document, dict) or document.get("schema_version") != IMPORT_SCHEMA_VERSION:
        raise UserError(
            f"{path}: not a schema_version {IMPORT_SCHEMA_VERSION} MLPerf import file; left untouched"
        )
    rows = document.get("rows")
    if not isinstance(rows, list) or not all(_is_text_row(row) for row in rows):
        raise UserError(f"{path}: 'rows' must be a list of column -> text objects; left untouched")
    return rows


def _is_text_row(row: Any) -> bool:
    return isinstance(row, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in row.items())


def _write_atomically(path: Path, rows: list[Mapping[str, str]]) -> None:
    document = {"schema_version": IMPORT_SCHEMA_VERSION, "rows": rows}
    try:
        handle, temporary = tempfile.mkstemp(prefix=".mlperf-import-", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=1, sort_keys=True)
        os.replace(temporary, path)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


def _log_row(score: Score, folder: Path, given: LogImport) -> dict[str, str]:
    """A history row from a scored folder; the logs' submission_* keys fill what the user left out."""
    said = score.runs[0].submission
    if said.get("benchmark", "resnet") != "resnet":
        raise UserError(
            f"{folder}: the logs are for benchmark {said['benchmark']!r}; only resnet is supported"
        )
    round_name = given.round or _ROUND_OF_FORMAT.get(score.log_format, "")
    if not round_name:
        raise UserError(f"{folder}: {score.log_format} logs do not say their round; give it with --round")
    submitter = given.submitter or said.get("org", "")
    system = given.system_name or said.get("platform", "") or folder.name
    if not submitter:
        raise UserError(f"{folder}: the logs do not name the submitter; give it with --submitter")
    return {
        "round": round_name,
        "submitter": submitter,
        "division": given.division or said.get("division", ""),
        "availability": given.availability or said.get("status", ""),
        "system_name": system,
        "system_dir": given.system_dir or system,
        "chip_key": given.chip_key,
        "accelerator_count": str(given.accelerator_count),
        "time_min_from_logs": repr(score.time_s / 60.0),
        "runs_converged": str(score.converged),
        "runs_total": str(len(score.runs)),
        "value_status": f"computed by accelbench from {score.log_format} logs (olympic mean)",
        "source": given.source or f"result logs in {folder.resolve()}",
    }
