"""Normalized figures of one subject, and the process-node credit between two chips (pure functions).

A ``Figure`` is a cost per unit of work: (chips x a per-chip quantity) x seconds per unit of work, so
lower is better and ``1 / value`` is the performance per denominator. Per chip it is the accelerator-time
(time x chips); per transistor, per mm², per TDP watt (which gives joules at TDP), per measured watt (the
measured energy), per purchase dollar ($·s of capital) and per cloud dollar (the $ the work costs at
the dated on-demand prices). The gain of B over A per denominator is ``a.value / b.value``.

The node credit is the gate-delay ratio old/new from the CMOS table (12 -> 7 nm: 3.61 / 2.47 ps = 1.46x),
or the switching-energy ratio for per-watt comparisons; nodes outside the table are refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelbench.hardware.chips import Chip, Fact
from accelbench.hardware.prices import ChipPrice, chip_price
from accelbench.normalize.cmos import CmosNode, NodeValue, node_value
from accelbench.normalize.subjects import Subject
from accelbench.ranges import Range, range_document, weakest

DENOMINATORS = ("chip", "transistor", "mm2", "tdp_w", "measured_w", "usd", "usd_cloud")
_PER_CHIP = {  # denominator -> (Chip attribute, unit of the denominator, unit of the figure)
    "transistor": ("transistors", "transistors", "transistor*s"),
    "mm2": ("die_area_mm2", "mm2", "mm2*s"),
    "tdp_w": ("tdp_w", "W", "J"),
    "usd": ("price_usd", "USD", "USD*s"),
}


@dataclass(frozen=True, slots=True)
class Figure:
    """A subject's cost per unit of work for one denominator (lower is better)."""

    per: str
    """One of ``DENOMINATORS``."""
    value: Range
    unit: str
    denominator: Range
    """Chips x the per-chip quantity (e.g. 640 x 21.1e9 transistors); for ``measured_w`` the mean power."""
    denominator_unit: str
    provenance: str
    source: str
    source_class: str = "measured"
    """The weakest class of the sources behind the denominator: one of ``SOURCE_CLASSES`` for a chip fact
    (``accelbench.hardware.chips``), ``measured`` for what this run measured or detected (a GPU count,
    measured energy)."""

    @property
    def performance(self) -> Range:
        """Units of work per (denominator x second): the inverse of the cost."""
        return 1.0 / self.value

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON (SI units): value, unit, denominator, provenance, source class, source."""
        return {
            "value": range_document(self.value),
            "unit": self.unit,
            "denominator": range_document(self.denominator),
            "denominator_unit": self.denominator_unit,
            "provenance": self.provenance,
            "source_class": self.source_class,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class NodeCredit:
    """How much faster (or more energy-efficient) the newer node's transistors are: old / new."""

    quantity: str
    old_nm: Range
    new_nm: Range
    value: Range
    old: NodeValue
    new: NodeValue
    provenance: str
    source: str


def accelerator_time(subject: Subject) -> Figure:
    """Chips x seconds per unit of work: the per-chip cost. A CPU's share of a socket rests on the chip's
    core count, so it takes that fact's class."""
    chip, basis = subject.chip, subject.count_basis
    cores = chip.cores if chip is not None and chip.kind == "cpu" else None
    kind = cores.source_class if cores is not None else "measured"
    return _cost(subject, "chip", _count(subject), "chip*s", "chips", "measured", basis, kind)


def per_chip_quantity(subject: Subject, per: str) -> Figure | None:
    """Cost per transistor, mm², TDP watt or purchase dollar; None when the chip or the fact is unknown."""
    attribute, denominator_unit, unit = _PER_CHIP[per]
    fact: Fact | None = getattr(subject.chip, attribute, None) if subject.chip else None
    if fact is None or subject.count <= 0:
        return None
    total = _count(subject) * fact.value
    provenance = weakest("measured", fact.provenance)
    return _cost(subject, per, total, unit, denominator_unit, provenance, fact.source, fact.source_class)


def per_measured_watt(subject: Subject) -> Figure | None:
    """The measured energy per unit of work (J); None when no energy was measured."""
    if subject.energy_j is None:
        return None
    return Figure(
        per="measured_w",
        value=Range.point(subject.energy_j),
        unit="J",
        denominator=Range.point(subject.energy_j / subject.seconds_per_work),
        denominator_unit="W (mean measured power)",
        provenance="measured",
        source="energy meter of the result",
    )


