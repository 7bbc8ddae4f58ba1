"""Tests of the result store (``accelbench.store``): round trips, resume, refusals, WAL, exports."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelbench.errors import UserError
from accelbench.head import Head
from accelbench.report.export import export_results
from accelbench.results import Cell, Result
from accelbench.store import Store, open_store
from accelbench.store.schema import STORE_SCHEMA_VERSION
from accelbench.store.sqlite import DB_NAME
from accelbench.stored import from_dict

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v9.json"
MACHINE = {"cpu_model": "AMD EPYC", "logical_cores": 2, "schema_version": 1}
CONFIG = {"rules": "quick", "stacks": ["onnxruntime", "torch-eager"]}


@pytest.fixture
def golden() -> Result:
    return from_dict(json.loads(GOLDEN.read_text()))


@pytest.fixture
def store(tmp_path: Path, golden: Result) -> Iterator[Store]:
    with open_store(tmp_path / "store") as opened:
        opened.create_run(golden.run_id, CONFIG, MACHINE, golden.machine_fingerprint)
        yield opened


def _minimal(golden: Result, stack: str, status: str = "crashed") -> Result:
    cell = Cell(workload="resnet18", stack=stack, scenario="offline")
    head = Head(status, "segfault")
    return Result(run_id=golden.run_id, cell=cell, head=head, machine_fingerprint=golden.machine_fingerprint)


def test_fully_populated_result_round_trips(tmp_path: Path, store: Store, golden: Result) -> None:
    store.add_result(golden)
    assert store.results() == [golden]
    store.close()
    with open_store(tmp_path / "store") as reopened:
        assert reopened.results(golden.run_id) == [golden]
        record = reopened.run(golden.run_id)
    assert (record.config, record.machine, record.status) == (CONFIG, MACHINE, "running")
    assert record.machine_fingerprint == golden.machine_fingerprint


def test_indexed_columns_are_filled(store: Store, golden: Result) -> None:
    store.add_result(golden)
    row = sqlite3.connect(store.path / DB_NAME).execute(
        "SELECT cell_key, stack, scenario, status, p50_s, qps, quality_passed, effective_precision"
        " FROM results").fetchone()  # fmt: skip
    assert row == (golden.cell.key, "onnxruntime", "single-stream", "ok", 0.0172, 57.8, 1, "fp32")


def test_re_adding_a_cell_replaces_it_and_resume_keys(store: Store, golden: Result) -> None:
    store.add_result(_minimal(golden, "tvm"))
    store.add_result(golden)
    store.add_result(_minimal(golden, "tvm", "timeout"))
    assert [r.head.status for r in store.results(golden.run_id)] == ["ok", "timeout"]
    assert store.finished_cell_keys(golden.run_id) == {golden.cell.key, _minimal(golden, "tvm").cell.key}


def test_results_from_another_machine_are_refused(store: Store, golden: Result) -> None:
    with pytest.raises(ValueError, match="machine"):
        store.add_result(dataclasses.replace(golden, machine_fingerprint="0000000000000000"))
    assert store.results() == []


def test_unknown_run_is_a_one_line_user_error(store: Store, golden: Result) -> None:
    for n in range(5):
        store.create_run(f"run-{n}", {}, {}, "ffff")
    with pytest.raises(UserError) as info:
        store.run("nope")
    message = str(info.value)
    assert "'nope'" in message and "\n" not in message and "run-4" in message and "run-0" not in message
    with pytest.raises(UserError):
        store.add_result(dataclasses.replace(golden, run_id="nope"))
    with pytest.raises(UserError):
        store.finished_cell_keys("nope")


def test_runs_newest_first_status_and_folders(store: Store, golden: Result) -> None:
    store.create_run("second", {}, {}, "abc")
    assert store.run_ids() == ["second", golden.run_id]
    assert store.latest_run_id() == "second"
    store.set_run_status("second", "finished")
    assert store.run("second").status == "finished"
    assert store.run_dir("second").is_dir()
    assert store.run_dir("second") == store.path / "runs" / "second"
    with pytest.raises(UserError, match="already exists"):
        store.create_run("second", {}, {}, "abc")
    with pytest.raises(UserError, match="invalid run id"):
        store.create_run("../escape", {}, {}, "abc")


def test_empty_store(tmp_path: Path) -> None:
    with open_store(tmp_path / "a" / "b") as empty:
        assert empty.run_ids() == [] and empty.latest_run_id() is None and empty.results() == []


def test_wal_mode_schema_version_and_indexes(store: Store) -> None:
    db = sqlite3.connect(store.path / DB_NAME)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        STORE_SCHEMA_VERSION)  # fmt: skip
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"results_run", "results_workload_stack_scenario", "results_status"} <= indexes


def test_second_connection_reads_while_a_writer_is_open(store: Store, golden: Result) -> None:
    store.add_result(golden)
    writer = sqlite3.connect(store.path / DB_NAME, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO runs VALUES ('pending', 'z', 'f', '{}', '{}', 'running')")
    with open_store(store.path) as reader:
        assert reader.results() == [golden]
        assert "pending" not in reader.run_ids()
    writer.execute("ROLLBACK")


def _corrupt(path: Path, content: bytes) -> tuple[bytes, int]:
    path.mkdir()
    db_file = path / DB_NAME
    db_file.write_bytes(content)
    os.utime(db_file, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    return content, db_file.stat().st_mtime_ns


@pytest.mark.parametrize(
    "content", [b"this is not a database\n" * 100, b"SQLite format 3\x00" + b"\xff" * 4080]
)
def test_corrupt_file_is_refused_and_untouched(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "store"
    before, mtime_ns = _corrupt(folder, content)
    with pytest.raises(UserError) as info:
        open_store(folder)
    assert "\n" not in str(info.value) and DB_NAME in str(info.value)
    assert (folder / DB_NAME).read_bytes() == before
    assert (folder / DB_NAME).stat().st_mtime_ns == mtime_ns
    assert sorted(p.name for p in folder.iterdir()) == [DB_NAME]


def test_foreign_schema_is_refused_and_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    other = sqlite3.connect(folder / DB_NAME)
    other.execute("CREATE TABLE results (x)")
    other.commit()
    other.close()
    before = (folder / DB_NAME).read_bytes()
    with pytest.raises(UserError, match="foreign schema"):
        open_store(folder)
    assert (folder / DB_NAME).read_bytes() == before


def test_newer_store_version_is_refused(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    db = sqlite3.connect(tmp_path / DB_NAME)
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(UserError, match="newer"):
        open_store(tmp_path)


def test_zero_byte_file_is_initialised(tmp_path: Path) -> None:
    (tmp_path / DB_NAME).write_bytes(b"")
    with open_store(tmp_path) as fresh:
        assert fresh.run_ids() == []


def test_reopening_keeps_the_schema(tmp_path: Path) -> None:
    open_store(tmp_path).close()
    with open_store(tmp_path) as again:
        assert again.run_ids() == []


def test_unwritable_locations_are_one_line_user_errors(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    for bad in (tmp_path / "afile" / "store", tmp_path / "afile"):
        with pytest.raises(UserError) as info:
            open_store(bad)
        assert "\n" not in str(info.value) and str(bad) in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory anyway")
def test_read_only_directory_is_a_user_error(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    try:
        with pytest.raises(UserError, match="not writable"):
            open_store(folder)
    finally:
        folder.chmod(0o700)


def test_export_json(tmp_path: Path, golden: Result) -> None:
    out = tmp_path / "sub" / "results.json"
    export_results([golden], "json", out)
    assert json.loads(out.read_text()) == [json.loads(GOLDEN.read_text())]


def test_export_csv(tmp_path: Path, golden: Result) -> None:
    out = tmp_path / "results.csv"
    export_results([golden, _minimal(golden, "tvm")], "csv", out)
    with out.open(newline="") as stream:
        full, minimal = list(csv.DictReader(stream))
    assert full["cell_key"] == golden.cell.key and full["status"] == "ok"
    assert float(full["p50_s"]) == 0.0172 and float(full["p99_s"]) == 0.0203
    assert (full["median_ci_low_s"], full["median_ci_high_s"]) == ("0.01712", "0.01731")
    assert (full["qps"], full["loadgen_valid"], full["quality_passed"]) == ("57.8", "true", "true")
    assert (full["quality_metric"], full["effective_precision"]) == ("top1_agreement", "fp32")
    assert (full["compile_s"], full["peak_rss_bytes"]) == ("0.16", "412123136")
    assert full["machine_fingerprint"] == golden.machine_fingerprint and full["run_id"] == golden.run_id
    assert (minimal["status"], minimal["reason"], minimal["p50_s"], minimal["qps"]) == (
        "crashed", "segfault", "", "")  # fmt: skip


def test_export_errors(tmp_path: Path, golden: Result) -> None:
    with pytest.raises(UserError, match="format"):
        export_results([golden], "parquet", tmp_path / "x.parquet")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(UserError):
        export_results([golden], "csv", tmp_path / "afile" / "out.csv")
