"""Uncertain numbers: ``Range(low, high, central)`` and the order of provenances.

Every uncertain input (a disputed transistor count, a TDP two sources disagree on) is a range; ranges
propagate through products and quotients of positive quantities by interval arithmetic, and the central
values propagate exactly, so a chain of factors multiplies back to a measured ratio by its central values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PROVENANCES = ("measured", "datasheet", "paper", "estimate")
"""From most to least trusted: measured here, a vendor figure, a designers' paper, anything else."""


@dataclass(frozen=True, slots=True)
class Range:
    """A positive quantity known to lie in [low, high]; ``central`` is the value used as a best guess."""

    low: float
    high: float
    central: float

    def __post_init__(self) -> None:
        values = (self.low, self.central, self.high)
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"range bounds must be finite, got {values}")
        if not self.low <= self.central <= self.high:
            raise ValueError(f"range needs low <= central <= high, got {values}")

    @classmethod
    def point(cls, value: float) -> Range:
        """An exactly known value."""
        return cls(value, value, value)

    @classmethod
    def up_to(cls, value: float, high: float | None) -> Range:
        """``value`` as the low end and central value of a range reaching ``high`` (a point for None)."""
        return cls(value, max(high or value, value), value)

    @classmethod
    def between(cls, low: float, high: float, central: float | None = None) -> Range:
        """A range; the central value defaults to the geometric mean (the midpoint if a bound is <= 0)."""
        if central is None:
            central = math.sqrt(low * high) if low > 0 and high > 0 else (low + high) / 2
            central = min(max(central, low), high)
        return cls(low, high, central)

    @property
    def is_point(self) -> bool:
        """True when low == high."""
        return self.low == self.high

    def contains(self, value: float, rel_tol: float = 1e-9) -> bool:
        """True when ``value`` lies in [low, high], up to a relative tolerance."""
        slack = rel_tol * max(abs(self.low), abs(self.high))
        return self.low - slack <= value <= self.high + slack

    def __mul__(self, other: Range | float) -> Range:
        right = _as_range(other)
        _check_positive(self, right)
        return Range(self.low * right.low, self.high * right.high, self.central * right.central)

    __rmul__ = __mul__

    def __truediv__(self, other: Range | float) -> Range:
        right = _as_range(other)
        _check_positive(self, right)
        return Range(self.low / right.high, self.high / right.low, self.central / right.central)

    def __rtruediv__(self, other: float) -> Range:
        return _as_range(other) / self


def range_document(value: Range | None) -> dict[str, float] | None:
    """A range as JSON (``low``, ``central``, ``high``); None stays None."""
    return None if value is None else {"low": value.low, "central": value.central, "high": value.high}


def product(values: list[Range] | tuple[Range, ...]) -> Range:
    """The product of ranges (the point 1 for no values)."""
    total = Range.point(1.0)
    for value in values:
        total = total * value
    return total


def weakest(*provenances: str) -> str:
    """The least trusted of some provenances (``measured`` for none)."""
    known = [p for p in provenances if p]
    for provenance in known:
        if provenance not in PROVENANCES:
            raise ValueError(f"unknown provenance {provenance!r}; use one of {', '.join(PROVENANCES)}")
    return max(known, key=PROVENANCES.index, default="measured")


def _as_range(value: Range | float) -> Range:
    return value if isinstance(value, Range) else Range.point(float(value))


def _check_positive(*ranges: Range) -> None:
    for value in ranges:
        if value.low <= 0:
            raise ValueError(f"interval arithmetic here needs positive ranges, got {value}")
