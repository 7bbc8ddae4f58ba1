"""Ray-based distribution of a run's cells across the nodes of an existing Ray cluster.

``connect(address)`` joins a cluster (``ray://HOST:PORT`` through Ray Client, ``HOST:PORT`` of the
head's GCS, or ``auto``) and returns a ``Fleet``; ``FleetExecutor`` runs a run's cells as Ray tasks, one
at a time per node (the ``accelbench`` resource), each in its own process on that node, and yields the
results as they finish. Ray is optional (``accelbench[fleet]``): without it ``connect`` raises a
``UserError`` saying the fleet is unavailable. See ``docs/fleet.md``.
"""

from __future__ import annotations

from accelbench.fleet.cluster import FLEET_RESOURCE, Fleet, connect
from accelbench.fleet.scheduler import FleetExecutor

__all__ = ["FLEET_RESOURCE", "Fleet", "FleetExecutor", "connect"]
