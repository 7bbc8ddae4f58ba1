"""Each audit's verdict and the cell's status, judged again from the evidence a result stores.

The limits are this code's own (``accelbench.audits``), never the ones a document states: a document that
raised its ``limit`` to let a cheat pass is judged by the real one. Where the stored evidence is a summary
(the output audit compares outputs the bundle does not hold), what it records is judged by the audit's rule:
too few checks is inconclusive, a recorded failed check fails.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from accelbench.audits import off_calls, output, post_run, precision, repeat
from accelbench.audits.status import cell_status
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS, Verdict
from accelbench.loadgen_figures import Figures
from accelbench.meters import noise


def verdict(
    name: str,
    entry: Mapping[str, Any],
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
        outcome = judges[name](entry) if name in judges else str(entry.get("verdict"))
    return Verdict(name, outcome, str(entry.get("reason", "")), _evidence(name, entry))


def _off_calls(entry: Mapping[str, Any]) -> str:
    in_calls_s = float(entry["in_calls_s"])
    return off_calls.judge(in_calls_s + float(entry["off_calls_s"]), in_calls_s)


def unaudited() -> Verdict:
    """The verdict of a cell without an audit section: nothing vouches for its outputs (the null stack)."""
    why = "outputs are not the model's (the stack declares computes = False): nothing vouches for them"
    return Verdict("output", INCONCLUSIVE, why)


def quality_failures(
    quality: Mapping[str, Any] | None,
    sanity: Mapping[str, Any] | None,
    precision_name: str,
    workload: str = "",
    size: str = "",
) -> list[str]:
    """The metrics of the quality gate (judged by this code's bar and sample budget for
    ``precision_name`` on ``workload`` at ``size``, never the stored ones) and of the sanity check (its
    stored threshold: the workload's own) that fail."""
    failed = []
    if quality is not None and not _gate_passes(quality, precision_name, workload, size):
        failed.append(str(quality["metric"]))
    if sanity is not None and not _at_least(sanity):
        failed.append(str(sanity["metric"]))
    return failed


def unstable_reason(
    noise_record: Mapping[str, Any] | None, figures: Figures | None, cores: int | None, computes: bool
) -> str:
    """The noise guard's disturbance judged again from its record (``cores``: the machine's logical
    cores set the other-load limit), else the SUT timer's disagreement with LoadGen's figures."""
    reason = _disturbance(noise_record, cores) if noise_record else ""
    if reason or figures is None or not computes:
        return reason
    from accelbench.scenarios.figures import timer_disagreement

    return timer_disagreement(figures) or ""


def status(
    verdicts: Sequence[Verdict], failures: Sequence[str], invalid: Sequence[str], unstable: str
) -> tuple[str, str]:
    """The cell's status from the judged verdicts, quality failures, INVALID trials and disturbance."""
    return cell_status(verdicts, failures, invalid, unstable)


def _output(entry: Mapping[str, Any]) -> str:
    checked = _number(entry, "checked")
    return output.judge(int(checked) if math.isfinite(checked) else 0, bool(entry.get("failed_check")))


def _repeat(entry: Mapping[str, Any]) -> str:
    pairs = _number(entry, "pairs")
    if math.isnan(pairs):
        return INCONCLUSIVE
    whole = [(w, repeat.SPEEDUP_LIMIT) for w in entry.get("windows") or ()]
    ranges = [(w, _number(w, "limit")) for w in entry.get("sighting_windows") or ()]
    # a window whose bound or limit is missing counts as failed (nothing vouches for it)
    windows = [(_or_inf(_number(w, "ratio_low")), limit) for w, limit in [*whole, *ranges]]
    windows = [(low, -math.inf if math.isnan(limit) else limit) for low, limit in windows]
    floor = entry.get("floor") or {}
    beaten = [_or_zero(_number(floor, "pairs")), _or_zero(_number(floor, "groups"))]
    return repeat.probe_outcome(int(pairs), windows, int(beaten[0]), int(beaten[1]))


def _or_inf(value: float) -> float:
    return math.inf if math.isnan(value) else value


def _or_zero(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _served_repeat(entry: Mapping[str, Any]) -> str:
    from accelbench.endpoint import repeat as served_repeat

    pairs, ratio, share = _number(entry, "pairs"), _number(entry, "ratio"), _number(entry, "faster_share")
    if math.isnan(pairs):
        return INCONCLUSIVE
    # a missing ratio or share is judged as the worst case (nothing vouches for it)
    return served_repeat.outcome(int(pairs), _or_zero(ratio), 1.0 if math.isnan(share) else share)


def _forbidden_reuse(entry: Mapping[str, Any]) -> str:
    """A sessions cell's forbidden-reuse audits (``accelbench.sessions.forbidden``): the served repeat's
    rule shape, a missing ratio or share judged as the worst case."""
    from accelbench.sessions import forbidden

    pairs, ratio, share = _number(entry, "pairs"), _number(entry, "ratio"), _number(entry, "faster_share")
    if math.isnan(pairs):
        return INCONCLUSIVE
    return forbidden.outcome(int(pairs), _or_zero(ratio), 1.0 if math.isnan(share) else share)


def _caching(entry: Mapping[str, Any]) -> str:
    unique, repeated = _number(entry, "unique_min_s"), _number(entry, "repeated_min_s")
    share = _number(entry, "repeats_faster_share")
    if math.isnan(unique + repeated + share):
        return INCONCLUSIVE
    return post_run.caching_outcome(unique, repeated, share)


def _alternate_seed(entry: Mapping[str, Any], precision_name: str, workload: str, size: str) -> str:
    value = _number(entry, "value")
    if math.isnan(value):
        return INCONCLUSIVE
    return PASS if _gate_passes(entry, precision_name, workload, size) else FAIL


def _gate_passes(entry: Mapping[str, Any], precision_name: str, workload: str, size: str) -> bool:
    """The quality gate's rule (``meters.quality.passes``) on a stored record: its metric against this
    code's bar, its wrong samples (a record stored before schema 8 has none: its metric alone) counted
    again where its worst error exceeds this code's sample budget."""
    from accelbench.meters.quality import passes, sample_budget

    value = _number(entry, "value")
    if entry.get("wrong") is None:
        return value >= _bar(entry, precision_name)
    wrong = int(_number(entry, "wrong")) if _number(entry, "wrong") >= 0 else 0
    worst = _number(entry, "worst_sample_error")
    if not worst <= sample_budget(precision_name, workload, size):  # NaN (missing) counts as over
        wrong = max(wrong, 1)
    judged = _number(entry, "samples_checked")
    return passes(value, _bar(entry, precision_name), wrong, int(judged) if judged >= 1 else 1)


def _bar(entry: Mapping[str, Any], precision_name: str) -> float:
    """The quality bar of the entry's metric at ``precision_name`` (``meters.quality``); ValueError for
    a metric the gate does not know."""
    from accelbench.meters.quality import threshold_for

    return threshold_for(str(entry.get("metric")), precision_name)


def _precision(entry: Mapping[str, Any]) -> str:
    error, samples = _number(entry, "max_norm_abs_err"), _number(entry, "samples")
    if math.isnan(error + samples):
        return INCONCLUSIVE
    return precision.precision_verdict(str(entry.get("declared", "")), error, int(samples)).outcome


def _evidence(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The stored evidence, with the precision class recomputed (the status reads it)."""
    evidence = {k: v for k, v in entry.items() if k not in ("verdict", "reason")}
    if name == "precision":
        evidence["consistent_with"] = precision.consistent_with(_number(entry, "max_norm_abs_err"))
    return evidence


def _disturbance(record: Mapping[str, Any], cores: int | None) -> str:
    before, after = _number(record, "before_s"), _number(record, "after_s")
    shift = record.get("samples_shift")
    evidence = noise.Evidence(
        other_cores=_number(record, "other_load_cores"),
        steal_cores=_number(record, "steal_cores"),
        drift=abs(after - before) / before if before > 0 else 0.0,
        threshold=_number(record, "threshold"),
        shift=None if shift is None else noise.Shift(float(shift), bool(record.get("samples_shifted"))),
        probe_slower=after > before,
        other_limit_cores=noise.other_load_limit_cores(cores) if cores else noise.OTHER_LOAD_LIMIT_CORES,
    )
    return noise.disturbance(evidence)


def _at_least(entry: Mapping[str, Any]) -> bool:
    return _number(entry, "value") >= _number(entry, "threshold")


def _number(entry: Mapping[str, Any], key: str) -> float:
    """A stored number; NaN when missing or not a number (every comparison with it is false)."""
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)
