"""The store is sacred: ``export -o`` / ``report -o`` never write into it, an existing file that is not an
earlier output is replaced only with ``--force``, and the commands that read open the database read-only
(``accelbench.outputs``, ``open_store(read_only=True)``)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from accelbench.store import open_store
from tests.e2e.store_writer import write
from tests.fuzz.harness import expect_user_error, outcome, tree_digest

WRITERS = (("export", "--format", "csv"), ("export", "--format", "json"), ("report",))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    write(str(folder), "run-1", 2)
    return folder


def _inside(store: Path) -> list[Path]:
    link = store.parent / "link-into-store.csv"
    link.symlink_to(store / "results.sqlite")
    return [store / "results.sqlite", store, store / "runs" / "run-1" / "out.csv", store / "new.html", link]


@pytest.mark.parametrize("command", WRITERS)
@pytest.mark.parametrize("force", [(), ("--force",)])
def test_an_output_inside_the_store_is_refused_and_the_store_intact(
    store: Path, command: tuple[str, ...], force: tuple[str, ...]
) -> None:
    before = tree_digest(store)
    for target in _inside(store):
        args = [*command, "-o", str(target), "--store", str(store), *force]
        done = expect_user_error("output-in-store", args, f"-o {target}")
        assert "inside the result store" in done.stderr
    assert tree_digest(store) == before
    with open_store(store, read_only=True) as again:
        assert [r.head.reason for r in again.results("run-1")] == ["planted 0", "planted 1"]


@pytest.mark.parametrize("command", WRITERS)
def test_a_foreign_file_is_replaced_only_with_force(
    store: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    args = [*command, "-o", str(target), "--store", str(store)]
    refused = expect_user_error("output-foreign", args, f"-o {target}")
    assert "use --force" in refused.stderr and target.read_text() == "my notes\n"
    assert outcome([*args, "--force"]).code == 0
    first = target.read_bytes()
    assert first != b"my notes\n"
    assert outcome(args).code == 0  # its own earlier output is replaced without --force
    assert target.read_bytes()[:64] == first[:64]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("command", WRITERS)
def test_a_directory_or_fifo_is_refused(store: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target, rule in ((tmp_path, "is a directory"), (fifo, "not a regular file")):
        args = [*command, "-o", str(target), "--store", str(store), "--force"]
        assert rule in expect_user_error("output-special", args, f"-o {target}").stderr
    assert fifo.exists() and not fifo.is_file()


def test_the_earlier_output_is_recognised_per_format(store: Path, tmp_path: Path) -> None:
    csv_file, json_file = tmp_path / "a.csv", tmp_path / "a.json"
    assert outcome(["export", "-o", str(csv_file), "--store", str(store)]).code == 0
    assert outcome(["export", "--format", "json", "-o", str(json_file), "--store", str(store)]).code == 0
    assert [d["reason"] for d in json.loads(json_file.read_text())] == ["planted 0", "planted 1"]
    cross = ["export", "--format", "json", "-o", str(csv_file), "--store", str(store)]
    assert "not an earlier JSON export" in expect_user_error("output-foreign", cross, str(csv_file)).stderr


def test_show_on_an_empty_database_file_modifies_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    (folder / "results.sqlite").touch()
    stamp = (folder / "results.sqlite").stat().st_mtime_ns
    for command in (
        ["show"],
        ["export", "-o", str(tmp_path / "x.csv")],
        ["report", "-o", str(tmp_path / "r.html")],
    ):
        done = expect_user_error("read-empty", [*command, "--store", str(folder)], "holds no runs")
        assert done.code == 2
    assert sorted(p.name for p in folder.iterdir()) == ["results.sqlite"]
    assert (folder / "results.sqlite").stat().st_size == 0
    assert (folder / "results.sqlite").stat().st_mtime_ns == stamp
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "r.html").exists()


def test_a_read_creates_no_store(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    expect_user_error("read-missing", ["show", "--store", str(missing)], "holds no runs")
    assert not missing.exists()


def test_readers_leave_the_store_files_as_they_were(store: Path, tmp_path: Path) -> None:
    before = tree_digest(store)
    for command in (
        ["show"],
        ["show", "--json"],
        ["export", "-o", str(tmp_path / "x.csv")],
        ["store", "check"],
    ):
        assert outcome([*command, "--store", str(store)]).code == 0
    assert tree_digest(store) == before
    with (
        open_store(store, read_only=True) as reader,
        pytest.raises(sqlite3.OperationalError, match="readonly"),
    ):
        reader._db.execute("DELETE FROM results")
