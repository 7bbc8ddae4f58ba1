"""Fleet scaling: wall time of the same cells on a loopback Ray cluster of 1 vs 2 cell-taking nodes.

Both clusters are real Ray nodes on this machine (``accelbench.fleet.local``), each taking one cell at a
time; every cell runs with one thread so two nodes do not oversubscribe two cores. Each cluster first
runs the cells once untimed (Ray workers and the cells' pre-imported template process start on each
node), then the timed run. Scaling efficiency = (T1 / T2) / 2. On a 2-core VM shared with other work the
second node competes with the driver, Ray's own processes and everything else: read the figure as a
lower bound, not as what two real machines give. Usage: ``python benchmarks/fleet_scaling.py``.
"""

from __future__ import annotations

import os
import shutil
import time

from accelbench import runner
from accelbench.config import RunConfig
from accelbench.fleet import FleetExecutor, connect
from accelbench.fleet.local import LocalCluster, temporary_root
from accelbench.hardware.detect import detect_machine
from accelbench.store import open_store

CONFIG = RunConfig(
    suite="fleet-scaling",
    workloads=("resnet50",),
    stacks=("null", "torch-eager"),
    scenarios=("single-stream", "offline"),
    size="tiny",
    rules="quick",
    threads=1,
    samples=16,
)


def timed_run_s(workers: int) -> tuple[float, int, int]:
    """Wall seconds of the timed run on ``1 + workers`` nodes, its cell count and distinct nodes used."""
    root = temporary_root()
    machine = detect_machine()
    try:
        with LocalCluster(root, workers=workers) as cluster, open_store(root / "store") as store:
            fleet = connect(cluster.address)
            try:
                executor = FleetExecutor(fleet)
                for _warm_up_then_timed in range(2):
                    run_id = runner.start_run(store, CONFIG, machine)
                    start = time.perf_counter()
                    results = runner.execute(store, run_id, CONFIG, machine, executor=executor)
                    wall_s = time.perf_counter() - start
            finally:
                fleet.disconnect()
            bad = [(r.cell.key, r.head.status, r.head.reason) for r in results if r.head.status != "ok"]
            if bad:
                raise SystemExit(f"cells failed: {bad}")
            nodes = {r.head.settings["fleet_node"]["node_id"] for r in results}
            return wall_s, len(results), len(nodes)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Print the table."""
    one_s, cells, one_nodes = timed_run_s(workers=0)
    two_s, _, two_nodes = timed_run_s(workers=1)
    speedup = one_s / two_s
    print(
        f"fleet scaling: {cells} cells (resnet50 tiny; null, torch-eager; single-stream, offline; 1 thread)"
    )
    print(f"machine: {os.cpu_count()} logical CPUs, shared; loopback Ray cluster")
    print(f"{'nodes':>5}  {'nodes used':>10}  {'wall_s':>8}  {'speedup':>7}  {'efficiency':>10}")
    print(f"{1:>5}  {one_nodes:>10}  {one_s:>8.1f}  {1.0:>7.2f}  {1.0:>10.0%}")
    print(f"{2:>5}  {two_nodes:>10}  {two_s:>8.1f}  {speedup:>7.2f}  {speedup / 2:>10.0%}")


if __name__ == "__main__":
    main()
