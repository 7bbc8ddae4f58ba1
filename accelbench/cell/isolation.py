"""Run one cell in a fresh process with a wall-clock timeout and a memory limit.

Cell processes are forked from a template process (a multiprocessing forkserver) that has already
imported the heavy libraries (torch, transformers, ONNX Runtime, LoadGen) but executed nothing: each
cell still gets a process of its own, with no state from any other cell, without paying 3-5 s of
imports. A library that fails to import there, however it fails, is left to the cells that import it
again (``accelbench.cell.template_imports``): their failure is their status. The cell makes itself a
process-group leader, so a hang (or a compiler's worker pool) is killed whole; it kills its own group
when the runner dies (even by SIGKILL), so no orphan measures on. The
parent samples the resident memory of the cell's process tree a few times a second; past the limit the
group is killed and the cell is ``oom``. HOME-like variables point into the run folder, so
framework caches and telemetry never land in the user's home. The spec file in the cell's folder (the
stack's ``work_dir``) holds no input seed, and the cell never reads it: the whole spec (the seed, the
noise floor) travels in the fork's arguments (a pipe to the template process), so no stack finds the
seed on disk nor rewrites what a later cell is told.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing import forkserver
from multiprocessing.context import ForkServerContext
from pathlib import Path
from typing import Any

import psutil

from accelbench.cell import template_imports
from accelbench.cell.leftovers import kill_leftovers
from accelbench.cellspec import CellSpec
from accelbench.meters import cputime
from accelbench.meters.cputime import RUNNER_PID_VARIABLE
from accelbench.outputs import write_json_atomic
from accelbench.scenarios import vault
from accelbench.stacks.onnx_export import EXPORTER_MODULES
from accelbench.sut import hardening, launcher

POLL_S = 0.25
STDERR_TAIL_CHARS = 2000
PRELOAD = (
    "accelbench.cell.process",
    "accelbench.cell.inference",
    "accelbench.sut.launcher",
    "accelbench.stats",
    "scipy.stats",
    "accelbench.meters.quality",
    "torch",
    "onnxruntime",
    "mlperf_loadgen",
)
"""Imported once by the template process; a module that does not import is skipped (``scipy.stats``:
``accelbench.stats`` imports it at first use, and every cell summarises its latencies). The run's own
workload, stack and driver modules are added by ``preload`` (transformers, 1.5-2.5 s here, only with a
text workload)."""
PRELOAD_PREFIX = "accelbench."
"""Only accelbench's own modules are added to the template: a plugin's module runs its import-time code
in the cell that uses it, never in the template every cell is forked from."""

_context: ForkServerContext | None = None
_extra: tuple[str, ...] = ()
_libraries: tuple[str, ...] = ()


def preload(refs: Iterable[str]) -> None:
    """Add the modules of ``refs`` (``module:Name`` references of the run's workloads, stacks and
    drivers; accelbench's own only) to what the template process imports. Called before the run's first
    cell: once the template runs, it is too late, and each cell imports what it lacks itself."""
    global _extra
    modules = (ref.partition(":")[0] for ref in refs)
    _extra = tuple(dict.fromkeys(m for m in modules if m.startswith(PRELOAD_PREFIX) and m not in PRELOAD))


def start_template(refs: Iterable[str], exporter: bool = False) -> None:
    """Start the template process now with the modules of ``refs`` (``preload``), so its imports (torch,
    ONNX Runtime, LoadGen, the run's own modules: 3-4 s here) run while the parent goes on planning;
    ``ready`` waits for them before anything is measured. ``exporter``: one of the run's stacks reads
    the model's ONNX file, and the template imports the exporter's modules too (``EXPORTER_MODULES``:
    each such cell's SUT process imported them again in ``unavailable_reason``, 0.5-0.9 s here)."""
    global _libraries
    _libraries = EXPORTER_MODULES if exporter else ()
    preload(refs)
    _fork_context()


def ready() -> None:
    """Wait until the template has imported what it preloads (one child forked from it and ended), so
    none of its imports runs beside a measurement (the host's noise floor, the first cell); starts it
    when it has not started."""
    proc = _fork_context().Process(target=_nothing, daemon=True)
    proc.start()
    proc.join()


def _nothing() -> None:
    """The child ``ready`` forks: proof the template serves."""


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """What the parent observed: the child's outcome document (or a status it imposed), the seconds from
    its start to its processes gone (the stored ``wall_s``), and its stderr."""

    outcome: dict[str, Any]
    wall_s: float
    stderr_tail: str


def cell_environment(spec: CellSpec) -> dict[str, str]:
    """Variables set in the cell: private HOME, caches and TMPDIR in the run folder, threads, offline hubs."""
    home = Path(spec.folders.run_dir) / "home"
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "TMPDIR": str(Path(spec.folders.run_dir) / "tmp"),
        "TORCHINDUCTOR_CACHE_DIR": str(Path(spec.folders.cache_dir) / "inductor"),
        "POCL_CACHE_DIR": str(Path(spec.folders.cache_dir) / "pocl"),
        "OMP_NUM_THREADS": str(spec.threads),
        "MKL_NUM_THREADS": str(spec.threads),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def run_in_process(spec: CellSpec, timeout_s: float, mem_limit_bytes: int) -> ChildOutcome:
    """Start the cell process, watch it, and return what it produced or why it was stopped."""
    cell_dir = Path(spec.folders.cell_dir)
    cell_dir.mkdir(parents=True, exist_ok=True)
    for private in ("home", "tmp"):
        (Path(spec.folders.run_dir) / private).mkdir(exist_ok=True)
    spec_path = cell_dir / "spec.json"
    write_json_atomic(spec_path, spec.public_dict())
    Path(spec.folders.result_path).unlink(missing_ok=True)
    stderr_path = cell_dir / "stderr.txt"
    start = time.perf_counter()
    runner_end, cell_end = launcher.control_pair()
    proc = _fork_context().Process(
        target=_cell_main,
        args=(
            str(spec_path),
            str(stderr_path),
            cell_environment(spec),
            os.getpid(),
            spec.to_dict(),
            cell_end,
        ),
        daemon=False,
    )
    proc.start()
    cell_end.close()
    created_s = _created_s(int(proc.pid or 0))
    suts = launcher.Launcher(_fork_context(), runner_end, str(stderr_path), int(proc.pid or 0))
    try:
        imposed = _watch(proc, timeout_s, mem_limit_bytes, suts)
    finally:
        suts.close()  # the cell's SUT processes (and a served stack's servers) end with it
        kill_leftovers(os.getpid(), int(proc.pid or 0), created_s)  # and what escaped them
        vault.clear(cell_dir)  # LoadGen's, where the cell ended before its test (an error, a kill)
    wall_s = time.perf_counter() - start
    tail = stderr_path.read_text(errors="replace")[-STDERR_TAIL_CHARS:] if stderr_path.exists() else ""
    return ChildOutcome(_outcome(spec, proc.exitcode or 0, imposed, timeout_s), wall_s, tail)


def _created_s(pid: int) -> float:
    """The cell process's creation time by psutil's clock (infinite when it is already gone: what it
    started cannot be told from the runner's own children then, and every child is kept)."""
    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return float("inf")


def _fork_context() -> ForkServerContext:
    global _context
    if _context is None:
        hardening.make_undumpable()  # the runner holds the run's input seed: no SUT process reads it
        # A SUT process is the template's child, not its cell's: what it leaves when it ends (a server's
        # daemons, Ray's raylet and GCS) is adopted by the runner, the root of the noise guard's tree, not
        # by init, so its CPU time stays the run's own (3 of 5 quiet Ray Serve cells read 0.11-0.12 cores
        # of other load without it: benchmarks/noise_guard.py, issue 45).
        cputime.adopt_orphans()
        _context = multiprocessing.get_context("forkserver")
        # the template imports through ``template_imports``, every failure swallowed (see its docstring)
        _context.set_forkserver_preload([template_imports.__name__])
        names = dict.fromkeys([*PRELOAD, *_libraries, *_extra])
        os.environ[template_imports.MODULES_VARIABLE] = ",".join(names)
        try:
            forkserver.ensure_running()  # started now: the variable is read from its environment
        finally:
            del os.environ[template_imports.MODULES_VARIABLE]
    return _context


def _cell_main(
    spec_path: str,
    stderr_path: str,
    env: dict[str, str],
    runner_pid: int,
    spec: dict[str, Any],
    control: socket.socket,
) -> None:
    """In the cell process: undumpable (no same-user process reads its memory or environment), own
    process group, stdout/stderr to the cell's file, private env, measure."""
    hardening.make_undumpable()
    launcher.control = control  # the runner forks this cell's SUT processes from its clean template
    os.setsid()
    _die_with_runner(runner_pid)
    # A forkserver child inherits "forkserver" as its default start method, so a library's
    # multiprocessing lock in the cell (tqdm's, on its first progress bar: ONNX export, GGUF loading) is a
    # named semaphore registered with the runner's resource tracker. A cell killed on timeout cannot
    # unregister it, and the run ended with "resource_tracker: ... 1 leaked semaphore". With the
    # platform's default (fork) such locks are unnamed and die with the process; the trials' spawn
    # context is explicit and unaffected.
    multiprocessing.set_start_method("fork", force=True)
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ.update(env)
    os.environ[RUNNER_PID_VARIABLE] = str(runner_pid)  # the noise guard counts the run's whole tree
    os.chdir(Path(spec_path).parent)  # LoadGen reads an audit.config from the working directory
    from accelbench.cell import process

    sys.exit(process.main([spec_path], spec=spec))


def _die_with_runner(runner_pid: int) -> None:
    """Kill the cell's whole group once the runner is gone, so a runner killed with SIGKILL leaves no
    cell (nor its trial processes) measuring on. (The template process cannot tell: every cell holds
    its liveness pipe open.)"""
    try:
        runner = psutil.Process(runner_pid)
    except psutil.Error:
        os.killpg(0, signal.SIGKILL)
        return

    def guard() -> None:
        while _alive(runner):
            time.sleep(POLL_S)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=guard, name="accelbench-orphan-guard", daemon=True).start()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _watch(proc: Any, timeout_s: float, mem_limit_bytes: int, suts: launcher.Launcher) -> str | None:
    """Wait for the child, starting the SUT processes it asks for; kill its group and return
    ``timeout``/``oom`` when a limit is crossed (its SUT processes' memory counts in its own)."""
    deadline = time.monotonic() + timeout_s
    while True:
        suts.serve(POLL_S, proc.sentinel)
        if proc.exitcode is not None:
            _kill_group(proc.pid)  # leftovers of the cell (e.g. compiler workers) go with it
            return None
        if time.monotonic() > deadline:
            _kill_group(proc.pid)
            proc.join()
            return "timeout"
        if _tree_rss_bytes(proc.pid) + suts.rss_bytes() > mem_limit_bytes:
            _kill_group(proc.pid)
            proc.join()
            return "oom"


def _tree_rss_bytes(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _outcome(spec: CellSpec, exitcode: int, imposed: str | None, timeout_s: float) -> dict[str, Any]:
    if imposed == "timeout":
        return {"status": "timeout", "reason": f"no result after {timeout_s:g} s; process group killed"}
    if imposed == "oom":
        return {"status": "oom", "reason": "memory limit exceeded; process group killed"}
    result_path = Path(spec.folders.result_path)
    if exitcode == 0 and result_path.exists():
        outcome: dict[str, Any] = json.loads(result_path.read_text())
        return outcome
    if exitcode == -signal.SIGKILL:
        return {"status": "oom", "reason": "killed by SIGKILL (likely the kernel's OOM killer)"}
    if exitcode < 0:
        return {"status": "crashed", "reason": f"killed by signal {signal.Signals(-exitcode).name}"}
    return {"status": "crashed", "reason": f"cell process exited with code {exitcode} and no result"}
