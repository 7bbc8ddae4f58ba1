"""Reliability: concurrent writers on one store, SIGKILL during store writes and during runs, resume.

Every test ends with ``accelbench store check`` clean and the records counted one by one.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from accelbench.store import open_store
from accelbench.store.check import check_store
from tests.e2e import kill_resume
from tests.e2e.cli import accelbench, runs_at_once


def _writer(store: Path, run_id: str, count: int, start: str | None = None) -> subprocess.Popen[str]:
    """A ``tests.e2e.store_writer`` process; ``start="stdin"``: it waits for a line on its stdin."""
    args = [str(store), run_id, str(count), *([start] if start else [])]
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.store_writer", *args],
        stdin=subprocess.PIPE if start == "stdin" else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _release_at_once(writers: list[subprocess.Popen[str]]) -> None:
    """Once every writer has said ``ready`` (its interpreter started), a line to each: they go at once."""
    assert [w.stdout.readline() if w.stdout else "" for w in writers] == ["ready\n"] * len(writers)
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()


@pytest.mark.parametrize("round_", range(4))
def test_four_writer_processes_share_one_new_store(tmp_path: Path, round_: int) -> None:
    """They race to create it, too, released at one instant (once every interpreter has started and said
    so). Before the store folder was locked while a connection opened, 9 of 15 such rounds lost a run or
    failed with "disk I/O error"."""
    store = tmp_path / "store"
    writers = [_writer(store, f"writer-{n}", 40, "stdin") for n in range(4)]
    _release_at_once(writers)
    outputs = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0, 0, 0], [err[-500:] for _, err in outputs]
    assert [out.split()[-1] for out, _ in outputs] == ["40"] * 4
    report = check_store(store)
    assert report.clean, [p.line() for p in report.problems]
    assert (report.runs, report.records) == (4, 160)
    with open_store(store) as opened:
        for n in range(4):
            results = opened.results(f"writer-{n}")
            assert sorted(r.head.reason for r in results) == sorted(f"planted {i}" for i in range(40))


def test_sigkill_during_store_writes_loses_no_committed_record(tmp_path: Path) -> None:
    """A writer commits one record per transaction without pause, so most kills land inside one."""
    store, rng = tmp_path / "store", random.Random(17)
    for _ in range(6):
        writer = _writer(store, "killed", 10_000)
        time.sleep(rng.uniform(0.8, 2.5))
        writer.send_signal(signal.SIGKILL)
        out, _ = writer.communicate()
        committed = int(out.split()[-1]) if out.split() else 0
        with open_store(store) as opened:
            stored = len(opened.results("killed")) if "killed" in opened.run_ids() else 0
        assert stored - committed in (0, 1)  # the kill may fall between a commit and its print
        report = check_store(store)
        assert report.clean, [p.line() for p in report.problems]
    assert stored > 0


@pytest.mark.slow
@pytest.mark.exhaustive  # 20 s (CI); make test keeps test_fleet's fleet and local runs on one store at
# once and the four writer processes here; benchmarks/reliability.py runs five rounds of them
def test_two_runs_at_once_on_one_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = (*kill_resume.RUN_ARGS, "--store", str(store), "--json")
    command = [sys.executable, "-m", "accelbench", *args]
    results = runs_at_once((command, command), store, timeout_s=900)
    with open_store(store) as opened:
        for run_id, run_results in results.items():
            assert sorted(r.cell.key for r in run_results) == sorted(kill_resume.planned_keys())
            assert opened.run(run_id).status == "complete"


@pytest.mark.slow
def test_kill_9_at_random_points_then_resume(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # two kills here (65 s with four in CI); benchmarks/reliability.py kills four times
    report = kill_resume.kill_and_resume(store, kills=2, seed=2026)
    assert report.final_exit_code == 0
    assert report.kills >= 1  # a fast machine may finish before the last kill
    counts = Counter(report.final_keys)
    assert set(counts) == kill_resume.planned_keys() and max(counts.values()) == 1
    assert report.records_lost == 0 and report.survivors == 0
    checked = check_store(store)
    assert checked.clean, [p.line() for p in checked.problems]
    assert checked.records == len(kill_resume.planned_keys())
    with open_store(store) as opened:
        assert opened.run(report.run_id).status == "complete"
    shown = accelbench("store", "check", "--store", str(store))
    assert shown.returncode == 0 and shown.stdout.strip().endswith("clean")


@pytest.mark.slow
def test_a_cell_does_not_outlive_its_runner(tmp_path: Path) -> None:
    """SIGKILL of the runner process alone (not its group): the hanging cell and its template go too."""
    store = tmp_path / "store"
    runner = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.faulty", "run", "--suite", "tiny", "--workloads", "bert-base",
         "--scenarios", "single-stream", "--stacks", "planted-hang", "--no-probe", "--timeout-s", "300",
         "--store", str(store)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    family = _family_with_a_cell(runner.pid, time.monotonic() + 180)
    time.sleep(2.0)  # the cell is inside the hanging prepare
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    deadline = time.monotonic() + 30  # the template may still be importing its preloads
    while (alive := _alive(family)) and time.monotonic() < deadline:
        time.sleep(0.5)
    for leftover in alive:  # clean up before failing
        leftover.kill()
    assert alive == []


def _family_with_a_cell(pid: int, deadline: float) -> list[Any]:
    """The runner's descendants once one of them is a cell (a grandchild: forked by the template)."""
    import psutil

    while time.monotonic() < deadline:
        family = psutil.Process(pid).children(recursive=True)
        if any(p.ppid() != pid for p in family):
            return family
        time.sleep(0.2)
    raise AssertionError("no cell process started")


def _alive(family: list[Any]) -> list[Any]:
    import psutil

    alive = []
    for proc in family:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            pass
    return alive
