"""The status of a measured cell follows its audits: only a cell that passed every one is ``ok``.

Order of precedence, most severe first (the reason is that of the first that applies):

1. ``disqualified``: an audit failed (output, repeat, caching, alternate_seed, precision, in that order).
2. ``quality_failed``: the outputs are inaccurate for the declared precision (quality gate or sanity check).
3. ``unverified``: an audit could not conclude (too few samples, or outputs the stack says are not
   the model's); nothing says the figure is wrong, nothing vouches for it either.
4. ``invalid``: LoadGen said INVALID for a trial (its reasons follow).
5. ``unstable``: the machine drifted during the measurement beyond the noise guard's threshold.
6. ``ok``.

Only ``ok`` cells rank (``accelbench.ranking``).
"""

from __future__ import annotations

from collections.abc import Sequence

from accelbench.audits.verdict import FAIL, INCONCLUSIVE, Verdict

AUDIT_ORDER = ("output", "repeat", "caching", "alternate_seed", "precision")


def cell_status(
    verdicts: Sequence[Verdict],
    quality_failures: Sequence[str],
    invalid_reasons: Sequence[str],
    unstable_reason: str,
) -> tuple[str, str]:
    """(status, one-line reason) of a measured cell."""
    ordered = sorted(verdicts, key=lambda v: AUDIT_ORDER.index(v.audit) if v.audit in AUDIT_ORDER else 99)
    failed = [v for v in ordered if v.outcome == FAIL]
    if failed:
        more = f" (and {len(failed) - 1} more audit(s) failed: {', '.join(v.audit for v in failed[1:])})"
        return "disqualified", f"{failed[0].audit} audit: {failed[0].reason}" + (
            more if len(failed) > 1 else ""
        )
    if quality_failures:
        return "quality_failed", f"quality gate failed: {', '.join(quality_failures)}"
    inconclusive = [v for v in ordered if v.outcome == INCONCLUSIVE]
    if inconclusive:
        return "unverified", f"{inconclusive[0].audit} audit inconclusive: {inconclusive[0].reason}"
    if invalid_reasons:
        return "invalid", f"LoadGen INVALID: {'; '.join(invalid_reasons)}"
    if unstable_reason:
        return "unstable", unstable_reason
    return "ok", ""
