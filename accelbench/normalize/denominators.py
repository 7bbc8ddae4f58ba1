"""What a served model's throughput is divided by: its chips, their TDP watts and their purchase dollars.

A served curve (``accelbench.endpoint``) is a rate per point (output tokens/s), not a cost per unit of
work, so its normalized figures are the rate over a denominator: chips (``count``), chips x TDP (W) and
chips x launch price (USD). The chips are a ``ChipMatch``: matched on this machine, or declared for a
``--serve-url`` server (``accelbench.hardware.declared``, basis ``declared``). Each denominator carries
the provenance of its weakest input (``declared`` when the count was declared, not detected) and the
source class of its chip fact (``accelbench.hardware.chips.SOURCE_CLASSES``; ``measured``: a count
detected here). Pure functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.hardware.chips import Fact
from accelbench.hardware.match import ChipMatch
from accelbench.ranges import Range, weakest

SERVED_DENOMINATORS = ("chip", "tdp_w", "usd")
_FACTS = {"tdp_w": ("tdp_w", "W"), "usd": ("price_usd", "USD")}


@dataclass(frozen=True, slots=True)
class Denominator:
    """Chips x a per-chip quantity, with where each part came from."""

    per: str
    """One of ``SERVED_DENOMINATORS``."""
    value: Range
    unit: str
    provenance: str
    """``declared`` when the count was declared, else the weakest of ``measured`` and the fact's."""
    source_class: str
    source: str

    def rate(self, per_s: float) -> Range:
        """A rate (per second) over this denominator: per chip, per TDP watt, per USD."""
        return per_s / self.value


def served_denominators(match: ChipMatch) -> tuple[Denominator, ...]:
    """The denominators the match allows, in ``SERVED_DENOMINATORS`` order (a fact the chip lacks gives
    none); () without a chip or a positive count."""
    chip = match.chip
    if chip is None or not match.count > 0:
        return ()
    declared = match.basis == "declared"
    chips = match.count_range
    cores = chip.cores if chip.kind == "cpu" else None
    found = [
        Denominator(
            per="chip",
            value=chips,
            unit="chips",
            provenance="declared" if declared else "measured",
            source_class=cores.source_class if cores is not None else "measured",
            source=match.count_basis or match.basis,
        )
    ]
    for per, (attribute, unit) in _FACTS.items():
        fact: Fact | None = getattr(chip, attribute)
        if fact is not None:
            found.append(_of_fact(per, chips, fact, unit, declared))
    return tuple(found)


def _of_fact(per: str, chips: Range, fact: Fact, unit: str, declared: bool) -> Denominator:
    provenance = weakest("measured", fact.provenance)
    return Denominator(
        per=per,
        value=chips * fact.value,
        unit=unit,
        provenance=f"declared; {provenance}" if declared else provenance,
        source_class=fact.source_class,
        source=fact.source,
    )
