"""The harness's side of the SUT process: start it, ask it, and hand LoadGen a session whose ``infer``
crosses the wire.

``SutProcess`` starts ``accelbench.sut.host`` as a child of the harness process (same process group, so
a timeout kills it with the cell, and its memory counts in the cell's tree), over a socket pair, with a
scrubbed environment (``accelbench.sut.hardening``) and a scratch folder of its own. ``describe``,
``batch_reason`` and ``prepare`` are asked of the stack there; ``prepare`` returns a
``accelbench.stacks.base.Session`` whose ``infer`` sends one batch and waits for its output (with
``submit`` too when the stack's session is a served one). A failure of stack code comes back as a
``SutFailure`` carrying the status it maps to; a SUT process that died is a ``SutFailure`` too.

The SUT process's CPU time is read through its CPU-time clock (``clock_getcpuclockid``, nanoseconds)
before each call is sent and after its output came back, so the harness knows how much CPU the stack
spent inside calls and outside them (``cpu_s`` and ``cpu_in_calls_s``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from accelbench.errors import CellError
from accelbench.stacks.base import Session
from accelbench.sut import hardening, launcher, wire
from accelbench.workloads.base import Inputs

log = logging.getLogger(__name__)

Routed = Callable[[wire.Message | None, BaseException | None], None]
"""Where the reader thread hands a routed reply (or the failure that ended the wire)."""

STOP_WAIT_S = 5.0
"""How long a SUT process may take to leave after ``exit`` before it is killed."""


class SutFailure(CellError):
    """Stack code failed in the SUT process (or the process died); ``status`` is the result status."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class StackFacts:
    """What the stack declares about itself, asked in the SUT process."""

    unavailable_reason: str | None
    computes: bool
    default_batch: int


@dataclass(frozen=True, slots=True)
class Prepared:
    """A session's facts besides its ``infer``: stored with the result."""

    session: int
    effective_precision: str
    compile_s: float
    versions: Mapping[str, str]
    asynchronous: bool


@dataclass(frozen=True, slots=True)
class SutCpu:
    """CPU seconds the SUT process spent over a trial's timed window, all of it and inside its calls
    (from the harness's side: read before each call was sent and after its output came back)."""

    cpu_s: float
    in_calls_s: float

    @property
    def off_calls_s(self) -> float:
        """CPU spent between calls: a thread working while the harness was not waiting on the stack."""
        return max(0.0, self.cpu_s - self.in_calls_s)


