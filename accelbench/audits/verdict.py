"""The verdict of one audit: pass, fail or inconclusive, with a one-line reason and its evidence.

Every audit (``output``, ``repeat``, ``caching``, ``alternate_seed``, ``precision``) returns a ``Verdict``;
the cell's status follows them (``accelbench.audits.status``). ``evidence`` holds the numbers the verdict
was drawn from (samples, thresholds, intervals), so a reader can recompute it from the stored result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PASS = "pass"
FAIL = "fail"
INCONCLUSIVE = "inconclusive"
OUTCOMES = (PASS, FAIL, INCONCLUSIVE)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one audit concluded about a cell."""

    audit: str
    outcome: str
    reason: str
    """One line with the audit's numbers; for a failure it becomes the cell's ``disqualified`` reason."""
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown audit outcome {self.outcome!r}")

    def to_dict(self) -> dict[str, Any]:
        """The stored form: ``verdict`` and ``reason`` beside the evidence."""
        return {**dict(self.evidence), "verdict": self.outcome, "reason": self.reason}
