"""The tiny-suite run that the end-to-end modules share (the ``tiny_run`` fixture of ``conftest.py``).

``make test`` must fit 30 minutes on two cores (issue 29): the CLI, figures and HTML report modules each
ran a tiny suite of their own; they now read this one, made once per session. Tests only read its store;
one that must write (store a record again) works on a ``TinyRun.writable_copy``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.cli import accelbench

TINY_STACKS = ("null", "torch-eager", "onnxruntime", "glow")
"""The tiny suite's stacks but torch-inductor (half the run's time in compiles; it runs end to end in
test_stacks_compilers, and through the CLI in the exhaustive every-stack test), with glow, which is
unavailable on this machine: the run then has a failure to show (never a process: no time spent)."""
UNAVAILABLE_STACK = "glow"
TINY_WORKLOADS = ("resnet50", "minilm-l6")
"""The tiny suite's workloads but bert-base, minilm-l6's encoder at another size (a third of the run's
time, 65 s of 207 s on a 146 GFLOP/s 2-core VM): its cells run end to end in test_stacks_batch,
test_stacks_tensorflow and test_stacks_jax_opencl."""
TINY_SCENARIOS = ("single-stream", "offline")


@dataclass(frozen=True, slots=True)
class TinyRun:
    """The shared run: its store (read only), the piped ``accelbench run`` and ``show --json``'s document."""

    store: Path
    done: subprocess.CompletedProcess[str]
    """``accelbench run`` piped as in ``make run | tee log``: its progress lines are plain lines."""
    document: dict[str, Any]

    @property
    def run_id(self) -> str:
        """The run's id."""
        run_id: str = self.document["run_id"]
        return run_id

    def result(self, workload: str, stack: str, scenario: str) -> dict[str, Any]:
        """The one stored result of the cell (workload, stack, scenario)."""
        wanted = (workload, stack, scenario)
        (found,) = [r for r in self.document["results"] if _cell_of(r) == wanted]
        return found

    def writable_copy(self, target: Path) -> Path:
        """A copy of the store at ``target`` (which must not exist) for a test that writes."""
        shutil.copytree(self.store, target)
        return target


def _cell_of(result: dict[str, Any]) -> tuple[str, str, str]:
    cell = result["cell"]
    return cell["workload"], cell["stack"], cell["scenario"]


def tiny_run_of(store: Path) -> TinyRun:
    """Run the tiny suite on ``TINY_WORKLOADS`` x ``TINY_STACKS`` (roofline probes on, quick rules), piped,
    into ``store``."""
    chosen = ("--workloads", ",".join(TINY_WORKLOADS), "--stacks", ",".join(TINY_STACKS))
    done = accelbench("run", "--suite", "tiny", *chosen, "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    shown = accelbench("show", "--json", "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-3000:]
    return TinyRun(store, done, json.loads(shown.stdout))