class SutProcess:
    """One SUT process running one stack (``stack_ref``) for one trial."""

    def __init__(self, stack_ref: str, work_dir: Path, private_env: Mapping[str, str]) -> None:
        work_dir.mkdir(parents=True, exist_ok=True)
        env = hardening.scrubbed_environment(os.environ, private_env)
        self.popen: subprocess.Popen[bytes] | None = None
        forked = launcher.request_sut(stack_ref, str(work_dir), env)
        if forked is not None:  # forked by the runner from its clean template (milliseconds)
            self.conn, self.forked_pid = forked
        else:  # no runner to ask: a fresh interpreter (its stdout and stderr are this process's)
            harness_end, sut_end = wire.pair()
            try:
                self.popen = subprocess.Popen(
                    [sys.executable, "-m", "accelbench.sut.host", str(sut_end.fileno()), stack_ref],
                    pass_fds=(sut_end.fileno(),),
                    env=env,
                    cwd=work_dir,
                    stdin=subprocess.DEVNULL,
                )
            finally:
                sut_end.close()
            self.conn, self.forked_pid = harness_end, 0
        self.lock = threading.Lock()
        self.clock = _CpuClock(self.pid)
        self.cpu_in_calls_s = 0.0
        self.pending: dict[int, Routed] = {}
        self.reader: threading.Thread | None = None
        self.next_id = 0
        self.posted = 0
        self.early: list[wire.Message] = []

    def post(self, header: Mapping[str, Any]) -> None:
        """Send a request without waiting: its reply is read (in order) before the next ``request``'s,
        and kept for ``replies`` (the SUT process works on it while the harness does its own work)."""
        with self.lock:
            try:
                wire.send(self.conn, header)
            except (wire.WireError, OSError) as err:
                raise self._died(err) from None
            self.posted += 1

    def replies(self) -> list[wire.Message]:
        """The replies of every posted request, in order (waiting for those not in yet)."""
        with self.lock:
            self._collect()
            return list(self.early)

    def _collect(self) -> None:
        while self.posted:
            try:
                self.early.append(wire.receive(self.conn))
            except wire.WireError as err:
                raise self._died(err) from None
            self.posted -= 1

    def request(self, header: Mapping[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> wire.Message:
        """Send a request and wait for its reply; a failed one raises ``SutFailure``."""
        if self.reader is not None:
            return checked(self._through_reader(header, arrays))
        with self.lock:
            self._collect()
            try:
                wire.send(self.conn, header, arrays)
                reply = wire.receive(self.conn)
            except (wire.WireError, OSError) as err:
                raise self._died(err) from None
        return checked(reply)

    @contextlib.contextmanager
    def call(self) -> Iterator[socket.socket]:
        """The wire for one exchange of several frames (a generation), under the lock, the SUT process's
        CPU meanwhile counted in calls; a broken wire raises the SUT process's end (``SutFailure``)."""
        with self.lock:
            self._collect()
            before = self.clock.seconds()
            try:
                yield self.conn
            except (wire.WireError, OSError) as err:
                raise self._died(err) from None
            finally:
                self.cpu_in_calls_s += self.clock.seconds() - before

    def describe(self, device: str) -> StackFacts:
        """Is the stack available on ``device``, does it compute, its default batch (the reply of a
        posted ``describe`` when there is one)."""
        posted = [m for m in self.replies() if "unavailable_reason" in m.header]
        reply = (
            checked(posted[0]).header if posted else self.request({"op": "describe", "device": device}).header
        )
        reason = reply.get("unavailable_reason")
        return StackFacts(
            unavailable_reason=str(reason) if reason else None,
            computes=bool(reply["computes"]),
            default_batch=max(1, int(reply["default_batch"])),
        )

    def batch_reason(self, workload: str, batch: int) -> str | None:
        """The stack's reason it cannot run ``batch`` samples per call of ``workload``, or None."""
        reason = self.request({"op": "batch_reason", "workload": workload, "batch": batch}).header["reason"]
        return str(reason) if reason else None

    def prepare(self, request: Mapping[str, Any], example: Inputs) -> tuple[Session, Prepared]:
        """Prepare a session in the SUT process; its ``infer`` crosses the wire."""
        reply = self.request({**request, "op": "prepare"}, tuple(example)).header
        prepared = Prepared(
            session=int(reply["session"]),
            effective_precision=str(reply["effective_precision"]),
            compile_s=float(reply["compile_s"]),
            versions=wire.texts(reply["versions"]),
            asynchronous=bool(reply["asynchronous"]),
        )
        infer = RemoteInfer(self, prepared.session, prepared.asynchronous)
        session = Session(infer, prepared.effective_precision, prepared.compile_s, {})
        return session, prepared

    def infer(self, session: int, inputs: Inputs) -> np.ndarray:
        """One batch through the session; the CPU the SUT process spent meanwhile is counted in calls."""
        if self.reader is not None:
            return checked(self._through_reader({"op": "infer", "session": session}, inputs)).arrays[0]
        with self.lock:
            before = self.clock.seconds()
            try:
                wire.send(self.conn, {"op": "infer", "session": session}, tuple(inputs))
                reply = wire.receive(self.conn)
            except (wire.WireError, OSError) as err:
                raise self._died(err) from None
            finally:
                self.cpu_in_calls_s += self.clock.seconds() - before
        return checked(reply).arrays[0]

    def submit(self, session: int, inputs: Inputs, done: Callable[[Any, Any], None]) -> None:
        """Schedule one batch of a served session; ``done(output, error)`` runs on the reader thread."""

        def finished(reply: wire.Message | None, error: BaseException | None) -> None:
            if error is not None or reply is None:
                done(None, error)
                return
            try:
                output = checked(reply).arrays[0]
            except SutFailure as err:
                done(None, err)
            else:
                done(output, None)

        self._send_routed({"op": "submit", "session": session}, tuple(inputs), finished)

    def _send_routed(self, header: Mapping[str, Any], arrays: tuple[np.ndarray, ...], done: Routed) -> None:
        """Send a request whose reply the reader thread hands to ``done`` (started at the first one)."""
        with self.lock:
            if self.reader is None:
                self._collect()
                self.reader = threading.Thread(target=self._read, name="accelbench-sut-reader", daemon=True)
                self.reader.start()
            number, self.next_id = self.next_id, self.next_id + 1
            self.pending[number] = done
            try:
                wire.send(self.conn, {**header, "id": number}, arrays)
            except (wire.WireError, OSError) as err:
                self.pending.pop(number, None)
                done(None, self._died(err))

    def _through_reader(self, header: Mapping[str, Any], arrays: Inputs) -> wire.Message:
        finished = threading.Event()
        outcome: list[Any] = [None, None]

        def done(reply: wire.Message | None, error: BaseException | None) -> None:
            outcome[:] = [reply, error]
            finished.set()

        self._send_routed(header, tuple(arrays), done)
        finished.wait()
        if outcome[1] is not None:
            raise outcome[1]
        reply: wire.Message = outcome[0]
        return reply

    def _read(self) -> None:
        """The reader thread of a served session: route each reply to its waiter."""
        while True:
            try:
                reply = wire.receive(self.conn)
            except wire.WireError as err:
                failure = self._died(err)
                for done in self._take_all():
                    done(None, failure)
                return
            with self.lock:
                waiter = self.pending.pop(int(reply.header.get("id", -1)), None)
            if waiter is not None:
                waiter(reply, None)

    def _take_all(self) -> list[Routed]:
        with self.lock:
            waiting, self.pending = list(self.pending.values()), {}
        return waiting

    @property
    def pid(self) -> int:
        """The SUT process's id."""
        return self.popen.pid if self.popen is not None else self.forked_pid

    def exit_code(self) -> int | None:
        """The SUT process's exit code, None while it runs."""
        if self.popen is not None:
            return self.popen.poll()
        return launcher.exit_code(self.forked_pid)

    def cpu_s(self) -> float:
        """CPU seconds the SUT process (all its threads) has used so far."""
        return self.clock.seconds()

    def details(self, session: int) -> dict[str, str]:
        """The session's details, read now (after the timed run: a served session's server timings
        are read when first asked for, so they cover it)."""
        found = self.request({"op": "details", "session": session}).header["details"]
        return wire.texts(found)

    def close_session(self, session: int) -> None:
        """Close a session (a served one stops its server)."""
        self.request({"op": "close", "session": session})

    def stop(self) -> None:
        """Ask the SUT process to leave; kill it when it does not within ``STOP_WAIT_S`` (a forked one
        is killed and reaped by the runner at the latest when the cell ends)."""
        with self.lock, contextlib.suppress(wire.WireError, OSError):
            wire.send(self.conn, {"op": "exit"})
        self.conn.close()
        if self.popen is None:
            return
        try:
            self.popen.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def _died(self, err: BaseException) -> SutFailure:
        code = self.exit_code()
        if code is None:
            time.sleep(0.05)
            code = self.exit_code()
        if code == -signal.SIGKILL:
            return SutFailure("oom", "the SUT process was killed by SIGKILL (likely the kernel's OOM killer)")
        if code is not None and code < 0:
            return SutFailure("crashed", f"the SUT process was killed by signal {signal.Signals(-code).name}")
        return SutFailure("crashed", f"the SUT process left (exit code {code}): {err}")


class RemoteInfer:
    """A session's ``infer`` in the harness: one batch across the wire (``submit`` for served ones)."""

    def __init__(self, sut: SutProcess, session: int, asynchronous: bool) -> None:
        self.sut = sut
        self.session = session
        if asynchronous:
            self.submit = self._submit

    def __call__(self, inputs: Inputs) -> np.ndarray:
        return self.sut.infer(self.session, inputs)

    def _submit(self, inputs: Inputs, done: Callable[[Any, Any], None]) -> None:
        self.sut.submit(self.session, inputs, done)

    def close(self) -> None:
        """Close the session in the SUT process."""
        self.sut.close_session(self.session)


def checked(reply: wire.Message) -> wire.Message:
    """``reply`` when it says ok, else its failure raised as a ``SutFailure``."""
    if reply.header.get("ok") is True:
        return reply
    status = str(reply.header.get("status", "crashed"))
    status = status if status in ("unavailable", "unsupported", "oom", "crashed") else "crashed"
    raise SutFailure(status, str(reply.header.get("reason", "the SUT process failed"))[:500])


class _CpuClock:
    """The CPU-time clock of another process (all its threads), in seconds; 0 where there is none."""

    def __init__(self, pid: int) -> None:
        self.clock_id: int | None = None
        name = ctypes.util.find_library("c")
        if not sys.platform.startswith("linux") or name is None:
            return
        clock = ctypes.c_int(0)
        if ctypes.CDLL(name).clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
            self.clock_id = clock.value

    def seconds(self) -> float:
        if self.clock_id is None:
            return 0.0
        try:
            return time.clock_gettime(self.clock_id)
        except OSError:  # the process is gone
            return 0.0
