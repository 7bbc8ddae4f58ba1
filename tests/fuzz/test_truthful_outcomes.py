"""Outcomes that say what happened: resuming a complete run changes nothing and says so; a run whose
stored configuration is not a whole one is refused in one line (``tune`` without a verified stack exits
1: ``tests/e2e/test_tune_isolation.py``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.fuzz.harness import expect_user_error, outcome, tree_digest


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store with one complete run of the null stack on one workload and scenario."""
    store = tmp_path_factory.mktemp("complete") / "store"
    args = ["run", "--suite", "tiny", "--stacks", "null", "--workloads", "resnet50", "--scenarios", "offline"]
    done = outcome([*args, "--no-probe", "--quiet", "--json", "--store", str(store)])
    assert done.code == 0, done.stderr[-2000:]
    return store, json.loads(done.stdout)["run_id"]


def test_resuming_a_complete_run_changes_nothing_and_says_so(complete_run: tuple[Path, str]) -> None:
    store, run_id = complete_run
    before = tree_digest(store)
    done = outcome(["run", "--resume", run_id, "--json", "--store", str(store)])
    assert done.code == 0, done.stderr[-2000:]
    assert f"run {run_id} is already complete: nothing to resume, the store is unchanged" in done.stderr
    assert json.loads(done.stdout)["run_id"] == run_id  # the results are shown as `show` would
    assert tree_digest(store) == before


@pytest.mark.parametrize("stored", ["[]", "not json", "[" * 3000 + "]" * 3000, '{"suite": "tiny"}'])
def test_a_stored_configuration_that_is_not_whole_is_refused(
    complete_run: tuple[Path, str], tmp_path: Path, stored: str
) -> None:
    store, run_id = complete_run
    copy = tmp_path / "store"
    copy.mkdir()
    with sqlite3.connect(store / "results.sqlite") as source, sqlite3.connect(copy / "results.sqlite") as db:
        source.backup(db)
        db.execute("UPDATE runs SET config_json = ?, status = 'interrupted'", (stored,))
    expect_user_error("resume-config", ["run", "--resume", run_id, "--store", str(copy)], run_id)
