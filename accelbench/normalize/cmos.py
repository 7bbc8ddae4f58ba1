"""CMOS scaling per node, and the CMOS-potential model after Fuchs & Wentzlaff (HPCA 2019).

"The Accelerator Wall: Limits of Chip Specialization", A. Fuchs and D. Wentzlaff, HPCA 2019.

The per-node table (``accelbench/data/cmos_scaling.csv``: gate latency, switching energy, dynamic and
leakage power per transistor, from Stillmaker & Baas 2017 + IRDS 2017 as tabulated in Rankine) covers
5-180 nm. A node between two table nodes is interpolated log-log (ln value linear in ln node); a node
outside 5-180 nm is refused (``NodeOutOfTable``): extrapolating device scaling past the table would
be a guess.

The potential of a chip (Rankine's model, re-derived here; coefficients in ``rankine_curves.csv``):
    transistors T          = the chip's count, or exp(c) x (die_area_mm2 / node_nm²)^k   (area fit)
    TDP-limited transistors = exp(b) x tdp_w^a / f_GHz          (a, b fitted per node bracket)
    effective transistors  N = min(T, TDP-limited transistors)   (dark silicon)
    throughput potential     = N x f                              (transistor switches per second)
    power potential          = N x E_dyn(node) x f + T x P_leak(node)
Absolute values mean nothing; ratios between chips are the potential gain, and
``specialization return = measured gain / potential gain``. See docs/normalization.md.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from accelbench.hardware.chips import Chip
from accelbench.ranges import Range, weakest

QUANTITIES = ("gate_latency_ps", "switch_energy_fj", "dynamic_power_uw", "leakage_power_uw")
FITTED_RANGES = {
    "tdp_w": (1.0, 300.0),
    "process_node_nm": (10.0, 180.0),
    "clock_mhz": (50.0, 3000.0),
    "die_area_mm2": (10.0, 600.0),
}
"""Inputs inside which Rankine's fits were made (its own range warnings); outside them it extrapolates."""


class NodeOutOfTable(ValueError):
    """A process node outside the CMOS table (5-180 nm): refused rather than extrapolated."""


class PotentialUnavailable(ValueError):
    """A chip lacks a fact the CMOS-potential model needs (node, TDP, clock, transistors or die area)."""


@dataclass(frozen=True, slots=True)
class CmosNode:
    """Per-transistor device figures at one process node."""

    node_nm: float
    gate_latency_ps: float
    switch_energy_fj: float
    dynamic_power_uw: float
    leakage_power_uw: float
    source: str


@dataclass(frozen=True, slots=True)
class NodeValue:
    """A table quantity at a node, and how it was obtained (``table`` or ``interpolated ...``)."""

    node_nm: float
    quantity: str
    value: float
    method: str


@dataclass(frozen=True, slots=True)
class Curve:
    """One fitted power law of Rankine: exp(log_intercept) x input^exponent, for nodes in a bracket."""

    curve: str
    node_nm_from: float
    node_nm_to: float
    exponent: float
    log_intercept: float
    source: str


@dataclass(frozen=True, slots=True)
class Potential:
    """A chip's CMOS potential: what its silicon could deliver given node, transistors, TDP and clock."""

    chip_key: str
    throughput: Range
    """Effective transistors x clock (switches per second); only ratios between chips mean something."""
    power_w: Range
    transistors: Range
    effective_transistors: Range
    limited_by: str
    """``tdp`` when the TDP curve bounds the switching transistors (dark silicon), else ``transistors``."""
    provenance: str
    extrapolated: tuple[str, ...] = ()
    """Inputs outside the ranges Rankine was fitted on (``FITTED_RANGES``)."""


_Record = TypeVar("_Record", CmosNode, Curve)


@functools.cache
def cmos_table() -> tuple[CmosNode, ...]:
    """The bundled per-node table, sorted from the smallest node."""
    return tuple(sorted(_read_records("cmos_scaling.csv", CmosNode), key=lambda n: n.node_nm))


@functools.cache
def rankine_curves() -> tuple[Curve, ...]:
    """Rankine's fitted curves (area -> transistors, TDP -> effective transistors per node bracket)."""
    return _read_records("rankine_curves.csv", Curve)


def node_value(node_nm: float, quantity: str, table: tuple[CmosNode, ...] | None = None) -> NodeValue:
    """A quantity at a node: exact at table nodes, log-log interpolated between them, refused outside."""
    nodes = table or cmos_table()
    if quantity not in QUANTITIES:
        raise ValueError(f"unknown CMOS quantity {quantity!r}; use one of {', '.join(QUANTITIES)}")
    smallest, largest = nodes[0].node_nm, nodes[-1].node_nm
    if not smallest <= node_nm <= largest:
        raise NodeOutOfTable(
            f"process node {node_nm:g} nm is outside the CMOS table ({smallest:g}-{largest:g} nm): "
            "refused, not extrapolated"
        )
    exact = next((n for n in nodes if n.node_nm == node_nm), None)
    if exact is not None:
        return NodeValue(node_nm, quantity, getattr(exact, quantity), "table")
    below = max((n for n in nodes if n.node_nm < node_nm), key=lambda n: n.node_nm)
    above = min((n for n in nodes if n.node_nm > node_nm), key=lambda n: n.node_nm)
    share = math.log(node_nm / below.node_nm) / math.log(above.node_nm / below.node_nm)
    low_value, high_value = getattr(below, quantity), getattr(above, quantity)
    value = math.exp(math.log(low_value) + share * math.log(high_value / low_value))
    method = f"interpolated log-log between {below.node_nm:g} and {above.node_nm:g} nm"
    return NodeValue(node_nm, quantity, value, method)


