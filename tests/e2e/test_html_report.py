"""``accelbench report`` end to end: a tiny run rendered to HTML and opened offline in headless Chromium.

The browser is the system ``chromium`` (``make chromium`` installs it), driven by Playwright with
``executable_path``; Playwright's own browser download is never used. The page must draw every chart it
declares, log no console or page error, and fetch nothing but its own file. Every linear bar axis starts
at zero (in the chart JSON and as drawn), the quick rules are named in the header and every leaderboard
title, and no share of peak passes 100% unmarked. A full-page screenshot is kept under
``$ACCELBENCH_ARTIFACTS`` (default ``test-artifacts/``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from accelbench.report.headline import QUICK_NOTE
from accelbench.results import UNVERIFIED_STATUSES, Result
from accelbench.store import open_store
from tests.e2e.cli import accelbench
from tests.e2e.shared_run import UNAVAILABLE_STACK, TinyRun
from tests.unit.report_cases import bar_axes_not_from_zero, chart_documents

ARTIFACTS = Path(os.environ.get("ACCELBENCH_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts"))
URL_ATTRIBUTES = ("src", "href", "srcset", "poster", "data", "action", "formaction", "background")


def chromium_path() -> str:
    """The system Chromium; the test fails (it does not skip) when ``make chromium`` was not run."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "no chromium on PATH: run `make chromium` (apt-get install chromium)"
    return found


RANKED_STACK = "torch-eager"
"""The stack whose measured cell the fixture stores again as ``ok`` when the run did not verify it: on a
busy machine the noise guard may mark every honest cell ``unstable`` (an unstable cell has no roofline or
normalized figures to draw), and this file tests the rendering, not an honest cell's status."""


