"""``accelbench report``: one self-contained HTML file of stored runs, with plotly charts.

The file opens offline: plotly.js is embedded once in ``<head>``, every chart is a ``div`` with its figure
as JSON, and nothing refers to a URL the browser would fetch. ``<body data-charts="N">`` declares how many
charts the page draws (the end-to-end test checks that all N rendered). The report reads the store (runs
by id, their results, measured peaks and the MLPerf history), never live objects.

Sections (``html_sections``, ``html_explain``, ``html_generalization``): machine and settings, leaderboard
with switchable normalizations, roofline, an explain waterfall, the MLPerf ResNet-50 history,
generalization and expressiveness, training (when present), failures.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.hardware.chips import ChipTable
from accelbench.normalize.cell_figures import cell_figures
from accelbench.outputs import Kind, write_atomically
from accelbench.probe.peaks_file import load_peaks
from accelbench.report.headline import rules_note, rules_of
from accelbench.report.html_sections import RunData, Section
from accelbench.store import Store

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;
padding:0 16px 40px;color:#222}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:8px 0;z-index:10}
nav a{margin-right:14px;color:#1f5fa8;text-decoration:none}
h1{margin-top:20px}h2{border-bottom:2px solid #1f5fa8;padding-bottom:4px;margin-top:36px}
table.data{border-collapse:collapse;margin:12px 0;font-size:13px}
table.data caption{text-align:left;font-weight:600;padding:4px 0}
table.data th,table.data td{border:1px solid #ddd;padding:3px 8px;vertical-align:top}
table.data th{background:#f3f5f8}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.green{color:#18794e}.red{color:#c62828}.yellow{color:#a36a00}.bold{font-weight:700}.dim{color:#888}
.chart{margin:8px 0 16px}p{margin:6px 0}
p.rules{font-weight:600;color:#a36a00}p.note{font-size:12px;color:#555}
"""


@dataclass(frozen=True, slots=True)
class Written:
    """What ``write_report`` wrote: the file, its size, the charts it declares and the render time."""

    path: Path
    size_bytes: int
    charts: int
    sections: tuple[str, ...]
    render_s: float


def load_runs(store: Store, run_ids: Sequence[str], chips: ChipTable) -> tuple[RunData, ...]:
    """The runs to report (the latest when none is named); UserError for an unknown id or an empty store."""
    chosen = list(dict.fromkeys(run_ids))
    if not chosen:
        latest = store.latest_run_id()
        if latest is None:
            raise UserError("the store holds no runs yet; start one with: accelbench run")
        chosen = [latest]
    runs = []
    for run_id in chosen:
        record = store.run(run_id)  # UserError for an unknown id
        results = tuple(store.results(run_id))
        peaks = load_peaks(store.run_dir(run_id))
        normalized = cell_figures(results, record.machine, peaks, store.path / "cache", chips)
        runs.append(RunData(record, results, peaks, normalized))
    return tuple(runs)


REPORT_KIND = Kind("HTML report", lambda head: b"<title>accelbench report: " in head)
"""How an earlier report begins (``accelbench.outputs.checked_output`` lets it be replaced)."""


def write_report(
    store: Store,
    run_ids: Sequence[str],
    output: Path,
    chips: ChipTable,
    pair: tuple[str, str] | None = None,
    include_unverified: bool = False,
) -> Written:
    """Render the runs (the latest when none is named) into one self-contained HTML file."""
    _require_plotly()
    started = time.perf_counter()
    runs = load_runs(store, run_ids, chips)
    sections = build_sections(runs, store.path, chips, pair, include_unverified)
    title = "accelbench report: " + ", ".join(d.run.run_id for d in runs)
    rules = [rules_of(r) for d in runs for r in d.results] + [
        str(d.run.config.get("rules", "")) for d in runs
    ]
    page, charts = render_page(title, sections, rules_note(rules))
    write_atomically(output, lambda stream: stream.write(page), "report")
    elapsed = time.perf_counter() - started
    return Written(output, output.stat().st_size, charts, tuple(s.key for s in sections), elapsed)


def build_sections(
    runs: Sequence[RunData],
    folder: Path,
    chips: ChipTable,
    pair: tuple[str, str] | None,
    include_unverified: bool = False,
) -> list[Section]:
    """Every section of the report, in page order."""
    from accelbench.report import html_explain, html_generalization, html_sections

    sections = [
        html_sections.summary_section(runs, chips),
        html_sections.leaderboard_section(runs, include_unverified),
        html_sections.unverified_section(runs),
        html_sections.roofline_section(runs),
        html_explain.explain_section(runs, folder, chips, pair),
        html_explain.history_section(folder, chips),
        html_generalization.generalization_section(runs),
        html_generalization.expressiveness_section(runs),
        html_generalization.training_section(runs),
        html_sections.serving_section(runs),
        html_sections.failures_section(runs),
    ]
    return [s for s in sections if s is not None]


def render_page(title: str, sections: Sequence[Section], header: str = "") -> tuple[str, int]:
    """The HTML page and the number of charts in it; plotly.js embedded once. ``header`` (the rule-set
    note of the runs) is the line under the title."""
    from plotly.offline import get_plotlyjs

    charts = 0
    body = []
    for section in sections:
        parts = []
        for part in section.parts:
            if isinstance(part, str):
                parts.append(part)
            else:
                charts += 1
                parts.append(_chart_html(part, f"chart-{charts}"))
        body.append(f'<section id="{section.key}"><h2>{escape(section.title)}</h2>{"".join(parts)}</section>')
    nav = "".join(f'<a href="#{s.key}">{escape(s.title)}</a>' for s in sections)
    rules = f'<p class="rules">{escape(header)}</p>' if header else ""
    page = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_STYLE}</style><script>{get_plotlyjs()}</script></head>"
        f'<body data-charts="{charts}"><nav>{nav}</nav><h1>{escape(title)}</h1>'
        f"{rules}"
        f"{''.join(body)}</body></html>\n"
    )
    return page, charts


def _chart_html(figure: Any, div_id: str) -> str:
    import plotly.io

    html = plotly.io.to_html(
        figure, full_html=False, include_plotlyjs=False, div_id=div_id, config=PLOTLY_CONFIG, validate=True
    )
    return f'<div class="chart">{html}</div>'


def _require_plotly() -> None:
    try:
        import plotly  # noqa: F401
    except ImportError as exc:
        raise UserError(f"the HTML report is unavailable: plotly does not import ({exc})") from None
