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

A process orphaned *and* reaped by init between two readings, or one that leaves the session and the
tree, is lost: its time then reads as other load (an over-estimate, never a hidden load).
"""

from __future__ import annotations

import os
import socket
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

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
        return ProcessTimes(pid, int(fields[1]), int(fields[3]), ticks)
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