def cmos_potential(chip: Chip, table: tuple[CmosNode, ...] | None = None) -> Potential:
    """The CMOS potential of one chip; PotentialUnavailable names the missing facts."""
    missing = [n for n in ("process_node_nm", "tdp_w", "clock_hz") if getattr(chip, n) is None]
    if chip.transistors is None and chip.die_area_mm2 is None:
        missing.append("transistors or die_area_mm2")
    if missing:
        raise PotentialUnavailable(f"{chip.key}: no {', '.join(missing)} for the CMOS-potential model")
    assert chip.process_node_nm and chip.tdp_w and chip.clock_hz  # narrowed by the check above
    node = chip.process_node_nm.value.central
    corners = [_corner(chip, node, pick, table) for pick in (_low, _central, _high)]
    facts = [chip.process_node_nm, chip.tdp_w, chip.clock_hz, chip.transistors or chip.die_area_mm2]
    return Potential(
        chip_key=chip.key,
        throughput=_range_of(corners, 0),
        power_w=_range_of(corners, 1),
        transistors=_range_of(corners, 2),
        effective_transistors=_range_of(corners, 3),
        limited_by="tdp" if corners[1][3] < corners[1][2] else "transistors",
        provenance=weakest(*(f.provenance for f in facts if f is not None)),
        extrapolated=_extrapolated(chip),
    )


def specialization_return(measured_gain: Range, potential_gain: Range) -> Range:
    """Measured gain / CMOS-potential gain: the gain the silicon alone does not explain."""
    return measured_gain / potential_gain


def _corner(
    chip: Chip, node: float, pick: Callable[[Range], float], table: tuple[CmosNode, ...] | None
) -> tuple[float, float, float, float]:
    """(throughput, power W, transistors, effective transistors) with every input at one corner."""
    assert chip.tdp_w and chip.clock_hz
    clock_hz = pick(chip.clock_hz.value)
    if chip.transistors is not None:
        transistors = pick(chip.transistors.value)
    else:
        assert chip.die_area_mm2 is not None
        transistors = _area_transistors(pick(chip.die_area_mm2.value), node)
    tdp_curve = _curve("tdp_limited_transistors", node)
    tdp_limited = math.exp(tdp_curve.log_intercept) * pick(chip.tdp_w.value) ** tdp_curve.exponent
    effective = min(transistors, tdp_limited / (clock_hz / 1e9))
    latency_s = node_value(node, "gate_latency_ps", table).value * 1e-12
    dynamic_w = node_value(node, "dynamic_power_uw", table).value * 1e-6 * clock_hz * latency_s
    leakage_w = node_value(node, "leakage_power_uw", table).value * 1e-6
    return effective * clock_hz, effective * dynamic_w + transistors * leakage_w, transistors, effective


def _area_transistors(die_area_mm2: float, node_nm: float) -> float:
    curve = _curve("transistors_from_area", node_nm)
    return math.exp(curve.log_intercept) * (die_area_mm2 / node_nm**2) ** curve.exponent


def _curve(name: str, node_nm: float) -> Curve:
    """The fitted curve for a node: the bracket with the largest lower bound <= node (as Rankine does)."""
    brackets = [c for c in rankine_curves() if c.curve == name and c.node_nm_from <= node_nm]
    if not brackets:
        raise NodeOutOfTable(f"process node {node_nm:g} nm is below Rankine's fitted curves (>= 5 nm)")
    return max(brackets, key=lambda c: c.node_nm_from)


def _extrapolated(chip: Chip) -> tuple[str, ...]:
    values = {
        "tdp_w": chip.tdp_w.value.high if chip.tdp_w else None,
        "process_node_nm": chip.process_node_nm.value.central if chip.process_node_nm else None,
        "clock_mhz": chip.clock_hz.value.high / 1e6 if chip.clock_hz else None,
        "die_area_mm2": chip.die_area_mm2.value.high if chip.die_area_mm2 else None,
    }
    return tuple(
        name
        for name, value in values.items()
        if value is not None and not FITTED_RANGES[name][0] <= value <= FITTED_RANGES[name][1]
    )


def _range_of(corners: list[tuple[float, float, float, float]], index: int) -> Range:
    low, central, high = (corner[index] for corner in corners)
    return Range(min(low, central, high), max(low, central, high), central)


def _low(value: Range) -> float:
    return value.low


def _central(value: Range) -> float:
    return value.central


def _high(value: Range) -> float:
    return value.high


def _read_records(file_name: str, record: type[_Record]) -> tuple[_Record, ...]:
    """One ``record`` per row of the bundled CSV ``file_name``: ``str`` fields as written, others floats."""
    rows = csv.DictReader(_data_text(file_name).splitlines())
    kinds = {one.name: one.type for one in dataclasses.fields(record)}
    values: list[dict[str, Any]] = [
        {name: row[name] if kind in ("str", str) else float(row[name]) for name, kind in kinds.items()}
        for row in rows
    ]
    return tuple(record(**one) for one in values)


def _data_text(name: str) -> str:
    return (resources.files("accelbench") / "data" / name).read_text(encoding="utf-8")
