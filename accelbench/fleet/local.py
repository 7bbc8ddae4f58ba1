"""A Ray cluster on this machine's loopback: a head and workers, each a real, separate Ray node.

For the fleet tests and ``benchmarks/fleet_scaling.py``: every node is started with ``ray start`` in a
session of its own, so ``kill_node`` takes exactly that node down (its raylet, workers and the cell
processes they started, which carry the node's marker in their environment) and ``close`` stops only
what this cluster started (never ``ray stop``, which would stop every Ray on the machine). Each node
gets its own ``ACCELBENCH_FLEET_DIR``, as separate machines would have separate disks.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from accelbench.fleet.cluster import FLEET_RESOURCE
from accelbench.fleet.node import FLEET_DIR_ENV

MARKER_ENV = "ACCELBENCH_LOCAL_FLEET_NODE"
"""Set in each node's environment (inherited by its workers and cells) to find its processes."""
OBJECT_STORE_BYTES = 100 * 2**20
START_TIMEOUT_S = 120.0
HEALTH_CHECK_ENV = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "5"}
"""A lost node is declared dead after about 5 s instead of Ray's default 15 s or more."""


@dataclass(frozen=True, slots=True)
class LocalNode:
    """One node started by ``LocalCluster``: its session (process group) and marker."""

    name: str
    pgid: int
    marker: str


@dataclass
class LocalCluster:
    """A head (``head_cells`` cell slots) and ``workers`` worker nodes on 127.0.0.1, under ``root``."""

    root: Path
    workers: int = 1
    head_cells: int = 1
    worker_gpus: int = 0
    """GPUs each worker node declares (for placement tests; Ray does not check they exist)."""
    nodes: list[LocalNode] = field(default_factory=list)
    gcs_port: int = 0
    client_port: int = 0

    @property
    def address(self) -> str:
        """The head's GCS address (``HOST:PORT``), for a driver on this machine."""
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def client_address(self) -> str:
        """The Ray Client address (``ray://HOST:PORT``)."""
        return f"ray://127.0.0.1:{self.client_port}"

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the head, then the workers; raise RuntimeError when one does not come up."""
        self.gcs_port, self.client_port = _free_port(), _free_port()
        head = ["--head", f"--port={self.gcs_port}", f"--ray-client-server-port={self.client_port}"]
        head += ["--include-dashboard=false"]
        self._start_node("head", [*head, *_resources(self.head_cells, 0)])
        for index in range(self.workers):
            self.add_worker(f"worker{index + 1}")

    def add_worker(self, name: str) -> LocalNode:
        """Start one more worker node that joins the head."""
        return self._start_node(name, [f"--address={self.address}", *_resources(1, self.worker_gpus)])

    def kill_node(self, name: str) -> None:
        """SIGKILL a node's processes, as if its machine had vanished."""
        node = next(n for n in self.nodes if n.name == name)
        _kill(node)
        self.nodes.remove(node)

    def close(self) -> None:
        """Kill every process this cluster started (workers first, the head last)."""
        for node in reversed(self.nodes):
            _kill(node)
        self.nodes.clear()

    def _start_node(self, name: str, args: list[str]) -> LocalNode:
        marker = str(self.root / name)
        env = {**os.environ, MARKER_ENV: marker, FLEET_DIR_ENV: str(self.root / name / "fleet")}
        env["RAY_USAGE_STATS_ENABLED"] = "0"
        # a private HOME: an auth token a local ray.init() left in ~/.ray makes the head demand it from
        # nodes that do not send it (Ray 2.60: "InvalidAuthToken ... RAY_AUTH_MODE is 'disabled'")
        home = self.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(home)
        env["GRPC_ENABLE_FORK_SUPPORT"] = "0"  # Ray Client's proxy otherwise dies forking its server
        env.update(HEALTH_CHECK_ENV)
        command = [str(Path(sys.executable).with_name("ray")), "start", *args, *_node_ports()]
        command.append(f"--temp-dir={self.root / 'ray'}")
        log_path = self.root / f"{name}-start.log"
        self.root.mkdir(parents=True, exist_ok=True)
        with log_path.open("w") as log:
            proc = subprocess.Popen(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        node = LocalNode(name, proc.pid, marker)
        self.nodes.append(node)
        try:
            code = proc.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = -1
        if code != 0:
            raise RuntimeError(f"ray start of {name} failed ({code}): {log_path.read_text()[-2000:]}")
        return node


def _resources(cells: int, gpus: int) -> list[str]:
    args = ["--num-cpus=1", f"--resources={json.dumps({FLEET_RESOURCE: cells})}"]
    args += [f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats"]
    return [*args, f"--num-gpus={gpus}"]


def _node_ports() -> list[str]:
    """Ports every node on one machine needs apart (some Ray defaults are fixed numbers)."""
    low = random.randrange(20000, 30000, 100)
    return [
        f"--dashboard-agent-listen-port={_free_port()}",
        f"--dashboard-agent-grpc-port={_free_port()}",
        f"--metrics-export-port={_free_port()}",
        f"--runtime-env-agent-port={_free_port()}",
        f"--min-worker-port={low}",
        f"--max-worker-port={low + 99}",
    ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _kill(node: LocalNode) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(node.pgid, signal.SIGKILL)
    for proc in psutil.process_iter():  # cell processes left their node's session; they keep the marker
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(MARKER_ENV) == node.marker:
                proc.kill()
    time.sleep(0.5)


def temporary_root() -> Path:
    """A fresh folder for a cluster's files (short: Ray's socket paths must stay under 108 bytes)."""
    return Path(tempfile.mkdtemp(prefix="abfleet-"))
