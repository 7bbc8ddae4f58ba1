"""Terminal table of the served LLMs' max-QPS searches (``--arrivals poisson``,
``accelbench.endpoint.qps_search``): a row per probe, in the order they ran, and a caption line per cell
with the max QPS found, its goodput, the bounds and why the search ended. The only place the search's
seconds and rates are formatted.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from accelbench.curve import QpsProbe, QpsSearch
from accelbench.report.columns import whole_ms
from accelbench.report.section_table import titled_table
from accelbench.results import Result

TITLE = "Served LLM max QPS (Poisson arrivals; TTFT from the scheduled arrival)"
COLUMNS = (
    "workload",
    "stack",
    "target QPS",
    "requests",
    "req/s",
    "output tok/s",
    "TTFT p50/p90/p99 ms",
    "TPOT p50/p90/p99 ms",
    "goodput req/s",
    "errors",
    "probe",
)
_LEFT = ("workload", "stack", "probe")


def searches_of(results: Sequence[Result]) -> list[tuple[Result, QpsSearch]]:
    """The endpoint results that ran a max-QPS search, each with its search, by cell key."""
    found = [(r, search) for r in results if (curve := r.curve) and (search := curve.qps_search)]
    return sorted(found, key=lambda pair: pair[0].cell.key)


def qps_table(results: Sequence[Result]) -> Table | None:
    """One row per probe of every search, the max QPS of each in the caption; None when none ran."""
    searches = searches_of(results)
    if not searches:
        return None
    table = titled_table(TITLE, COLUMNS, _LEFT)
    for result, search in searches:
        for probe in search.probes:
            table.add_row(result.cell.workload, result.cell.stack, *_row(probe))
    table.caption = "\n".join(summary_line(r.cell.stack, s) for r, s in searches)
    return table


def summary_line(stack: str, search: QpsSearch) -> str:
    """The search's result in one line: max QPS, its goodput, the bounds, the probes, how it ended."""
    return (
        f"{stack}: max QPS {search.max_qps:.3g} (goodput {search.goodput_requests_per_s:.3g} req/s) under "
        f"p99 TTFT {whole_ms(search.ttft_bound_s)} ms, p99 TPOT {whole_ms(search.tpot_bound_s)} ms; "
        f"{len(search.probes)} of {search.budget} probes; {search.ended}"
    )


def _row(probe: QpsProbe) -> list[str]:
    return [
        f"{probe.target_qps:.3g}",
        str(probe.requests),
        f"{probe.requests_per_s:.2f}",
        f"{probe.output_tokens_per_s:.1f}",
        f"{whole_ms(probe.ttft_p50_s)} / {whole_ms(probe.ttft_p90_s)} / {whole_ms(probe.ttft_p99_s)}",
        f"{whole_ms(probe.tpot_p50_s)} / {whole_ms(probe.tpot_p90_s)} / {whole_ms(probe.tpot_p99_s)}",
        f"{probe.goodput_requests_per_s:.2f}",
        f"{probe.error_rate:.0%}",
        "pass" if probe.passed else f"fail: {probe.reason}",
    ]
