"""``accelbench tune module:function`` never runs user code in the CLI's process: an abort, a segfault,
an interrupt or a hang in the function is every cell's status with its reason, the CLI prints its summary
and exits 1 with one line saying why, stack by stack (no stack produced a verified result), and nothing
the function started outlives the command (``accelbench.workloads.user_check``)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from accelbench.store import open_store
from tests.e2e.cli import accelbench

PID_FILE_ENV = "ACCELBENCH_TEST_PID_FILE"


def hangs() -> None:
    """A model function that never returns (it records its pid first)."""
    Path(os.environ[PID_FILE_ENV]).write_text(str(os.getpid()))
    time.sleep(3600)


def interrupted() -> None:
    """A model function interrupted as by Ctrl-C: SIGINT to itself, then a sleep the interrupt ends.
    (``_thread:interrupt_main`` raced: under load its pending interrupt came after the function had
    returned None, and the cell said "must return (torch.nn.Module, ...)" instead.)"""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as a terminal's Ctrl-C, even when the run
    signal.raise_signal(signal.SIGINT)  # was started where SIGINT is ignored (a shell's `cmd &`)
    time.sleep(60)


@pytest.mark.parametrize(
    ("function", "status", "why"),
    [
        ("os:abort", "crashed", "killed by SIGABRT"),
        ("faulthandler:_sigsegv", "crashed", "killed by SIGSEGV"),
        ("tests.e2e.test_tune_isolation:interrupted", "crashed", "KeyboardInterrupt"),
        ("tests.e2e.test_tune_isolation:hangs", "timeout", "did not return within 5 s"),
    ],
)
def test_user_code_that_dies_or_hangs_is_a_cell_status(
    tmp_path: Path, function: str, status: str, why: str
) -> None:
    store, pid_file = tmp_path / "store", tmp_path / "pid"
    started = time.monotonic()
    done = accelbench(
        "tune", function, "--stacks", "torch-eager,onnxruntime", "--timeout-s", "5", "--json",
        "--store", str(store), env={PID_FILE_ENV: str(pid_file)}, timeout_s=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert time.monotonic() - started < 120
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("accelbench: error: no stack produced a verified result (")
    assert f"onnxruntime: {status}" in last and f"torch-eager: {status}" in last, last
    rows = json.loads(done.stdout)["ranking"]
    assert sorted((r["stack"], r["status"]) for r in rows) == [
        ("onnxruntime", status),
        ("torch-eager", status),
    ]
    assert all(why in r["reason"] and function in r["reason"] for r in rows), rows
    with open_store(store, read_only=True) as opened:
        assert {r.head.status for r in opened.results()} == {status}
    if pid_file.exists():  # the hanging child was killed with its session
        assert not Path(f"/proc/{pid_file.read_text()}").exists()
