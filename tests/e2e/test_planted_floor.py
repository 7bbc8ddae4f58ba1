"""A stack that forges the noise floor cannot loosen the drift limit of later cells nor of a later run:
the floor travels to each cell in its spec, and a reused floor is checked against fresh pairs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from accelbench.meters import reference_probe
from tests.e2e.cli import installed_plugins
from tests.e2e.planted_floor import CACHE_VARIABLE, FORGED_DRIFT


def _run(env: dict[str, str], store: Path, stacks: str = "planted-floor-forger,null") -> list[dict[str, Any]]:
    """A tiny quick run of ``stacks`` (the forger's cell, then an honest null cell): their results in plan
    order."""
    args = ["run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", stacks]
    args += ["--scenarios", "single-stream", "--no-probe", "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-m", "accelbench", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    show = [sys.executable, "-m", "accelbench", "show", "--json", "--store", str(store)]
    shown = subprocess.run(show, capture_output=True, text=True, env=env, check=True)
    results: list[dict[str, Any]] = json.loads(shown.stdout)["results"]
    return sorted(results, key=lambda r: r["cell"]["stack"] != "planted-floor-forger")


def test_a_forged_floor_loosens_no_later_cell_and_no_later_run(tmp_path: Path) -> None:
    cache_home = tmp_path / "cache-home"
    cache = cache_home / "accelbench" / f"noise-floor-{socket.gethostname()}.json"
    entries = {"planted-floor-forger": "tests.e2e.planted_floor:ForgedFloorStack"}
    env = installed_plugins(tmp_path / "site", "planted-floor", "accelbench.stacks", entries)
    env.update(XDG_CACHE_HOME=str(cache_home), **{CACHE_VARIABLE: str(cache)})
    forger, honest = _run(env, tmp_path / "store1")
    assert forger["cell"]["stack"] == "planted-floor-forger" and honest["cell"]["stack"] == "null"
    assert json.loads(cache.read_text())["median_drift"] == FORGED_DRIFT  # the forgery was written
    limits = {(r["noise"]["floor"], r["noise"]["threshold"]) for r in (forger, honest)}
    assert len(limits) == 1  # the later cell used the floor the runner took before the forger ran
    ((floor, threshold),) = limits
    assert floor < FORGED_DRIFT and threshold == reference_probe.drift_limit(floor)
    # a later run finds the forged cache (fresh, self-consistent) and does not reuse it: its floor is the
    # runner's, taken before any cell, so an honest cell alone shows it (a forger there would forge again)
    (later,) = _run(env, tmp_path / "store2", "null")
    assert later["noise"]["floor"] < FORGED_DRIFT
    assert later["noise"]["threshold"] == reference_probe.drift_limit(later["noise"]["floor"])
