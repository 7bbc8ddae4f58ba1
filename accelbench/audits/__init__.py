"""Audits in the spirit of MLPerf's compliance tests: a stack that games the run never ranks.

Each audit returns a ``Verdict`` (pass / fail / inconclusive, a one-line reason, its evidence):

* ``output`` (``output.py``, TEST01 over the whole run): outputs captured at random points of every
  timed trial, each nearer the fp32 reference of its own input than of any other; no zeros, no NaN.
* ``repeat`` (``repeat.py``, TEST04 inside the run): samples seen 1 to ~12 times vs never-seen ones,
  slipped into the scored run in adjacent pairs by the feed (``feed.py``); faster seen samples fail.
* ``caching`` and ``alternate_seed`` (``post_run.py``): immediate repeats after the run, and the quality
  gate on inputs of another seed.
* ``precision`` (``precision.py``): the error must fit the budget of the declared precision.

``status.cell_status`` turns the verdicts into the cell's status: a failed audit disqualifies.
``section`` is the stored ``audit`` mapping of a result; ``audit_warnings`` words the failed and
inconclusive ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.audits.feed import AuditFeed
from accelbench.audits.status import AUDIT_ORDER, cell_status
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict, outcome_of

__all__ = [
    "AUDIT_ORDER",
    "FAIL",
    "INCONCLUSIVE",
    "PASS",
    "AuditFeed",
    "Verdict",
    "audit_warnings",
    "cell_status",
    "failed_audits",
    "outcome_of",
    "section",
]


def section(verdicts: Sequence[Verdict], **extra: Any) -> dict[str, Any]:
    """The stored ``audit`` mapping: one entry per audit, plus ``extra`` figures (seeds, timings)."""
    return {**{v.audit: v.to_dict() for v in verdicts}, **extra}


def failed_audits(audit: Mapping[str, Any] | None) -> list[str]:
    """Names of the failed audits of a stored ``audit`` mapping (schema 3's ``flagged`` counts as failed)."""
    if not audit:
        return []
    return [name for name in AUDIT_ORDER if outcome_of(audit.get(name)) == FAIL]


def audit_warnings(audit: Mapping[str, Any] | None) -> list[str]:
    """One line per failed or inconclusive audit."""
    notes = []
    for name in AUDIT_ORDER:
        entry = (audit or {}).get(name)
        outcome = outcome_of(entry)
        if outcome in (FAIL, INCONCLUSIVE) and entry is not None:
            notes.append(f"audit {name} {outcome}: {entry.get('reason', '')}")
    return notes
