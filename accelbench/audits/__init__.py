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
``section`` is the stored ``audit`` section of a result (``accelbench.audit_section.AuditSection``);
``audit_warnings`` words the failed and inconclusive ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accelbench.audit_section import AuditEntry, AuditSection
from accelbench.audits.feed import AuditFeed
from accelbench.audits.status import AUDIT_ORDER, cell_status
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict

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
    "inconclusive_audits",
    "section",
]


def section(verdicts: Sequence[Verdict], **extra: Any) -> AuditSection:
    """The stored ``audit`` section: one entry per audit, plus ``extra`` figures (seeds, timings)."""
    entries = {v.audit: AuditEntry(v.outcome, v.reason, dict(v.evidence)) for v in verdicts}
    return AuditSection(entries, extra)


def failed_audits(audit: AuditSection | None) -> list[str]:
    """Names of the failed audits of a result's ``audit`` section (schema 3's ``flagged``: failed)."""
    if audit is None:
        return []
    return [name for name in AUDIT_ORDER if audit.outcome(name) == FAIL]


def inconclusive_audits(audit: AuditSection | None) -> list[str]:
    """Names of the audits of a result's ``audit`` section that could not conclude."""
    if audit is None:
        return []
    return [name for name in AUDIT_ORDER if audit.outcome(name) == INCONCLUSIVE]


def audit_warnings(audit: AuditSection | None) -> list[str]:
    """One line per failed or inconclusive audit."""
    if audit is None:
        return []
    return [
        f"audit {name} {entry.outcome}: {entry.reason}"
        for name in AUDIT_ORDER
        if (entry := audit.entries.get(name)) is not None and entry.outcome in (FAIL, INCONCLUSIVE)
    ]
