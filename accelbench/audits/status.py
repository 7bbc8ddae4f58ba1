"""The status of a measured cell follows its audits: only a cell that passed every one is ``ok``.

Order of precedence, most severe first (the reason is that of the first that applies):

1. ``disqualified``: a cheat's signature: the output, repeat or caching audit failed; or the precision
   audit failed with an error that fits a floating-point class coarser than the declared one (tf32,
   fp16, bf16: computing below the declared precision, ``accelbench.audits.precision.lowered``); or
   the run's own outputs pass the quality gate while the alternate-seed or precision audit fails
   (inputs memorised, precision lowered). Except where only audits that judge times failed
   (``TIMING_AUDITS``) on a measurement that something outside the run disturbed (other processes'
   load, the hypervisor's steal: ``accelbench.meters.noise.outside_disturbance``): then ``unverified``.
   A timing audit compares calls of one run, and a stall that falls on its references reads as a hit:
   honest tiny-llama cells read 3 "hits" under 0.1 with a benchmark running beside them (stop 53), and
   passed quiet. Neither status ranks, so a stack gains nothing by disturbing its own run; nothing inside
   the run (its probe's drift, its samples' shift, its own threads) counts as outside.
2. ``quality_failed``: the outputs are inaccurate for the declared precision (quality gate or sanity
   check); the alternate-seed and precision audits then fail too, as consequences, not as cheats.
3. ``unverified``: an audit could not conclude (too few samples, outputs the stack says are not the
   model's, or work the SUT process did between its calls: ``accelbench.audits.off_calls``); nothing
   says the figure is wrong, nothing vouches for it either.
4. ``invalid``: LoadGen said INVALID for a trial (its reasons follow).
5. ``unstable``: the machine drifted during the measurement beyond the noise guard's threshold.
6. ``ok``.

Only ``ok`` cells rank (``accelbench.normalize.ranking``).
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.audits import precision
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, Verdict

AUDIT_ORDER = ("output", "repeat", "caching", "alternate_seed", "precision", "off_calls")
ACCURACY_AUDITS = ("alternate_seed", "precision")
"""Audits that an inaccurate stack fails as a consequence of its inaccuracy."""
TIMING_AUDITS = ("repeat", "caching", "prefix_cache", "first_token", "altered_history", "copied_session")
"""Audits whose failure rests on times alone (seen against never-seen calls, a first token against its
reply's pace): a disturbance from outside the run makes their failure inconclusive, not a cheat."""


def cell_status(
    verdicts: Sequence[Verdict],
    quality_failures: Sequence[str],
    invalid_reasons: Sequence[str],
    unstable_reason: str,
    outside: str = "",
) -> tuple[str, str]:
    """(status, one-line reason) of a measured cell; ``outside``: the noise guard's disturbance from
    outside the run, or "" (``accelbench.meters.noise.outside_reason``)."""
    ordered = sorted(verdicts, key=lambda v: AUDIT_ORDER.index(v.audit) if v.audit in AUDIT_ORDER else 99)
    failed = [v for v in ordered if v.outcome == FAIL]
    cheats = [v for v in failed if v.audit not in ACCURACY_AUDITS or _lowered_precision(v)]
    timing_only = bool(outside and failed) and all(v.audit in TIMING_AUDITS for v in failed)
    if not timing_only and (cheats or (failed and not quality_failures)):
        # the run's own outputs passed the gate: a failed precision audit is the sharper diagnosis of
        # the two accuracy audits (its error may fit no class when a model amplifies rounding)
        lowered = [v for v in failed if v.audit == "precision"]
        first = (cheats or lowered or failed)[0]
        others = [v.audit for v in failed if v is not first]
        more = f" (and {len(others)} more audit(s) failed: {', '.join(others)})" if others else ""
        return "disqualified", f"{first.audit} audit: {first.reason}{more}"
    if quality_failures:
        return "quality_failed", f"quality gate failed: {', '.join(quality_failures)}"
    if timing_only:
        timed = f"{', '.join(v.audit for v in failed)} audit{'s' if len(failed) > 1 else ''}"
        why = f"{timed} failed on a disturbed measurement ({outside.removeprefix('unstable: ')})"
        return "unverified", f"{why}: times beside other work do not convict; {failed[0].reason}"
    inconclusive = [v for v in ordered if v.outcome == INCONCLUSIVE]
    if inconclusive:
        return "unverified", f"{inconclusive[0].audit} audit inconclusive: {inconclusive[0].reason}"
    if invalid_reasons:
        return "invalid", f"LoadGen INVALID: {'; '.join(invalid_reasons)}"
    if unstable_reason:
        return "unstable", unstable_reason
    return "ok", ""


def _lowered_precision(verdict: Verdict) -> bool:
    """A failed precision audit whose error fits a coarser floating-point class than the declared one."""
    return verdict.audit == "precision" and precision.lowered(verdict.evidence)
