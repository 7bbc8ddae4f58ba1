"""What a cell leaves behind ends with it: a process its stack started that escaped the cell's and its SUT
processes' groups (a daemon in a session of its own) is killed at the cell's end.

The runner is the subreaper of what its cells' processes leave (``cell.isolation``: the noise guard counts
a served model's daemons as the run's own work only if they stay in the run's tree). So such a process is
re-parented to the runner, not to init, and would count as the run's own work in every later cell: a stack
could leave one spinning to slow the stacks measured after it, unseen by the guard. Every child of the
runner created since the cell's process (the runner's own template and resource tracker are older) is
killed here with its descendants once the cell and its SUT processes are gone. Zombies are left to keep
their CPU time readable.
"""

from __future__ import annotations

import contextlib

import psutil


def kill_leftovers(runner_pid: int, cell_pid: int, cell_created_s: float) -> list[int]:
    """Kill the runner's children created at or after ``cell_created_s`` (the cell process's own
    ``create_time``; psutil's clock, so both are read alike), with their descendants, except
    ``cell_pid``. Returns the pids of the children killed."""
    try:
        children = psutil.Process(runner_pid).children()
    except psutil.Error:
        return []
    killed = []
    for child in children:
        with contextlib.suppress(psutil.Error):
            if child.pid == cell_pid or child.create_time() < cell_created_s:
                continue
            if child.status() == psutil.STATUS_ZOMBIE:
                continue
            family = [child, *child.children(recursive=True)]
            for member in family:
                with contextlib.suppress(psutil.Error):
                    member.kill()
            killed.append(child.pid)
    return killed
