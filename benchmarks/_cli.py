"""Run the accelbench command line from a benchmark script and return its JSON document."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def run_json(store: Path, *args: str) -> dict[str, Any]:
    """``accelbench run ARGS --json --store STORE``; exits on failure with the CLI's stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "accelbench", "run", *args, "--json", "--store", str(store)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"accelbench run failed:\n{done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout)
    return document
