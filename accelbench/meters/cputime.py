"""CPU time: the machine's (from ``/proc/stat``), the hypervisor's steal, and the run's own process tree.

The noise guard asks how much CPU time *other* processes took while a cell measured. Everything the run
started is its own: the cell process, its spawned trial processes, servers and their workers,
compilers, the runner that watches the cell. So "own" is the CPU time of a process tree, read from
``/proc/<pid>/stat`` of every member:

- the members: the root (the runner, named by ``RUNNER_PID_VARIABLE`` in the cell's environment, else
  this process), every descendant of it (a ppid walk), and every process of a session whose leader is
  one of them (the cell calls ``setsid``, so a server orphaned by its trial and re-parented to init is
  still found by its session);
- each member counts ``utime + stime + cutime + cstime``: its own time and that of the children it has
  reaped, so a trial that exited between two readings still counts (in its reaper's ``cutime``).

- the cell process is the *child subreaper* of everything it starts (``adopt_orphans``): a process
  whose parent dies is re-parented to the cell instead of init, and stays in the tree (a zombie keeps its
  CPU time in ``/proc/<pid>/stat`` until the cell exits). Before, Ray's workers and daemons, killed with
  their session at a server's stop, were reaped by init and their whole CPU time (the served model's
  inference) read as other load: 0.60 cores on a quiet VM, every Ray Serve cell ``unstable``.

A process that leaves the tree without being orphaned (a server started through another daemon:
``docker run``, systemd) is lost: its time then reads as other load (an over-estimate, never a hidden
load), unless it listens on the ``--serve-url`` the cell measures (``server_roots``).
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h): orphaned descendants are re-parented to this process, not init."""
RUNNER_PID_VARIABLE = "ACCELBENCH_RUNNER_PID"
"""Environment variable that names the run's root process (set in the cell process by the runner)."""


@dataclass(frozen=True, slots=True)
class CpuClock:
    """A reading of the machine's busy and stolen CPU seconds, the run's own CPU seconds, and wall time."""

    machine_busy_s: float
    """CPU seconds every process of the machine ran (user, nice, system). Not irq and softirq time, which
    no process is charged for (a served cell's loopback traffic is mostly softirq), nor steal."""
    own_s: float
    """CPU seconds of the run's process tree (see the module text)."""
    wall_s: float
    steal_s: float = 0.0
    """CPU seconds the hypervisor gave to other guests while this machine's vCPUs wanted to run."""


@dataclass(frozen=True, slots=True)
class ProcessTimes:
    """One process's line of ``/proc/<pid>/stat``: parentage and CPU clock ticks (own and reaped)."""

    pid: int
    ppid: int
    session: int
    ticks: int
    started: int = 0
    """Start time in clock ticks after boot: with ``pid``, a process's identity (pids are reused)."""


