"""Planted LLM cheaters (``tests.e2e.planted_llm``), installed as a third party installs a generating stack
(the ``accelbench.generation_stacks`` entry point), end up ``disqualified`` with the audit and its numbers
in the reason, and rank nowhere; torch-eager beside them stays ``ok``. tiny-llama, quick rules.

The prefix-KV cheater is run on smollm2-135m (``test_prefix_kv_reuse_is_disqualified_on_smollm2``): on
tiny-llama a prefill costs about what a decode step does (a 64-wide model: call overhead), so reusing a
prefix saves nothing there, and there is nothing to catch.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelbench.generation.models import missing_packages
from tests.e2e.cli import disturbed, installed_plugins
from tests.e2e.planted_llm import LLM_CHEATS, SPIN_LOG

pytestmark = pytest.mark.skipif(bool(missing_packages()), reason=f"llm extra missing: {missing_packages()}")

REPO = Path(__file__).parents[2]
REASONS = {
    "planted-llm-reply-cache": ("repeat audit: ",),
    "planted-llm-early-token": ("repeat audit: ", "first_token audit: "),
    "planted-llm-noisy-cache": ("repeat audit: ",),
}
"""The first audit each cheat fails, as its reason begins (the early first token fails both)."""


def plugin_env(site: Path) -> dict[str, str]:
    """An environment in which the cheaters are installed generating stacks."""
    return installed_plugins(site, "planted-llm-cheaters", "accelbench.generation_stacks", LLM_CHEATS)


def cli(env: dict[str, str], *args: str, timeout_s: float = 1500) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "accelbench", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)


def run(env: dict[str, str], store: Path, workload: str, stacks: tuple[str, ...]) -> dict[str, Any]:
    args = ["run", "--suite", "tiny", "--workloads", workload, "--stacks", ",".join(stacks)]
    done = cli(
        env, *args, "--scenarios", "single-stream", "--rules", "quick", "--no-probe", "--store", str(store)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = cli(env, "show", "--json", "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-2000:]
    document: dict[str, Any] = json.loads(shown.stdout)
    return document


def by_stack(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["cell"]["stack"]: r for r in document["results"]}


def ranked(document: dict[str, Any]) -> set[str]:
    return {e["stack"] for board in document["leaderboard"] for e in board["entries"]}


def test_the_plugin_group_lists_generating_stacks(tmp_path: Path) -> None:
    env = plugin_env(tmp_path / "site")
    listed = cli(env, "list", "stacks", timeout_s=300)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert all(name in listed.stdout for name in LLM_CHEATS)


@pytest.mark.slow
def test_llm_cheaters_are_disqualified_and_never_rank(tmp_path: Path) -> None:
    env = plugin_env(tmp_path / "site") | {SPIN_LOG: str(tmp_path / "spun.txt")}
    cheats = tuple(REASONS)
    document = run(env, tmp_path / "store", "tiny-llama", ("torch-eager", *cheats))
    results = by_stack(document)
    honest = results["torch-eager"]
    assert honest["status"] in ("ok", "unstable") or disturbed(honest), (honest["status"], honest["reason"])
    blurred = [stack for stack in REASONS if disturbed(results[stack])]  # load beside the run: never ranks
    assert len(blurred) < len(REASONS), [results[stack]["reason"] for stack in blurred]
    for stack, starts in REASONS.items():
        result = results[stack]
        if stack in blurred:
            continue
        assert result["status"] == "disqualified", (stack, result["status"], result["reason"])
        assert result["reason"].startswith(starts), (stack, result["reason"])
        assert re.search(r"TTFT ratio 0\.[0-4]\d", result["reason"]) or "TTFT/TPOT 0.0" in result["reason"]
    assert results["planted-llm-reply-cache"]["audit"]["prefix_cache"]["verdict"] == "pass"  # not immediate
    early = results["planted-llm-early-token"]
    busy = (early.get("noise") or {}).get("other_load_cores", 0.0) >= 0.1  # a timing audit blurred by load
    assert early["audit"]["first_token"]["verdict"] == "fail" or busy, early["audit"]["first_token"]
    assert ranked(document) <= {"torch-eager"}
    noisy = results["planted-llm-noisy-cache"]  # its own spinner is not outside load: it still convicts
    spun_s = sum(float(path.read_text()) for path in tmp_path.glob("spun.txt.*"))
    assert spun_s > 0.5 and noisy["noise"]["other_load_cores"] < 0.1, (spun_s, noisy["noise"])
