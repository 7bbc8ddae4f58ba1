"""The expressiveness matrix: which stacks run the non-matmul workloads, correctly, and how fast vs eager.

``expressiveness_matrix`` turns the results of a run into one record (read by the terminal and HTML
reports); its ``to_dict`` is printed under the ``expressiveness`` key of ``accelbench show --json``::

    {"workloads": [names], "stacks": [names],
     "cells": [{"workload", "stack", "device", "scenario", "verdict", "reason", "speed_vs_eager"}]}

Verdicts, from the result status: ``ok`` is ``runs``, or ``slower-than-eager`` when its throughput is
below torch-eager's on the same (workload, size, variant, device, scenario); ``quality_failed`` is
``wrong``; the other statuses keep their name (``unsupported``, ``crashed``, ``timeout``, ``oom``,
``unavailable``). ``speed_vs_eager`` is the throughput ratio stack / torch-eager when both are verified,
else None. Only results of the expressiveness workloads are included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.results import Result
from accelbench.workloads.expressive import EXPRESSIVE_WORKLOADS

EAGER_STACK = "torch-eager"
VERDICTS = ("runs", "slower-than-eager", "wrong", "unsupported", "crashed", "timeout", "oom", "unavailable")
_VERDICT_OF_STATUS = {"quality_failed": "wrong", "unstable": "runs", "invalid": "runs"}
"""A cell that ran right but whose timing is not verified (noise, LoadGen INVALID) still *runs*: the
matrix says what a stack can execute; its speed-up is given only for ``ok`` cells."""


def expressiveness_results(results: Sequence[Result]) -> list[Result]:
    """The results of ``results`` that belong to expressiveness workloads."""
    return [result for result in results if result.cell.workload in EXPRESSIVE_WORKLOADS]


@dataclass(frozen=True, slots=True)
class ExpressivenessCell:
    """One matrix cell: a result's verdict (``VERDICTS``), its reason and its speed relative to eager."""

    workload: str
    stack: str
    device: str
    scenario: str
    verdict: str
    reason: str
    speed_vs_eager: float | None

    def to_dict(self) -> dict[str, Any]:
        """The cell as a row of the document's ``cells``."""
        return {
            "workload": self.workload,
            "stack": self.stack,
            "device": self.device,
            "scenario": self.scenario,
            "verdict": self.verdict,
            "reason": self.reason,
            "speed_vs_eager": self.speed_vs_eager,
        }


@dataclass(frozen=True, slots=True)
class Expressiveness:
    """The workload x stack matrix: workloads and stacks in order of first appearance, and the cells."""

    workloads: tuple[str, ...]
    stacks: tuple[str, ...]
    cells: tuple[ExpressivenessCell, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ``expressiveness`` document of ``show --json`` (see the module docstring)."""
        return {
            "workloads": list(self.workloads),
            "stacks": list(self.stacks),
            "cells": [cell.to_dict() for cell in self.cells],
        }


def expressiveness_matrix(results: Sequence[Result]) -> Expressiveness:
    """The workload x stack matrix of ``results`` (empty without expressiveness workloads)."""
    chosen = expressiveness_results(results)
    eager = {_peer_key(r): r.qps for r in chosen if r.cell.stack == EAGER_STACK and r.head.status == "ok"}
    return Expressiveness(
        workloads=_ordered(r.cell.workload for r in chosen),
        stacks=_ordered(r.cell.stack for r in chosen),
        cells=tuple(_cell(result, eager.get(_peer_key(result))) for result in chosen),
    )


def _cell(result: Result, eager_qps: float | None) -> ExpressivenessCell:
    """One matrix cell: verdict, reason and speed relative to eager."""
    speed = _speed_vs_eager(result, eager_qps)
    verdict = _VERDICT_OF_STATUS.get(result.head.status, result.head.status)
    if result.head.status == "ok":
        verdict = "slower-than-eager" if speed is not None and speed < 1.0 else "runs"
    return ExpressivenessCell(
        workload=result.cell.workload,
        stack=result.cell.stack,
        device=result.cell.device,
        scenario=result.cell.scenario,
        verdict=verdict,
        reason=_reason(result),
        speed_vs_eager=speed,
    )


def _speed_vs_eager(result: Result, eager_qps: float | None) -> float | None:
    """Throughput of ``result`` over eager's on the same cell; None unless both are verified."""
    qps = result.qps if result.head.status == "ok" else None
    if qps is None or not eager_qps:
        return None
    return qps / eager_qps


def _reason(result: Result) -> str:
    """The result's reason; for a wrong result, the quality detail that says how wrong."""
    head = result.head
    if head.status == "quality_failed" and head.quality is not None:
        return f"{head.reason}: {head.quality.detail}" if head.reason else head.quality.detail
    return head.reason


def _peer_key(result: Result) -> tuple[str, ...]:
    """Everything of the cell but the stack: results with equal keys are compared with each other."""
    cell = result.cell
    return (cell.workload, cell.size, cell.variant, cell.device, cell.scenario)


def _ordered(names: Iterable[str]) -> tuple[str, ...]:
    """Distinct names in order of first appearance."""
    return tuple(dict.fromkeys(names))