def per_cloud_dollar(subject: Subject, price: ChipPrice | None = None) -> Figure | None:
    """What the work costs at the chip's dated on-demand cloud prices (USD); None when unpriced."""
    chosen = price or (chip_price(subject.chip.key) if subject.chip else None)
    if chosen is None or subject.count <= 0:
        return None
    rate = _count(subject) * chosen.usd_per_accelerator_s
    dates = "; ".join(f"{p.instance_type} {p.pricing_model}, {p.price_date}" for p in chosen.rows)
    low = any(p.confidence.startswith("low") for p in chosen.rows)
    provenance, kind = ("estimate", "estimate") if low else ("datasheet", "review")  # prices via compilations
    source = f"cloud_prices.csv: {dates}"
    return _cost(subject, "usd_cloud", rate, "USD", "USD/s", provenance, source, kind)


def _cost(
    subject: Subject,
    per: str,
    denominator: Range,
    unit: str,
    denominator_unit: str,
    provenance: str,
    source: str,
    source_class: str,
) -> Figure:
    """The ``Figure`` of ``denominator`` (chips x a per-chip quantity) x seconds per unit of work."""
    return Figure(
        per=per,
        value=denominator * subject.seconds_per_work,
        unit=unit,
        denominator=denominator,
        denominator_unit=denominator_unit,
        provenance=provenance,
        source=source,
        source_class=source_class,
    )


def figures(subject: Subject) -> tuple[Figure, ...]:
    """Every figure that can be computed for a subject, in ``DENOMINATORS`` order."""
    found: list[Figure | None] = [accelerator_time(subject) if subject.count > 0 else None]
    found += [per_chip_quantity(subject, per) for per in ("transistor", "mm2", "tdp_w")]
    found += [per_measured_watt(subject), per_chip_quantity(subject, "usd"), per_cloud_dollar(subject)]
    return tuple(f for f in found if f is not None)


def gain(a: Figure, b: Figure) -> Range:
    """How many times less B costs than A for the same denominator (B's gain over A)."""
    if a.per != b.per:
        raise ValueError(f"cannot compare a per-{a.per} figure with a per-{b.per} figure")
    return a.value / b.value


def node_credit(
    old_nm: Range | float,
    new_nm: Range | float,
    quantity: str = "gate_latency_ps",
    table: tuple[CmosNode, ...] | None = None,
) -> NodeCredit:
    """old / new of a CMOS quantity (gate delay by default); NodeOutOfTable outside 5-180 nm."""
    old_range, new_range = _as_range(old_nm), _as_range(new_nm)
    old = node_value(old_range.central, quantity, table)
    new = node_value(new_range.central, quantity, table)
    corners = [
        node_value(o, quantity, table).value / node_value(n, quantity, table).value
        for o in {old_range.low, old_range.high}
        for n in {new_range.low, new_range.high}
    ]
    central = old.value / new.value
    value = Range(min(*corners, central), max(*corners, central), central)
    source = f"cmos_scaling.csv {quantity}: {old.method} at the old node, {new.method} at the new node"
    return NodeCredit(
        quantity=quantity,
        old_nm=old_range,
        new_nm=new_range,
        value=value,
        old=old,
        new=new,
        provenance="paper",
        source=source,
    )


def chip_node_credit(old: Chip, new: Chip, quantity: str = "gate_latency_ps") -> NodeCredit | None:
    """The node credit between two chips; None when a node is unknown (NodeOutOfTable when refused)."""
    if old.process_node_nm is None or new.process_node_nm is None:
        return None
    credit = node_credit(old.process_node_nm.value, new.process_node_nm.value, quantity)
    provenance = weakest(credit.provenance, old.process_node_nm.provenance, new.process_node_nm.provenance)
    return NodeCredit(
        quantity=credit.quantity,
        old_nm=credit.old_nm,
        new_nm=credit.new_nm,
        value=credit.value,
        old=credit.old,
        new=credit.new,
        provenance=provenance,
        source=credit.source,
    )


def _count(subject: Subject) -> Range:
    return subject.counted


def _as_range(value: Range | float) -> Range:
    return value if isinstance(value, Range) else Range.point(float(value))
