"""A clean exit (issue 29, item 4): a cell killed after a library took a process-shared lock leaves no
leaked semaphore for the runner's resource tracker to warn about at the end of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.planted_locks import TAKEN

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.exhaustive  # 21 s (make test, 2026-12-05): the budget; make test-all keeps it
def test_a_killed_cell_leaves_no_leaked_semaphore_warning(tmp_path: Path) -> None:
    """Before the fix every cell ran with the forkserver as its default start method, so tqdm's lock was
    a named semaphore registered with the runner's tracker, and a cell killed on timeout (the LLM cell on
    a busy machine) ended the run with 'resource_tracker: There appear to be 1 leaked semaphore'."""
    info = tmp_path / "site" / "planted_locks-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: planted-locks\nVersion: 1.0\n")
    entry = "planted-lock-hang = tests.e2e.planted_locks:LockThenHangStack"
    (info / "entry_points.txt").write_text(f"[accelbench.stacks]\n{entry}\n")
    path = os.pathsep.join([str(info.parent), str(REPO), os.environ.get("PYTHONPATH", "")])
    args = ["--workloads", "resnet50", "--stacks", "planted-lock-hang", "--scenarios", "offline"]
    command = [sys.executable, "-m", "accelbench", "run", "--suite", "tiny", *args, "--no-probe"]
    store = str(tmp_path / "store")
    done = subprocess.run(  # the tracker writes its warning after the runner exits: the pipe waits for it
        [*command, "--timeout-s", "15", "--store", store],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run(
        [sys.executable, "-m", "accelbench", "show", "--json", "--include-unverified", "--store", store],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert [r["status"] for r in json.loads(shown.stdout)["results"]] == ["timeout"]
    assert len(list((tmp_path / "store").rglob(TAKEN))) == 1  # the cell was killed holding the lock
    assert "leaked semaphore" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr
