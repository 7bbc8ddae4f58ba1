"""Each audit's verdict and the cell's status, judged again from the evidence a result stores.

The limits are this code's own (``accelbench.audits``), never the ones a document states: a document that
raised its ``limit`` to let a cheat pass is judged by the real one. Where the stored evidence is a summary
(the output audit compares outputs the bundle does not hold), what it records is judged by the audit's rule:
too few checks is inconclusive, a recorded failed check fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accelbench.audit_section import AuditEntry, evidence_number
from accelbench.audits import off_calls, output, post_run, precision, repeat
from accelbench.audits.status import cell_status
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.head import NoiseProbe, Quality
from accelbench.loadgen_figures import Figures
from accelbench.meters import noise
from accelbench.workloads.base import sanity_passes


def verdict(
    name: str,
    entry: AuditEntry,
    precision_name: str = "fp32",
    workload: str = "",
    size: str = "",
    served: bool = False,
) -> Verdict:
    """The verdict of the audit ``name`` judged again from its stored ``entry`` (``precision_name``: the
    cell's effective precision, which with ``workload`` and ``size`` sets the alternate-seed audit's
    quality bar and sample budget; ``served``: a served-LLM cell, whose repeat audit is the endpoint's
    TTFT rule)."""
    judges = {
        "output": _output,
        "repeat": _repeat,
        "caching": _caching,
        "precision": _precision,
        "off_calls": _off_calls,
        "altered_history": _forbidden_reuse,
        "copied_session": _forbidden_reuse,
    }
    if name == "repeat" and served:
        outcome = _served_repeat(entry)
    elif name == "alternate_seed":
        outcome = _alternate_seed(entry, precision_name, workload, size)
    else:
        outcome = judges[name](entry) if name in judges else entry.outcome
    return Verdict(name, outcome, entry.reason, _evidence(name, entry))


def _off_calls(entry: AuditEntry) -> str:
    in_calls_s, off_calls_s = (_number(entry.evidence, k) for k in ("in_calls_s", "off_calls_s"))
    if math.isnan(in_calls_s) or math.isnan(off_calls_s):  # nothing vouches for it: never a pass
        return INCONCLUSIVE
    return off_calls.judge(in_calls_s + off_calls_s, in_calls_s)


def unaudited() -> Verdict:
    """The verdict of a cell without an audit section: nothing vouches for its outputs (the null stack)."""
    why = "outputs are not the model's (the stack declares computes = False): nothing vouches for them"
    return Verdict("output", INCONCLUSIVE, why)


def quality_failures(
    quality: Quality | None,
    sanity: Quality | None,
    precision_name: str,
    workload: str = "",
    size: str = "",
) -> list[str]:
    """The metrics of the quality gate (judged by this code's bar and sample budget for
    ``precision_name`` on ``workload`` at ``size``, never the stored ones) and of the sanity check (its
    stored threshold: the workload's own) that fail."""
    failed = []
    if quality is not None and not _gate_passes(_stored_gate(quality), precision_name, workload, size):
        failed.append(quality.metric)
    if sanity is not None and not sanity_passes(sanity.value, sanity.threshold):
        failed.append(sanity.metric)
    return failed


def unstable_reason(
    noise_record: NoiseProbe | None, figures: Figures | None, cores: int | None, computes: bool
) -> str:
    """The noise guard's disturbance judged again from its record (``cores``: the machine's logical
    cores set the other-load limit), else the SUT timer's disagreement with LoadGen's figures."""
    reason = _disturbance(noise_record, cores) if noise_record is not None else ""
    if reason or figures is None or not computes:
        return reason
    from accelbench.scenarios.figures import timer_disagreement

    return timer_disagreement(figures) or ""


def status(
    verdicts: Sequence[Verdict],
    failures: Sequence[str],
    invalid: Sequence[str],
    unstable: str,
    outside: str = "",
) -> tuple[str, str]:
    """The cell's status from the judged verdicts, quality failures, INVALID trials and disturbance (and
    its part from outside the run, ``outside_reason``)."""
    return cell_status(verdicts, failures, invalid, unstable, outside)


def _output(entry: AuditEntry) -> str:
    checked = _number(entry.evidence, "checked")
    return output.judge(int(checked) if math.isfinite(checked) else 0, entry.flag("failed_check"))


def _repeat(entry: AuditEntry) -> str:
    pairs = _number(entry.evidence, "pairs")
    if math.isnan(pairs):
        return INCONCLUSIVE
    whole = [(w, repeat.SPEEDUP_LIMIT) for w in entry.records("windows")]
    ranges = [(w, _number(w, "limit")) for w in entry.records("sighting_windows")]
    # a window whose bound or limit is missing counts as failed (nothing vouches for it)
    windows = [(_or_inf(_number(w, "ratio_low")), limit) for w, limit in [*whole, *ranges]]
    windows = [(low, -math.inf if math.isnan(limit) else limit) for low, limit in windows]
    floor = entry.record("floor")
    beaten = [_or_zero(_number(floor, "pairs")), _or_zero(_number(floor, "groups"))]
    return repeat.probe_outcome(int(pairs), windows, int(beaten[0]), int(beaten[1]))


def _or_inf(value: float) -> float:
    return math.inf if math.isnan(value) else value


def _or_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _served_repeat(entry: AuditEntry) -> str:
    from accelbench.endpoint import repeat as served_repeat

    pairs, ratio, share = (_number(entry.evidence, k) for k in ("pairs", "ratio", "faster_share"))
    if math.isnan(pairs):
        return INCONCLUSIVE
    # a missing ratio or share is judged as the worst case (nothing vouches for it); a record without
    # hits was judged before the hit rule existed (pairs after the curve)
    hits = int(_or_zero(_number(entry.evidence, "hits")))
    return served_repeat.outcome(int(pairs), _or_zero(ratio), 1.0 if math.isnan(share) else share, hits)


def _forbidden_reuse(entry: AuditEntry) -> str:
    """A sessions cell's forbidden-reuse audits (``accelbench.sessions.forbidden``): the served repeat's
    rule shape, a missing ratio or share judged as the worst case."""
    from accelbench.sessions import forbidden

    pairs, ratio, share = (_number(entry.evidence, k) for k in ("pairs", "ratio", "faster_share"))
    if math.isnan(pairs):
        return INCONCLUSIVE
    hits = int(_or_zero(_number(entry.evidence, "hits")))  # none stored: judged before the hit rule
    return forbidden.outcome(int(pairs), _or_zero(ratio), 1.0 if math.isnan(share) else share, hits)


def _caching(entry: AuditEntry) -> str:
    unique, repeated = _number(entry.evidence, "unique_min_s"), _number(entry.evidence, "repeated_min_s")
    share = _number(entry.evidence, "repeats_faster_share")
    if math.isnan(unique + repeated + share):
        return INCONCLUSIVE
    return post_run.caching_outcome(unique, repeated, share)


def _alternate_seed(entry: AuditEntry, precision_name: str, workload: str, size: str) -> str:
    gate = _audited_gate(entry)
    if math.isnan(gate.value):
        return INCONCLUSIVE
    return PASS if _gate_passes(gate, precision_name, workload, size) else FAIL


@dataclass(frozen=True, slots=True)
class _Gate:
    """What the quality gate's rule reads of a stored quality record or alternate-seed entry; NaN: not
    stored (every comparison with it is false)."""

    metric: str
    value: float
    wrong: float | None
    """None: a record stored before schema 8 (no per-sample counts: judged by its metric alone)."""
    worst_sample_error: float
    samples_checked: float


def _stored_gate(quality: Quality) -> _Gate:
    worst = quality.worst_sample_error
    return _Gate(
        metric=quality.metric,
        value=float(quality.value),
        wrong=None if quality.wrong is None else float(quality.wrong),
        worst_sample_error=math.nan if worst is None else float(worst),
        samples_checked=float(quality.samples_checked),
    )


def _audited_gate(entry: AuditEntry) -> _Gate:
    return _Gate(
        metric=entry.text("metric"),
        value=_number(entry.evidence, "value"),
        wrong=_number(entry.evidence, "wrong") if entry.holds("wrong") else None,
        worst_sample_error=_number(entry.evidence, "worst_sample_error"),
        samples_checked=_number(entry.evidence, "samples_checked"),
    )


def _gate_passes(gate: _Gate, precision_name: str, workload: str, size: str) -> bool:
    """The quality gate's rule (``meters.quality.passes``) on a stored record: its metric against this
    code's bar, its wrong samples (a record stored before schema 8 has none: its metric alone) counted
    again where its worst error exceeds this code's sample budget."""
    from accelbench.meters.quality import is_wrong, meets_bar, passes, sample_budget, threshold_for

    bar = threshold_for(gate.metric, precision_name)  # ValueError for a metric the gate does not know
    if gate.wrong is None:
        return meets_bar(gate.value, bar)
    wrong = int(gate.wrong) if gate.wrong >= 0 else 0
    worst = gate.worst_sample_error  # not stored (NaN): nothing vouches for it, counted as wrong
    if math.isnan(worst) or is_wrong(worst, sample_budget(precision_name, workload, size)):
        wrong = max(wrong, 1)
    judged = gate.samples_checked
    return passes(gate.value, bar, wrong, int(judged) if judged >= 1 else 1)


def _precision(entry: AuditEntry) -> str:
    error, samples = _number(entry.evidence, "max_norm_abs_err"), _number(entry.evidence, "samples")
    if math.isnan(error + samples):
        return INCONCLUSIVE
    return precision.judge(entry.text("declared"), error)


def _evidence(name: str, entry: AuditEntry) -> dict[str, Any]:
    """The stored evidence, with the precision budget and class recomputed by this code (the status
    reads them); a record stored before the median was has its worst error alone."""
    evidence = dict(entry.evidence)
    if name == "precision":
        median = _number(entry.evidence, "median_norm_abs_err")
        error = _number(entry.evidence, "max_norm_abs_err")
        evidence["budget"] = precision.budget_for(entry.text("declared"))
        evidence["consistent_with"] = precision.consistent_with(error, None if math.isnan(median) else median)
    return evidence


def _disturbance(record: NoiseProbe, cores: int | None) -> str:
    return noise.disturbance(noise.recorded(record, _other_limit_cores(cores)))


def outside_reason(record: NoiseProbe | None, cores: int | None) -> str:
    """The part of the noise record's disturbance from outside the run (``noise.outside_disturbance``),
    judged again with the machine's limit, or ""."""
    return noise.outside_reason(record, _other_limit_cores(cores))


def _other_limit_cores(cores: int | None) -> float:
    return noise.other_load_limit_cores(cores) if cores else noise.OTHER_LOAD_LIMIT_CORES


def _number(evidence: Mapping[str, Any], key: str) -> float:
    """A stored number of an audit's evidence (or one of its records); NaN when missing or not a number
    (every comparison with it is false)."""
    value = evidence_number(evidence, key)
    return math.nan if value is None else value
