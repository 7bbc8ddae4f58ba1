"""The output check: outputs captured across the whole timed run, each against the reference of its input.

The feed keeps outputs at seeded random positions spread over every trial (beginning, middle, end), in
runs of adjacent positions. Each checked output must be

* finite, of the reference's shape, and not all zeros where the reference is not (skipped work);
* not the answer to another question: an output nearer the reference of another checked input than its
  own, and within ``STALE_MATCH`` of it, is stale (an earlier query's answer, a reused buffer);
* not the same as the output for another input whose reference differs (a constant answer).

The distance is the relative L2 error ||out - ref|| / ||ref||. Any violation fails the audit with the
first offending check named. How close outputs must be to pass the accuracy bar is the quality gate's
business (``accelbench.meters.quality``), applied to the same checks: an output that is merely wrong,
near no reference at all, fails the gate (``quality_failed``), not this audit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from accelbench.audits.feed import Check, Origin
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict

MIN_CHECKS = 8
STALE_MATCH = 0.05
"""Relative L2 distance within which an output "matches" a reference: honest bf16 outputs stay under
~0.02 of their own reference here, and distinct inputs' references are 0.12-0.75 apart."""
SAME_OUTPUT = 1e-9
"""Relative L2 distance below which two outputs count as the same answer."""


def chosen_checks(checks: Sequence[Check], most: int) -> list[Check]:
    """About ``most`` checks (never fewer when there are more), as whole runs of adjacent positions
    evenly spread over the run."""
    runs: list[list[Check]] = []
    for check in sorted(checks, key=lambda c: (c.trial, c.position)):
        last = runs[-1][-1] if runs else None
        if last is not None and last.trial == check.trial and last.position + 1 == check.position:
            runs[-1].append(check)
        else:
            runs.append([check])
    total = sum(len(run) for run in runs)
    if total <= most or not runs:
        return [check for run in runs for check in run]
    keep = max(1, math.ceil(len(runs) * most / total))
    picked = np.unique(np.linspace(0, len(runs) - 1, keep).round().astype(int))
    return [check for index in picked for check in runs[index]]


def judge(checked: int, failed: bool) -> str:
    """The output rule from its evidence: fewer than ``MIN_CHECKS`` outputs checked is inconclusive, a
    failed check fails. The run and ``verify`` (``accelbench.bundle.rejudge``) both judge with it."""
    if checked < MIN_CHECKS:
        return INCONCLUSIVE
    return FAIL if failed else PASS


def output_verdict(checks: Sequence[Check], references: Mapping[Origin, np.ndarray]) -> Verdict:
    """Judge every check against ``references`` (one per distinct origin among the checks)."""
    evidence: dict[str, object] = {
        "checked": len(checks),
        "distinct_inputs": len({c.origin for c in checks}),
        "trials": len({c.trial for c in checks}),
        "last_position": max((c.position for c in checks), default=-1),
    }
    if len(checks) < MIN_CHECKS:
        reason = f"only {len(checks)} outputs captured during the timed run (need {MIN_CHECKS})"
        return Verdict("output", judge(len(checks), False), reason, evidence)
    failure = _first_failure(checks, references)
    if failure is not None:
        failed_check, reason = failure
        evidence["failed_check"] = failed_check
        return Verdict("output", judge(len(checks), True), reason, evidence)
    margins = [_judge(check, references)[1] for check in checks]
    worst = min(margins)
    evidence["worst_margin"] = worst if np.isfinite(worst) else None
    reason = (
        f"{len(checks)} outputs over {evidence['trials']} trial(s), each nearest its own reference "
        f"(worst other/own distance ratio {worst:.3g})"
    )
    return Verdict("output", judge(len(checks), False), reason, evidence)


def _first_failure(
    checks: Sequence[Check], references: Mapping[Origin, np.ndarray]
) -> tuple[dict[str, object], str] | None:
    """The first failed check (its evidence and the reason), malformed outputs first, then stale ones,
    then a constant answer; None when every check passes."""
    for check in checks:
        problem = _malformed(check, references[check.origin])
        if problem:
            return _failed(check, problem)
    for check in checks:
        problem, _ = _judge(check, references)
        if problem:
            return _failed(check, problem)
    constant = _same_answer(checks, references)
    return ({"problem": constant}, f"output check: {constant}") if constant else None


def _failed(check: Check, problem: str) -> tuple[dict[str, object], str]:
    failed_check: dict[str, object] = {"trial": check.trial, "position": check.position, "problem": problem}
    return failed_check, f"output check: query {check.position} of trial {check.trial}: {problem}"


def _malformed(check: Check, reference: np.ndarray) -> str:
    """Why the output cannot be an answer at all (shape, NaN, all zeros), or ""."""
    out, own = np.asarray(check.output, np.float64), np.asarray(reference, np.float64)
    if out.shape != own.shape:
        return f"output shape {out.shape} != reference shape {own.shape}"
    if not np.isfinite(out).all():
        return f"{int(out.size - np.isfinite(out).sum())} of {out.size} output values are NaN/inf"
    if not out.any() and own.any():
        return "the output is all zeros (work skipped)"
    return ""


def _judge(check: Check, references: Mapping[Origin, np.ndarray]) -> tuple[str, float]:
    """("", margin) for an output nearest its own reference, else (the problem, 0); margin = other / own."""
    out = np.asarray(check.output, np.float64)
    own = np.asarray(references[check.origin], np.float64)
    own_distance = _relative_l2(out, own)
    others = [
        (_relative_l2(out, ref), origin)
        for origin, ref in references.items()
        if origin != check.origin
        and np.shape(ref) == out.shape
        and _relative_l2(np.asarray(ref, np.float64), own) > 0
    ]
    if not others:
        return "", float("inf")
    nearest, origin = min(others)
    if nearest <= own_distance and nearest <= STALE_MATCH:
        return (
            f"the output matches the reference of another input {origin[0]} {origin[1]} "
            f"({nearest:.3g}) better than its own ({own_distance:.3g}): a stale or reused output",
            0.0,
        )
    return "", (nearest / own_distance if own_distance > 0 else float("inf"))


def _same_answer(checks: Sequence[Check], references: Mapping[Origin, np.ndarray]) -> str:
    """Why two checks for inputs with different references got the same output, or ""."""
    first: dict[bytes, Check] = {}
    for check in checks:
        key = np.ascontiguousarray(check.output).tobytes()
        earlier = first.setdefault(key, check)
        if earlier.origin == check.origin:
            continue
        own, other = references[check.origin], references[earlier.origin]
        if (
            np.shape(own) == np.shape(other)
            and _relative_l2(np.asarray(other, np.float64), np.asarray(own, np.float64)) > SAME_OUTPUT
        ):
            return (
                f"queries {earlier.position} and {check.position} of trial {check.trial} got the same output "
                f"for different inputs: a constant or reused answer"
            )
    return ""


def _relative_l2(out: np.ndarray, ref: np.ndarray) -> float:
    norm = float(np.linalg.norm(ref))
    error = float(np.linalg.norm(out - ref))
    return error / norm if norm else (0.0 if error == 0.0 else float("inf"))
