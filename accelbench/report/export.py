"""Export results to files: JSON (the stored documents, unchanged) or CSV (one flat row per result).

CSV cells are empty where a value is absent (no latency, no LoadGen verdict, no quality check);
booleans are ``true``/``false``; numbers keep full precision, in SI units like the stored documents.
``verified`` says whether the result may rank (``accelbench.normalize.ranking``) and ``rank`` is its
place on its
leaderboard, empty for every result that is not verified.

The columns follow the scenario as the tables do (``accelbench.report.headline``): ``headline_metric``
and ``headline_value`` are MLPerf's figure (single-stream ``latency_p90_s``, multi-stream
``latency_p99_per_query_s``, server ``max_qps``, offline ``samples_per_s``) with its 95% interval across
trials and where it comes from (``LoadGen``, or ``SUT timer`` for a result stored before schema 5);
``loadgen_p50_s``.. are LoadGen's per-query percentiles, ``p50_s``.. the SUT timer's. Offline rows leave
every latency column empty (latency is not an offline figure; ``--format json`` keeps it). ``batch``,
``sut_s``, ``loadgen_s`` and ``timer_ratio`` (SUT timer / LoadGen, a diagnostic) and the server latency
bound are filled where the result has them; ``rules`` names the rule set.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.normalize import ranking
from accelbench.outputs import Kind, write_atomically
from accelbench.report import requests
from accelbench.report.headline import headline, rules_of
from accelbench.results import Result
from accelbench.stored import to_dict

FORMATS = ("csv", "json", "requests")
REQUESTS = "requests"
"""The endpoint cells' per-request records as JSON lines (``accelbench.report.requests``)."""
OFFLINE = "offline"


def _shown(result: Result, name: str) -> Any:
    """A field of the result's ``Headline`` (None when unmeasured)."""
    shown = headline(result)
    return None if shown is None else getattr(shown, name)


def _loadgen_latency(result: Result, name: str) -> Any:
    """LoadGen's per-query latency figure; None for offline and for results without figures."""
    if result.figures is None or result.cell.scenario == OFFLINE:
        return None
    return getattr(result.figures, name)


def _sut_latency(result: Result, name: str, index: int | None = None) -> Any:
    """The SUT timer's latency figure; None for offline (``--format json`` keeps it)."""
    if result.latency is None or result.cell.scenario == OFFLINE:
        return None
    value = getattr(result.latency, name)
    return value if index is None else value[index]


_Column = tuple[str, Callable[[Result], Any]]

CSV_COLUMNS: tuple[_Column, ...] = (
    ("run_id", lambda r: r.run_id),
    ("cell_key", lambda r: r.cell.key),
    ("workload", lambda r: r.cell.workload),
    ("size", lambda r: r.cell.size),
    ("variant", lambda r: r.cell.variant),
    ("stack", lambda r: r.cell.stack),
    ("device", lambda r: r.cell.device),
    ("scenario", lambda r: r.cell.scenario),
    ("status", lambda r: r.head.status),
    ("reason", lambda r: r.head.reason),
    ("rules", rules_of),
    ("headline_metric", lambda r: _shown(r, "metric")),
    ("headline_value", lambda r: _shown(r, "value")),
    ("headline_ci_low", lambda r: (_shown(r, "ci") or (None,))[0]),
    ("headline_ci_high", lambda r: (_shown(r, "ci") or (None, None))[1]),
    ("headline_source", lambda r: _shown(r, "source")),
    ("trials", lambda r: _shown(r, "trials")),
    ("loadgen_p50_s", lambda r: _loadgen_latency(r, "p50_s")),
    ("loadgen_p90_s", lambda r: _loadgen_latency(r, "p90_s")),
    ("loadgen_p99_s", lambda r: _loadgen_latency(r, "p99_s")),
    ("early_stopping_s", lambda r: _loadgen_latency(r, "early_stopping_s")),
    ("server_bound_s", lambda r: _shown(r, "bound_s")),
    ("p50_s", lambda r: _sut_latency(r, "p50_s")),
    ("p90_s", lambda r: _sut_latency(r, "p90_s")),
    ("p99_s", lambda r: _sut_latency(r, "p99_s")),
    ("median_ci_low_s", lambda r: _sut_latency(r, "median_ci_s", 0)),
    ("median_ci_high_s", lambda r: _sut_latency(r, "median_ci_s", 1)),
    ("qps", lambda r: r.qps),
    ("batch", lambda r: _shown(r, "batch")),
    ("sut_s", lambda r: r.figures and r.figures.sut_s),
    ("loadgen_s", lambda r: r.figures and r.figures.loadgen_s),
    ("timer_ratio", lambda r: r.figures and r.figures.timer_ratio),
    ("loadgen_valid", lambda r: r.loadgen and r.loadgen.valid),
    ("quality_metric", lambda r: r.head.quality and r.head.quality.metric),
    ("quality_value", lambda r: r.head.quality and r.head.quality.value),
    ("quality_passed", lambda r: r.head.quality and r.head.quality.passed),
    ("effective_precision", lambda r: r.head.effective_precision),
    ("compile_s", lambda r: r.head.compile_s),
    ("peak_rss_bytes", lambda r: r.head.peak_rss_bytes),
    ("machine_fingerprint", lambda r: r.machine_fingerprint),
    ("verified", ranking.is_verified),
)
"""(header, getter) per CSV column, in order; a getter returns None when the value is absent."""


def export_results(results: Sequence[Result], fmt: str, out: Path) -> None:
    """Write ``results`` to ``out`` as ``csv`` or ``json`` (through a temporary file and a rename);
    UserError for another format or a bad path. ``checked_output`` with ``export_kind`` judges ``out``
    first."""
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if fmt == REQUESTS:
        raise UserError(
            "the requests export reads the run folder: accelbench.report.requests.export_requests"
        )

    def write(stream: Any) -> None:
        if fmt == "json":
            json.dump([to_dict(r) for r in results], stream, indent=2)
            stream.write("\n")
        else:
            _write_csv(results, stream)

    write_atomically(out, write, "export file")


def export_kind(fmt: str) -> Kind:
    """How an earlier export in ``fmt`` begins: the CSV header, or a JSON list of result documents."""
    header = ",".join([*(name for name, _ in CSV_COLUMNS), "rank"]).encode()
    if fmt == REQUESTS:
        return requests.KIND
    if fmt == "json":
        return Kind("JSON export", lambda head: head.lstrip().startswith(b"[") and _json_list(head))
    return Kind("CSV export", lambda head: head.startswith(header))


def _json_list(head: bytes) -> bool:
    rest = head.lstrip()[1:].lstrip()
    return rest.startswith(b"]") or rest.startswith(b'{\n    "run_id"')


def csv_row(result: Result, rank: int | None = None) -> list[str]:
    """The CSV cells of one result, in ``CSV_COLUMNS`` order, then its leaderboard rank."""
    return [*(_cell_text(getter(result)) for _, getter in CSV_COLUMNS), _cell_text(rank)]


def _write_csv(results: Sequence[Result], stream: Any) -> None:
    ranks = {e.result.cell.key: e.rank for board in ranking.leaderboards(results) for e in board.entries}
    writer = csv.writer(stream)
    writer.writerow([*(name for name, _ in CSV_COLUMNS), "rank"])
    writer.writerows(csv_row(r, ranks.get(r.cell.key)) for r in results)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