@pytest.fixture(scope="module")
def report_file(tiny_run: TinyRun, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The shared tiny run (one unavailable stack, glow) with one ranked cell, rendered by ``accelbench
    report``: (store, html, run id). The ranked cell is the run's own measured torch-eager record of
    resnet50 single-stream, stored again in a copy of the store through the store API with status ``ok``
    whatever status the machine's load gave it."""
    statuses = {r["cell"]["stack"]: r["status"] for r in tiny_run.document["results"]}
    assert statuses[UNAVAILABLE_STACK] == "unavailable", statuses
    ranked = tiny_run.result("resnet50", RANKED_STACK, "single-stream")
    assert ranked["status"] in ("ok", *UNVERIFIED_STATUSES), ranked["status"]
    assert tiny_run.result("resnet50", "null", "single-stream")["status"] in UNVERIFIED_STATUSES
    store = tiny_run.writable_copy(tmp_path_factory.mktemp("report") / "store")
    _store_as_ok(store, tiny_run.run_id, RANKED_STACK)
    output = tmp_path_factory.mktemp("html") / "report.html"
    done = accelbench("report", tiny_run.run_id, "--store", str(store), "-o", str(output), timeout_s=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(output)
    return store, output, tiny_run.run_id


def _store_as_ok(store_path: Path, run_id: str, stack: str) -> None:
    """Store the run's measured resnet50 single-stream ``stack`` cell again (same figures) as ``ok``."""

    def chosen(result: Result) -> bool:
        cell = result.cell
        return (cell.workload, cell.stack, cell.scenario) == ("resnet50", stack, "single-stream")

    with open_store(store_path) as store:
        (measured,) = [r for r in store.results(run_id) if chosen(r)]
        assert measured.qps and measured.head.effective_precision not in ("", "none"), measured
        ranked = dataclasses.replace(measured.head, status="ok", reason="")
        store.add_result(dataclasses.replace(measured, head=ranked))
        assert [r.head.status for r in store.results(run_id) if chosen(r)] == ["ok"]


class _Attributes(HTMLParser):
    """Every URL-valued attribute of every element (script bodies are text, not elements)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls += [(tag, name, value or "") for name, value in attrs if name in URL_ATTRIBUTES]


@pytest.mark.slow
def test_report_has_no_external_urls(report_file: tuple[Path, Path, str]) -> None:
    _, output, _ = report_file
    parser = _Attributes()
    parser.feed(output.read_text(encoding="utf-8"))
    assert "script" in parser.tags and "section" in parser.tags
    external = [u for u in parser.urls if u[2].strip().lower().startswith(("http:", "https:", "//"))]
    assert external == []
    assert all(u[2].startswith("#") for u in parser.urls), parser.urls  # only in-page links
    assert not any(tag in ("link", "iframe", "img") for tag in parser.tags)


@pytest.mark.slow
def test_report_renders_offline_in_chromium(report_file: tuple[Path, Path, str]) -> None:
    from playwright.sync_api import sync_playwright

    _, output, run_id = report_file
    problems: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on(
            "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
        )
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.on("request", lambda request: requests.append(request.url))
        page.goto(output.resolve().as_uri(), wait_until="load", timeout=120_000)
        page.wait_for_load_state("networkidle", timeout=60_000)
        found = _page_facts(page)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "html-report.png"), full_page=True)
        browser.close()
    assert problems == []
    assert requests == [output.resolve().as_uri()]
    assert found["declared"] >= 4  # leaderboard, roofline, waterfall, history at least
    assert found["drawn"] == found["declared"] == found["plots"]
    assert run_id in found["title"]
    assert found["sections"] >= {"summary", "leaderboard", "roofline", "explain", "history", "failures"}
    assert UNAVAILABLE_STACK in found["failures"] and "unavailable" in found["failures"]
    assert found["barAxes"] and all(low <= 0 for kind, low in found["barAxes"] if kind == "linear")


@pytest.mark.slow
def test_figures_a_reader_can_trust(report_file: tuple[Path, Path, str]) -> None:
    """Bars from zero in the chart JSON, the quick rules named in the header and every leaderboard
    title, no share of peak above 100% without its SUSPECT mark."""
    store, output, run_id = report_file
    page = output.read_text(encoding="utf-8")
    documents = chart_documents(page)
    bars = [d for d in documents.values() if any(t.get("type") == "bar" for t in d["data"])]
    assert bars and [p for d in bars for p in bar_axes_not_from_zero(d)] == []
    assert f'<p class="rules">rules quick: {QUICK_NOTE}</p>' in page
    leaderboard = page[page.index('<section id="leaderboard">') : page.index('<section id="unverified">')]
    captions = re.findall(r"<caption>(.*?)</caption>", leaderboard)
    assert captions and all(f"rules quick: {QUICK_NOTE}" in c for c in captions), captions
    shown = json.loads(accelbench("show", run_id, "--json", "--store", str(store)).stdout)
    normalized = [r["normalized"] for r in shown["results"] if r["normalized"]]
    assert normalized
    for document in normalized:
        roofline = document["roofline"]
        assert roofline["suspect"] == (roofline["share_of_peak"] > 1.0)
        sheet = roofline["share_of_datasheet_peak"]
        assert sheet is None or roofline["datasheet_suspect"] == (sheet["central"] > 1.0)
        assert roofline["peak_method"] and roofline["peak_role"] in ("probe", "library")


def _page_facts(page: Any) -> dict[str, Any]:
    facts = page.evaluate(
        """() => ({
            declared: Number(document.body.dataset.charts),
            barAxes: [...document.querySelectorAll('.js-plotly-plot')]
                .filter(e => e.data.some(t => t.type === 'bar'))
                .map(e => [e._fullLayout.yaxis.type, e._fullLayout.yaxis.range[0]]),
            plots: document.querySelectorAll('.js-plotly-plot').length,
            drawn: [...document.querySelectorAll('.js-plotly-plot')]
                .filter(e => e.querySelector('svg.main-svg') && e.querySelector('g.trace, g.hm')).length,
            sections: [...document.querySelectorAll('section')].map(s => s.id),
            failures: document.getElementById('failures').innerText,
            title: document.title,
        })"""
    )
    facts["sections"] = set(facts["sections"])
    return facts


@pytest.mark.slow
def test_unknown_run_id_is_a_one_line_error(report_file: tuple[Path, Path, str], tmp_path: Path) -> None:
    store, _, _ = report_file
    done = accelbench("report", "no-such-run", "--store", str(store), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown run id 'no-such-run'" in lines[0], lines
    assert not (tmp_path / "r.html").exists()
