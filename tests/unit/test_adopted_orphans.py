"""The runner adopts what its SUT processes leave: a server's daemons orphaned when their launcher ends
are re-parented to the runner (the noise guard's root), not to init, so their CPU time stays the run's
own. Before, 3 of 5 quiet Ray Serve cells read 0.11-0.12 cores of "other load" (issue 45)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUNNER = """
import os, sys, time
from accelbench.cell import isolation
from accelbench.meters import cputime

if sys.argv[1] == "runner":
    isolation._fork_context()  # what a run does before its first cell
me = os.getpid()
read, write = os.pipe()
before = cputime.own_cpu_s(root_pid=me)
sut = os.fork()
if sut == 0:  # the SUT process: starts a daemon in a session of its own and ends at once
    if os.fork() == 0:
        os.setsid()
        stop = time.process_time() + 0.6
        while time.process_time() < stop:
            pass
        os.write(write, str(os.getppid()).encode())
        os._exit(0)
    os._exit(0)
os.waitpid(sut, 0)
parent = int(os.read(read, 32))
time.sleep(0.3)  # the daemon has exited: a zombie of its adopter
print(parent == me, round(cputime.own_cpu_s(root_pid=me) - before, 2))
"""


def _run(role: str) -> tuple[bool, float]:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, role], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    adopted, own_s = done.stdout.split()
    return adopted == "True", float(own_s)


def test_a_daemon_left_by_a_sut_process_is_the_runners_and_its_cpu_time_counts() -> None:
    adopted, own_s = _run("runner")
    assert adopted and own_s >= 0.5


def test_without_the_runner_it_would_be_lost_to_init() -> None:
    """The control: a process that never set up the cell template is no subreaper; the daemon's
    0.6 s of CPU leave its tree."""
    adopted, own_s = _run("plain")
    assert not adopted and own_s < 0.3
