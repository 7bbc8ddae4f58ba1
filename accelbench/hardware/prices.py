"""Dated cloud prices per accelerator-hour, from ``accelbench/data/cloud_prices.csv``.

The file is ``shared/data/cloud_prices.csv`` with one column added, ``chip_key``, joining each row to the
chips table (empty when no chip row exists, e.g. AWS Trainium). Prices change (AWS cut P4/P5 prices by up
to 45% in June 2025), so a chip's price is the range over its on-demand rows, each row keeping its date.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from accelbench.ranges import Range

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class CloudPrice:
    """One dated on-demand (or reserved) price of one accelerator for one hour."""

    provider: str
    instance_type: str
    accelerator: str
    accelerators_per_instance: int
    region: str
    chip_key: str
    pricing_model: str
    price_usd_per_hour: float
    """Price of the whole instance for one hour."""
    usd_per_accelerator_hour: float
    price_date: str
    confidence: str
    source: str

    @property
    def usd_per_accelerator_s(self) -> float:
        """The price per accelerator-second (SI time)."""
        return self.usd_per_accelerator_hour / SECONDS_PER_HOUR

    @property
    def on_demand(self) -> bool:
        """True for on-demand list prices (not capacity blocks or reservations)."""
        return "on-demand" in self.pricing_model


@dataclass(frozen=True, slots=True)
class ChipPrice:
    """The price range of one chip per accelerator-second, and the dated rows it comes from."""

    chip_key: str
    usd_per_accelerator_s: Range
    rows: tuple[CloudPrice, ...]


@functools.cache
def cloud_prices() -> tuple[CloudPrice, ...]:
    """Every row of the bundled price table."""
    text = (resources.files("accelbench") / "data" / "cloud_prices.csv").read_text(encoding="utf-8")
    return parse_cloud_prices(text)


def parse_cloud_prices(text: str) -> tuple[CloudPrice, ...]:
    """Rows of a price table in the columns of ``cloud_prices.csv`` (``chip_key`` optional)."""
    return tuple(_price(row) for row in csv.DictReader(text.splitlines()))


def _price(row: dict[str, str]) -> CloudPrice:
    return CloudPrice(
        provider=row["provider"],
        instance_type=row["instance_type"],
        accelerator=row["accelerator"],
        accelerators_per_instance=int(row["accelerators_per_instance"]),
        region=row["region"],
        chip_key=row.get("chip_key") or "",
        pricing_model=row["pricing_model"],
        price_usd_per_hour=float(row["price_usd_per_hour"]),
        usd_per_accelerator_hour=float(row["price_usd_per_accelerator_hour"]),
        price_date=row["price_date"],
        confidence=row["confidence"],
        source=row["source"],
    )


def chip_price(chip_key: str, prices: tuple[CloudPrice, ...] | None = None) -> ChipPrice | None:
    """The range over a chip's on-demand prices (central: geometric mean), or None when unpriced."""
    rows = tuple(p for p in (prices or cloud_prices()) if p.chip_key == chip_key and p.on_demand)
    if not rows:
        return None
    values = [p.usd_per_accelerator_s for p in rows]
    return ChipPrice(chip_key, Range.between(min(values), max(values)), rows)
