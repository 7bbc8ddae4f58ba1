"""SUT processes forked from the runner's clean template, on a cell's request.

A fresh interpreter per trial costs 1-3.6 s of imports (torch, ONNX Runtime, transformers: measured).
The runner's cell template (a multiprocessing forkserver, ``accelbench.cell.isolation``) has imported
them and executed nothing, so it holds nothing of the harness: a SUT process forked from it starts in
milliseconds and is as clean as an exec'd one. A cell cannot ask the template itself, so it asks the
runner, over a control socket the runner made for it (``Launcher``): the runner makes the socket pair
of the wire, has the template fork ``sut_main`` with one end, and hands the other end and the new pid
back to the cell (``SCM_RIGHTS``). The runner knows every SUT process of a cell: their memory counts
in the cell's, and they are killed with it. Without a runner (a benchmark calling a trial directly), a
SUT process is exec'd (``accelbench.sut.remote``).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Mapping
from multiprocessing.context import ForkServerContext
from typing import Any

import psutil

from accelbench.sut import hardening
from accelbench.sut.host import Host

CONTROL_MAX_BYTES = 1 << 20
"""A control request holds a stack reference, a folder and an environment."""

control: socket.socket | None = None
"""In a cell (and its trial processes): the socket to the runner's ``Launcher``; None elsewhere."""


def control_pair() -> tuple[socket.socket, socket.socket]:
    """The runner's end and the cell's end of a control socket (message boundaries kept)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class Launcher:
    """The runner's side: forks a cell's SUT processes from the template and knows them."""

    def __init__(
        self, context: ForkServerContext, end: socket.socket, stderr_path: str, cell_pid: int
    ) -> None:
        self.context = context
        self.end = end
        self.stderr_path = stderr_path
        self.watched = (os.getpid(), cell_pid)
        """The runner and the cell: a SUT process dies with either (even when its stack hangs)."""
        self.processes: dict[int, Any] = {}

    def serve(self, timeout_s: float, sentinel: int) -> None:
        """Wait up to ``timeout_s`` for a request (or for the cell's ``sentinel``) and answer it."""
        ready, _, _ = select.select([self.end.fileno(), sentinel], [], [], timeout_s)
        if self.end.fileno() not in ready:
            return
        try:
            data = self.end.recv(CONTROL_MAX_BYTES)
        except OSError:
            data = b""
        if not data:  # the cell closed its end
            self.end.close()
            self.end = _closed()
            return
        request = json.loads(data)
        if request.get("op") == "status":
            self.end.send(json.dumps({"exitcode": self._exit_code(int(request["pid"]))}).encode())
            return
        self._start(request)

    def _start(self, request: Mapping[str, Any]) -> None:
        harness_end, sut_end = _wire_pair()
        process = self.context.Process(
            target=sut_main,
            args=(
                sut_end,
                str(request["stack_ref"]),
                str(request["cwd"]),
                dict(request["env"]),
                self.stderr_path,
                self.watched,
            ),
            daemon=False,
        )
        process.start()
        sut_end.close()
        pid = int(process.pid or 0)
        self.processes[pid] = process
        reply = json.dumps({"pid": pid}).encode()
        socket.send_fds(self.end, [reply], [harness_end.fileno()])
        harness_end.close()

    def _exit_code(self, pid: int) -> int | None:
        process = self.processes.get(pid)
        if process is None:
            return None
        process.join(timeout=1.0)
        code: int | None = process.exitcode
        return code

    def rss_bytes(self) -> int:
        """The resident memory of the cell's SUT processes and their children."""
        total = 0
        for pid in self.processes:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(pid)
                total += sum(p.memory_info().rss for p in (root, *root.children(recursive=True)))
        return total

    def close(self) -> None:
        """Kill every SUT process of the cell (with its group: a served stack's server) and reap it."""
        for pid, process in self.processes.items():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            process.join(timeout=5.0)
        self.processes.clear()
        self.end.close()


def _closed() -> socket.socket:
    """A socket that never becomes readable (the cell closed its end)."""
    quiet, _ = socket.socketpair()
    return quiet


def _wire_pair() -> tuple[socket.socket, socket.socket]:
    from accelbench.sut import wire

    return wire.pair()


def sut_main(
    conn: socket.socket,
    stack_ref: str,
    cwd: str,
    env: dict[str, str],
    stderr_path: str,
    watched: tuple[int, ...],
) -> None:
    """The forked SUT process: its own process group, gone with the runner or the cell (``watched``),
    no ptrace or DAC capabilities, the cell's stderr, the scrubbed environment, its scratch folder;
    then serve the harness until it closes the wire."""
    os.setsid()
    hardening.die_with_parent()
    _die_with(watched)
    hardening.drop_capabilities()
    multiprocessing.set_start_method("fork", force=True)  # as in the cell (its libraries' locks)
    fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    Host(conn, stack_ref).serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # a stack's leftover threads must not keep it alive


def _die_with(pids: tuple[int, ...]) -> None:
    """Kill this process's group (a served stack's servers too) once any of ``pids`` is gone: a thread
    blocked on their pidfds (no polling); a pid already gone kills it at once."""
    handles = []
    for pid in pids:
        try:
            handles.append(os.pidfd_open(pid))
        except OSError:  # gone already (or no pidfd on this kernel: the runner kills it at cell end)
            if not psutil.pid_exists(pid):
                os.killpg(0, signal.SIGKILL)

    def guard() -> None:
        select.select(handles, [], [])
        os.killpg(0, signal.SIGKILL)

    if handles:
        threading.Thread(target=guard, name="accelbench-sut-guard", daemon=True).start()


def request_sut(stack_ref: str, cwd: str, env: Mapping[str, str]) -> tuple[socket.socket, int] | None:
    """In a cell: a SUT process forked by the runner, as (the harness's end of its wire, its pid); None
    without a runner to ask."""
    if control is None:
        return None
    control.send(json.dumps({"op": "start", "stack_ref": stack_ref, "cwd": cwd, "env": dict(env)}).encode())
    data, fds, _, _ = socket.recv_fds(control, CONTROL_MAX_BYTES, 1)
    if not fds:
        return None
    return socket.socket(fileno=fds[0]), int(json.loads(data)["pid"])


def exit_code(pid: int) -> int | None:
    """In a cell: the exit code of a SUT process the runner forked (None while it runs)."""
    if control is None:
        return None
    control.send(json.dumps({"op": "status", "pid": pid}).encode())
    code = json.loads(control.recv(CONTROL_MAX_BYTES)).get("exitcode")
    return int(code) if code is not None else None
