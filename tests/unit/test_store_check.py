"""Tests of ``accelbench store check`` (``accelbench.store.check``): each planted fault is found, named on
one line, and ``--repair`` moves it aside without deleting anything."""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from accelbench.cli import app
from accelbench.errors import UserError
from accelbench.results import Cell, Result
from accelbench.store import open_store
from accelbench.store.check import check_store
from accelbench.store.schema import MIGRATIONS, doc_sha256
from accelbench.store.sqlite import DB_NAME
from accelbench.stored import from_dict

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v5.json"


@pytest.fixture
def golden() -> Result:
    return from_dict(json.loads(GOLDEN.read_text()))


@pytest.fixture
def folder(tmp_path: Path, golden: Result) -> Path:
    """A store with one run of two results and their cell folders."""
    path = tmp_path / "store"
    with open_store(path) as store:
        store.create_run(golden.run_id, {}, {}, golden.machine_fingerprint)
        other = dataclasses.replace(golden, cell=dataclasses.replace(golden.cell, stack="tvm"))
        for result in (golden, other):
            store.add_result(result)
            cell_dir = store.run_dir(golden.run_id) / "cells" / result.cell.stack
            cell_dir.mkdir(parents=True)
            (cell_dir / "spec.json").write_text(json.dumps({"cell": dataclasses.asdict(result.cell)}))
    return path


