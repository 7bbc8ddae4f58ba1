"""Terminal table of LLM decode results: TTFT / TPOT percentiles, tokens/s, agreement, conversion.

Reads the ``generation`` section of results (``accelbench.generation.figures``); the only place its
seconds and token rates are formatted. TTFT and TPOT are LoadGen's (token mode); prefill tokens/s is the
generator's own clock (marked ``sut``). A row of a result that did not pass every audit says so in its
status: the figures are shown, never ranked (the ranking tables hold only verified results).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from accelbench.report.section_table import section_table
from accelbench.results import Result
from accelbench.sections import GenerationFigures

TITLE = "LLM decode (LoadGen token latencies)"
COLUMNS = (
    "workload",
    "stack",
    "scenario",
    "status",
    "precision / weights",
    "TTFT p90 ms",
    "TPOT p90 ms",
    "tokens/s",
    "decode tok/s",
    "prefill tok/s (sut)",
    "goodput q/s (sut)",
    "agreement",
    "conversion s",
)
_LEFT = ("workload", "stack", "scenario", "status", "precision / weights", "agreement")


def generation_table(results: Sequence[Result]) -> Table | None:
    """One row per generative result; None when there is none."""
    return section_table(results, lambda r: r.decode, TITLE, COLUMNS, _LEFT, _row)


def _row(result: Result, section: GenerationFigures) -> list[str]:
    cell = result.cell
    agreement = section.agreement
    agreed = f"{agreement.identical_share:.2f} ({agreement.identical_replies}/{agreement.replies})"
    return [
        cell.workload,
        cell.stack if cell.device == "cpu" else f"{cell.stack} @ {cell.device}",
        cell.scenario,
        result.head.status,
        f"{section.precision} / {section.weight_format}",
        _ms(section.ttft_percentiles_s.get("p90")),
        _ms(section.tpot_percentiles_s.get("p90")),
        _number(section.tokens_per_s, "{:.1f}"),
        _number(section.decode_tokens_per_s, "{:.1f}"),
        _number(section.prefill_tokens_per_s_sut, "{:.0f}"),
        _number(section.goodput_qps_sut, "{:.2f}"),
        agreed,
        _number(section.conversion_s, "{:.1f}"),
    ]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.1f}"


def _number(value: Any, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
