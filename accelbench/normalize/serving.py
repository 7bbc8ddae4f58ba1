"""Serving overhead: what a server costs over the same stack in process, and what its batching gains.

A served deployment is the stack ``<stack>@<server>`` (docs/serving.md). For each served result whose
in-process ``<stack>`` was measured in the same run, on the same cell otherwise (workload, size,
variant, device, scenario), the overhead is the served figure over the in-process one, oriented so that
above 1 means the server costs that factor:

- latency headlines (single-stream p90, multi-stream p99 per query): served / in-process;
- throughput headlines (offline samples/s, server searched max QPS): in-process / served.

The batching comparison puts ``<stack>@<server>`` (dynamic batching on) against
``<stack>@<server>-nobatch`` as its reference, the same way: below 1, dynamic batching helps. Both
sides must be verified (``ranking.is_verified``): a figure from a run that did not pass every audit
gives no ratio, only the reason. Pure arithmetic over stored results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.loadgen_figures import HEADLINES
from accelbench.normalize.ranking import is_verified
from accelbench.results import Result

NOBATCH = "-nobatch"


@dataclass(frozen=True, slots=True)
class Comparison:
    """One served result beside its reference: the in-process stack (overhead) or the batching-off server
    (batching). ``ratio`` is the served cost over the reference's (above 1: slower); None, with
    ``reason``, when either side gives no verified figure."""

    kind: str
    """``overhead`` (served vs in process) or ``batching`` (batching on vs off)."""
    run_id: str
    cell: str
    """The served cell's key."""
    reference: str
    """The stack compared against: ``onnxruntime`` or ``onnxruntime@ray-serve-nobatch``."""
    served: str
    metric: str
    reference_value: float | None
    served_value: float | None
    ratio: float | None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A plain JSON object."""
        return {name: getattr(self, name) for name in self.__slots__}


def headline_value(result: Result) -> float | None:
    """The scenario's MLPerf figure of ``result`` in SI units (LoadGen's, or the SUT timer's fallback for a
    result stored before schema 5); None when it has none."""
    if result.figures is not None:
        return result.figures.value
    scenario, latency = result.cell.scenario, result.latency
    if HEADLINES.get(scenario, "").startswith("latency_"):
        if latency is None:
            return None
        return latency.p90_s if scenario == "single-stream" else latency.p99_s
    return result.qps


def _lower_is_better(scenario: str) -> bool:
    return HEADLINES.get(scenario, "").startswith("latency_")


def compare(kind: str, reference: Result, served: Result) -> Comparison:
    """``served`` against ``reference`` on the same cell: above 1 means ``served`` is that much worse."""
    scenario = served.cell.scenario
    ref_value = headline_value(reference) if is_verified(reference) else None
    served_value = headline_value(served) if is_verified(served) else None
    reason, ratio = "", None
    unverified = [r for r in (reference, served) if not is_verified(r)]
    if unverified:
        reason = "; ".join(f"{r.cell.stack} not verified ({r.head.status})" for r in unverified)
    elif not ref_value or not served_value:
        reason = "no headline figure"
    elif _lower_is_better(scenario):
        ratio = served_value / ref_value
    else:
        ratio = ref_value / served_value
    return Comparison(
        kind=kind,
        run_id=served.run_id,
        cell=served.cell.key,
        reference=reference.cell.stack,
        served=served.cell.stack,
        metric=HEADLINES.get(scenario, "qps"),
        reference_value=ref_value,
        served_value=served_value,
        ratio=ratio,
        reason=reason,
    )


def serving_comparisons(results: Sequence[Result]) -> tuple[Comparison, ...]:
    """Every overhead and batching comparison the results allow, in cell order; pairs only within a run."""
    by_cell = {(r.run_id, _cell_without_stack(r), r.cell.stack): r for r in results}
    comparisons = []
    for (run_id, place, stack), served in sorted(by_cell.items()):
        if "@" not in stack:
            continue
        base, server = stack.split("@", 1)
        in_process = by_cell.get((run_id, place, base))
        if in_process is not None:
            comparisons.append(compare("overhead", in_process, served))
        unbatched = by_cell.get((run_id, place, f"{stack}{NOBATCH}"))
        if not server.endswith(NOBATCH) and unbatched is not None:
            comparisons.append(compare("batching", unbatched, served))
    return tuple(comparisons)


def _cell_without_stack(result: Result) -> tuple[str, ...]:
    cell = result.cell
    return (cell.workload, cell.size, cell.variant, cell.device, cell.scenario)
