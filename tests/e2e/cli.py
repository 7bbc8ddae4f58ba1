"""The accelbench CLI run as a user runs it: a fresh interpreter, output captured."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping


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
