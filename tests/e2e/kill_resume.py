"""kill -9 and resume, as a user's crashed machine would do it: shared by the reliability test and
``benchmarks/reliability.py``.

``kill_and_resume`` starts ``accelbench run`` (null stack, tiny suite) in its own process group, kills
the group with SIGKILL at seeded random moments (a random delay, or right after the Nth record was
committed, when the next cell is starting or the store is being written again), then resumes with
``--resume RUN_ID`` until a run finishes. It records every record seen before each kill, so a record
lost or re-measured after a resume is counted, and the processes of the killed group (the cells
included) that outlive it.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from accelbench.results import Cell

WORKLOADS = ("resnet50", "bert-base")
SCENARIOS = ("single-stream", "offline")
RUN_ARGS = ("run", "--suite", "tiny", "--stacks", "null", "--workloads", ",".join(WORKLOADS), "--no-probe")


def planned_keys() -> set[str]:
    """The cell keys an uninterrupted run of ``RUN_ARGS`` stores."""
    return {Cell(w, "null", s, "cpu", "tiny").key for w in WORKLOADS for s in SCENARIOS}


@dataclass(frozen=True, slots=True)
class KillReport:
    """What the kills did: how many, how many records vanished or changed, leftovers, the final state."""

    run_id: str
    kills: int
    final_keys: tuple[str, ...]
    """Cell keys stored in the run at the end (a key twice would be a duplicate)."""
    records_lost: int
    """Records seen before a kill that are missing, or whose document changed, at the end."""
    survivors: int
    """Processes of a killed group (cells, trials, template) still alive 3 s after the kill."""
    final_exit_code: int


def _records(store: Path) -> dict[str, str]:
    """cell key -> document of every stored result (read-only; empty before the store exists)."""
    db_path = store / "results.sqlite"
    if not db_path.exists():
        return {}
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return dict(db.execute("SELECT run_id || '/' || cell_key, doc_json FROM results").fetchall())
    except sqlite3.OperationalError:  # tables not created yet
        return {}
    finally:
        db.close()


def _run_ids(store: Path) -> list[str]:
    db_path = store / "results.sqlite"
    if not db_path.exists():
        return []
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return [row[0] for row in db.execute("SELECT run_id FROM runs ORDER BY rowid")]
    except sqlite3.OperationalError:
        return []
    finally:
        db.close()


def _start(store: Path, run_id: str | None) -> subprocess.Popen[str]:
    args = [*RUN_ARGS, "--store", str(store), "--json"] + (["--resume", run_id] if run_id else [])
    return subprocess.Popen(
        [sys.executable, "-m", "accelbench", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def _wait_for_kill_point(proc: subprocess.Popen[str], store: Path, rng: random.Random) -> None:
    """Sleep a random delay, or until the next record is committed (then kill at once)."""
    if rng.random() < 0.5:
        deadline = time.monotonic() + rng.uniform(0.5, 20.0)
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        return
    seen = len(_records(store))
    deadline = time.monotonic() + 60.0
    while len(_records(store)) == seen and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


def _kill_group(proc: subprocess.Popen[str]) -> int:
    """SIGKILL the run's process group; the number of its processes alive 3 s later (the wait ends as
    soon as none is: a process once gone does not come back, so the count is the same)."""
    try:
        members = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        members = []
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 3.0
    while (alive := _alive(members)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _alive(members: list[psutil.Process]) -> int:
    """How many of ``members`` still run (a zombie, or a process gone, does not)."""
    count = 0
    for member in members:
        with contextlib.suppress(psutil.Error):  # it went between the two questions
            count += member.is_running() and member.status() != psutil.STATUS_ZOMBIE
    return count


def kill_and_resume(store: Path, kills: int, seed: int) -> KillReport:
    """Kill ``kills`` times at seeded random points, then let a resume finish; see ``KillReport``."""
    rng = random.Random(seed)
    seen: dict[str, str] = {}
    survivors = done_kills = 0
    run_id: str | None = None
    code = -1
    while True:
        proc = _start(store, run_id)
        if done_kills < kills:
            _wait_for_kill_point(proc, store, rng)
        if done_kills < kills and proc.poll() is None:
            survivors += _kill_group(proc)
            done_kills += 1
            seen.update(_records(store))
            run_id = run_id or next(iter(_run_ids(store)), None)
            continue
        _, stderr = proc.communicate(timeout=600)
        code = proc.returncode
        if code == 0 or done_kills >= kills:
            break
        raise AssertionError(f"accelbench run exited {code}: {stderr[-2000:]}")
    final = _records(store)
    lost = sum(1 for key, doc in seen.items() if final.get(key) != doc)
    chosen = run_id or _run_ids(store)[0]
    keys = tuple(key.split("/", 1)[1] for key in final if key.startswith(chosen + "/"))
    return KillReport(chosen, done_kills, keys, lost, survivors, code)
