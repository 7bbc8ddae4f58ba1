"""The off-call audit: one rule for the run and for ``verify``, with its limits where the docs say."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from accelbench.audit_section import AuditEntry
from accelbench.audits import cell_status, off_calls
from accelbench.audits.verdict import INCONCLUSIVE, PASS
from accelbench.bundle import rejudge

SECONDS = st.floats(min_value=0.0, max_value=500.0, allow_nan=False)


def test_honest_spin_passes_and_a_worker_between_calls_does_not() -> None:
    # ONNX Runtime's server ResNet-50, the most an honest stack spent off its calls (13%)
    assert off_calls.judge(cpu_s=2.89, in_calls_s=2.56) == PASS
    # a thread busy through 1 s of gaps beside 0.1 s of calls
    assert off_calls.judge(cpu_s=1.1, in_calls_s=0.1) == INCONCLUSIVE
    # a short window's spin-down is never judged, whatever its share
    assert off_calls.judge(cpu_s=0.2, in_calls_s=0.01) == PASS


def test_the_cell_is_unverified_with_the_figures_in_its_reason() -> None:
    verdict = off_calls.off_calls_verdict({"cpu_s": 3.0, "in_calls_s": 1.0, "off_calls_s": 2.0})
    assert verdict is not None and verdict.outcome == INCONCLUSIVE
    status, reason = cell_status([verdict], [], [], "")
    assert status == "unverified"
    assert reason.startswith("off_calls audit inconclusive: the SUT process spent 2.00 s of CPU between")
    assert off_calls.off_calls_verdict({}) is None  # a served session: its calls overlap


@given(cpu_s=SECONDS, in_calls_s=SECONDS)
def test_verify_judges_the_stored_entry_as_the_run_did(cpu_s: float, in_calls_s: float) -> None:
    in_calls_s = min(in_calls_s, cpu_s)
    verdict = off_calls.off_calls_verdict({"cpu_s": cpu_s, "in_calls_s": in_calls_s})
    assert verdict is not None
    stored = verdict.to_dict()
    # a document that raised its own limits is judged by the code's
    stored.update(limit_share=100.0, limit_s=1e9, verdict=PASS)
    again = rejudge.verdict("off_calls", AuditEntry.from_dict(stored))
    assert again.outcome == off_calls.judge(
        float(stored["in_calls_s"]) + float(stored["off_calls_s"]), float(stored["in_calls_s"])
    )
    near_limit = (
        abs(cpu_s - in_calls_s - off_calls.MIN_S) < 1e-3
        or abs(cpu_s - in_calls_s - off_calls.SHARE * in_calls_s) < 1e-3
    )
    if not near_limit:  # the stored figures are rounded to 0.1 ms
        assert again.outcome == verdict.outcome
