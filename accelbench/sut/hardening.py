"""What keeps the SUT process out of the harness's processes: undumpable harness processes, no ptrace
capability in the SUT process, and a scrubbed environment.

Linux lets a process read another's memory (``/proc/PID/mem``, ``process_vm_readv``, ``ptrace``) and
environment (``/proc/PID/environ``) when both run as the same user and the target is *dumpable*, or when
the reader holds ``CAP_SYS_PTRACE``. So every harness process (the runner, each cell and trial process)
makes itself undumpable (``PR_SET_DUMPABLE`` 0), and the SUT process, when it runs as root, drops
``CAP_SYS_PTRACE`` (and the capabilities that read past a file's mode) from its bounding, permitted and
effective sets before any stack code runs, so that it cannot get them back. Both are best effort on
other kernels (a failed call is logged), never a crash.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import signal
import sys
from collections.abc import Mapping

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2
CAP_SYS_PTRACE = 19
DROPPED_CAPABILITIES = (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE)
"""Reading another process's memory (ptrace), and reading or listing past a file's mode (a root SUT
process is held to the mode of the folder of LoadGen's logs, ``accelbench.scenarios.vault``)."""
_CAPABILITY_VERSION_3 = 0x20080522

HARNESS_VARIABLE_PREFIX = "ACCELBENCH_"
"""The harness's own variables (the runner's pid, the store, a fleet's folder, API keys) are not the
stack's; the few a stack reads on purpose are kept (``STACK_VARIABLES``)."""
STACK_VARIABLES = frozenset(
    {"ACCELBENCH_TVM_TRIALS", "ACCELBENCH_PYTRITON_PYTHON", "ACCELBENCH_OPTIMUM_PYTHON"}
)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def make_undumpable() -> bool:
    """Make this (harness) process undumpable: a same-user process can no longer read its memory or
    environment through ``/proc`` nor attach to it. True when the kernel says it is now undumpable."""
    libc = _libc()
    if libc is None:
        return False
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        log.warning("prctl(PR_SET_DUMPABLE, 0) failed: errno %d", ctypes.get_errno())
    return bool(libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)


def is_undumpable() -> bool:
    """Whether this process is undumpable now (False where the kernel cannot say)."""
    libc = _libc()
    return libc is not None and libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def drop_capabilities() -> bool:
    """Drop ``DROPPED_CAPABILITIES`` for good (bounding set, then permitted, effective and inheritable).
    True when this process no longer holds ``CAP_SYS_PTRACE`` (always true for an ordinary user, who
    never held any)."""
    libc = _libc()
    if libc is None:
        return False
    for capability in DROPPED_CAPABILITIES:  # fails without CAP_SETPCAP: then there is nothing to drop
        libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return False
    mask = ~sum(1 << c for c in DROPPED_CAPABILITIES) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    data[0].inheritable &= mask
    libc.capset(ctypes.byref(header), data)
    return holds_ptrace_capability() is False


def holds_ptrace_capability() -> bool | None:
    """Whether this process's effective set holds ``CAP_SYS_PTRACE`` (None where it cannot be read)."""
    try:
        with open("/proc/self/status") as status:
            line = next((x for x in status if x.startswith("CapEff:")), "")
    except OSError:
        return None
    return bool(int(line.split()[1], 16) >> CAP_SYS_PTRACE & 1) if line else None


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent (the harness) dies."""
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def scrubbed_environment(base: Mapping[str, str], private: Mapping[str, str]) -> dict[str, str]:
    """The SUT process's environment: ``base`` without the harness's own variables, and ``private``
    (its HOME, caches and temporary folder in its scratch folder) over it."""
    kept = {
        name: value
        for name, value in base.items()
        if not name.startswith(HARNESS_VARIABLE_PREFIX) or name in STACK_VARIABLES
    }
    return {**kept, **private}
