"""What a fleet node does with one cell: detect itself, run the cell in its own process, report back.

This function is the body of the Ray task; it runs in a Ray worker on the node and never assumes the
driver's folders exist there. The cell works in a node-local run folder,
``$ACCELBENCH_FLEET_DIR/<run_id>`` (default ``<tmp>/accelbench-fleet/<run_id>``), where its LoadGen logs,
caches and private HOME stay; only the outcome document travels back through Ray, with the node's own
machine record. The memory limit and thread count are those of the node, not of the driver.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from accelbench.config import RunConfig, effective_mem_limit_bytes
from accelbench.hardware.detect import detect_machine, machine_to_dict
from accelbench.isolation import run_cell
from accelbench.runner import PlannedCell, cell_spec, unavailable_reason

log = logging.getLogger(__name__)

FLEET_DIR_ENV = "ACCELBENCH_FLEET_DIR"


def node_run_dir(run_id: str) -> Path:
    """The node-local folder of a run: ``$ACCELBENCH_FLEET_DIR/<run_id>`` or under the temp folder."""
    base = os.environ.get(FLEET_DIR_ENV) or str(Path(tempfile.gettempdir()) / "accelbench-fleet")
    return Path(base).resolve() / run_id


def fleet_task(run_id: str, config: RunConfig, planned: PlannedCell) -> dict[str, Any]:
    """The Ray task: ``run_on_node`` with the id and address Ray gives this node."""
    import ray

    node = {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address()}
    return run_on_node(run_id, config, planned, node)


def run_on_node(run_id: str, config: RunConfig, planned: PlannedCell, node: dict[str, str]) -> dict[str, Any]:
    """Measure ``planned`` on this node; return its outcome, timings, stderr tail and the node's record.

    ``node`` identifies the node (``node_id``, ``ip``); host name and run folder are added here.
    """
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    machine = detect_machine()
    run_dir = node_run_dir(run_id)
    reason = unavailable_reason(planned)
    if reason:
        outcome: dict[str, Any] = {"status": "unavailable", "reason": reason}
        wall_s, tail = 0.0, ""
    else:
        start = time.perf_counter()
        spec = cell_spec(run_id, config, planned, run_dir)
        child = run_cell(spec, config.timeout_s, effective_mem_limit_bytes(config))
        outcome, wall_s, tail = child.outcome, time.perf_counter() - start, child.stderr_tail
    log.info("%s on %s: %s", planned.cell.key, node.get("node_id"), outcome.get("status"))
    return {
        "outcome": outcome,
        "started_at": started_at,
        "wall_s": wall_s,
        "stderr_tail": tail,
        "machine": machine_to_dict(machine),
        "machine_fingerprint": machine.fingerprint,
        "node": {**node, "host": socket.gethostname(), "run_dir": str(run_dir)},
    }