def adopt_orphans(adopt: bool = True) -> bool:
    """Make this process the child subreaper of its descendants (Linux 3.4+), or no longer (``adopt``
    False: a benchmark whose planted load stands for another user's); False where it cannot.
    Orphans are not reaped here: a zombie keeps its CPU time readable, and reaping with ``wait(-1)``
    would take the exit status of a child some library waits for."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(adopt), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def cpu_clock(
    proc: str = "/proc", root_pid: int | None = None, servers: frozenset[int] = frozenset()
) -> CpuClock:
    """Read the clocks now (``servers``: roots of local servers the run measures, ``server_roots``).
    Machine times are 0 where ``/proc/stat`` is unreadable; without a readable ``/proc`` the own time is
    this process's and its reaped children's (``os.times``)."""
    busy_s, steal_s = machine_times_s(Path(proc) / "stat")
    return CpuClock(busy_s, own_cpu_s(proc, root_pid, servers), time.monotonic(), steal_s)


def machine_times_s(proc_stat: Path) -> tuple[float, float]:
    """Busy and steal CPU seconds of the whole machine since boot (0, 0 when unreadable)."""
    try:
        with open(proc_stat) as handle:
            fields = handle.readline().split()[1:]
    except OSError:
        return 0.0, 0.0
    jiffies = [int(f) for f in fields] + [0] * 8
    steal = jiffies[7]
    busy = sum(jiffies[:3])  # user, nice, system (guest time is already inside user/nice)
    tick = os.sysconf("SC_CLK_TCK")
    return busy / tick, steal / tick


def own_cpu_s(
    proc: str = "/proc", root_pid: int | None = None, servers: frozenset[int] = frozenset()
) -> float:
    """CPU seconds of the run's process tree rooted at ``root_pid`` (default: ``run_root_pid()``) and of
    the trees rooted at ``servers``."""
    root = run_root_pid() if root_pid is None else root_pid
    table = {p.pid: p for p in read_processes(Path(proc))}
    if root not in table:
        times = os.times()
        return times.user + times.system + times.children_user + times.children_system
    members = set().union(*(tree_members(table.values(), r) for r in {root, *servers}))
    return sum(table[pid].ticks for pid in members) / os.sysconf("SC_CLK_TCK")


def run_root_pid() -> int:
    """The runner named in the environment when it is an ancestor of this process, else this process
    (never init: the whole machine is not the run)."""
    named = os.environ.get(RUNNER_PID_VARIABLE, "")
    if named.isdigit() and int(named) > 1 and _is_ancestor(int(named)):
        return int(named)
    return os.getpid()


def _is_ancestor(pid: int) -> bool:
    """``pid`` is this process or one of its ancestors (the cell's runner through the forkserver)."""
    current = os.getpid()
    for _ in range(64):
        if current == pid:
            return True
        stat = _read_stat(Path("/proc") / str(current) / "stat")
        if stat is None or stat.ppid <= 1:
            return False
        current = stat.ppid
    return False


def tree_members(processes: Iterable[ProcessTimes], root: int) -> set[int]:
    """``root``, its descendants, and the members of sessions led by any of them (to a fixed point)."""
    listed = list(processes)
    children: dict[int, list[int]] = {}
    sessions: dict[int, list[int]] = {}
    for p in listed:
        children.setdefault(p.ppid, []).append(p.pid)
        sessions.setdefault(p.session, []).append(p.pid)
    members: set[int] = set()
    pending = [root]
    while pending:
        pid = pending.pop()
        if pid in members:
            continue
        members.add(pid)
        pending.extend(children.get(pid, ()))
        pending.extend(sessions.get(pid, ()))  # a session this member leads
    return members


def read_processes(proc: Path) -> Iterator[ProcessTimes]:
    """Every readable ``<proc>/<pid>/stat`` (a process that exits while being read is skipped)."""
    try:
        entries = os.listdir(proc)
    except OSError:
        return
    for name in entries:
        if name.isdigit():
            stat = _read_stat(proc / name / "stat")
            if stat is not None:
                yield stat


def _read_stat(path: Path) -> ProcessTimes | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    return parse_stat(text)


def parse_stat(text: str) -> ProcessTimes | None:
    """The fields of one ``/proc/<pid>/stat`` line (the command name may hold spaces and parentheses)."""
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    try:
        pid = int(head.split("(", 1)[0])
        # after the name: state ppid pgrp session ... utime(12) stime(13) cutime(14) cstime(15)
        ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))
        started = int(fields[19]) if len(fields) > 19 else 0
        return ProcessTimes(pid, int(fields[1]), int(fields[3]), ticks, started)
    except (ValueError, IndexError):
        return None


def server_roots(url: str | None, proc: str = "/proc", root_pid: int | None = None) -> frozenset[int]:
    """The roots of the local server behind ``url`` (``--serve-url`` on this machine, a server someone
    else started): for each process listening on its port, its oldest ancestor that is not an ancestor
    of the run (nor init). Empty for a remote host, or where the listener's sockets are not readable
    (another user's server, a container's proxy): its load then reads as other load."""
    parsed = urllib.parse.urlsplit(url or "")
    try:
        port = parsed.port
    except ValueError:
        return frozenset()
    if port is None or not _is_local(parsed.hostname or ""):
        return frozenset()
    base = Path(proc)
    inodes = listening_inodes(base, port)
    table = {p.pid: p for p in read_processes(base)}
    listeners = [pid for pid in table if inodes and _holds_socket(base / str(pid) / "fd", inodes)]
    run_root = run_root_pid() if root_pid is None else root_pid
    outside = _ancestors(table, run_root) | {0, 1}
    return frozenset(_top_outside(table, pid, outside) for pid in listeners)


