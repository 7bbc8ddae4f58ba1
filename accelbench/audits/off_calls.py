"""The ``off_calls`` audit: CPU the SUT process spent between its calls over the timed window.

The stack's code runs in a SUT process of its own (``accelbench.sut``). The harness reads that process's
CPU clock before each call is sent and after its output came back; the rest of its CPU over the timed
window is spent *off the calls*, while the harness was not waiting on it. No input reaches the SUT
process before its query, so such work cannot compute an answer ahead; what it can do is change the
conditions the timed calls see (a "heater" thread that keeps the weights in cache or the clock at its
boost, a worker that finishes between calls what a call left undone) at a cost the figure never shows.

An honest runtime spins its thread pool for a moment after each call: ONNX Runtime's server ResNet-50
(tiny) spent 13% of its in-call CPU off the calls (the most over the tiny suite's ResNet-50 and MiniLM-L6
cells in four scenarios, a loaded 2-core machine), PyTorch 1% or less, the null stack nothing. The
audit is inconclusive (the cell ``unverified``: nothing says the figure is wrong, nothing vouches for
how it was made) when the off-call CPU exceeds both ``SHARE`` of the in-call CPU and ``MIN_S``;
``judge`` is the one rule, for the run and for ``verify``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from accelbench.audits.verdict import INCONCLUSIVE, PASS, Verdict

SHARE = 0.5
"""Off-call CPU allowed, as a share of the in-call CPU (nearly 4x the most an honest stack showed)."""
MIN_S = 0.25
"""Off-call CPU seconds below which nothing is judged (a short window's spin-down, timer granularity)."""


def judge(cpu_s: float, in_calls_s: float) -> str:
    """The outcome for a SUT process that spent ``cpu_s`` over the timed windows, ``in_calls_s`` of it
    inside calls."""
    off_calls_s = max(0.0, cpu_s - in_calls_s)
    return INCONCLUSIVE if off_calls_s > MIN_S and off_calls_s > SHARE * in_calls_s else PASS


def off_calls_verdict(used: Mapping[str, float]) -> Verdict | None:
    """The verdict from the stored ``settings.sut_process`` (``cpu_s``, ``in_calls_s``); None without one
    (a served session: its calls overlap, so no CPU is between them)."""
    if not used:
        return None
    cpu_s, in_calls_s = float(used["cpu_s"]), float(used["in_calls_s"])
    off_calls_s = max(0.0, cpu_s - in_calls_s)
    outcome = judge(cpu_s, in_calls_s)
    share = off_calls_s / in_calls_s if in_calls_s > 0 else math.inf
    reason = (
        f"the SUT process spent {off_calls_s:.2f} s of CPU between its calls, {share:.0%} of the "
        f"{in_calls_s:.2f} s inside them (limit {SHARE:.0%} and {MIN_S} s)"
    )
    evidence: dict[str, Any] = {
        "off_calls_s": round(off_calls_s, 4),
        "in_calls_s": round(in_calls_s, 4),
        "limit_share": SHARE,
        "limit_s": MIN_S,
    }
    return Verdict("off_calls", outcome, reason, evidence)
