"""The fleet end to end: a loopback Ray cluster of real, separate nodes runs a tiny suite.

One cluster (a head and one worker that declares a GPU, each taking one cell at a time) serves the
module; the node-loss test adds a second worker and kills it while it measures a cell.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine
from accelbench.results import Result
from accelbench.store import open_store
from tests.e2e.cli import accelbench, interrupted_run, measured_ok, result_ok, runs_at_once

ray = pytest.importorskip("ray", reason="the fleet extra (ray) is not installed")

from accelbench.fleet import FLEET_RESOURCE  # noqa: E402
from accelbench.fleet.local import LocalCluster, temporary_root  # noqa: E402
from accelbench.fleet.scheduler import demand, task_options  # noqa: E402

SUITE = ("--workloads", "resnet50", "--size", "tiny", "--rules", "quick", "--scenarios", "single-stream")
DONE = ("ok", "quality_failed", "unsupported", "unavailable", "crashed", "timeout", "oom")


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """Head + one worker on loopback; always torn down (only the processes it started)."""
    root = temporary_root()
    local = LocalCluster(root, workers=1, worker_gpus=1)
    try:
        local.start()
        yield local
    finally:
        local.close()
        shutil.rmtree(root, ignore_errors=True)


def measured(result: dict[str, Any]) -> bool:
    """A cell measured to the end whose audits caught nothing: an honest stack's ``measured_ok``, the null
    stack's ``unverified``, or an honest stack's ``unverified`` / ``invalid`` with a figure (three nodes
    measuring at once on two cores can leave an audit too few samples, or LoadGen too slow a run)."""
    if result["cell"]["stack"] == "null":
        return bool(result["status"] == "unverified")
    figures = result.get("figures") or {}
    measured_anyway = result["status"] in ("unverified", "invalid") and bool(figures.get("value"))
    return measured_ok(result) or measured_anyway


def _results(store: Path, run_id: str | None = None) -> list[Result]:
    with open_store(store) as opened:
        return opened.results(run_id or opened.latest_run_id())


def _node(result: Result) -> str:
    return str(result.head.settings["fleet_node"]["node_id"])


@pytest.mark.slow
def test_cells_run_on_both_nodes_and_match_the_plan(cluster: LocalCluster, tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ("--stacks", "null,torch-eager", "--devices", "cpu,cuda:0")
    done = accelbench(
        "run", "--fleet", cluster.client_address, *SUITE, *args, "--store", str(store), "--json"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = _results(store)
    config = RunConfig(
        "tiny", ("resnet50",), ("null", "torch-eager"), ("single-stream",), "tiny", "quick", ("cpu", "cuda:0")
    )
    assert sorted(r.cell.key for r in results) == sorted(p.cell.key for p in runner.plan(config))
    by_device = {(r.cell.stack, r.cell.device): r for r in results}
    eager = by_device[("torch-eager", "cpu")]
    assert result_ok(eager), (eager.head.status, eager.head.reason, eager.head.warnings)
    assert by_device[("null", "cpu")].head.status == "unverified"
    cuda_nodes = {_node(r) for r in results if r.cell.device == "cuda:0"}
    assert len(cuda_nodes) == 1  # only the worker declares a GPU (the head declares none)
    for cell in (r for r in results if r.cell.device == "cuda:0"):  # the null stack never drives CUDA
        if cell.cell.stack == "torch-eager" and torch.cuda.is_available():
            assert result_ok(cell), cell.head.reason
        else:
            assert cell.head.status == "unavailable" and cell.head.reason
    assert len({_node(r) for r in results}) == 2, [(r.cell.key, _node(r)) for r in results]
    here = detect_machine().fingerprint
    for result in results:
        node = result.head.settings["fleet_node"]
        assert result.machine_fingerprint == here == node["machine"]["fingerprint"]
        assert Path(node["run_dir"]).is_relative_to(cluster.root)  # node-local, not the driver's store
    assert eager.loadgen is not None and eager.latency is not None and eager.latency.p50_s > 0
    assert (Path(eager.head.settings["fleet_node"]["run_dir"]) / eager.loadgen.log_dir).is_dir()


@pytest.mark.slow
@pytest.mark.exhaustive  # 27-40 s; make test runs cells on both nodes, make test-all loses one and resumes
def test_a_lost_node_leaves_every_cell_accounted_for(cluster: LocalCluster, tmp_path: Path) -> None:
    lost = cluster.add_worker("lost")
    store = tmp_path / "store"
    args = ("--stacks", "null,torch-eager", "--scenarios", "single-stream,offline", "--no-probe")
    command = [sys.executable, "-m", "accelbench", "run", "--fleet", cluster.address, *SUITE, *args]
    driver = subprocess.Popen([*command, "--store", str(store), "--json"], stdout=subprocess.PIPE, text=True)
    try:
        key = _wait_for_cell(Path(lost.marker) / "fleet", timeout_s=300)
        cluster.kill_node("lost")
        stdout, _ = driver.communicate(timeout=600)
    finally:
        driver.kill()
    assert driver.returncode == 0
    results = {r["cell"]["stack"] + "/" + r["cell"]["scenario"]: r for r in json.loads(stdout)["results"]}
    assert len(results) == 4
    for result in results.values():
        assert measured(result) or result["status"] == "crashed", result
        assert measured(result) or result["reason"].startswith("fleet:"), result["reason"]
    killed = next(
        r for r in results.values() if key.endswith(r["cell"]["stack"] + "/cpu/" + r["cell"]["scenario"])
    )
    if measured(killed):  # retried on a node that is still alive
        assert not Path(killed["settings"]["fleet_node"]["run_dir"]).is_relative_to(Path(lost.marker))


def _wait_for_cell(fleet_dir: Path, timeout_s: float) -> str:
    """Wait until the node has started measuring a cell (its spec is written); return the cell's key."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        specs = list(fleet_dir.glob("*/cells/*/spec.json"))
        if specs:
            cell = json.loads(specs[0].read_text())["cell"]
            time.sleep(1.0)  # let the cell process start
            return "/".join(cell[k] for k in ("workload", "size", "variant", "stack", "device", "scenario"))
        time.sleep(0.2)
    raise AssertionError(f"no cell started under {fleet_dir} in {timeout_s:g} s")


