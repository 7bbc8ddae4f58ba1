"""The accelbench CLI run as a user runs it: a fresh interpreter, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any


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


def measured_ok(result: Mapping[str, object]) -> bool:
    """An honest real stack's cell: ``ok``, or ``unstable`` because the machine itself drifted."""
    if result["status"] == "ok":
        return True
    noise = result.get("noise") or {}
    return result["status"] == "unstable" and isinstance(noise, Mapping) and noise.get("unstable") is True


def result_ok(result: Any) -> bool:
    """``measured_ok`` for a ``Result`` record."""
    return result.status == "ok" or (
        result.status == "unstable" and result.noise is not None and result.noise.unstable
    )
