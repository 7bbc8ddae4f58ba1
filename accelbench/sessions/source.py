"""Where a sessions cell's sessions come from: the seeded synthetic generator
(``accelbench.sessions.workload``) or a replayed trace (``--session-trace``, ``accelbench.sessions.trace``),
every load point's sessions made before the server starts, with what the figures state of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from accelbench.errors import Unavailable, UserError
from accelbench.sessions.load import Load, Opening, opening
from accelbench.sessions.settings import SessionSettings
from accelbench.sessions.trace import describe as describe_trace
from accelbench.sessions.trace import read_trace, replay
from accelbench.sessions.workload import SYSTEM_PROMPT, Session, describe, make_sessions

WORKLOAD = "synthetic-agentic"
WARM_PASS = "warm-up"


@dataclass(frozen=True, slots=True)
class Source:
    """Where a cell's sessions come from (the synthetic generator or a replayed trace), made before the
    server starts: each load point's sessions, and what the figures state of them."""

    passes: Mapping[Load, tuple[Session, ...]]
    """Each load point's sessions (pass ``load-<n>`` or ``rate-<r>``), in ladder order."""
    workload: str
    """The workload, stated (``SessionFigures.workload``)."""
    turns: int
    """The most turns a session has."""
    max_tokens: int
    """The longest reply asked for (the server is sized for it)."""
    delay_s: tuple[float, float]
    """The range of the turns' waits (the forbidden-reuse pairs wait as much)."""
    trace: str | None = None
    """The replayed trace file's name (None: synthetic)."""
    openings: Mapping[Load, Opening] = field(default_factory=dict)
    """Each rate point's arrival schedule (drawn from the input seed) and cap; none for a closed loop."""
    system: str = SYSTEM_PROMPT
    """The declared shared prefix: the system message every session opens with (a replayed trace's
    longest: its sessions' shared ``hash_ids`` blocks follow the system message)."""
    warm: tuple[Session, ...] = ()
    """The warm-up pass (``warm-up``): one session of the workload, sent whole before the ladder; the
    first point's copied-audit decoys replay it (``accelbench.sessions.forbidden.decoys``)."""


def source_of(settings: SessionSettings, input_seed: int, count_tokens: Callable[[str], int]) -> Source:
    """The cell's sessions: ``--session-trace``'s replayed (the file read again and checked against the
    sha256 the run took before it started), else the synthetic workload's."""
    counts = {load: load.sessions or settings.rate_sessions for load in settings.loads}
    openings = {
        load: opened
        for load, count in counts.items()
        if (opened := opening(input_seed, load, count, settings.in_flight_cap)) is not None
    }
    if settings.trace is None:
        shape = settings.shape
        return Source(
            passes={n: tuple(make_sessions(input_seed, n.pass_name, c, shape)) for n, c in counts.items()},
            workload=f"{WORKLOAD}: {describe(shape)}",
            turns=shape.turns,
            max_tokens=settings.max_tokens,
            delay_s=shape.delay_s,
            openings=openings,
            warm=tuple(make_sessions(input_seed, WARM_PASS, 1, shape)),
        )
    try:
        trace = read_trace(Path(settings.trace))
    except UserError as err:
        raise Unavailable(str(err)) from None
    if trace.sha256 != settings.trace_sha256:
        raise Unavailable(
            f"session trace {settings.trace} changed since the run started (sha256 {trace.sha256[:12]}, "
            f"the run read {str(settings.trace_sha256)[:12]})"
        )
    name = Path(settings.trace).name
    passes = {
        n: tuple(replay(trace, input_seed, n.pass_name, c, count_tokens, settings.max_tokens))
        for n, c in counts.items()
    }
    systems = [s.system for sessions in passes.values() for s in sessions]
    return Source(
        passes=passes,
        workload=describe_trace(trace, name),
        turns=trace.most_turns,
        max_tokens=trace.most_tokens(settings.max_tokens),
        delay_s=trace.delay_range_s(),
        trace=name,
        openings=openings,
        system=max(systems, key=len, default=trace.system or SYSTEM_PROMPT),
        warm=tuple(replay(trace, input_seed, WARM_PASS, 1, count_tokens, settings.max_tokens)),
    )