WATCH_S = 0.5
"""How often ``AutoReapedWatch`` reads the tree: ~2.5 ms of CPU a reading with 100 processes (0.5% of a
core); what an auto-reaped child ran after its last reading (its shutdown) is lost."""
SIGCHLD = 17


class AutoReapedWatch:
    """Keeps the CPU time of the tree's processes whose parent ignores SIGCHLD (Ray's raylet does, so its
    workers never become zombies): the kernel reaps such a child at its exit and adds its time to nobody's
    ``cutime``, so the tree's sum loses it. A thread reads the tree every ``WATCH_S`` and remembers each
    such child's last ticks; ``gone_s`` is the time of those that have exited since the watch began. Their
    running time before their last reading is kept; an orphan re-parented to the subreaper is not one of
    them (it becomes a zombie of the cell: ``adopt_orphans``)."""

    def __init__(self, root_pid: int, servers: frozenset[int] = frozenset(), proc: str = "/proc") -> None:
        self._roots, self._proc = {root_pid, *servers}, Path(proc)
        self._last: dict[tuple[int, int], int] = {}
        self._gone_ticks = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="accelbench-auto-reaped", daemon=True)
        self.read()
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(WATCH_S):
            self.read()

    def read(self) -> None:
        """One reading of the tree (also called at the end, for the freshest ticks)."""
        table = {p.pid: p for p in read_processes(self._proc)}
        members = set().union(*(tree_members(table.values(), r) for r in self._roots))
        ignoring = {pid for pid in members if _ignores_sigchld(self._proc / str(pid) / "status")}
        live = {
            (p.pid, p.started): p.ticks for p in table.values() if p.pid in members and p.ppid in ignoring
        }
        with self._lock:
            self._gone_ticks += sum(t for key, t in self._last.items() if key not in live)
            self._last = live

    def gone_s(self) -> float:
        """CPU seconds of the auto-reaped children that exited since the watch began."""
        with self._lock:
            return self._gone_ticks / os.sysconf("SC_CLK_TCK")

    def close(self) -> float:
        """Stop the thread after a last reading; ``gone_s`` then."""
        self._stop.set()
        self._thread.join()
        self.read()
        return self.gone_s()


def _ignores_sigchld(status: Path) -> bool:
    try:
        lines = status.read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (SIGCHLD - 1) & 1)
    return False


def remote_server(url: str | None) -> str:
    """What the guard cannot watch behind ``url``: a sentence naming a server on another machine, else ""
    (no URL, or a local one)."""
    host = urllib.parse.urlsplit(url or "").hostname or ""
    if not url or _is_local(host):
        return ""
    return f"the server at {host} runs on another machine: its load is outside the noise guard's view"


def _is_local(host: str) -> bool:
    return host in ("localhost", "::1", "0.0.0.0", socket.gethostname()) or host.startswith("127.")


def listening_inodes(proc: Path, port: int) -> set[str]:
    """Socket inodes of TCP listeners (state 0A) on ``port``, from ``net/tcp`` and ``net/tcp6``."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def _holds_socket(fd_dir: Path, inodes: set[str]) -> bool:
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        try:
            target = os.readlink(fd_dir / name)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def _ancestors(table: dict[int, ProcessTimes], pid: int) -> set[int]:
    found: set[int] = set()
    while pid in table and pid not in found:
        found.add(pid)
        pid = table[pid].ppid
    return found


def _top_outside(table: dict[int, ProcessTimes], pid: int, outside: set[int]) -> int:
    """``pid``'s oldest ancestor (or itself) below the first one in ``outside``."""
    seen = {pid}
    while pid in table and table[pid].ppid not in outside and table[pid].ppid not in seen:
        pid = table[pid].ppid
        seen.add(pid)
    return pid
