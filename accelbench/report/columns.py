"""Leaderboard columns that follow the scenario, and the server QPS search table (rich tables).

One leaderboard table per scenario, since each scenario has its own MLPerf figure (``report.headline``):
single-stream leads with p90 (p50 and p99 beside it), multi-stream with p99 per query, server with the
searched max QPS and its p99, offline with samples/s alone. Every table also shows the 95% interval
across trials, the batch size, the SUT-timer / LoadGen ratio (a diagnostic: near 1.00 when the harness
adds nothing) and LoadGen's verdict, and its title names the rule set. Seconds become ms here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.table import Table

from accelbench.normalize import ranking
from accelbench.report.headline import (
    SUT_TIMER,
    Headline,
    headline,
    results_rules_note,
    rules_note,
    rules_of,
)
from accelbench.report.section_table import titled_table
from accelbench.results import Result
from accelbench.scenarios.rules import LOADGEN_SCENARIOS
from accelbench.sections import SearchProbe

Getter = Callable[[Headline], str]
STATUS_STYLE = {
    "ok": "green",
    "quality_failed": "bold red",
    "disqualified": "bold red",
    "unverified": "yellow",
    "invalid": "yellow",
    "unstable": "yellow",
    "unavailable": "dim",
    "unsupported": "yellow",
}
"""Rich style of each status; any other (crashed, timeout, oom) is red."""
FALLBACK_MARK = "†"
FALLBACK_CAPTION = f"{FALLBACK_MARK} SUT timer: the result has no LoadGen figures (stored before schema 5)"


def ms_text(seconds: float | None) -> str:
    """Seconds as milliseconds: 3 decimals below 1 ms, else 2; ``-`` when absent."""
    if seconds is None:
        return "-"
    value = seconds * 1e3
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def whole_ms(seconds: float) -> str:
    """Seconds as whole milliseconds (a served LLM's latencies: TTFT, TPOT, a session's time)."""
    return f"{seconds * 1e3:.0f}"


def rate_text(per_s: float | None) -> str:
    """A rate per second: one decimal from 10 up, three significant digits below; ``-`` when absent."""
    if per_s is None:
        return "-"
    return f"{per_s:.1f}" if per_s >= 10 else f"{per_s:.3g}"


def value_text(shown: Headline) -> str:
    """The headline value in display units, marked when it comes from the SUT timer."""
    text = ms_text(shown.value) if shown.lower_is_better else rate_text(shown.value)
    return f"{text}{FALLBACK_MARK}" if shown.source == SUT_TIMER else text


def _ci(shown: Headline) -> str:
    """The 95% interval across trials (server: the search's bracket); none from a single trial."""
    if shown.ci is None:
        return "-"
    if shown.scenario != "server" and shown.trials == 1:
        return "- (1 trial)"
    show = ms_text if shown.lower_is_better else rate_text
    return f"{show(shown.ci[0])}-{show(shown.ci[1])}"


_HEADLINE: tuple[tuple[str, Getter], ...] = (("95% CI", _ci),)
_DIAGNOSTICS: tuple[tuple[str, Getter], ...] = (
    ("batch", lambda h: "-" if h.batch is None else str(h.batch)),
    ("SUT/LoadGen", lambda h: "-" if h.timer_ratio is None else f"{h.timer_ratio:.2f}"),
    ("trials", lambda h: "-" if h.trials is None else str(h.trials)),
    ("LoadGen", lambda h: "-" if h.valid is None else ("VALID" if h.valid else "[yellow]INVALID[/]")),
)
_P90: tuple[str, Getter] = ("p90 ms", lambda h: ms_text(h.p90_s))
_P99: tuple[str, Getter] = ("p99 ms", lambda h: ms_text(h.p99_s))


def _stream_columns(
    headline: str, percentile: tuple[str, Getter], rate: str
) -> tuple[tuple[str, Getter], ...]:
    """The columns of a stream scenario: its headline latency and the 95% CI, p50 and one more
    ``percentile``, and the rate headed ``rate``."""
    return (
        (headline, value_text),
        ("95% CI ms", _ci),
        ("p50 ms", lambda h: ms_text(h.p50_s)),
        percentile,
        (rate, lambda h: rate_text(h.qps)),
    )


SCENARIO_COLUMNS: Mapping[str, tuple[tuple[str, Getter], ...]] = {
    "single-stream": _stream_columns("p90 ms", _P99, "QPS"),
    "multi-stream": _stream_columns("p99/query ms", _P90, "samples/s"),
    "server": (
        ("max QPS", value_text),
        *_HEADLINE,
        _P99,
        ("bound ms", lambda h: ms_text(h.bound_s)),
    ),
    "offline": (("samples/s", value_text), *_HEADLINE),
}
"""(header, text of a ``Headline``) per scenario, headline first; the diagnostics follow every one."""
_GENERIC = (("QPS", value_text), *_HEADLINE)
_CELL = ("#", "workload", "stack", "status")


def scenario_columns(scenario: str) -> tuple[tuple[str, Getter], ...]:
    """The columns of ``scenario``'s leaderboard after the cell's, diagnostics included."""
    return (*SCENARIO_COLUMNS.get(scenario, _GENERIC), *_DIAGNOSTICS)


def leaderboard_tables(
    results: Sequence[Result], title: str, include_unverified: bool = False
) -> list[Table]:
    """One leaderboard per scenario (verified cells only unless asked), in ranking order; the title names
    the scenario and the rule set. No board at all gives one empty table with the title."""
    boards = ranking.leaderboards(results, include_unverified)
    scenarios = sorted({b.scenario for b in boards}, key=_scenario_order)
    tables = [
        _scenario_table([b for b in boards if b.scenario == s], s, title, include_unverified)
        for s in scenarios
    ]
    return tables or [Table(title=_title(title, "", include_unverified, results), title_justify="left")]


def _scenario_order(scenario: str) -> tuple[int, str]:
    known = scenario in LOADGEN_SCENARIOS
    return (LOADGEN_SCENARIOS.index(scenario) if known else len(LOADGEN_SCENARIOS)), scenario


def _title(title: str, scenario: str, include_unverified: bool, results: Sequence[Result]) -> str:
    where = f"{title}, {scenario}" if scenario else title
    kind = (
        "leaderboard, unverified cells included and marked"
        if include_unverified
        else "leaderboard (verified cells only)"
    )
    return f"{where}: {kind}; {results_rules_note(results)}"


def _scenario_table(
    boards: Sequence[ranking.Board], scenario: str, title: str, include_unverified: bool
) -> Table:
    members = [e.result for b in boards for e in b.entries]
    columns = scenario_columns(scenario)
    headers = (*_CELL, *(name for name, _ in columns))
    table = titled_table(_title(title, scenario, include_unverified, members), headers, _CELL[1:])
    fallback = False
    for board in boards:
        for entry in board.entries:
            shown = headline(entry.result)
            fallback |= shown is not None and shown.source == SUT_TIMER
            texts = [getter(shown) if shown else "-" for _, getter in columns]
            table.add_row(str(entry.rank), *_cell(entry), *texts)
    if fallback:
        table.caption, table.caption_justify = FALLBACK_CAPTION, "left"
    return table


def cell_columns(result: Result) -> list[str]:
    """Workload (size or variant), stack (with its device off the CPU), scenario, coloured status."""
    cell = result.cell
    return [
        f"{cell.workload} ({cell.size})"
        if cell.variant == "canonical"
        else f"{cell.workload} {cell.variant}",
        cell.stack if cell.device == "cpu" else f"{cell.stack} @ {cell.device}",
        cell.scenario,
        f"[{STATUS_STYLE.get(result.head.status, 'red')}]{result.head.status}[/]",
    ]


def _cell(entry: ranking.Entry) -> list[str]:
    workload, stack, _, status = cell_columns(entry.result)
    if not entry.verified:
        status = f"[bold yellow]UNVERIFIED {entry.result.head.status}[/]"
    return [workload, stack, status]


def headline_text(result: Result) -> str:
    """``p90 12.3 ms`` or ``14.4 samples/s``: a result's headline in one cell; ``-`` when unmeasured."""
    shown = headline(result)
    if shown is None:
        return "-"
    names = {
        "latency_p90_s": "p90",
        "latency_p99_per_query_s": "p99/query",
        "samples_per_s": "samples/s",
        "max_qps": "max QPS",
        "qps": "QPS",
    }
    name = names.get(shown.metric, shown.metric)
    if shown.lower_is_better:
        return f"{name} {value_text(shown)} ms"
    return f"{value_text(shown)} {name}"


def server_search_table(result: Result) -> Table | None:
    """The probes of a server cell's QPS search, in the order they ran; None without a search."""
    search = result.server_search
    if search is None or not search.probes:
        return None
    bound, best = search.bound_s, search.max_qps
    title = (
        f"Server QPS search: {result.cell.key} (p99 bound {ms_text(bound)} ms, "
        f"max QPS {rate_text(best)}); {rules_note([rules_of(result)])}"
    )
    headers = ("#", "target QPS", "completed QPS", "p99 ms", "under bound", "LoadGen", "reasons")
    table = titled_table(title, headers, ("reasons",))
    for index, probe in enumerate(search.probes, start=1):
        table.add_row(str(index), *_probe_row(probe, bound))
    for index, failure in enumerate(search.scored_failures, start=1):
        # a scored trial INVALID at the found target: every trial ran again one back-off step lower
        table.add_row(f"scored {index}", *_probe_row(failure, bound))
    return table


def _probe_row(probe: SearchProbe, bound_s: float | None) -> list[str]:
    p99 = probe.p99_s
    under = "-" if bound_s is None else ("yes" if p99 <= bound_s else "[yellow]no[/]")
    return [
        rate_text(probe.target_qps),
        rate_text(probe.completed_qps),
        ms_text(p99),
        under,
        "VALID" if probe.valid else "[yellow]INVALID[/]",
        "; ".join(probe.reasons) or "-",
    ]


def server_search_tables(results: Sequence[Result]) -> list[Table]:
    """``server_search_table`` of every result that has one, in cell key order."""
    tables = (server_search_table(r) for r in sorted(results, key=lambda r: r.cell.key))
    return [t for t in tables if t is not None]
