"""Cost: dollars per million queries and per training run, from an hourly rate with a stated basis.

An ``HourlyRate`` comes from one of three places, and says which in ``basis``:
- ``user_rate``: a $/hour the user gives (their cloud bill, an internal chargeback);
- ``cloud_rate``: a row of the dated cloud price table ``accelbench/data/cloud_prices.csv`` (copied from
  ``shared/data/cloud_prices.csv``; prices carry their date, confidence and source);
- ``amortised_rate``: a purchase price spread over a stated lifetime at a stated utilisation (default 3
  years, 24/7), plus electricity when ``power_w`` and ``usd_per_kwh`` are given.

Cost is computed at report time, not stored: a result stores time and energy, and rates change. The time
per query is LoadGen's scenario throughput (``Result.qps``): 1 / qps seconds of the machine per query
(per sample for offline), so $/M queries = usd_per_hour / 3600 / qps x 1e6.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from accelbench.hardware.prices import CloudPrice, cloud_prices, parse_cloud_prices
from accelbench.results import Result

HOURS_PER_YEAR = 365.25 * 24


@dataclass(frozen=True, slots=True)
class HourlyRate:
    """Dollars per hour of the measured machine, and where the figure comes from."""

    usd_per_hour: float
    basis: str

    def __post_init__(self) -> None:
        if not self.usd_per_hour > 0:
            raise ValueError(f"an hourly rate must be positive, got {self.usd_per_hour!r}")


@dataclass(frozen=True, slots=True)
class Cost:
    """What one result costs at a rate."""

    usd_per_million_queries: float
    usd_per_hour: float
    basis: str


def user_rate(usd_per_hour: float) -> HourlyRate:
    """A rate the user states."""
    return HourlyRate(usd_per_hour, f"user-given {usd_per_hour:g} $/h")


def amortised_rate(
    purchase_usd: float,
    lifetime_years: float = 3.0,
    utilisation: float = 1.0,
    power_w: float | None = None,
    usd_per_kwh: float | None = None,
) -> HourlyRate:
    """Purchase price over ``lifetime_years`` at ``utilisation`` (1.0 = 24/7), plus electricity if given."""
    if not (lifetime_years > 0 and 0 < utilisation <= 1):
        raise ValueError("lifetime_years must be > 0 and utilisation in (0, 1]")
    capital = purchase_usd / (lifetime_years * HOURS_PER_YEAR * utilisation)
    basis = f"{purchase_usd:g} $ amortised over {lifetime_years:g} years at {utilisation:.0%} utilisation"
    if power_w is None or usd_per_kwh is None:
        return HourlyRate(capital, basis + "; electricity not included")
    electricity = power_w / 1e3 * usd_per_kwh
    return HourlyRate(capital + electricity, basis + f" + {power_w:g} W at {usd_per_kwh:g} $/kWh")


def load_cloud_prices(path: Path | None = None) -> tuple[CloudPrice, ...]:
    """Rows of the cloud price table (the packaged copy unless ``path`` is given)."""
    from accelbench.inputs import read_input_text

    if path is None:
        return cloud_prices()
    return parse_cloud_prices(read_input_text(Path(path), "cloud price list"))


def cloud_rate(
    instance_type: str,
    pricing_model: str | None = None,
    per_accelerator: bool = False,
    prices: Sequence[CloudPrice] | None = None,
) -> HourlyRate:
    """The rate of ``instance_type`` from the table; ValueError when it is missing or ambiguous.

    ``per_accelerator`` gives the price of one accelerator-hour (a result measured on one GPU of an
    eight-GPU instance). Several rows for one instance (a price cut, a reservation) need ``pricing_model``.
    """
    table = prices if prices is not None else load_cloud_prices()
    rows = [p for p in table if p.instance_type == instance_type]
    if pricing_model is not None:
        rows = [p for p in rows if p.pricing_model == pricing_model]
    if len(rows) != 1:
        models = sorted({p.pricing_model for p in rows})
        what = f"{len(rows)} rows ({'; '.join(models)}): give pricing_model" if rows else "no row"
        raise ValueError(f"cloud price of {instance_type!r}: {what}")
    row = rows[0]
    usd = row.usd_per_accelerator_hour if per_accelerator else row.price_usd_per_hour
    unit = "per accelerator-hour" if per_accelerator else "per instance-hour"
    basis = (
        f"{row.provider} {row.instance_type} {row.pricing_model}, {row.region}, {usd:g} $ {unit} "
        f"(price date: {row.price_date}; confidence: {row.confidence})"
    )
    return HourlyRate(usd, basis)


def usd_per_million_queries(rate: HourlyRate, seconds_per_query: float) -> float:
    """Dollars for a million queries that each hold the machine ``seconds_per_query``."""
    return rate.usd_per_hour / 3600 * seconds_per_query * 1e6


def usd_per_training_run(rate: HourlyRate, run_s: float) -> float:
    """Dollars for a training run that holds the machine ``run_s`` seconds."""
    return rate.usd_per_hour / 3600 * run_s


def result_cost(result: Result, rate: HourlyRate) -> Cost | None:
    """Cost of a measured result at ``rate`` (None when it has no throughput)."""
    qps = result.qps
    if not qps or qps <= 0:
        return None
    return Cost(usd_per_million_queries(rate, 1 / qps), rate.usd_per_hour, rate.basis)
