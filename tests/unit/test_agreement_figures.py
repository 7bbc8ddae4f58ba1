"""The figures the agreement benchmark compares the clients by (``benchmarks/_agreement_figures.py``): each
round's ratio of the two clients' medians, their median, lowest and highest (``by_round``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def agreement(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _agreement_figures

    yield _agreement_figures
    sys.modules.pop("_agreement_figures", None)
    sys.modules.pop("_peers", None)


def _rows(agreement: Any, slow_by_round: list[float], peer_over: float) -> list[dict[str, Any]]:
    """Two clients per round, the machine ``slow_by_round[k]`` times slower in round k for both, the peer's
    every time ``peer_over`` times accelbench's."""
    from _peers import Request

    rows = []
    for index, slow in enumerate(slow_by_round, start=1):
        for client, over in (("accelbench", 1.0), ("aiperf", peer_over)):
            requests = [
                Request(
                    send_s=0.0,  # all at once: the span is one request's time
                    ttft_s=(0.2 + 0.01 * k) * slow * over,
                    end_s=(0.2 + 0.01 * k + 15 * 0.05) * slow * over,
                    output_tokens=16,
                )
                for k in range(8)
            ]
            rows.append({"client": client, "round": index, **agreement.figures(requests)})
    return rows


def test_the_rounds_paired_read_the_peers_offset_through_a_drift_between_rounds(agreement: Any) -> None:
    slow = [1.0, 1.6, 0.8, 1.3, 1.45]  # the machine's speed moves between rounds, not within one
    rows = _rows(agreement, slow, peer_over=1.03)
    paired = agreement.by_round(rows, "aiperf")
    for metric in ("ttft_p50_s", "ttft_p90_s", "tpot_p50_s"):
        median, low, high, rounds = paired[metric]
        assert (rounds, median) == (5, pytest.approx(1.03))
        assert low == pytest.approx(1.03) and high == pytest.approx(1.03)
    assert paired["output_tokens_per_s"][0] == pytest.approx(1 / 1.03)
    assert paired["output_tokens_mean"][0] == pytest.approx(1.0)
    assert agreement.by_round(rows, "accelbench")["tpot_p50_s"][0] == pytest.approx(1.0)


def test_a_round_one_client_lacks_is_left_out_and_no_round_gives_no_ratio(agreement: Any) -> None:
    rows = _rows(agreement, [1.0, 2.0, 1.0], peer_over=1.1)
    failed = [r for r in rows if not (r["client"] == "aiperf" and r["round"] == 2)]
    failed.append({"client": "aiperf", "round": 2, "error": "refused"})
    median, _, _, rounds = agreement.by_round(failed, "aiperf")["ttft_p50_s"]
    assert (rounds, median) == (2, pytest.approx(1.1))
    assert agreement.by_round([r for r in rows if r["client"] == "aiperf"], "aiperf") == {}


def test_the_rounds_ratios_spread_by_the_drift_within_a_round(agreement: Any) -> None:
    """A round whose two runs met different machine speeds shows in the lowest and highest ratio; the
    median of the rounds' ratios stays on the peer's true offset while most rounds are undisturbed."""
    rows = _rows(agreement, [1.0, 1.2, 0.9, 1.1, 1.0], peer_over=1.0)
    for row in rows:  # the peer's run of round 3 met a machine 1.5x slower, accelbench's of round 1 too
        if (row["client"], row["round"]) in (("aiperf", 3), ("accelbench", 1)):
            row["tpot_p50_s"] *= 1.5
    median, low, high, rounds = agreement.by_round(rows, "aiperf")["tpot_p50_s"]
    assert (rounds, median) == (5, pytest.approx(1.0))
    assert (low, high) == (pytest.approx(1 / 1.5), pytest.approx(1.5))
