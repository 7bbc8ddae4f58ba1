"""Cheaters that serve the timed traffic's repeats and compute every probe honestly
(``tests/e2e/planted_traffic.py``), installed as plugin stacks and run offline on the tiny suite under
quick rules beside torch-eager: each must end ``disqualified`` by the repeat audit's windows over the
timed traffic (``accelbench.audits.traffic``), with its numbers, and rank nowhere; the honest stack stays
``ok`` (or ``unstable`` on a busy machine) and is never disqualified.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.e2e.cli import installed_plugins, measured_ok
from tests.e2e.planted_traffic import TRAFFIC_CHEATS


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    site = tmp_path_factory.mktemp("plugin-site")
    env = installed_plugins(site, "planted-traffic", "accelbench.stacks", TRAFFIC_CHEATS)
    store = tmp_path_factory.mktemp("traffic") / "store"
    stacks = ",".join(("torch-eager", *TRAFFIC_CHEATS))
    args = ["run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", stacks, "--rules", "quick"]
    args += ["--scenarios", "offline", "--no-probe", "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-m", "accelbench", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run(
        [sys.executable, "-m", "accelbench", "show", "--json", "--store", str(store)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr[-2000:]
    document: dict[str, Any] = json.loads(shown.stdout)
    return document


@pytest.mark.slow
def test_caches_of_the_timed_traffic_are_disqualified_by_the_repeat_audit(
    offline_run: dict[str, Any],
) -> None:
    by_stack = {r["cell"]["stack"]: r for r in offline_run["results"]}
    honest = by_stack["torch-eager"]
    assert measured_ok(honest), (honest["status"], honest["reason"])
    for stack in TRAFFIC_CHEATS:
        result = by_stack[stack]
        assert result["status"] == "disqualified", (stack, result["status"], result["reason"])
        assert result["reason"].startswith("repeat audit: timed samples seen before ran"), result["reason"]
        assert re.search(r"\d+ pairs, 99\.9% CI", result["reason"]), result["reason"]
    assert by_stack["planted-mixed-batch-cache"]["settings"]["batch_size"] == 8
    ranked = {e["stack"] for board in offline_run["leaderboard"] for e in board["entries"]}
    assert ranked <= {"torch-eager"}
