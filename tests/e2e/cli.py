"""The accelbench CLI run as a user runs it: a fresh interpreter, output captured; and the checks and
the interrupted run that the end-to-end tests share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.hardware.detect import Machine
from accelbench.results import Result
from accelbench.store import Store

BUSY = "machine busy"
"""How a result's warning starts when other processes used the CPU while the cell ran."""


def accelbench(
    *args: str, timeout_s: float = 600, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m accelbench ARGS`` with a wide terminal; ``env`` adds to the environment."""
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "accelbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=environment,
    )


def run_document(store: Path, *args: str) -> dict[str, Any]:
    """``accelbench run ARGS --json --store STORE``, which must exit 0: the run's JSON document."""
    done = accelbench("run", *args, "--json", "--store", str(store))
    assert done.returncode == 0, done.stderr[-3000:]
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def runs_at_once(commands: Sequence[Sequence[str]], store: Path, timeout_s: float) -> dict[str, list[Result]]:
    """Start ``commands`` (runs on one ``store``) at once; each must exit 0, ``store check`` must be clean
    and hold one run per command: their results by run id."""
    from accelbench.store import open_store
    from accelbench.store.check import check_store

    runs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    outputs = [run.communicate(timeout=timeout_s) for run in runs]
    assert [run.returncode for run in runs] == [0] * len(runs), [err[-2000:] for _, err in outputs]
    report = check_store(store)
    assert report.clean, [p.line() for p in report.problems]
    with open_store(store) as opened:
        results = {run_id: opened.results(run_id) for run_id in opened.run_ids()}
    assert len(results) == len(commands) and report.records == sum(len(rs) for rs in results.values())
    return results


def measured_ok(result: Mapping[str, object]) -> bool:
    """An honest real stack's cell: ``ok``, or ``unstable`` because the machine itself drifted or was busy
    (the noise probe flagged it, or other processes took CPU time while it ran: the SUT timer and
    LoadGen then disagree too). Never ranked either way."""
    if result["status"] == "ok":
        return True
    noise = result.get("noise") or {}
    drifted = isinstance(noise, Mapping) and noise.get("unstable") is True
    warnings = result.get("warnings") or ()
    busy = any(str(w).startswith(BUSY) for w in warnings) if isinstance(warnings, Sequence) else False
    return result["status"] == "unstable" and (drifted or busy)


def disturbed(result: Mapping[str, Any]) -> bool:
    """The cell's measurement was disturbed from outside the run (other processes' load or the
    hypervisor's steal, ``accelbench.meters.noise.outside_disturbance``), so it ended ``unstable`` for that,
    or ``unverified`` because a timing audit failed on it (``accelbench.audits.status``). Neither ranks;
    a test asserts the audit's verdict on a quiet machine only."""
    reason = str(result.get("reason") or "")
    if result["status"] == "unverified":
        return "failed on a disturbed measurement (" in reason
    outside = ("unstable: other processes kept", "unstable: the hypervisor stole")
    return result["status"] == "unstable" and reason.startswith(outside)


def result_ok(result: Result) -> bool:
    """``measured_ok`` for a ``Result`` record."""
    return result.head.status == "ok" or (
        result.head.status == "unstable"
        and (
            (result.head.noise is not None and result.head.noise.unstable)
            or any(w.startswith(BUSY) for w in result.head.warnings)
        )
    )


def interrupted_run(store: Store, config: RunConfig, machine: Machine) -> tuple[str, list[Result]]:
    """Start a run of ``config`` in ``store`` and stop it as Ctrl-C would (``KeyboardInterrupt``) once its
    first result is stored: the run id and the results stored by then."""

    def interrupt(result: object) -> None:
        raise KeyboardInterrupt

    run_id = runner.start_run(store, config, machine)
    try:
        runner.execute(store, run_id, config, machine, on_result=interrupt)
    except KeyboardInterrupt:
        return run_id, store.results(run_id)
    raise AssertionError("the run finished without being interrupted")


def installed_plugins(site: Path, name: str, group: str, entries: Mapping[str, str]) -> dict[str, str]:
    """An environment in which ``entries`` (name -> ``module:Class``) are installed plugins of entry-point
    ``group``: a dist-info called ``name`` in ``site``, put on PYTHONPATH beside the repository."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "\n".join(f"{entry} = {ref}" for entry, ref in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}\n")
    path = os.pathsep.join([str(site), str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "250"}
