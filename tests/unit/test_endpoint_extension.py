"""A curve point that goes on until its medians are known (``accelbench.endpoint.extension``): the
medians' intervals, the extra requests on a real client against the stub server, and their rebuilding."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from accelbench.config import RunConfig
from accelbench.curve import CurvePoint
from accelbench.endpoint.cell import ladder
from accelbench.endpoint.client import Target
from accelbench.endpoint.driver import Load, run_point
from accelbench.endpoint.extension import CHUNK, extension, prompts_by_salt
from accelbench.endpoint.figures import Bounds, median_interval, point
from accelbench.endpoint.prompts import salted, seeded_texts
from accelbench.endpoint.records import RequestRecord
from accelbench.endpoint.settings import EndpointSettings
from tests.unit.endpoint_stub import stub


class _Template:
    def apply_chat_template(self, messages: Sequence[dict[str, str]], **_: Any) -> str:
        return messages[-1]["content"]


def _words(text: str) -> int:
    return len(text.split())


def test_the_median_interval_holds_the_median_95_times_in_100_whatever_the_distribution() -> None:
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) == (0.0, 0.0)  # five values bound nothing at 95%
    assert median_interval([float(v) for v in range(6)]) == (0.0, 5.0)
    assert median_interval([float(v) for v in range(100)]) == (39.0, 60.0)  # x(40), x(61): the tables'
    rng = np.random.default_rng(3)
    for draw, median in (
        (lambda n: rng.exponential(1.0, n), math.log(2)),
        (lambda n: rng.pareto(2.0, n), 2**0.5 - 1),
    ):
        for n in (6, 17, 64):
            held = [
                low <= median <= high for low, high in (median_interval(list(draw(n))) for _ in range(2000))
            ]
            assert 0.94 <= sum(held) / len(held) <= 1.0, (n, sum(held) / len(held))


def test_quick_rules_keep_the_first_requests_and_standard_ones_go_on_up_to_a_cap() -> None:
    base: dict[str, Any] = {"suite": "tiny", "workloads": ("tiny-llama",), "stacks": ("llm@url",)}
    base |= {"scenarios": ("single-stream",), "size": "tiny", "serve_url": "http://127.0.0.1:9"}
    quick = EndpointSettings.from_config(RunConfig.from_dict({**base, "rules": "quick"}))
    standard = EndpointSettings.from_config(RunConfig.from_dict({**base, "rules": "standard"}))
    assert quick.point_max_s == 0.0 and standard.point_max_s == 60.0


def test_a_point_stops_adding_requests_once_its_medians_are_narrow() -> None:
    """On a steady stub server the point sends its four first requests, then extra ones until its medians
    are narrow: far fewer than its 30 s cap allows (the last figures may be wider than the stop's: the
    requests in flight when it stopped end after)."""
    settings = EndpointSettings(ladder=(2,), requests=4, max_tokens=6, point_max_s=30.0)
    with stub("ok", delay_s=0.02, gap_s=0.002) as url:
        target = Target(url, "tiny-llama")
        climbed = ladder(target, _Template(), 5, settings, (4, 12), _words, Bounds(math.inf, math.inf))
    (only,) = climbed.curve
    assert 6 <= only.requests < 200, only.requests  # extended past its first 4, stopped long before the cap
    assert only.duration_s < 15.0
    assert only.ttft_p50_low_s <= only.ttft_p50_s <= only.ttft_p50_high_s
    assert only.tpot_p50_half_width is not None
    assert len({r.salt for r in climbed.records}) == len(climbed.records)
    assert all(r.role == "timed" and r.ok for r in climbed.records)


def test_extra_requests_are_wanted_while_a_median_is_wide_and_the_cap_not_reached() -> None:
    more = extension(_Template(), 9, (4, 12), 2, max_s=10.0, width=0.10)

    def replies(ttfts_s: list[float]) -> list[RequestRecord]:
        return [
            RequestRecord(
                concurrency=2,
                index=i,
                role="timed",
                salt=f"s{i}",
                issue_s=0.0,
                send_s=0.0,
                first_content_s=t,
                end_s=t + 0.5,
                chunk_s=(t, t + 0.5),
                text="a b",
                output_tokens=2,
                usage_output_tokens=None,
                usage_prompt_tokens=None,
                status="ok",
                error="",
                finish_reason="length",
            )
            for i, t in enumerate(ttfts_s)
        ]

    steady = replies([1.0] * 20)
    assert not more.wanted(steady, 1.0)  # narrow: no more
    wide = replies([0.5, 1.0, 2.0, 4.0, 0.7, 3.0, 1.5, 2.5])
    assert more.wanted(wide, 1.0) and not more.wanted(wide, 10.0)  # wide: more until the cap
    assert more.wanted(replies([1.0] * 5), 1.0)  # five replies bound no median


def test_a_point_whose_medians_never_narrow_stops_at_its_cap_and_its_extras_are_rebuilt() -> None:
    tokenizer, seed, lengths = _Template(), 9, (4, 12)
    first = salted(tokenizer, seed, seeded_texts(seed, lengths, 3, "point", 2), "point", 2)
    more = extension(tokenizer, seed, lengths, 2, max_s=0.6, width=-1.0)  # never narrow enough
    with stub("ok", delay_s=0.02) as url:
        done = run_point(Target(url, "tiny-llama"), first, Load(2, 4), _words, (), more)
    span_s = max(r.end_s for r in done) - min(r.issue_s for r in done)
    assert 0.6 <= span_s < 0.6 + 1.0
    assert len(done) > CHUNK + 3  # past the first chunk of extra prompts
    assert [r.index for r in done] == list(range(len(done)))
    extra = {r.salt for r in done[3:]}
    assert not extra & {p.salt for p in first} and len(extra) == len(done) - 3
    rebuilt = prompts_by_salt(tokenizer, seed, lengths, 2, extra)
    assert set(rebuilt) == extra
    assert {more.prompt(k).salt for k in range(len(done) - 3)} == extra
    assert prompts_by_salt(tokenizer, seed, lengths, 4, extra) == {}  # another point's stream


def test_old_points_load_without_intervals_and_new_ones_store_them() -> None:
    stored = point(1, [], Bounds(1.0, 1.0)).to_dict()
    assert "ttft_p50_low_s" not in stored  # nothing measured: nothing stored, as before
    loaded = CurvePoint.from_dict(stored)
    assert loaded.ttft_p50_half_width is None and loaded.tpot_p50_half_width is None
