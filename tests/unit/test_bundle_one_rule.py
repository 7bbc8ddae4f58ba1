"""The run's audits and ``verify`` judge with one rule: the verdict the run gives, re-judged from the
evidence it stored, comes out the same (``post_run.caching_outcome``, ``repeat.probe_outcome``)."""

from __future__ import annotations

import json

import pytest

from accelbench.audit_section import AuditEntry
from accelbench.audits.post_run import caching_verdict
from accelbench.audits.repeat import MIN_PAIRS, probe_outcome
from accelbench.audits.verdict import FAIL, INCONCLUSIVE, PASS
from accelbench.bundle import rejudge


@pytest.mark.parametrize(
    ("unique_s", "repeated_s", "outcome"),
    [
        ([1.0, 1.1, 1.2], [1.0, 1.05, 0.98], PASS),
        ([1.0, 1.1, 1.2], [0.1, 0.1, 0.1, 0.1], FAIL),
        ([1.0, 1.1, 1.2], [0.1, 2.0, 2.0, 2.0], PASS),  # fast, but under half the repeats beat every unique
        ([1.0, 1.1, 1.2], [0.1, 0.1, 2.0, 2.0], FAIL),  # half of them: the median repeat beats them all
        ([1.0], [0.0, 0.0], FAIL),
    ],
)
def test_caching_rejudged_from_its_stored_evidence_gives_the_runs_verdict(
    unique_s: list[float], repeated_s: list[float], outcome: str
) -> None:
    run = caching_verdict(unique_s, repeated_s)
    entry = json.loads(json.dumps({**run.evidence, "verdict": run.outcome, "reason": run.reason}))
    assert run.outcome == outcome
    assert rejudge.verdict("caching", AuditEntry.from_dict(entry)).outcome == outcome


def test_the_repeat_rule_from_its_evidence() -> None:
    assert probe_outcome(MIN_PAIRS - 1, [(9.0, 1.25)], 9, 9) == INCONCLUSIVE
    assert probe_outcome(MIN_PAIRS, [(1.0, 1.25), (1.3, 1.25)], 0, 0) == FAIL
    assert probe_outcome(MIN_PAIRS, [(1.0, 1.25)], 4, 2) == FAIL
    assert probe_outcome(MIN_PAIRS, [(1.0, 1.25)], 4, 1) == PASS


def test_a_repeat_window_stripped_of_its_bound_fails_on_rejudging() -> None:
    entry = {
        "pairs": MIN_PAIRS,
        "windows": [{"ratio_low": 1.0}, {"ratio": 3.0}],
        "floor": {},
        "verdict": PASS,
    }
    assert rejudge.verdict("repeat", AuditEntry.from_dict(entry)).outcome == FAIL
    entry["windows"] = [{"ratio_low": 1.0}]
    assert rejudge.verdict("repeat", AuditEntry.from_dict(entry)).outcome == PASS


def test_a_served_cells_repeat_audit_is_rejudged_by_the_endpoints_rule() -> None:
    passed = {"ratio": 0.98, "faster_share": 0.5, "pairs": 6, "bar": 0.5, "verdict": PASS}
    assert rejudge.verdict("repeat", AuditEntry.from_dict(passed), served=True).outcome == PASS
    # not the LoadGen probes' rule
    assert rejudge.verdict("repeat", AuditEntry.from_dict(passed)).outcome == INCONCLUSIVE
    cached = {**passed, "ratio": 0.2, "faster_share": 1.0}
    assert rejudge.verdict("repeat", AuditEntry.from_dict(cached), served=True).outcome == FAIL
    # two hits fail whatever the ratio (a cache that replays only some points' pairs)
    hit = {**passed, "hits": 2}
    assert rejudge.verdict("repeat", AuditEntry.from_dict(hit), served=True).outcome == FAIL
