"""Terminal tables of the agentic session ladders (``accelbench.sessions``): a row per load point of each
sessions cell, and a row per turn number (the figures against the context each turn had).

Reads the ``generation`` section's ``sessions_ladder``; the only place its seconds and rates are
formatted. Each row is one measured load, labelled as what it held (sessions at once, or a session
arrival rate with the rate achieved); nothing is implied between two rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.table import Table

from accelbench.hardware.match import ChipMatch
from accelbench.meters.cost import HourlyRate, usd_per_million_queries
from accelbench.report.columns import whole_ms
from accelbench.report.endpoint import joules_text, per_chip_text
from accelbench.report.section_table import titled_table
from accelbench.results import Result
from accelbench.session_figures import ReuseFigures, SessionFigures, SessionPoint

TITLE = "Agentic sessions (multi-turn; client-side token counts)"
COLUMNS = (
    "workload",
    "stack",
    "status",
    "load",
    "sessions",
    "turns",
    "TTFT p50/p90 ms",
    "TPOT p50/p90 ms",
    "session p50/p90 s",
    "e2e interactivity tok/s",
    "tok/s per user",
    "goodput turns/s",
    "good sessions",
    "in tok/s",
    "out tok/s",
    "cached tok",
    "audit in tok",
    "audit out tok",
    "failed",
)
COST_TITLE = "Agentic sessions: energy, cost and chips per load point"
COST_BASE = ("stack", "load", "J/out tok", "J/session")
COST_COLUMNS = ("$/M out tok", "$/session")
CHIP_COLUMN = "out tok/s per chip"
TURN_TITLE = "Agentic sessions by turn (TTFT and TPOT against context)"
TURN_COLUMNS = ("stack", "load", "turn", "turns ok", "context tok p50", "TTFT p50 ms", "TPOT p50 ms")
_LEFT = ("workload", "stack", "status")


def ladders_of(results: Sequence[Result]) -> list[tuple[Result, SessionFigures]]:
    """The sessions cells among ``results`` with their ladders, by cell key."""
    found = [(r, r.session_ladder) for r in results if r.session_ladder is not None]
    return sorted(((r, s) for r, s in found if s is not None), key=lambda pair: pair[0].cell.key)


def load_text(point: SessionPoint) -> str:
    """The load a point held, labelled: ``4 at once`` (a closed loop) or ``rate 0.5/s (got 0.46/s)`` (an
    open loop: offered and achieved session arrival rates), ``BEHIND`` where it fell behind."""
    if point.rate_per_s is None:
        return f"{point.sessions} at once"
    achieved = point.achieved_rate_per_s or 0.0
    return f"rate {point.rate_per_s:g}/s (got {achieved:.3g}/s)" + (" BEHIND" if point.behind else "")


def _row(result: Result, point: SessionPoint) -> list[str]:
    cached = "-" if point.cached_tokens is None else str(point.cached_tokens)
    return [
        result.cell.workload,
        result.cell.stack,
        result.head.status,
        load_text(point),
        str(point.sessions),
        str(point.turns),
        f"{whole_ms(point.ttft_p50_s)}/{whole_ms(point.ttft_p90_s)}",
        f"{whole_ms(point.tpot_p50_s)}/{whole_ms(point.tpot_p90_s)}",
        f"{point.session_latency_p50_s:.1f}/{point.session_latency_p90_s:.1f}",
        f"{point.e2e_interactivity_tokens_per_s:.2f}",
        f"{point.tokens_per_s_per_user:.2f}",
        "-" if point.goodput_turns_per_s is None else f"{point.goodput_turns_per_s:.2f}",
        "-" if point.good_sessions is None else f"{point.good_sessions}/{point.sessions}",
        f"{point.input_tokens_per_s:.1f}",
        f"{point.output_tokens_per_s:.2f}",
        cached,
        "-" if point.audit_input_tokens is None else str(point.audit_input_tokens),
        "-" if point.audit_output_tokens is None else str(point.audit_output_tokens),
        str(point.failed_turns),
    ]


def usd_per_session(rate: HourlyRate, point: SessionPoint) -> float | None:
    """Dollars per session: the sessions' share of the machine's hour over the point's span
    (``SessionPoint.sessions_share``: the audit requests' part left out) over its sessions (None: no
    span)."""
    if point.duration_s <= 0:
        return None
    return rate.usd_per_hour * point.duration_s / 3600.0 * point.sessions_share / point.sessions


def usd_per_million_output_tokens(rate: HourlyRate, point: SessionPoint) -> float | None:
    """Dollars for a million output tokens at the point's system output tokens/s (None: no tokens)."""
    if point.output_tokens_per_s <= 0:
        return None
    return usd_per_million_queries(rate, 1.0 / point.output_tokens_per_s)


