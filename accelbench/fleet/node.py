"""What a fleet node does with one cell: detect itself, run the cell in its own process, report back.

This function is the body of the Ray task; it runs in a Ray worker on the node and never assumes the
driver's folders exist there. The cell runs through the one cell pipeline (``accelbench.cell.pipeline``)
in a node-local run folder, ``$ACCELBENCH_FLEET_DIR/<run_id>`` (default
``<tmp>/accelbench-fleet/<run_id>``), where its LoadGen logs, caches and private HOME stay; only the
result document travels back through Ray, stamped with the node's fingerprint, with the node's own
machine record. The memory limit and thread count are those of the node, not of the driver.
"""

from __future__ import annotations

import logging
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from accelbench.cell.pipeline import run_cell
from accelbench.cellspec import PlannedCell
from accelbench.config import RunConfig
from accelbench.hardware.detect import detect_machine, machine_to_dict
from accelbench.stored import to_dict

log = logging.getLogger(__name__)

FLEET_DIR_ENV = "ACCELBENCH_FLEET_DIR"


def node_run_dir(run_id: str) -> Path:
    """The node-local folder of a run: ``$ACCELBENCH_FLEET_DIR/<run_id>`` or under the temp folder."""
    base = os.environ.get(FLEET_DIR_ENV) or str(Path(tempfile.gettempdir()) / "accelbench-fleet")
    return Path(base).resolve() / run_id


def fleet_task(
    run_id: str, config: RunConfig, planned: PlannedCell, input_seed: int | None = None
) -> dict[str, Any]:
    """The Ray task: ``run_on_node`` with the id and address Ray gives this node."""
    import ray

    node = {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address()}
    return run_on_node(run_id, config, planned, node, input_seed)


def run_on_node(
    run_id: str,
    config: RunConfig,
    planned: PlannedCell,
    node: dict[str, str],
    input_seed: int | None = None,
) -> dict[str, Any]:
    """Measure ``planned`` on this node; return its result document and the node's record.

    ``node`` identifies the node (``node_id``, ``ip``); host name and run folder are added here.
    ``input_seed`` is the cell's own (the node never gets the run's: ``FleetExecutor``).
    """
    machine = detect_machine()
    run_dir = node_run_dir(run_id)
    result = run_cell(planned, run_id, config, run_dir, machine.fingerprint, input_seed)
    log.info("%s on %s: %s", planned.cell.key, node.get("node_id"), result.head.status)
    return {
        "result": to_dict(result),
        "machine": machine_to_dict(machine),
        "node": {**node, "host": socket.gethostname(), "run_dir": str(run_dir)},
    }
