"""The outcome of a sessions cell: the head (status, settings, warnings), the audits and the
``generation`` section (``SessionFigures``: the session ladder).

Audits today: ``session_salts`` (every session of the cell had a salt of its own, so nothing beyond the
declared shared prefix could be served from another session's cache) and the endpoint's ``token_count``
(the server's ``usage`` against the client's count, replies padded past ``max_tokens``), and the audits
of forbidden reuse, ``altered_history`` and ``copied_session`` (``accelbench.sessions.forbidden``: a
turn with a one-word-altered history and a fresh session copying another's, slipped into the load, each
timed against a cold control; a failure disqualifies). The inline accuracy check
(``accelbench.sessions.accuracy``) is judged as a curve's: a judged reply padded where it leaves the
reference fails the ``padding`` audit (disqualified); a mean under the bar or too many replies under the
per-reply floor is ``quality_failed``.
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench import audits
from accelbench.audit_section import AuditSection
from accelbench.audits.verdict import FAIL, PASS, Verdict
from accelbench.endpoint.accuracy import Accuracy
from accelbench.endpoint.audits import padding, token_count
from accelbench.endpoint.outcome import accuracy_failure
from accelbench.head import NoiseProbe
from accelbench.meters import noise
from accelbench.session_figures import SessionPoint
from accelbench.sessions import forbidden
from accelbench.sessions.driver import TURN
from accelbench.sessions.load import Load
from accelbench.sessions.records import TurnRecord


def session_salts(records: Sequence[TurnRecord]) -> Verdict:
    """Every session (over every load point) had a salt of its own, and every turn carried its session's."""
    salts: dict[tuple[Load, int], set[str]] = {}
    for r in records:
        salts.setdefault((Load.of(r.request), r.session), set()).add(r.request.salt)
    mixed = sum(len(s) != 1 for s in salts.values())
    seen = [next(iter(s)) for s in salts.values() if len(s) == 1]
    repeated = len(seen) - len(set(seen))
    outcome = FAIL if mixed or repeated or any(not s for s in seen) else PASS
    reason = f"{len(set(seen))} distinct salts over {len(salts)} sessions ({mixed} with more than one)"
    return Verdict("session_salts", outcome, reason, {"repeated": repeated, "mixed": mixed})


def invalid_reasons(ladder: Sequence[SessionPoint], records: Sequence[TurnRecord], stopped: str) -> list[str]:
    """A load point with failed turns (with the first error) or a ladder cut short makes the cell invalid."""
    reasons = []
    for point in ladder:
        load = Load.of_point(point)
        mine = [r.request for r in records if Load.of(r.request) == load and r.request.role == TURN]
        failed = [r for r in mine if not r.ok]
        if failed:
            reasons.append(
                f"{load}: {len(failed)} of {point.turns} turns failed ({failed[0].status}: {failed[0].error})"
            )
    return reasons + ([f"ladder stopped: {stopped}"] if stopped else [])


def verdicts(records: Sequence[TurnRecord], max_tokens: int) -> tuple[Verdict, ...]:
    """The audits of the cell's turns: the salts of the sessions' own turns, the token counts of every
    request, and the forbidden-reuse pairs (``accelbench.sessions.forbidden``)."""
    turns = [r for r in records if r.request.role == TURN]
    found = session_salts(turns), token_count([r.request for r in records], max_tokens)
    return found + forbidden.verdicts(records)


def status_of(
    records: Sequence[TurnRecord],
    ladder: Sequence[SessionPoint],
    stopped: str,
    max_tokens: int,
    judged: tuple[Accuracy | None, NoiseProbe | None] = (None, None),
) -> tuple[tuple[str, str], AuditSection]:
    """The cell's (status, reason) and its audit section. ``judged``: the inline check (its padding audit
    and quality failure; None: not made) and the noise guard's record (None: none was kept)."""
    accuracy, probe = judged
    found = verdicts(records, max_tokens) + ((padding(accuracy),) if accuracy is not None else ())
    failures = [] if accuracy is None or accuracy.passed else [accuracy_failure(accuracy)]
    invalid = invalid_reasons(ladder, records, stopped)
    unstable = noise.unstable_reason(probe) if probe is not None else ""
    status = audits.cell_status(found, failures, invalid, unstable, noise.outside_reason(probe))
    return status, audits.section(found)