def _usd(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def session_table(results: Sequence[Result]) -> Table | None:
    """One row per load point of every sessions cell; None when there is none."""
    ladders = ladders_of(results)
    if not ladders:
        return None
    table = titled_table(TITLE, COLUMNS, _LEFT)
    for result, section in ladders:
        for point in section.sessions_ladder:
            table.add_row(*_row(result, point))
    captions = [
        f"{r.cell.stack}: {s.workload}; {s.max_tokens} tokens per reply; declared shared prefix "
        f"{s.shared_prefix_tokens} tokens (the system message); server prefix cache: "
        f"{s.prefix_cache or 'not recorded'}"
        for r, s in ladders
    ]
    captions += [
        f"{r.cell.stack} goodput: ok turns with TTFT <= {s.turn_slo_ttft_s * 1e3:.0f} ms and TPOT <= "
        f"{s.turn_slo_tpot_s * 1e3:.0f} ms (the workload's bounds) per second; a good session: every turn so"
        for r, s in ladders
        if s.turn_slo_ttft_s
    ]
    captions += [f"{r.cell.stack} {reuse_line(s.reuse)}" for r, s in ladders if s.reuse is not None]
    captions += [
        f"{r.cell.stack} rate {p.rate_per_s:g}/s fell behind: {p.behind} (peak {p.peak_in_flight} in flight)"
        for r, s in ladders
        for p in s.sessions_ladder
        if p.behind and p.rate_per_s is not None
    ]
    if any(p.rate_per_s is not None for _, s in ladders for p in s.sessions_ladder):
        captions.append(
            "load: 'N at once' = N sessions at once (closed loop); 'rate R/s' = sessions arriving at R per "
            "second (open loop, Poisson), 'got' the achieved rate, 'sessions' those it started; the two "
            "kinds are different loads: a rate row is not a concurrency row"
        )
    captions += [
        f"{r.cell.stack} accuracy: {len(s.accuracy.shares)} turns drawn after the run, mean share of the "
        f"{s.accuracy.reference} reply {s.accuracy.mean_share:.2f} (bar {s.accuracy.bar:g}): "
        f"{'pass' if s.accuracy.passed else 'FAIL'}"
        for r, s in ladders
        if s.accuracy is not None
    ]
    table.caption = "\n".join(captions)
    return table


def cost_table(
    results: Sequence[Result], rate: HourlyRate | None = None, chips: Mapping[str, ChipMatch] | None = None
) -> Table | None:
    """One row per load point of every sessions cell: joules per output token and per session (with
    ``rate``: $ per million output tokens and per session; with ``chips``, per cell key the chips its
    server ran on: output tokens/s per chip); None when there is none."""
    ladders = ladders_of(results)
    if not ladders:
        return None
    chips = {key: match for key, match in (chips or {}).items() if any(r.cell.key == key for r, _ in ladders)}
    columns = (*COST_BASE, *((CHIP_COLUMN,) if chips else ()), *(COST_COLUMNS if rate else ()))
    table = titled_table(COST_TITLE, columns, ("stack",))
    for result, section in ladders:
        for point in section.sessions_ladder:
            row = [result.cell.stack, load_text(point)]
            row += [joules_text(point.joules_per_output_token, point.energy_provenance)]
            row += [joules_text(point.joules_per_session, point.energy_provenance)]
            row += [per_chip_text(point.output_tokens_per_s, chips.get(result.cell.key))] if chips else []
            if rate is not None:
                row += [_usd(usd_per_million_output_tokens(rate, point)), _usd(usd_per_session(rate, point))]
            table.add_row(*row)
    captions = [f"{r.cell.stack} energy: {s.energy_note.split(';')[0]}" for r, s in ladders if s.energy_note]
    captions += [
        f"{CHIP_COLUMN} ({key}): {match.count:.4g} chips counted ({match.count_basis or match.basis})"
        for key, match in sorted(chips.items())
    ]
    if rate is not None:
        captions.append(
            f"$: the machine's hour at {rate.basis} over the point's output tokens/s and sessions"
        )
    table.caption = "\n".join(captions) or None
    return table


def reuse_line(reuse: ReuseFigures) -> str:
    """The reuse probe in one line."""
    cached = (
        ""
        if reuse.warm_cached_tokens is None
        else (f"; server cached tokens warm {reuse.warm_cached_tokens}, cold {reuse.cold_cached_tokens}")
    )
    return (
        f"reuse probe: {reuse.pairs} turns of ~{reuse.context_tokens_p50:.0f} tokens sent alone with their "
        f"own history (warm) and as a fresh session (cold): TTFT p50 {whole_ms(reuse.warm_ttft_p50_s)} vs "
        f"{whole_ms(reuse.cold_ttft_p50_s)} ms, a drop of {reuse.ttft_drop:.0%}{cached}"
    )


def turn_table(results: Sequence[Result]) -> Table | None:
    """One row per (load point, turn number) of every sessions cell; None when there is none."""
    ladders = ladders_of(results)
    if not ladders:
        return None
    table = titled_table(TURN_TITLE, TURN_COLUMNS, ("stack",))
    for result, section in ladders:
        for point in section.sessions_ladder:
            for turn in point.by_turn:
                cells = (result.cell.stack, load_text(point), str(turn.turn), str(turn.turns))
                figures = (
                    f"{turn.context_tokens_p50:.0f}",
                    whole_ms(turn.ttft_p50_s),
                    whole_ms(turn.tpot_p50_s),
                )
                table.add_row(*cells, *figures)
    return table


def session_tables(
    results: Sequence[Result], rate: HourlyRate | None = None, chips: Mapping[str, ChipMatch] | None = None
) -> tuple[Table | None, Table | None, Table | None]:
    """The ladders' table, the by-turn table and the energy, cost and chips table."""
    return session_table(results), turn_table(results), cost_table(results, rate, chips)
