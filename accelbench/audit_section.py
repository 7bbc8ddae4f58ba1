"""A result's ``audit`` section as stored: each audit's verdict (``AuditEntry``: outcome, reason, its own
evidence) and the section that holds them (``AuditSection``). Written from ``accelbench.audits.Verdict``s,
judged again by ``accelbench.bundle.rejudge``; an audit's evidence stays a mapping of its own, read by
number through ``evidence_number``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench.sections import plain


def evidence_number(evidence: Mapping[str, Any], key: str) -> float | None:
    """The number an audit's evidence (or one of its records) holds under ``key``; None when it holds
    none (missing, null, text or a truth value)."""
    value = evidence.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audit's stored verdict (``accelbench.audits.Verdict``): its outcome, reason and evidence.

    ``evidence`` holds the numbers the audit drew its verdict from (each audit its own). A schema-3 entry
    stored ``flagged`` instead of a verdict (``flagged`` True: ``fail``) and no reason."""

    outcome: str
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    flagged: bool | None = None
    """The schema-3 form's flag (None in newer entries)."""

    def number(self, key: str) -> float | None:
        """A number of the evidence, or None when the audit did not record it."""
        return evidence_number(self.evidence, key)

    def holds(self, key: str) -> bool:
        """Whether the evidence records ``key`` (with a value other than null)."""
        return self.evidence.get(key) is not None

    def flag(self, key: str) -> bool:
        """The evidence's ``key`` as a truth value (missing: False)."""
        return bool(self.evidence.get(key))

    def text(self, key: str) -> str:
        """The evidence's ``key`` as text (missing: "")."""
        return str(self.evidence.get(key, ""))

    def records(self, key: str) -> tuple[Mapping[str, Any], ...]:
        """The evidence's list of records under ``key`` (missing or empty: none); TypeError when it holds
        something else, so a judge of the wrong shape of evidence is inconclusive, never lenient."""
        value = self.evidence.get(key) or ()
        if not isinstance(value, list | tuple) or not all(isinstance(v, Mapping) for v in value):
            raise TypeError(f"evidence {key} is not a list of records")
        return tuple(value)

    def record(self, key: str) -> Mapping[str, Any]:
        """The evidence's record under ``key`` (missing or empty: an empty one); TypeError when it holds
        something else."""
        value = self.evidence.get(key) or {}
        if not isinstance(value, Mapping):
            raise TypeError(f"evidence {key} is not a record")
        return value

    def window_ratios(self) -> tuple[float, ...]:
        """The seen/never-seen ratio of each of the repeat audit's ``windows``, the whole run's first."""
        windows = self.evidence.get("windows")
        if not isinstance(windows, list | tuple):
            return ()
        return tuple(float(w["ratio"]) for w in windows if isinstance(w, Mapping) and "ratio" in w)

    def to_dict(self) -> dict[str, Any]:
        """The stored entry: ``verdict`` and ``reason`` beside the evidence (schema 3: ``flagged``)."""
        if self.flagged is not None:
            return {**plain(self.evidence), "flagged": self.flagged}
        return {**plain(self.evidence), "verdict": self.outcome, "reason": self.reason}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> AuditEntry:
        """A stored entry (either form)."""
        evidence = {k: v for k, v in document.items() if k not in ("verdict", "reason", "flagged")}
        if "verdict" in document:
            return cls(str(document["verdict"]), str(document.get("reason", "")), evidence)
        flagged = bool(document.get("flagged"))
        return cls("fail" if flagged else "pass", "", evidence, flagged)


@dataclass(frozen=True, slots=True)
class AuditSection:
    """The ``audit`` section of a result: one entry per audit that ran, and the figures stored beside them
    (``feed_seed``, ``timed_pool``, ``post_run_s``, ``salt_tokens``)."""

    entries: Mapping[str, AuditEntry]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def outcome(self, name: str) -> str | None:
        """The outcome of audit ``name`` (pass, fail, inconclusive), None when it did not run."""
        entry = self.entries.get(name)
        return entry.outcome if entry is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The stored ``audit`` section."""
        return {**plain(self.extra), **{name: e.to_dict() for name, e in self.entries.items()}}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> AuditSection:
        """A stored ``audit`` section: a mapping with a ``verdict`` (or ``flagged``) is an audit's entry."""
        entries = {
            name: AuditEntry.from_dict(value)
            for name, value in document.items()
            if isinstance(value, Mapping) and ("verdict" in value or "flagged" in value)
        }
        return cls(entries, {k: v for k, v in document.items() if k not in entries})
