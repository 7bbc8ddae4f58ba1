"""Run one cell in a fresh subprocess with a wall-clock timeout and a memory limit.

The child is started in its own process group so a hang (or a compiler's worker pool) is killed whole.
The parent samples the resident memory of the child's process tree a few times a second; past the limit
the group is killed and the cell is ``oom``. HOME-like variables point into the run folder, so framework
caches and telemetry never land in the user's home.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from accelbench.cellspec import CellSpec, write_json_atomic

POLL_S = 0.25
STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """What the parent observed: the child's outcome document (or a status it imposed) and stderr."""

    outcome: dict[str, Any]
    wall_s: float
    stderr_tail: str


def cell_environment(spec: CellSpec) -> dict[str, str]:
    """The child's environment: private HOME and caches in the run folder, fixed threads, offline hubs."""
    home = Path(spec.run_dir) / "home"
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        TMPDIR=str(Path(spec.run_dir) / "tmp"),
        TORCHINDUCTOR_CACHE_DIR=str(Path(spec.cache_dir) / "inductor"),
        OMP_NUM_THREADS=str(spec.threads),
        MKL_NUM_THREADS=str(spec.threads),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        # the cell runs in its own folder (LoadGen would read an audit.config from the working
        # directory); the parent's working directory stays importable, as it is for the parent
        PYTHONPATH=os.pathsep.join(filter(None, (os.getcwd(), os.environ.get("PYTHONPATH")))),
    )
    return env


def run_cell(spec: CellSpec, timeout_s: float, mem_limit_bytes: int) -> ChildOutcome:
    """Start the cell process, watch it, and return what it produced or why it was stopped."""
    cell_dir = Path(spec.cell_dir)
    cell_dir.mkdir(parents=True, exist_ok=True)
    for private in ("home", "tmp"):
        (Path(spec.run_dir) / private).mkdir(exist_ok=True)
    spec_path = cell_dir / "spec.json"
    write_json_atomic(spec_path, spec.to_dict())
    Path(spec.result_path).unlink(missing_ok=True)
    stderr_path = cell_dir / "stderr.txt"
    start = time.perf_counter()
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "accelbench.cell", str(spec_path)],
            stdout=stderr,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=cell_environment(spec),
            cwd=cell_dir,
            start_new_session=True,
        )
        imposed = _watch(proc, timeout_s, mem_limit_bytes)
    wall_s = time.perf_counter() - start
    tail = stderr_path.read_text(errors="replace")[-STDERR_TAIL_CHARS:]
    return ChildOutcome(_outcome(spec, proc.returncode, imposed, timeout_s), wall_s, tail)


def _watch(proc: subprocess.Popen[bytes], timeout_s: float, mem_limit_bytes: int) -> str | None:
    """Wait for the child; kill its group and return ``timeout``/``oom`` when a limit is crossed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > deadline:
            _kill_group(proc)
            return "timeout"
        if _tree_rss_bytes(proc.pid) > mem_limit_bytes:
            _kill_group(proc)
            return "oom"


def _tree_rss_bytes(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _outcome(spec: CellSpec, returncode: int, imposed: str | None, timeout_s: float) -> dict[str, Any]:
    if imposed == "timeout":
        return {"status": "timeout", "reason": f"no result after {timeout_s:g} s; process group killed"}
    if imposed == "oom":
        return {"status": "oom", "reason": "memory limit exceeded; process group killed"}
    result_path = Path(spec.result_path)
    if returncode == 0 and result_path.exists():
        outcome: dict[str, Any] = json.loads(result_path.read_text())
        return outcome
    if returncode == -signal.SIGKILL:
        return {"status": "oom", "reason": "killed by SIGKILL (likely the kernel's OOM killer)"}
    if returncode < 0:
        return {"status": "crashed", "reason": f"killed by signal {signal.Signals(-returncode).name}"}
    return {"status": "crashed", "reason": f"cell process exited with code {returncode} and no result"}
