"""A served curve unstable on the probe's drift alone runs its first point again on a real loopback
stub server: the same work at the same speed clears it; the work slower with the probe keeps it
``unstable``; other load is never second-guessed, and a steady curve sends nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from accelbench.curve import CurvePoint
from accelbench.endpoint.client import Target
from accelbench.endpoint.confirm import CONFIRM, confirmed
from accelbench.endpoint.driver import TIMED, Load, run_point
from accelbench.endpoint.figures import Bounds, point
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord
from accelbench.head import NoiseProbe
from accelbench.meters import noise
from tests.unit.endpoint_stub import stub

GAP_S = 0.01
"""The stub's inter-token latency: 5 gaps a reply, 4 replies a point."""


class _Template:
    def apply_chat_template(self, messages: Sequence[dict[str, str]], **_: Any) -> str:
        return messages[-1]["content"]


def _words(text: str) -> int:
    return len(text.split())


def _curve(url: str) -> tuple[list[CurvePoint], list[RequestRecord]]:
    """The first point (concurrency 1, 4 requests) measured as the ladder measures it."""
    texts = seeded_texts(7, (4, 8), 4, "point", 1)
    prompts = salted(_Template(), 7, texts, "point", 1)
    records = run_point(Target(url, "tiny-llama"), prompts, Load(1, 6), _words, [TIMED] * 4)
    return [point(1, records, Bounds(1.0, 0.5))], records


def _probe(other_cores: float = 0.0, drift: float = 0.08) -> NoiseProbe:
    evidence = noise.Evidence(other_cores, 0.0, drift, 0.05, None, True)
    reason = noise.disturbance(evidence)
    after_s = 1e-3 * (1 + drift)
    return NoiseProbe(
        1e-3, after_s, drift, 0.5, 0.5, other_cores, bool(reason), threshold=0.05, reason=reason
    )


@pytest.mark.parametrize(("again_gap_s", "unstable"), [(GAP_S, False), (GAP_S * 1.5, True)])
def test_the_first_point_run_again_settles_a_drift_alone(again_gap_s: float, unstable: bool) -> None:
    with stub(gap_s=GAP_S) as url:
        measured = _curve(url)
    with stub(gap_s=again_gap_s) as url:
        probe, again = confirmed(
            _probe(), Target(url, "tiny-llama"), _Template(), 7, ((4, 8), 4, 6), _words, measured
        )
    assert [r.role for r in again] == [CONFIRM] * 4 and all(r.ok and r.concurrency == 1 for r in again)
    assert not {r.salt for r in again} & {r.salt for r in measured[1]}  # fresh prompts, fresh salts
    assert probe.unstable is unstable and probe.samples_shifted is unstable
    assert probe.samples_shift is not None and (probe.samples_shift > 0.3) is unstable
    assert probe.reason.endswith("with it") if unstable else probe.reason == ""


def test_other_load_and_a_steady_curve_send_nothing_more() -> None:
    with stub(gap_s=GAP_S) as url:
        measured = _curve(url)
        target = Target(url, "tiny-llama")
        for probe in (_probe(other_cores=0.5), _probe(drift=0.01)):
            judged, again = confirmed(probe, target, _Template(), 7, ((4, 8), 4, 6), _words, measured)
            assert judged == probe and again == []