def _db(folder: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(folder / DB_NAME, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


raw = contextmanager(_db)


def _store_check(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["store", "check", *args])
    return result.exit_code, result.output.splitlines()


def test_a_clean_store_passes(folder: Path) -> None:
    report = check_store(folder)
    assert (report.clean, report.runs, report.records, report.problems) == (True, 1, 2, ())
    code, lines = _store_check("--store", str(folder))
    assert code == 0 and lines == [f"store {folder}: 1 runs, 2 records, clean"]


def test_a_planted_corrupt_record_is_reported_skipped_and_quarantined(
    folder: Path, golden: Result, caplog: pytest.LogCaptureFixture
) -> None:
    with raw(folder) as db:
        db.execute("UPDATE results SET doc_json = replace(doc_json, '57.8', '99.9') WHERE stack = 'tvm'")
    code, lines = _store_check("--store", str(folder))
    key = f"{golden.run_id}/{dataclasses.replace(golden.cell, stack='tvm').key}"
    assert code == 1
    assert lines[0] == f"checksum {key}: stored checksum does not match the document"
    assert lines[-1].endswith("2 records, 1 problem(s)")
    with caplog.at_level(logging.WARNING, logger="accelbench.store.sqlite"), open_store(folder) as store:
        assert store.results(golden.run_id) == [golden]  # the tampered record is skipped, never shown
    assert [r.getMessage() for r in caplog.records] == [
        f"{folder / DB_NAME}: stored result {key} skipped: it fails its checksum"
        " (see: accelbench store check --repair)"
    ]
    code, lines = _store_check("--store", str(folder), "--repair")
    assert code == 1 and f"moved record {key} to table quarantine (checksum)" in lines
    assert (
        f"run {golden.run_id} marked interrupted: accelbench run --resume {golden.run_id} re-measures"
        in lines
    )
    assert check_store(folder).clean
    with raw(folder) as db:
        moved = db.execute("SELECT problem, cell_key, doc_json FROM quarantine").fetchall()
    assert len(moved) == 1 and moved[0][0].startswith("checksum") and "99.9" in moved[0][2]
    with open_store(folder) as store:
        assert store.results(golden.run_id) == [golden]


def _set_doc(db: sqlite3.Connection, stack: str, document: dict[str, object]) -> None:
    text = json.dumps(document)
    db.execute(
        "UPDATE results SET doc_json = ?, doc_sha256 = ? WHERE stack = ?", (text, doc_sha256(text), stack)
    )


def test_schema_mismatch_and_missing_checksum(folder: Path, golden: Result) -> None:
    newer = {**json.loads(GOLDEN.read_text()), "schema_version": 99}
    with raw(folder) as db:
        _set_doc(db, "onnxruntime", newer)
        db.execute("UPDATE results SET status = 'crashed' WHERE stack = 'tvm'")
    problems = {p.kind: p for p in check_store(folder).problems}
    assert sorted(problems) == ["mismatch", "schema"]
    assert "schema_version 99" in problems["schema"].detail
    assert problems["mismatch"].detail.endswith(
        "/ok, the row's columns say " + problems["mismatch"].where + "/crashed"
    )
    with raw(folder) as db:
        db.execute("UPDATE results SET status = 'ok', doc_sha256 = NULL WHERE stack = 'tvm'")
    kinds = [(p.kind, p.row_id is None) for p in check_store(folder).problems]
    assert kinds == [("schema", False), ("checksum", True)]
    repaired = check_store(folder, repair=True).repaired
    assert repaired[-1] == "added 1 missing checksum(s)" and len(repaired) == 3
    after = check_store(folder)
    assert after.clean and after.records == 1


def test_orphan_records_and_folders(folder: Path, golden: Result) -> None:
    with raw(folder) as db:
        db.execute(
            "INSERT INTO results (run_id, cell_key, workload, size, variant, stack, device, scenario, status,"
            " effective_precision, created_at, doc_json, doc_sha256) SELECT 'ghost', cell_key, workload,"
            " size, variant, stack, device, scenario, status, effective_precision, created_at, doc_json,"
            " doc_sha256 FROM results WHERE stack = 'tvm'"
        )
    (folder / "runs" / "ghost-run").mkdir()
    stray = folder / "runs" / golden.run_id / "cells" / "stray"
    stray.mkdir()
    with open_store(folder) as store:
        store.set_run_status(golden.run_id, "complete")
    lines = [p.line() for p in check_store(folder).problems]
    assert lines[0].startswith("orphan ghost/") and lines[0].endswith(
        "record of a run that is not in the store"
    )
    assert lines[1:] == [
        f"orphan {stray}: cell folder without a record (run complete)",
        f"orphan {folder / 'runs' / 'ghost-run'}: run folder of a run that is not in the store",
    ]
    check_store(folder, repair=True)
    assert check_store(folder).clean
    assert (folder / "quarantine" / "runs" / golden.run_id / "cells" / "stray").is_dir()
    assert (folder / "quarantine" / "runs" / "ghost-run").is_dir() and not stray.exists()


def test_an_unfinished_runs_cell_folder_is_its_resume_work(folder: Path, golden: Result) -> None:
    stray = folder / "runs" / golden.run_id / "cells" / "current"
    stray.mkdir()
    with open_store(folder) as store:
        store.set_run_status(golden.run_id, "interrupted")
        assert check_store(folder, repair=True).clean and stray.is_dir()
        store.set_run_status(golden.run_id, "complete")
    (problem,) = check_store(folder).problems
    assert problem.line() == f"orphan {stray}: cell folder without a record (run complete)"


def test_duplicates_keep_the_newest(folder: Path, golden: Result) -> None:
    with raw(folder) as db:  # a store written without the UNIQUE(run_id, cell_key) constraint
        db.execute("CREATE TABLE loose AS SELECT * FROM results")
        db.execute("DROP TABLE results")
        db.execute("ALTER TABLE loose RENAME TO results")
        columns = "run_id, cell_key, workload, size, variant, stack, device, scenario, status, p50_s, qps"
        columns += ", quality_passed, effective_precision, created_at, doc_json, doc_sha256"
        db.execute(f"INSERT INTO results SELECT id + 10, {columns} FROM results WHERE stack = 'tvm'")
    (problem,) = check_store(folder).problems
    assert (problem.kind, problem.detail) == ("duplicate", "2 records of one cell; newest kept")
    check_store(folder, repair=True)
    with raw(folder) as db:
        ids = [row[0] for row in db.execute("SELECT id FROM results WHERE stack = 'tvm'")]
        assert len(ids) == 1 and ids[0] > 10
    assert check_store(folder).clean


def test_bad_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no result store"):
        check_store(tmp_path / "missing")
    (tmp_path / DB_NAME).write_bytes(b"garbage" * 200)
    with pytest.raises(UserError, match="not a usable accelbench result store"):
        check_store(tmp_path)


def test_a_schema_1_store_stays_readable_and_gains_checksums(tmp_path: Path, golden: Result) -> None:
    db = sqlite3.connect(tmp_path / DB_NAME, isolation_level=None)
    for statement in MIGRATIONS[0]:
        db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    db.execute(
        "INSERT INTO runs VALUES (?, 'z', ?, '{}', '{}', 'complete')",
        (golden.run_id, golden.machine_fingerprint),
    )
    document = GOLDEN.read_text()
    db.execute(
        "INSERT INTO results (run_id, cell_key, workload, size, variant, stack, device, scenario, status,"
        " effective_precision, created_at, doc_json) VALUES (?, ?, 'w', 's', 'v', 'onnxruntime', 'cpu',"
        " 's', 'ok', 'fp32', 'z', ?)", (golden.run_id, golden.cell.key, document))  # fmt: skip
    db.close()
    report = check_store(tmp_path)
    assert report.clean and report.notes == (
        "store schema 1 has no checksums; --repair (or any run) adds them",
    )
    with open_store(tmp_path) as store:
        assert store.results() == [golden]
    with raw(tmp_path) as again:
        assert again.execute("SELECT doc_sha256 FROM results").fetchone()[0] == doc_sha256(document)
    assert check_store(tmp_path).notes == ()


def test_the_cell_key_in_a_spec_names_its_folder(folder: Path, golden: Result) -> None:
    spec = folder / "runs" / golden.run_id / "cells" / "tvm" / "spec.json"
    spec.write_text(json.dumps({"cell": dataclasses.asdict(Cell("resnet50", "tvm", "offline"))}))
    with open_store(folder) as store:
        store.set_run_status(golden.run_id, "complete")
    (problem,) = check_store(folder).problems
    assert problem.where == str(spec.parent)