@pytest.mark.slow
@pytest.mark.exhaustive  # 18 s; make test resumes after kill -9 (test_reliability), make test-all here
def test_resume_finishes_a_run_on_the_fleet(cluster: LocalCluster, tmp_path: Path) -> None:
    config = RunConfig("tiny", ("resnet50",), ("null",), ("single-stream", "offline"), "tiny", "quick")
    with open_store(tmp_path / "store") as store:
        run_id, first = interrupted_run(store, config, detect_machine())
    assert len(first) == 1 and "fleet_node" not in first[0].head.settings
    done = accelbench(
        "run", "--resume", run_id, "--fleet", cluster.client_address, "--store", str(tmp_path / "store")
    )
    assert done.returncode == 0, done.stderr[-3000:]
    final = _results(tmp_path / "store", run_id)
    assert sorted(r.cell.scenario for r in final) == ["offline", "single-stream"]
    resumed = next(r for r in final if r.cell.key != first[0].cell.key)
    assert resumed.head.status == "unverified" and "fleet_node" in resumed.head.settings  # the null stack
    assert next(r for r in final if r.cell.key == first[0].cell.key).started_at == first[0].started_at


@pytest.mark.slow
@pytest.mark.exhaustive  # 22 s (CI); make test keeps four writer processes on one new store
# (test_reliability), and benchmarks/reliability.py runs five rounds of them
def test_a_fleet_run_and_a_local_run_write_one_store_at_once(cluster: LocalCluster, tmp_path: Path) -> None:
    """Two runs interleave their writes in one store (one on the fleet, one here): every record of both is
    there once, and ``store check`` finds nothing wrong."""
    store = tmp_path / "store"
    args = (
        "--workloads",
        "resnet50",
        "--size",
        "tiny",
        "--rules",
        "quick",
        "--stacks",
        "null",
        "--scenarios",
        "single-stream,offline",
        "--store",
        str(store),
        "--json",
    )
    here = [sys.executable, "-m", "accelbench", "run", *args]
    fleet = [*here[:4], "--fleet", cluster.client_address, *args]
    results = runs_at_once((fleet, here), store, timeout_s=600)
    on_fleet = [rs for rs in results.values() if all("fleet_node" in r.head.settings for r in rs)]
    assert len(on_fleet) == 1  # the other run's cells ran here
    for run_results in results.values():
        assert sorted(r.cell.scenario for r in run_results) == ["offline", "single-stream"]
        assert all(r.head.status == "unverified" for r in run_results)  # the null stack, measured to the end
    assert sum(len(rs) for rs in results.values()) == 4


def test_an_unreachable_fleet_is_one_line_exit_2_and_stores_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for address in ("127.0.0.1:1", "ray://127.0.0.1:1", "not an address"):
        done = accelbench("run", "--fleet", address, *SUITE, "--stacks", "null", "--store", str(store))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("accelbench: error: fleet") and done.stderr.count("\n") == 1, (
            done.stderr
        )
    with open_store(store) as opened:
        assert opened.run_ids() == []


def test_without_ray_the_fleet_is_unavailable(tmp_path: Path) -> None:
    code = "import sys; sys.modules['ray'] = None; from accelbench.cli import main; main()"
    args = ["run", "--fleet", "auto", *SUITE, "--stacks", "null", "--store", str(tmp_path / "store")]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "fleet unavailable" in done.stderr and "accelbench[fleet]" in done.stderr


def test_a_cell_asks_for_one_slot_and_the_gpus_its_device_needs() -> None:
    assert demand("cpu") == {FLEET_RESOURCE: 1.0}
    assert demand("cuda:1") == {FLEET_RESOURCE: 1.0, "GPU": 2.0}
    options = task_options("cuda:0", retries=3)
    assert options["num_gpus"] == 1.0 and options["resources"] == {FLEET_RESOURCE: 1.0}
    assert options["max_retries"] == 3 and options["retry_exceptions"] is False
    assert "num_gpus" not in task_options("cpu", retries=0)
