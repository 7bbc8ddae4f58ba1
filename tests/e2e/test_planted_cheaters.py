"""Planted cheaters, installed as a user installs a plugin stack (the ``accelbench.stacks`` entry point),
end up ``disqualified`` with the audit and its numbers in the reason, and rank nowhere: not in the
terminal leaderboard, not in ``show --json``'s leaderboard, not in the HTML report's charts (Chromium),
not in the Goodhart table. The honest stack beside them stays ``ok``. Under tiny (``quick``) and
``standard`` rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.cli import disturbed, installed_plugins, measured_ok
from tests.e2e.planted import CHEATS
from tests.e2e.test_html_report import chromium_path

REPO = Path(__file__).parents[2]
CACHE = ("repeat audit: samples seen", "caching audit: an input repeated at once")
"""A cache is caught by the in-run repeat probes or by the immediate repeats after the run, whichever
concludes first: a cheat that speeds up after calibration can end LoadGen's run early (it runs out of
pre-generated queries) and leave the repeat audit too few pairs to be sure."""
REASONS: dict[str, str | tuple[str, ...]] = {
    "planted-cache": CACHE,
    "planted-cache-after-3": "repeat audit: samples seen",
    "planted-cache-after-8": "repeat audit: samples seen",
    "planted-cache-after-warmup": CACHE,
    "planted-cache-after-queries": CACHE,
    "planted-skip-repeat": "caching audit: an input repeated at once",
    "planted-stale": "output audit: output check: query",
    "planted-zeros": "output audit: output check: query",
    "planted-bf16": "precision audit: computes below its declared precision",
    "planted-early-return": "output audit: output check: query",
    "planted-sighting-window": "repeat audit: samples seen",
    "planted-recency-gated": "repeat audit: samples seen",
    "planted-seed-oracle": "output audit: output check: query",
}
"""The first audit each cheat fails, as its reason begins."""


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which the cheaters are installed plugin stacks (a dist-info with entry points)."""
    site = tmp_path_factory.mktemp("plugin-site")
    return installed_plugins(site, "planted-cheaters", "accelbench.stacks", CHEATS)


def cli(env: dict[str, str], *args: str, timeout_s: float = 1500) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "accelbench", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)


