"""Injected faults (``tests/e2e/faulty.py``) beside a healthy cell, through the CLI as a user runs it:
each fault gets its own status and reason, every cell is stored, the printed summary lists the failures,
and no traceback reaches the terminal. (Crash by ``os.abort``, hang past the timeout and an exception
in ``prepare`` are in ``test_runner_failures.py``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.store.check import check_store
from tests.e2e.faulty import FAULTY

pytestmark = pytest.mark.slow

EXPECTED = {
    "faulty-infer-raise": (("crashed",), "ValueError: planted infer failure"),
    "faulty-memory": (("oom",), "memory limit exceeded; process group killed"),
    "faulty-shape": (("disqualified",), "output shape (1, 65) != reference shape (1, 64)"),
    # truncated to int64: the output audit (a reused answer) or the quality gate refuses it first
    "faulty-dtype": (("quality_failed", "disqualified"), ""),
    "faulty-chatty": (("ok", "unstable"), ""),  # unstable: the machine drifted, still measured
    "faulty-teardown": (("ok", "unstable"), ""),
}


def _faulty_cli(*args: str) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.faulty", *args],
        capture_output=True, text=True, timeout=1500, env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_each_fault_gets_its_status_and_the_run_goes_on(tmp_path: Path) -> None:
    assert set(EXPECTED) == set(FAULTY)
    store = tmp_path / "store"
    limits = tmp_path / "limits.toml"
    limits.write_text("[run]\nmem_limit_bytes = 2147483648\n")  # 2 GiB: the tiny cells use < 1 GiB
    stacks = ",".join([*EXPECTED, "null"])
    code, out, err = _faulty_cli(
        "run", "--suite", "tiny", "--workloads", "bert-base", "--scenarios", "single-stream",
        "--stacks", stacks, "--no-probe", "--timeout-s", "60", "--config", str(limits), "--store", str(store),
    )  # fmt: skip
    assert code == 0, err[-3000:]
    assert "Traceback" not in out and "Traceback" not in err
    summary = out[out.index("Cells without a valid measurement") :]
    for stack in ("faulty-infer-raise", "faulty-memory"):
        assert f"bert-base/tiny/canonical/{stack}/cpu/single-stream" in summary
    code, shown, err = _faulty_cli("show", "--json", "--store", str(store))
    assert code == 0, err[-2000:]
    by_stack = {r["cell"]["stack"]: r for r in json.loads(shown)["results"]}
    assert sorted(by_stack) == sorted([*EXPECTED, "null"])
    for stack, (statuses, reason) in EXPECTED.items():
        assert by_stack[stack]["status"] in statuses, (stack, by_stack[stack]["reason"])
        assert reason in by_stack[stack]["reason"], by_stack[stack]["reason"]
    assert "Traceback" in by_stack["faulty-infer-raise"]["stderr_tail"]
    assert len(by_stack["faulty-infer-raise"]["stderr_tail"]) <= 2000
    chatty_log = next(store.glob("runs/*/cells/*faulty-chatty*/stderr.txt"))
    assert chatty_log.stat().st_size >= 16 * 1024 * 1024  # both streams went to the cell's file
    assert by_stack["null"]["status"] == "unverified"  # the healthy cell: measured (outputs not checked)
    assert check_store(store).clean
