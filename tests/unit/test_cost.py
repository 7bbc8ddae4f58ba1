"""Cost: $/M queries and $/training run from a user rate, the dated cloud table, or amortisation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accelbench.meters.cost import (
    HOURS_PER_YEAR,
    HourlyRate,
    amortised_rate,
    cloud_rate,
    load_cloud_prices,
    result_cost,
    usd_per_million_queries,
    usd_per_training_run,
    user_rate,
)
from accelbench.stored import from_dict

GOLDEN = Path(__file__).parent.parent / "golden" / "result_v3.json"


def test_user_rate_per_million_queries_and_per_run() -> None:
    rate = user_rate(3.6)  # 0.001 $/s
    assert usd_per_million_queries(rate, seconds_per_query=0.01) == pytest.approx(10.0)
    assert usd_per_training_run(rate, run_s=7200) == pytest.approx(7.2)
    assert "user-given" in rate.basis


def test_amortised_purchase_over_a_stated_lifetime() -> None:
    assert HOURS_PER_YEAR == 8766
    assert amortised_rate(3 * 8766).usd_per_hour == pytest.approx(1.0)  # 3 years, 24/7
    assert amortised_rate(3 * 8766, utilisation=0.5).usd_per_hour == pytest.approx(2.0)
    with_power = amortised_rate(3 * 8766, power_w=500, usd_per_kwh=0.2)
    assert with_power.usd_per_hour == pytest.approx(1.1)
    assert "3 years at 100% utilisation" in with_power.basis and "500 W at 0.2 $/kWh" in with_power.basis
    with pytest.raises(ValueError):
        amortised_rate(1000, lifetime_years=0)


def test_cloud_rate_from_the_dated_table() -> None:
    rate = cloud_rate("p4d.24xlarge", pricing_model="on-demand Linux")
    assert rate.usd_per_hour == pytest.approx(21.957642)
    assert "2026-01-21 snapshot" in rate.basis and "per instance-hour" in rate.basis
    one_gpu = cloud_rate("p4d.24xlarge", pricing_model="on-demand Linux", per_accelerator=True)
    assert one_gpu.usd_per_hour == pytest.approx(2.7447)


def test_cloud_rate_refuses_ambiguity_and_unknown_instances() -> None:
    with pytest.raises(ValueError, match="give pricing_model"):
        cloud_rate("p5.48xlarge")
    with pytest.raises(ValueError, match="no row"):
        cloud_rate("m7i.large")


def test_packaged_price_table_loads() -> None:
    prices = load_cloud_prices()
    assert len(prices) >= 10
    assert all(p.price_usd_per_hour > 0 and p.price_date for p in prices)


def test_result_cost_uses_loadgen_throughput() -> None:
    result = from_dict(json.loads(GOLDEN.read_text()))  # 57.8 queries/s
    cost = result_cost(result, user_rate(3.6))
    assert cost is not None and cost.usd_per_million_queries == pytest.approx(1e6 / 57.8 / 1000)
    assert result_cost(from_dict(json.loads(GOLDEN.read_text()) | {"loadgen": None}), user_rate(1)) is None


def test_rate_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HourlyRate(0.0, "free")
