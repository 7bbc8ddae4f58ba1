"""The session agreement benchmark's records and tables (``session_agreement.py``): one answered turn as
a client recorded it, the pooled medians by turn index, and the paired table (the same round's session
and turn sent by both tools, and the ranked one: each round's k-th fastest turn of an index against the
other tool's k-th)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accelbench.endpoint.figures import median_interval

CLIENTS = ("accelbench", "aiperf")


@dataclass(frozen=True, slots=True)
class TurnTime:
    """One answered turn as a client recorded it (seconds on its own clock)."""

    session: str
    turn: int
    send_s: float
    ttft_s: float
    end_s: float
    output_tokens: int
    input_tokens: int
    overlapped: bool = False
    """accelbench only: an audit request of its point was in flight during this turn."""
    after_audit: bool = False
    """accelbench only: an audit request (a pair's, a decoy's) ended between the session's turn before
    (the point's start for a first turn) and this turn's send: the server's cache saw audit traffic
    since this session's last request, which AIPerf's sessions never meet."""
    round: int = 0
    """The round it was sent in (both tools replay the same trace in a round: a pair is one round's
    session and turn); 0 when not known (a ``turns.json`` of stop 56 or before)."""

    @property
    def tpot_s(self) -> float | None:
        if self.output_tokens < 2:
            return None
        return (self.end_s - self.send_s - self.ttft_s) / (self.output_tokens - 1)


def _median_ci(values: Sequence[float]) -> str:
    if not values:
        return "-"
    low, high = median_interval(values)
    interval = f" [{low:.3g}, {high:.3g}]" if high > 0 else ""
    return f"{statistics.median(values):.4g}{interval}"


def print_tables(turns: dict[str, list[TurnTime]], sessions: int, rounds: int) -> None:
    """Pooled medians (95% interval) per figure, all turns and by turn index; ratios AIPerf/accelbench."""
    clean = {
        "accelbench": turns["accelbench"],
        "accelbench (clean)": [t for t in turns["accelbench"] if not t.overlapped],
        "accelbench (untouched)": [t for t in turns["accelbench"] if not (t.overlapped or t.after_audit)],
        "aiperf": turns["aiperf"],
    }
    names = ["accelbench", "accelbench (clean)", "accelbench (untouched)", "aiperf"]
    print(
        f"\n{sessions} sessions at once, {rounds} rounds; pooled turns per client: "
        + ", ".join(f"{n} {len(clean[n])}" for n in names)
    )
    ratio_names = "ratio aiperf/accelbench | ratio aiperf/clean | ratio aiperf/untouched"
    print("| turns | figure | " + " | ".join(names) + f" | {ratio_names} |")
    print("|---|---|" + "---|" * (len(names) + 3))
    indices = sorted({t.turn for t in turns["aiperf"]} | {t.turn for t in turns["accelbench"]})
    for label, pick in [("all", None), *((f"turn {i}", i) for i in indices)]:
        chosen = {n: [t for t in clean[n] if pick is None or t.turn == pick] for n in names}
        for figure, value in (
            ("TTFT p50 s", lambda t: t.ttft_s),
            ("TPOT p50 s", lambda t: t.tpot_s),
            ("output tokens", lambda t: float(t.output_tokens)),
            ("input tokens", lambda t: float(t.input_tokens)),
        ):
            values = {n: [v for t in chosen[n] if (v := value(t)) is not None] for n in names}
            medians = {n: statistics.median(v) if v else float("nan") for n, v in values.items()}
            ratios = [medians["aiperf"] / medians[b] if medians[b] else float("nan") for b in names[:3]]
            print(
                f"| {label} | {figure} | "
                + " | ".join(_median_ci(values[n]) for n in names)
                + " | "
                + " | ".join(f"{r:.3f}" for r in ratios)
                + " |"
            )


def _pair_key(turn: TurnTime) -> tuple[int, int, int]:
    """(round, session's number in the trace, turn): accelbench names a session ``0``, AIPerf ``s0``."""
    return turn.round, int("".join(c for c in turn.session if c.isdigit()) or 0), turn.turn


def print_paired(turns: dict[str, list[TurnTime]]) -> None:
    """AIPerf / accelbench per pair (the same round's session and turn: one conversation sent by both),
    the median of the pairs' ratios and its 95% interval, all turns and by turn index; for accelbench's
    turns, its clean and its untouched ones (``print_tables``)."""
    theirs = {_pair_key(t): t for t in turns["aiperf"]}
    kinds = {
        "accelbench": lambda t: True,
        "clean": lambda t: not t.overlapped,
        "untouched": lambda t: not (t.overlapped or t.after_audit),
    }
    print("\npaired: AIPerf / accelbench on the same round's session and turn, median of ratios [95%]")
    print("| turns | accelbench turns | pairs | TTFT ratio | TPOT ratio | input tokens ratio |")
    print("|---|---|---|---|---|---|")
    indices = sorted({t.turn for t in turns["accelbench"]})
    for label, pick in [("all", None), *((f"turn {i}", i) for i in indices)]:
        for kind, keep in kinds.items():
            pairs = [
                (mine, theirs[_pair_key(mine)])
                for mine in turns["accelbench"]
                if keep(mine) and (pick is None or mine.turn == pick) and _pair_key(mine) in theirs
            ]
            cells = []
            for value in VALUES:
                ratios = [b / a for m, o in pairs if (a := value(m)) and (b := value(o)) is not None]
                cells.append(_median_ci(ratios))
            print(f"| {label} | {kind} | {len(pairs)} | " + " | ".join(cells) + " |")
        cells = [_median_ci(_ranked(turns, pick, value)) for value in VALUES]
        count = len(_ranked(turns, pick, VALUES[0]))
        print(f"| {label} | ranked | {count} | " + " | ".join(cells) + " |")


VALUES = (lambda t: t.ttft_s, lambda t: t.tpot_s, lambda t: float(t.input_tokens))
"""The paired table's figures: TTFT, TPOT and input tokens of a turn."""


def _ranked(
    turns: dict[str, list[TurnTime]], pick: int | None, value: Callable[[TurnTime], float | None]
) -> list[float]:
    """AIPerf / accelbench of each round's k-th smallest ``value`` among the turns of one index (``pick``,
    None: every index, each apart), k-th against k-th: the comparison of two distributions that does not
    depend on which session the server happened to serve first."""
    ratios = []
    keys = {(t.round, t.turn) for t in turns["accelbench"] if pick is None or t.turn == pick}
    for key in sorted(keys):
        mine, theirs = (
            sorted(v for t in turns[n] if (t.round, t.turn) == key and (v := value(t)) is not None)
            for n in CLIENTS
        )
        if len(mine) == len(theirs):  # a round a tool did not finish is left out
            ratios += [b / a for a, b in zip(mine, theirs, strict=True) if a]
    return ratios
