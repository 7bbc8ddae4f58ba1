"""A planted stack that searches everything its process can reach for the harness's secrets.

``planted-harness-reader`` answers honestly (torch eager), and at ``prepare`` and before every call it
looks for what would let it predict or recognise a timed or audit input: the harness's objects through
the garbage collector and every thread's frames (``CellSpec``, the sample sets, the audit feed, LoadGen),
the environment, every other process's ``/proc/PID/environ``, ``mem`` (at the addresses its ``maps``
lists), ``cmdline`` and ``fd``, and every file under the run's folder (LoadGen's logs, spec files,
outcome documents). It keeps every array of the inputs' shapes it finds anywhere, and counts the calls
whose input it had found before that call. It writes what it found to ``found.json`` in its scratch
folder, each search's seeds with its time, which the test reads (``tests/e2e/test_boundary.py``).
``planted-background-worker`` answers honestly and keeps a thread busy between calls: the CPU it spends
off the calls is seen (``settings.sut_process``).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.torch_eager import TorchEager

HARNESS_TYPES = ("CellSpec", "SampleSets", "AuditFeed", "Sut", "Feed", "Plan", "Evidence")
SEED_WORDS = re.compile(rb"(input_seed|rng_seed|feed_seed)\D{1,40}?(\d{4,20})")


def _key(array: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(array).tobytes(), digest_size=16).hexdigest()


class HarnessReader(TorchEager):
    """Honest torch eager, plus a search of everything its process can reach."""

    name: ClassVar[str] = "planted-harness-reader"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        session = super().prepare(model, spec, ctx)
        found: dict[str, Any] = {
            "harness_objects": [],
            "seeds": [],
            "environment": sorted(n for n in os.environ if n.startswith("ACCELBENCH_")),
            "inputs_found": 0,
            "calls": 0,
            "calls_found_before": 0,
            "vault_listed": [],
        }
        shapes = {tuple(a.shape) for a in spec.example}
        seen_before: set[str] = set()
        root = ctx.work_dir.parent.parent.parent  # <run>/cells/<cell>/sut -> <run>

        def search() -> None:
            found["seeds"] = []
            _search_memory(found, seen_before, shapes)
            _search_processes(found)
            _search_files(found, root)
            found["inputs_found"] = len(seen_before)
            snapshot = {"time": time.time(), "call": found["calls"], "seeds": sorted(set(found["seeds"]))}
            found.setdefault("snapshots", []).append(snapshot)
            (ctx.work_dir / "found.json").write_text(json.dumps(found, sort_keys=True))

        search()

        def infer(inputs: Any) -> np.ndarray:
            found["calls"] += 1
            if _key(inputs[0]) in seen_before:
                found["calls_found_before"] += 1
            if found["calls"] % 50 == 1:
                search()
            output = session.infer(inputs)
            seen_before.discard(_key(inputs[0]))  # an input it was given is no longer a prediction
            return output

        return Session(infer, session.effective_precision, session.compile_s, session.details)


def _search_memory(found: dict[str, Any], seen: set[str], shapes: set[tuple[int, ...]]) -> None:
    objects = gc.get_objects()
    for frame in sys._current_frames().values():
        while frame is not None:
            objects.extend(frame.f_locals.values())
            frame = frame.f_back  # type: ignore[assignment]
    for obj in objects:
        kind = type(obj).__name__
        if kind in HARNESS_TYPES and kind not in found["harness_objects"]:
            found["harness_objects"].append(kind)
        if isinstance(obj, np.ndarray) and tuple(obj.shape) in shapes:
            seen.add(_key(obj))
        if isinstance(obj, dict) and "input_seed" in obj:
            found["seeds"].append(str(obj["input_seed"]))


def _search_processes(found: dict[str, Any]) -> None:
    """What it can read of each ancestor (its trial or cell process, the cell template, the runner and
    above), by name."""
    ancestors, pid = [], os.getppid()
    while pid > 1 and len(ancestors) < 6:
        ancestors.append(pid)
        pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found["ancestors"] = [[str(p), _command(Path("/proc") / str(p))] for p in ancestors]
    for ancestor in ancestors:
        entry = Path("/proc") / str(ancestor)
        readable = found.setdefault("ancestor_readable", {}).setdefault(str(ancestor), [])
        for name in ("environ", "maps", "mem", "fd", "cwd"):
            try:
                if name == "fd":  # the paths of its open files (LoadGen's logs while they are written)
                    [os.readlink(entry / name / fd) for fd in os.listdir(entry / name)]
                elif name == "cwd":
                    os.readlink(entry / name)
                elif name == "mem":
                    _read_memory(entry)
                else:
                    text = (entry / name).read_bytes()
                    if name == "environ":
                        found["seeds"].extend(m[1].decode() for m in SEED_WORDS.findall(text))
            except (OSError, ValueError, StopIteration):
                continue
            if name not in readable:
                readable.append(name)


def _read_memory(entry: Path) -> None:
    """Read the first readable page of the process's heap (raises when it cannot)."""
    maps = (entry / "maps").read_text().splitlines()
    heap = next(line for line in maps if "[heap]" in line)
    start = int(heap.split("-")[0], 16)
    with open(entry / "mem", "rb") as memory:
        memory.seek(start)
        memory.read(4096)


def _command(entry: Path) -> str:
    try:
        return (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:80]
    except OSError:
        return "?"


def _search_files(found: dict[str, Any], root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        if Path(folder).name.startswith(".loadgen-vault"):
            found["vault_listed"].append(folder)
        for name in files:
            path = Path(folder) / name
            try:
                text = path.read_bytes()[: 1 << 20]
            except OSError:
                continue
            found["seeds"].extend(m[1].decode() for m in SEED_WORDS.findall(text))
        dirs[:] = [d for d in dirs if d not in ("home", "cache")]


class BackgroundWorker(TorchEager):
    """Honest answers, and a thread that keeps a core busy between calls (as one precomputing ahead,
    or finishing work it returned early, would)."""

    name: ClassVar[str] = "planted-background-worker"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        session = super().prepare(model, spec, ctx)

        def work() -> None:
            block = np.ones((64, 64))
            while True:
                block = block @ block / 64.0

        threading.Thread(target=work, name="planted-ahead", daemon=True).start()
        return session
