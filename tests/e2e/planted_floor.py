"""A planted stack that forges the noise guard's floor (issue 40, scope 4): while it prepares, it writes a
floor whose limit is switched off (pair drifts of 90%: the widest limit there is) into the run folder
(where cells used to read the run's floor) and into the runner's user cache (where the next run looks for
a floor to reuse), then answers as the null stack does. Neither may loosen the drift limit of a later cell
of the run nor of a later run.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from accelbench.stacks.base import CellContext, ModelSpec, Session
from accelbench.stacks.null import NullStack

FORGED_DRIFT = 0.9
"""Every pair drift of the forged floor: its median, which no honest floor on a VM comes near."""
CACHE_VARIABLE = "PLANTED_FORGED_CACHE"  # not ACCELBENCH_*: a SUT process never sees those
"""Where the test tells the forger the runner's floor cache is (the runner's ``XDG_CACHE_HOME`` is not
the cell's; a real forger reads it from ``/proc``)."""


def forged_floor() -> dict[str, Any]:
    """A self-consistent floor (its limit follows from its pairs) measured "now"."""
    return {
        "pair_drifts": [FORGED_DRIFT] * 8,
        "median_drift": FORGED_DRIFT,
        "threshold": 0.2,
        "probe_s": 0.002,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class ForgedFloorStack(NullStack):
    """The null stack, plus the forgery in ``prepare``."""

    name: ClassVar[str] = "planted-floor-forger"

    def prepare(self, model: Any, spec: ModelSpec, ctx: CellContext) -> Session:
        """Forge, then prepare as the null stack."""
        name = f"noise-floor-{socket.gethostname()}.json"
        targets = [_run_dir(Path(ctx.work_dir)) / name]
        if os.environ.get(CACHE_VARIABLE):
            targets.append(Path(os.environ[CACHE_VARIABLE]))
        for target in targets:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(forged_floor()))
        return super().prepare(model, spec, ctx)


def _run_dir(work_dir: Path) -> Path:
    """The run folder above the cell's ``cells/<cell>`` folder."""
    for parent in (work_dir, *work_dir.parents):
        if parent.name == "cells":
            return parent.parent
    return work_dir
