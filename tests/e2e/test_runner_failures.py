"""A planted crash, hang, exception and wrong output each get their status; the other cells complete."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine
from accelbench.store import open_store
from tests.e2e.cli import accelbench, interrupted_run, result_ok
from tests.e2e.planted import DAEMON_MARK

pytestmark = pytest.mark.usefixtures("planted_stacks")


def _config(stacks: tuple[str, ...], timeout_s: float = 60.0) -> RunConfig:
    return RunConfig(
        suite="test",
        workloads=("bert-base",),
        stacks=stacks,
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
        samples=8,
        timeout_s=timeout_s,
    )


def test_failing_cells_get_their_status_and_the_others_complete(tmp_path: Path) -> None:
    stacks = (
        "planted-crash",
        "planted-hang",
        "planted-raise",
        "planted-noisy",
        "planted-daemon",
        "torch-eager",
    )
    config = _config(stacks, 25.0)
    machine = detect_machine()
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, machine)
        runner.execute(store, run_id, config, machine)
        by_stack = {r.cell.stack: r for r in store.results(run_id)}
    assert by_stack["planted-crash"].head.status == "crashed"
    assert "SIGABRT" in by_stack["planted-crash"].head.reason
    assert by_stack["planted-hang"].head.status == "timeout"
    assert 25.0 <= by_stack["planted-hang"].wall_s < 60.0  # every other cell finishes well within 25 s
    assert by_stack["planted-raise"].head.status == "crashed"
    assert by_stack["planted-raise"].head.reason == "RuntimeError: planted failure"
    assert "Traceback" in by_stack["planted-raise"].stderr_tail
    assert by_stack["planted-noisy"].head.status == "quality_failed"
    assert (
        by_stack["planted-noisy"].head.quality is not None
        and not by_stack["planted-noisy"].head.quality.passed
    )
    # a daemon the stack left in a session of its own ends with its cell (cell.leftovers)
    assert by_stack["planted-daemon"].head.status in ("ok", "unstable", "unverified"), by_stack[
        "planted-daemon"
    ].head.reason
    assert _marked(DAEMON_MARK) == []
    assert result_ok(by_stack["torch-eager"]), by_stack["torch-eager"].head.reason
    assert by_stack["torch-eager"].latency is not None and by_stack["torch-eager"].latency.p50_s > 0


def _marked(mark: str) -> list[int]:
    """Live processes whose command line holds ``mark``."""
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and mark.encode() in (proc / "cmdline").read_bytes():
                state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
                found += [int(proc.name)] if state != "Z" else []
    return found


@pytest.mark.exhaustive  # 13 s; make test resumes after kill -9 (test_reliability) and on the fleet
def test_resume_finishes_an_interrupted_run_without_repeating_cells(tmp_path: Path) -> None:
    config = _config(("null", "planted-raise", "torch-eager"))
    machine = detect_machine()
    with open_store(tmp_path / "store") as store:
        run_id, first = interrupted_run(store, config, machine)
        assert len(first) == 1
        resumed = runner.execute(store, run_id, runner.resume_config(store, run_id, machine), machine)
        final = store.results(run_id)
    assert len(resumed) == 2
    assert {r.cell.key for r in resumed}.isdisjoint({first[0].cell.key})
    assert sorted(r.cell.stack for r in final) == ["null", "planted-raise", "torch-eager"]
    assert next(r for r in final if r.cell.key == first[0].cell.key).started_at == first[0].started_at


def test_a_library_that_raises_on_import_gives_each_cell_its_status(tmp_path: Path) -> None:
    """A broken build of a library the cell template imports (here LoadGen raising RuntimeError): the
    template swallows it (``accelbench.cell.template_imports``), each cell that imports it again gets
    ``crashed`` with the library's line, and the run ends normally. Before, the template died and the
    run ended with two tracebacks and "Aborted."."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "mlperf_loadgen.py").write_text("raise RuntimeError('a broken build of LoadGen')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(Path(__file__).parents[2])])}
    args = ("--workloads", "resnet50", "--stacks", "null", "--scenarios", "single-stream", "--no-probe")
    done = accelbench("run", "--suite", "tiny", *args, "--store", str(tmp_path / "store"), env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    with open_store(tmp_path / "store") as store:
        (result,) = store.results(store.run_ids()[0])
    assert result.head.status == "crashed"
    assert result.head.reason == "RuntimeError: a broken build of LoadGen"
