"""A server as a real process: bind-test its ports, start it in a session of its own, wait until it is
ready while it lives, and stop it whatever happens.

Servers spawn helpers that leave the launcher's process group (every Ray worker has its own group) but
keep its session id, so a server is killed by session: ``stop`` asks the launcher to stop (SIGTERM: the
server scripts call the server's own shutdown), waits up to a grace period, then SIGKILLs every process
whose session id is the launcher's pid and checks that its ports are free. ``start`` registers the
stop with ``atexit`` and with multiprocessing's exit hook (a cell process is a multiprocessing child:
it leaves through ``os._exit``, which skips ``atexit``). A cell killed with SIGKILL runs neither: the
server scripts watch their owner's pid (``sessions.watch_owner``) and stop themselves when it is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import logging
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing import util
from pathlib import Path
from typing import TypeVar

from accelbench.errors import Unavailable
from accelbench.serving.sessions import POLL_S, PORT_RELEASE_S, kill_session, session_pids

log = logging.getLogger(__name__)
T = TypeVar("T")

HOST = "127.0.0.1"
STOP_GRACE_S = 15.0
"""How long the server's own stop may take before its session is killed (Ray: about 5 s)."""


class ServerError(Unavailable):
    """The server could not be started here (port in use, exited at start, never became ready)."""


@dataclass(slots=True, weakref_slot=True)
class ServerProcess:
    """A started server: its launcher process, the ports it listens on and its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    ports: tuple[int, ...]
    log_path: Path
    after_stop: Callable[[], None] | None = None
    """Run once the server is stopped (e.g. remove its temp folder)."""
    stopped: bool = False
    leftovers: list[str] = field(default_factory=list)
    """What ``stop`` found still alive or listening (empty after a clean stop)."""

    @property
    def sid(self) -> int:
        """The session id of the server's processes (the launcher leads the session)."""
        return self.popen.pid


BIND_ATTEMPTS = 3
"""Starts tried when a server could not bind a port it was given (each picks fresh free ports)."""
_BIND_FAILURES = ("failed to bind", "address already in use", "already in use")


def on_free_ports(start: Callable[[], T]) -> T:
    """``start()``, again (up to ``BIND_ATTEMPTS``) when the server could not bind a port it was given.

    A port the kernel called free may be taken before the server binds it: Ray's own daemons pick
    theirs at random as they start, after the proxy's was chosen (seen once in 5 quiet cells). Each
    ``start`` chooses its ports anew; other failures are raised at once."""
    for attempt in range(1, BIND_ATTEMPTS + 1):
        try:
            return start()
        except ServerError as exc:
            if attempt == BIND_ATTEMPTS or not any(word in str(exc).lower() for word in _BIND_FAILURES):
                raise
            log.warning("%s; starting again on other ports", exc)
    raise AssertionError("unreachable")


def free_port(host: str = HOST) -> int:
    """A port the kernel says is free now on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def port_in_use(port: int, host: str = HOST) -> bool:
    """True when ``port`` cannot be bound on ``host`` with SO_REUSEADDR (as servers bind): someone
    listens on it or holds it bound; connections left in TIME_WAIT by a stopped server do not count."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def start(
    name: str,
    argv: Sequence[str],
    ports: Sequence[int],
    log_path: Path,
    ready: Callable[[], bool],
    timeout_s: float,
    env: dict[str, str] | None = None,
    after_stop: Callable[[], None] | None = None,
) -> ServerProcess:
    """Start ``argv`` as the server ``name`` and return once ``ready()`` is true.

    Raises ServerError (a one-line reason) when a port is taken, the process exits, or it is not ready
    after ``timeout_s``; the server is stopped before raising. ``after_stop`` runs once it is stopped.
    """
    taken = [port for port in ports if port_in_use(port)]
    if taken and after_stop is not None:
        after_stop()
    if taken:
        raise ServerError(f"{name}: port {', '.join(map(str, taken))} on {HOST} is already in use")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log_file:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    server = ServerProcess(name, popen, tuple(ports), log_path, after_stop)
    try:
        _stop_at_exit(server)
        _wait_ready(server, ready, timeout_s)
    except BaseException:
        stop(server)
        raise
    return server


def _wait_ready(server: ServerProcess, ready: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = server.popen.poll()
        if code is not None:
            raise ServerError(f"{server.name} exited with code {code} at start: {last_line(server.log_path)}")
        if _probe(ready):
            return
        time.sleep(POLL_S)
    raise ServerError(f"{server.name} not ready after {timeout_s:g} s: {last_line(server.log_path)}")


def _probe(ready: Callable[[], bool]) -> bool:
    try:
        return ready()
    except Exception:  # a refused connection while the server is still starting
        return False


def last_line(path: Path) -> str:
    """The last non-blank line of the server's log, the usual place of its reason (cut to 300 chars)."""
    with contextlib.suppress(OSError):
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
        if lines:
            return lines[-1][:300]
    return "(no output)"


def stop(server: ServerProcess, grace_s: float = STOP_GRACE_S) -> list[str]:
    """Stop the server (SIGTERM, then SIGKILL of its whole session after ``grace_s``); return what was
    still alive or listening at the end (also kept in ``server.leftovers``). Safe to call twice."""
    if server.stopped:
        return server.leftovers
    server.stopped = True
    if server.popen.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            server.popen.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.popen.wait(timeout=grace_s)
    kill_session(server.sid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.popen.wait(timeout=PORT_RELEASE_S)
    alive = session_pids(server.sid)
    held = _held_ports(server.ports)
    server.leftovers = [f"pid {pid}" for pid in alive] + [f"port {port}" for port in held]
    if server.after_stop is not None:
        with contextlib.suppress(Exception):
            server.after_stop()
    if server.leftovers:
        log.warning("%s left %s after stop", server.name, ", ".join(server.leftovers))
    return server.leftovers


def _held_ports(ports: Sequence[int]) -> list[int]:
    """The ports still bound after up to ``PORT_RELEASE_S``."""
    deadline = time.monotonic() + PORT_RELEASE_S
    held = [port for port in ports if port_in_use(port)]
    while held and time.monotonic() < deadline:
        time.sleep(POLL_S)
        held = [port for port in held if port_in_use(port)]
    return held


def _stop_at_exit(server: ServerProcess) -> None:
    """Stop ``server`` when this process ends: at exit of a plain interpreter or a multiprocessing
    child, and on SIGTERM (then the default action follows)."""
    atexit.register(stop, server)
    util.Finalize(server, stop, args=(server,), exitpriority=100)
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)

        def on_term(signum: int, frame: object) -> None:
            stop(server)
            signal.signal(signal.SIGTERM, previous if callable(previous) else signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(signal.SIGTERM, on_term)