def run_cheaters(
    env: dict[str, str], store: Path, rules: str, *extra: str, cheats: tuple[str, ...] = tuple(CHEATS)
) -> dict[str, Any]:
    stacks = ",".join(("torch-eager", *cheats))
    args = ["run", "--suite", "tiny", "--workloads", "resnet50", "--stacks", stacks, "--rules", rules]
    done = cli(env, *args, "--scenarios", "single-stream", "--no-probe", "--store", str(store), *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = cli(env, "show", "--json", "--store", str(store))
    assert shown.returncode == 0, shown.stderr[-2000:]
    return {"stdout": done.stdout, "document": json.loads(shown.stdout)}


VARIANT_CHEATS = ("planted-cache", "planted-seed-oracle")
"""The cheaters run again on a seeded variant (``variant_run``): a cache, and an oracle of the canonical
model's seed. Every cheater on a variant too was 14 more cells (~45 s of make test): ``make test-all``
runs them all (``test_every_cheater_is_disqualified_on_a_variant``)."""


@pytest.fixture(scope="module")
def quick_run(plugin_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("cheaters-quick") / "store"
    return {**run_cheaters(plugin_env, store, "quick"), "store": store}


@pytest.fixture(scope="module")
def variant_run(plugin_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = tmp_path_factory.mktemp("cheaters-variant") / "store"
    extra = ("--variants", "1", "--variant-seed", "3")
    return {**run_cheaters(plugin_env, store, "quick", *extra, cheats=VARIANT_CHEATS), "store": store}


def assert_disqualified(
    document: dict[str, Any], variant: str = "canonical", cheats: tuple[str, ...] = tuple(CHEATS)
) -> None:
    by_stack = {r["cell"]["stack"]: r for r in document["results"] if r["cell"]["variant"] == variant}
    honest = by_stack["torch-eager"]
    assert measured_ok(honest), (honest["status"], honest["reason"], honest["audit"])
    busy = [stack for stack in cheats if _busy_elsewhere(by_stack[stack])]
    assert len(busy) <= min(2, len(cheats) - 1), busy  # a load beside the run blurs a few cells, not the test
    for stack in cheats:
        words = REASONS[stack]
        result = by_stack[stack]
        if stack in busy:
            continue  # not ranked either (checked below); its timing audits were blurred by the load
        assert result["status"] == "disqualified", (stack, result["status"], result["reason"])
        assert result["reason"].startswith(words), (stack, result["reason"])
        assert re.search(r"\d", result["reason"]), result["reason"]
    ranked = {e["stack"] for board in document["leaderboard"] for e in board["entries"]}
    assert ranked <= {"torch-eager"} and (ranked or honest["status"] == "unstable")
    listed = {u["stack"]: u["status"] for u in document["unverified"] if u["stack"] in cheats}
    expected = {stack: by_stack[stack]["status"] if stack in busy else "disqualified" for stack in cheats}
    assert listed == expected


def _busy_elsewhere(result: dict[str, Any]) -> bool:
    """The cell's measurement was disturbed from outside the run (``tests.e2e.cli.disturbed``: a helper's
    tests beside ``make test``: a cache's timing audit passed at 0.94 cores of outside load, 2026-12-04).
    Such a cell never ranks; the cheat's audit is judged on a quiet machine."""
    return disturbed(result)


@pytest.mark.slow
def test_every_cheater_is_disqualified_under_quick_rules(quick_run: dict[str, Any]) -> None:
    assert_disqualified(quick_run["document"])


@pytest.mark.slow
@pytest.mark.exhaustive  # 28 s with the next test (one run); make test-all runs every cheater on a variant
def test_cheaters_are_disqualified_on_a_seeded_variant(variant_run: dict[str, Any]) -> None:
    assert_disqualified(variant_run["document"], cheats=VARIANT_CHEATS)
    assert_disqualified(variant_run["document"], variant="s3-v1", cheats=VARIANT_CHEATS)


@pytest.mark.slow
def test_the_terminal_shows_cheaters_only_in_the_unverified_section(
    quick_run: dict[str, Any], plugin_env: dict[str, str]
) -> None:
    shown = cli(plugin_env, "show", "--store", str(quick_run["store"]))
    assert shown.returncode == 0, shown.stderr
    leaderboard, _, rest = shown.stdout.partition("Unverified cells: measured, not ranked")
    # the honest stack ranks when a cell of it is ok; on a busy machine its cells are unstable (noise
    # guard) and there is no leaderboard at all: the cheaters are still only in the unverified section
    ranks = any(
        r["status"] == "ok" for r in quick_run["document"]["results"] if r["cell"]["stack"] == "torch-eager"
    )
    assert ("leaderboard (verified cells only)" in leaderboard) == ranks
    assert ("torch-eager" in leaderboard) == ranks
    assert not any(name in leaderboard for name in CHEATS)
    assert all(name in rest for name in CHEATS)
    marked = cli(plugin_env, "show", "--include-unverified", "--store", str(quick_run["store"]))
    assert "UNVERIFIED disqualified" in marked.stdout and "planted-cache " in marked.stdout


@pytest.mark.slow
@pytest.mark.exhaustive  # shares the variant run above
def test_the_goodhart_table_holds_the_honest_stack_only(variant_run: dict[str, Any]) -> None:
    generalization = variant_run["document"]["generalization"]
    assert {row["stack"] for row in generalization["stacks"]} <= {"torch-eager"}
    assert {row["stack"] for row in generalization["heatmap"]} <= {"torch-eager"}
    assert {row["stack"] for row in generalization["excluded"]} >= set(VARIANT_CHEATS)


@pytest.mark.slow
def test_the_html_charts_hold_no_cheater(quick_run: dict[str, Any], plugin_env: dict[str, str]) -> None:
    from playwright.sync_api import sync_playwright

    output = quick_run["store"].parent / "report.html"
    done = cli(plugin_env, "report", "--store", str(quick_run["store"]), "-o", str(output), timeout_s=300)
    assert done.returncode == 0, done.stderr[-2000:]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(output.resolve().as_uri(), wait_until="load", timeout=120_000)
        charted = page.evaluate(
            """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => JSON.stringify(
                (gd.data || []).map(t => [t.name, t.x, t.y, t.text, t.customdata])))"""
        )
        unverified = page.evaluate("() => document.getElementById('unverified').innerText")
        browser.close()
    ranks = any(
        r["status"] == "ok" for r in quick_run["document"]["results"] if r["cell"]["stack"] == "torch-eager"
    )
    assert not ranks or any("torch-eager" in chart for chart in charted)  # none ok on a busy machine
    assert not [name for name in CHEATS for chart in charted if name in chart]
    assert all(name in unverified for name in CHEATS)


@pytest.mark.slow
@pytest.mark.exhaustive  # 284 s; make test keeps the quick-rules run of every cheater
def test_every_cheater_is_disqualified_under_standard_rules(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    assert_disqualified(run_cheaters(plugin_env, tmp_path / "store", "standard")["document"])


@pytest.mark.slow
@pytest.mark.exhaustive  # ~90 s; make test runs every cheater on the canonical model and two on a variant
def test_every_cheater_is_disqualified_on_a_variant(plugin_env: dict[str, str], tmp_path: Path) -> None:
    extra = ("--variants", "1", "--variant-seed", "3")
    document = run_cheaters(plugin_env, tmp_path / "store", "quick", *extra)["document"]
    assert_disqualified(document)
    assert_disqualified(document, variant="s3-v1")
