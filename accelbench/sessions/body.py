"""The sessions driver's body of a cell's outcome (``accelbench.outcome``): the ``generation`` section
(the session ladder, ``accelbench.session_figures``) and the audits' section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.session_figures import SessionFigures


@dataclass(frozen=True, slots=True)
class SessionsBody:
    """The sessions driver's part of a cell's outcome: the audits' section and the ``generation``
    section (the session ladder)."""

    session_ladder: SessionFigures
    """The ``generation`` section (``Result.session_ladder``)."""
    audit: AuditSection
    """Every audit's verdict: a served cell without them never loads (nothing unaudited can rank)."""

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        return {"audit": self.audit.to_dict(), "generation": self.session_ladder.to_dict()}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> SessionsBody:
        """The body of an outcome document (the head's keys are ignored)."""
        return cls(
            SessionFigures.from_dict(document["generation"]), AuditSection.from_dict(document["audit"])
        )
