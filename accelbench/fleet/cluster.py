"""Joining a Ray cluster and reading which nodes are alive and what each offers.

Every node that may run cells declares the custom resource ``accelbench`` (normally 1: one cell at a
time per machine, so cells never time each other). A CUDA cell also needs ``GPU`` resources, which Ray
detects (or ``ray start --num-gpus N`` declares). Ray is imported only here and in ``scheduler``.
"""

from __future__ import annotations

import importlib
import logging
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from accelbench import errors
from accelbench.errors import UserError

log = logging.getLogger(__name__)

FLEET_RESOURCE = "accelbench"
"""The custom resource a node declares to take cells; each cell task holds one unit of it."""

REACH_TIMEOUT_S = 5.0
CLIENT_ATTEMPTS = 2
"""Ray Client's first session on a fresh head can fail to start (its proxy forks under gRPC); retry once."""
_ADDRESS = re.compile(r"^(?P<client>ray://)?(?P<host>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:]+\]):(?P<port>\d{1,5})$")


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One live node of the cluster and the resources it declared."""

    node_id: str
    host: str
    ip: str
    resources: Mapping[str, float]

    def offers(self, demand: Mapping[str, float]) -> bool:
        """True when the node's total resources cover ``demand``."""
        return all(self.resources.get(name, 0.0) >= amount for name, amount in demand.items())


@dataclass(frozen=True, slots=True)
class Fleet:
    """A connected Ray cluster: the address given and the ``ray`` module, imported once."""

    address: str
    ray: ModuleType

    def nodes(self) -> list[NodeInfo]:
        """The live nodes and their total resources."""
        return [_node_info(node) for node in self.ray.nodes() if node.get("Alive")]

    def workers(self) -> list[NodeInfo]:
        """The live nodes that take cells (they declare ``accelbench``)."""
        return [node for node in self.nodes() if node.resources.get(FLEET_RESOURCE, 0.0) > 0]

    def disconnect(self) -> None:
        """Leave the cluster (the cluster itself keeps running)."""
        self.ray.shutdown()


def connect(address: str) -> Fleet:
    """Join the Ray cluster at ``address``; a one-line ``UserError`` when Ray or the cluster is missing."""
    ray = _import_ray()
    _check_reachable(address)
    _init(ray, address, attempts=CLIENT_ATTEMPTS if address.startswith("ray://") else 1)
    _cluster_messages_to_stderr()
    fleet = Fleet(address, ray)
    if not fleet.workers():
        fleet.disconnect()
        raise UserError(
            f"fleet unavailable: no node of {address} declares the {FLEET_RESOURCE!r} resource; "
            f"start nodes with: ray start ... --resources '{{\"{FLEET_RESOURCE}\": 1}}'"
        )
    return fleet


def _init(ray: ModuleType, address: str, attempts: int) -> None:
    for attempt in range(1, attempts + 1):
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            return
        except Exception as err:  # Ray raises ConnectionError, RuntimeError, grpc errors...
            if attempt == attempts:
                raise UserError(f"fleet unavailable: cannot join {address}: {first_line(err)}") from None
            log.warning("joining %s failed (%s); trying again", address, first_line(err))
            ray.shutdown()


def _cluster_messages_to_stderr() -> None:
    """Ray prints cluster events (a node died, a task is retried) on the driver's stdout; send them to
    stderr so that stdout keeps only accelbench's output (``--json`` stays one document)."""
    worker = importlib.import_module("ray._private.worker")
    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "accelbench_stderr", False):
        return

    def to_stderr(data: dict[str, Any], ignore_prefix: bool) -> None:
        original({**data, "is_err": True}, ignore_prefix)

    to_stderr.accelbench_stderr = True  # type: ignore[attr-defined]
    worker.print_to_stdstream = to_stderr  # type: ignore[attr-defined]


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError as err:
        raise UserError(f"fleet unavailable: {err}; install accelbench[fleet]") from None
    return ray


def _check_reachable(address: str) -> None:
    """Fail fast on a malformed or closed address (Ray itself retries for a minute or more)."""
    if address == "auto":
        return
    match = _ADDRESS.match(address)
    if match is None:
        raise UserError(f"fleet address {address!r} is not ray://HOST:PORT, HOST:PORT or auto")
    host, port = match["host"].strip("[]"), int(match["port"])
    try:
        socket.create_connection((host, port), timeout=REACH_TIMEOUT_S).close()
    except OSError as err:
        raise UserError(f"fleet unavailable: cannot reach {host}:{port}: {err}") from None


def _node_info(node: Mapping[str, Any]) -> NodeInfo:
    return NodeInfo(
        node_id=str(node["NodeID"]),
        host=str(node.get("NodeManagerHostname", "")),
        ip=str(node.get("NodeManagerAddress", "")),
        resources=dict(node.get("Resources", {})),
    )


def first_line(err: BaseException) -> str:
    """``accelbench.errors.first_line``, 300 characters (Ray's messages run to many lines)."""
    return errors.first_line(err, 300)
