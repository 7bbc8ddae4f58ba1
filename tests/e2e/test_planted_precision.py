"""Stacks that declare int8 and spoil a share of their answers fail the quality gate (or are disqualified
by the alternate-seed audit) under quick and standard rules, with the judged samples' numbers in the
reason; the honest dynamic-int8 stack beside them stays ok (``tests/e2e/planted_precision.py``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli import installed_plugins, measured_ok
from tests.e2e.planted_precision import HONEST, PRECISION_CHEATS

CAUGHT = ("quality gate failed: top1: ", "alternate_seed audit: inputs from seed")
"""Wrong samples among the timed checks fail the gate; among the post-run samples alone, the
alternate-seed audit (the run's own checks passed, so the cell is disqualified)."""


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("precision-plugins")
    return installed_plugins(site, "planted-precision", "accelbench.stacks", {**PRECISION_CHEATS, **HONEST})


def run_stacks(env: dict[str, str], store: Path, rules: str, *stacks: str) -> dict[str, Any]:
    """``stacks`` on the tiny ResNet-50, single-stream, under ``rules``."""
    args = [
        "run",
        "--suite",
        "tiny",
        "--workloads",
        "resnet50",
        "--stacks",
        ",".join(stacks),
        "--rules",
        rules,
    ]
    args = [*args, "--scenarios", "single-stream", "--no-probe", "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-m", "accelbench", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = subprocess.run(
        [sys.executable, "-m", "accelbench", "show", "--json", "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    return {r["cell"]["stack"]: r for r in json.loads(shown.stdout)["results"]}


def assert_caught(results: dict[str, Any]) -> None:
    for stack in PRECISION_CHEATS:
        result = results[stack]
        assert result["status"] in ("quality_failed", "disqualified"), (
            stack,
            result["status"],
            result["reason"],
        )
        assert result["reason"].startswith(CAUGHT), (stack, result["reason"])
        assert re.search(r"\d+ of \d+ (judged )?samples wrong", result["reason"]), result["reason"]


@pytest.mark.slow
def test_int8_cheats_are_caught_under_quick_rules(
    plugin_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    store = tmp_path_factory.mktemp("precision-quick") / "store"
    assert_caught(run_stacks(plugin_env, store, "quick", *PRECISION_CHEATS))


@pytest.mark.slow
@pytest.mark.exhaustive
def test_int8_cheats_are_caught_under_standard_rules(
    plugin_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The honest dynamic-int8 stack beside them stays ok (its worst judged sample: 0.019 of the tiny
    ResNet-50's reference, the budget 0.5)."""
    store = tmp_path_factory.mktemp("precision-standard") / "store"
    results = run_stacks(plugin_env, store, "standard", *PRECISION_CHEATS, *HONEST)
    assert_caught(results)
    honest = results["planted-int8-honest"]
    assert measured_ok(honest), (honest["status"], honest["reason"])
    assert honest["effective_precision"] == "int8" and honest["quality"]["wrong"] == 0
