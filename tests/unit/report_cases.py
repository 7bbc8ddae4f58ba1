"""Synthetic results, peaks and runs for the report tests, and a reader of the chart JSON in a page.

Results come with LoadGen figures (schema 5) or without (``figures=None``, as stored before schema 5),
so every renderer is tested on both until the cell code fills ``figures`` in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.head import Head
from accelbench.loadgen_figures import HEADLINES, Figures, Latency, LoadgenVerdict
from accelbench.normalize.cell_figures import CellFigures, Roofline
from accelbench.normalize.peak_share import PeakShare
from accelbench.normalize.roofline import RooflineFigures
from accelbench.probe.best import MachinePeak
from accelbench.probe.roofline import MeasuredPeaks, Measurement, Peak
from accelbench.report.html_sections import RunData
from accelbench.results import Cell, Result
from accelbench.sections import ServerSearch
from accelbench.store import RunRecord
from accelbench.workloads.flops import WorkloadCost

GFLOP = 1e9
SEARCH = {
    "bound_s": 0.05,
    "max_qps": 40.0,
    "probes": [
        {"target_qps": 20.0, "valid": True, "p99_s": 0.012, "completed_qps": 20.0, "reasons": []},
        {
            "target_qps": 60.0,
            "valid": False,
            "p99_s": 0.09,
            "completed_qps": 51.0,
            "reasons": ["p99 > bound"],
        },
        {"target_qps": 40.0, "valid": True, "p99_s": 0.03, "completed_qps": 40.0, "reasons": []},
    ],
}


def figures(scenario: str, value: float, batch: int = 1, ratio: float = 0.98) -> Figures:
    """LoadGen figures of one cell: the headline ``value`` (seconds or per second), three trials."""
    ci = (value * 0.95, value * 1.05)
    return Figures(
        scenario=scenario,
        metric=HEADLINES[scenario],
        value=value,
        ci=ci,
        trial_values=(value * 0.97, value, value * 1.03),
        qps=value if not HEADLINES[scenario].startswith("latency_") else 1 / value,
        p50_s=0.010,
        p90_s=0.011,
        p99_s=0.013,
        early_stopping_s=0.0115,
        valid=True,
        batch=batch,
        sut_s=0.0098,
        loadgen_s=0.0100,
        timer_ratio=ratio,
    )


def result(
    stack: str,
    scenario: str = "single-stream",
    qps: float = 50.0,
    with_figures: bool = True,
    rules: str = "quick",
    status: str = "ok",
    value: float | None = None,
) -> Result:
    """A measured result of resnet50 (tiny) on ``stack``; ``value`` is the headline (default from qps)."""
    cell = Cell("resnet50", stack, scenario, size="tiny")
    verdict = LoadgenVerdict(scenario, True, (), qps, 100, rules, False, "logs")
    latency = Latency(0.020, 0.022, 0.025, 0.021, 0.019, (0.0198, 0.0203), 100)
    if value is None:
        value = 1 / qps if HEADLINES.get(scenario, "").startswith("latency_") else qps
    shown = figures(scenario, value) if with_figures else None
    search = SEARCH if scenario == "server" and with_figures else None
    return Result(
        "r1",
        cell,
        Head(status, effective_precision="fp32", settings={"rules": rules, "batch_size": 1}),
        LoadgenBody(
            latency=latency,
            loadgen=verdict,
            figures=shown,
            server_search=ServerSearch.from_dict(search) if search else None,
        ),
        driver="loadgen",
    )


def gemm_peaks(probe_gflops: float = 143.8, library_gflops: float = 193.1) -> MeasuredPeaks:
    """Peaks whose fp32 GEMM probe is beaten by a library (the issue's 143.8 vs 193.1 GFLOP/s)."""
    probe = Measurement(
        "probe", "gemm", "torch.mm", "fp32", 2048, 2, 2 * 2048**3, 0.1, 3, probe_gflops * GFLOP
    )
    library = Measurement(
        "library", "gemm", "numpy.matmul", "fp32", 3072, 2, 2 * 3072**3, 0.3, 2, library_gflops * GFLOP
    )
    copy = Measurement("probe", "copy", "torch.Tensor.copy_", "fp32", 2**25, 2, 2**28, 0.01, 9, 20 * GFLOP)
    triad_library = Measurement(
        "library", "triad", "numpy multiply+add", "fp32", 2**25, 2, 3 * 2**27, 0.01, 9, 25 * GFLOP
    )
    gemm = Peak(
        "gemm",
        "fp32",
        probe_gflops * GFLOP,
        "flop/s",
        2,
        "torch.mm size 2048",
        library_gflops * GFLOP,
        "numpy.matmul size 3072",
        probe_gflops / library_gflops,
        "square GEMM",
        (probe, library),
    )
    bandwidth = Peak(
        "copy", "fp32", 20 * GFLOP, "byte/s", 2, "copy_", 25 * GFLOP, "numpy", 0.8, "", (copy, triad_library)
    )
    return MeasuredPeaks((gemm, bandwidth), "fp", "2026-01-01T00:00:00+00:00", threads=2)


def roofline(share_of_peak: float, suspect: bool = False, flops_per_s: float = 100 * GFLOP) -> Roofline:
    """A result's roofline position at ``share_of_peak`` of a machine peak of ``flops_per_s`` (1 GFLOP and
    10 MB a sample), marked suspect or not."""
    achieved = share_of_peak * flops_per_s
    position = RooflineFigures(
        achieved_flops_per_s=achieved,
        peak_flops_per_s=flops_per_s,
        peak_bytes_per_s=20 * GFLOP,
        share_of_peak=share_of_peak,
        attainable_flops_per_s=flops_per_s,
        share_of_roofline=share_of_peak,
        roofline_bound_s=0.01,
        bound_kind="compute",
    )
    peak = MachinePeak("gemm", "fp32", flops_per_s, "FLOP/s", "gemm matmul (probe)", "probe", flops_per_s)
    reason = "achieved more than the measured peak" if suspect else ""
    return Roofline(
        position=position,
        share=PeakShare(achieved, peak, share_of_peak, suspect=suspect, reason=reason),
        bandwidth=MachinePeak("bandwidth", "fp32", 20 * GFLOP, "byte/s", "copy (probe)", "probe", None),
        cost=WorkloadCost("resnet50", "tiny", 10**9, 10**7, 100.0, "synthetic"),
        time_basis="1 / LoadGen throughput",
    )


def run(*results: Result, normalized: Mapping[str, CellFigures] | None = None) -> RunData:
    """A stored run of ``results`` under the quick rules."""
    record = RunRecord("r1", "2026-01-01", "fp", {"rules": "quick"}, {}, "complete")
    return RunData(record, results, None, normalized or {})


_NEW_PLOT = re.compile(r'Plotly\.newPlot\(\s*"([^"]+)",\s*')


def chart_documents(page: str) -> dict[str, dict[str, Any]]:
    """Every chart of a rendered page as its plotly JSON, by div id: ``{"data": [...], "layout": {...}}``."""
    decoder = json.JSONDecoder()
    found = {}
    for match in _NEW_PLOT.finditer(page):
        data, end = decoder.raw_decode(page, match.end())
        rest = re.match(r",\s*", page[end:])
        assert rest is not None
        layout, _ = decoder.raw_decode(page, end + rest.end())
        found[match.group(1)] = {"data": data, "layout": layout}
    return found


def bar_axes_not_from_zero(document: Mapping[str, Any]) -> list[str]:
    """The linear value axes of a chart's bar traces that do not include 0 (should be empty).

    A log axis is allowed when its title says so; it is reported when it does not.
    """
    layout, problems = document["layout"], []
    for trace in document["data"]:
        if trace.get("type") != "bar":
            continue
        letter = "x" if trace.get("orientation") == "h" else "y"
        ref = trace.get(f"{letter}axis", letter)
        axis = layout.get(f"{letter}axis{ref[1:]}", {})
        title = str((axis.get("title") or {}).get("text", ""))
        if axis.get("type") == "log":
            problems += [] if "log" in title else [f"{ref}: a log axis not labelled as such"]
        elif axis.get("rangemode") != "tozero" and not (axis.get("range") and axis["range"][0] <= 0):
            problems.append(f"{ref}: linear bar axis does not start at zero ({axis})")
    return problems
