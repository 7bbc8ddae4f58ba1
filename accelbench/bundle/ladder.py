"""A sessions cell's ladder derived again from the per-turn records it carries.

A sessions cell stores every turn it sent in ``cells/<folder>/turns.jsonl`` (``accelbench.sessions.cell``):
each load point's timed turns (role ``turn``), the forbidden-reuse audits' requests sent while the point
ran (their own roles), and the reuse probe's sends after the ladder (``warm``, ``cold``). A request's load
point is ``sessions.load.Load.of`` its record. Each stored point is ``accelbench.sessions.figures.point``
of that point's turns and audit requests, as ``sessions.cell.run_ladder`` made it, under the section's
per-turn SLO; the reuse figures are ``accelbench.sessions.reuse.figures`` of the probe's sends. Here the
same functions run on the same records and every stored figure they make is compared.

Not derived: a point's energy (a meter's reading), a rate point's achieved rate, peak in flight and why it
fell behind (the driver's clock, not in the records), and the per-turn SLO itself (taken from the section:
goodput is judged under the bounds the section states).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from accelbench.bundle.tolerance import same
from accelbench.endpoint.figures import Bounds
from accelbench.session_figures import ReuseFigures, SessionFigures, SessionPoint, TurnFigures
from accelbench.sessions import reuse
from accelbench.sessions.cell import TURNS_FILE
from accelbench.sessions.driver import TURN
from accelbench.sessions.figures import UNBOUNDED, point
from accelbench.sessions.load import Load
from accelbench.sessions.records import TurnRecord

COMPARED = (
    "sessions",
    "turns",
    "failed_turns",
    "duration_s",
    "ttft_p50_s",
    "ttft_p90_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "session_latency_p50_s",
    "session_latency_p90_s",
    "e2e_interactivity_tokens_per_s",
    "input_tokens_per_s",
    "output_tokens_per_s",
    "tokens_per_s_per_user",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
)
"""A point's figures derived again (and ``by_turn``, turn by turn); goodput and the audit requests'
tokens too where the point stores them."""
WHERE_STORED = ("goodput_turns_per_s", "good_sessions", "audit_input_tokens", "audit_output_tokens")
NOT_DERIVED = ("energy_j", "energy_provenance", "achieved_rate_per_s", "peak_in_flight", "behind")
"""A point's fields the records do not give (a meter's reading, the driver's clock). Every other field
is compared, ``by_turn`` turn by turn, or names the point (``rate_per_s``, ``sessions``: ``Load``); a
test holds every field of ``SessionPoint`` to one of these, so a new figure is not left unchecked."""


def turns_path(folder: str) -> str:
    """The bundle path of a sessions cell's per-turn records."""
    return f"cells/{folder}/{TURNS_FILE}"


def turn_records(text: str) -> list[TurnRecord]:
    """Every record of a ``turns.jsonl``. Raises ValueError naming the line that does not load as one."""
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(TurnRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, TypeError, AttributeError, KeyError, ValueError) as exc:
            raise ValueError(f"{TURNS_FILE} line {number} is not a turn record: {exc}") from None
    return records


def ladder_differences(records: Sequence[TurnRecord], section: SessionFigures) -> list[str]:
    """``<load>: field X from the records, stored Y`` per stored figure the records do not give, a load
    with timed turns but no stored point, and the reuse figures' differences."""
    slo = _slo(section)
    found = []
    for stored_point in section.sessions_ladder:
        found += _point_differences(records, stored_point, slo)
    stored_loads = {Load.of_point(p) for p in section.sessions_ladder}
    timed_loads = {Load.of(r.request) for r in records if r.request.role == TURN}
    unstored = sorted(timed_loads - stored_loads, key=str)
    found += [f"{load}: turn records, no stored point" for load in unstored]
    return found + _reuse_differences(records, section.reuse)


def _point_differences(records: Sequence[TurnRecord], stored_point: SessionPoint, slo: Bounds) -> list[str]:
    load = Load.of_point(stored_point)
    mine = [r for r in records if Load.of(r.request) == load]
    turns = [r for r in mine if r.request.role == TURN]
    if not turns:
        return [f"{load}: no turn records"]
    audits = [r for r in mine if r.request.role != TURN]
    if stored_point.audit_output_tokens is None:
        audits = []  # a point stored before: its span and rates were its turns' alone
    sessions = load.sessions if load.rate_per_s is None else len({r.session for r in turns})
    derived = point(sessions, turns, slo, audits=audits)
    names = (*COMPARED, *(n for n in WHERE_STORED if getattr(stored_point, n) is not None))
    found = _differences(f"{load}:", derived, stored_point, names)
    return found + _by_turn_differences(f"{load}:", derived.by_turn, stored_point.by_turn)


def _by_turn_differences(
    where: str, derived: Sequence[TurnFigures], stored: Sequence[TurnFigures]
) -> list[str]:
    """Each turn number's figures (a turn number one side lacks is named)."""
    if [t.turn for t in derived] != [t.turn for t in stored]:
        numbers = f"{[t.turn for t in derived]} from the records, stored {[t.turn for t in stored]}"
        return [f"{where} by_turn turn numbers {numbers}"]
    names = tuple(f.name for f in dataclasses.fields(TurnFigures))
    found = []
    for mine, said in zip(derived, stored, strict=True):
        found += _differences(f"{where} turn {said.turn}", mine, said, names)
    return found


def _reuse_differences(records: Sequence[TurnRecord], stored: ReuseFigures | None) -> list[str]:
    """The reuse probe's figures from its warm and cold sends (none stored: none sent)."""
    sent = [r for r in records if r.request.role in (reuse.WARM, reuse.COLD)]
    if stored is None:
        return [f"reuse: {len(sent)} probe record(s), no stored reuse figures"] if sent else []
    names = tuple(f.name for f in dataclasses.fields(ReuseFigures))
    return _differences("reuse:", reuse.figures(sent), stored, names)


def _differences(where: str, derived: object, stored: object, names: Sequence[str]) -> list[str]:
    """``<where> name X from the records, stored Y`` for each of ``names`` the two records differ in."""
    found = []
    for name in names:
        mine, said = getattr(derived, name), getattr(stored, name)
        if not same(mine, said):
            found.append(f"{where} {name} {_shown(mine)} from the records, stored {_shown(said)}")
    return found


def _slo(section: SessionFigures) -> Bounds:
    """The per-turn SLO the section states (a section stored before it: unbounded, no goodput stored)."""
    if not section.turn_slo_ttft_s and not section.turn_slo_tpot_s:
        return UNBOUNDED
    return Bounds(section.turn_slo_ttft_s, section.turn_slo_tpot_s)


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)
