"""A cache of the timed traffic's repeats that computes whatever looks like a probe
(``planted-traffic-cache``, ``tests/e2e/planted_traffic.py``), installed as a plugin stack and run offline
on the tiny suite under standard rules beside torch-eager: it must end ``disqualified`` by the repeat
audit (its probes' floor or the timed traffic's windows and mirror, ``accelbench.audits.traffic``), with
its numbers, and rank nowhere; the honest stack is never disqualified.

Only a long run shows the class: the cheat gains on the traffic's repeats, and a quick offline run of the
tiny ResNet issues about 260 samples from a pool of 1024 (nothing repeats, nothing is gained). Under
standard rules it issued ~30000 samples a trial here (11.6x the honest samples/s, 10079 against 870).
The batched cheat (``planted-mixed-batch-cache``) is judged in ``tests/unit/test_traffic_pairs.py``: its
standard run here held 23 traffic pairs, under the 32 a group needs.
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
    stacks = "torch-eager,planted-traffic-cache"
    args = ["run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", stacks, "--rules", "standard"]
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
@pytest.mark.exhaustive  # 450 s here (loaded 2-core VM): three standard offline trials per stack
def test_caches_of_the_timed_traffic_are_disqualified_by_the_repeat_audit(
    offline_run: dict[str, Any],
) -> None:
    by_stack = {r["cell"]["stack"]: r for r in offline_run["results"]}
    honest = by_stack["torch-eager"]
    assert honest["status"] != "disqualified", honest["reason"]
    assert measured_ok(honest) or honest["status"] == "invalid", (honest["status"], honest["reason"])
    result = by_stack["planted-traffic-cache"]
    assert result["status"] == "disqualified", (result["status"], result["reason"])
    assert result["reason"].startswith(("repeat audit: samples seen", "repeat audit: timed samples seen"))
    assert re.search(r"\d+ pairs", result["reason"]), result["reason"]
    ranked = {e["stack"] for board in offline_run["leaderboard"] for e in board["entries"]}
    assert ranked <= {"torch-eager"}
