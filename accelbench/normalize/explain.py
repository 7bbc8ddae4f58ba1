"""explain(a, b): a measured speed ratio as a product of named factors, each a range.

    ratio = chips x transistors per chip x node x residual (architecture + software)

where ratio = speed(B) / speed(A), chips = n_B / n_A, transistors per chip = T_B / T_A, node = gate delay
old / new, and the residual is whatever is left: ratio / (chips x transistors x node). The central values
multiply back to the measured ratio (the residual absorbs it); the ranges propagate by interval arithmetic
from the uncertain chip facts. A factor whose inputs are unknown is 1 and noted: it folds into the residual.
Two variants replace transistors by die area (per mm², node = gate delay) and by TDP (per watt, node =
switching energy). With enough chip facts the CMOS potential (after Fuchs & Wentzlaff) gives a second
reading: specialization return = measured ratio / potential ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.errors import UserError
from accelbench.hardware.chips import Chip, Fact
from accelbench.mlperf.history import round_version
from accelbench.normalize.cmos import NodeOutOfTable, Potential, PotentialUnavailable, cmos_potential
from accelbench.normalize.factors import Figure, chip_node_credit, figures, gain
from accelbench.normalize.subjects import Subject
from accelbench.ranges import Range, product, weakest

SCALE_WARNING_RATIO = 4.0
"""Warn when one subject uses more than this many times the chips of the other."""
RESIDUAL = "architecture + software (residual)"
SAME_CHIP = "same chip on both sides: its uncertainty cancels"
QUALITY_TARGET_CHANGE = (
    "MLPerf rules changed between the rounds: the ResNet-50 quality target rose from 74.9% top-1 (v0.5) "
    "to 75.9% (v0.6 on), which makes later rounds slower"
)
TIMING_RULE_CHANGE = (
    "MLPerf v0.6 changed how overhead time is counted, which lowers times, especially on large systems"
)
RCP_CHANGE = (
    "from v1.0 MLPerf checks convergence against Reference Convergence Points (RCP); published scores may "
    "be normalized upward; the history keeps raw log means"
)
VARIANTS = (  # per, Chip attribute of the per-chip step, its name, the node quantity
    ("transistor", "transistors", "transistors per chip", "gate_latency_ps"),
    ("mm2", "die_area_mm2", "die area per chip", "gate_latency_ps"),
    ("watt", "tdp_w", "TDP per chip", "switch_energy_fj"),
)
Step = tuple[Range, Range | None, Range | None, str, str, str, str]
"""One step before it becomes a Factor: (value B/A, a, b, unit, provenance, note, name)."""


@dataclass(frozen=True, slots=True)
class Factor:
    """One multiplicative step: its value (B relative to A) and what is left of the ratio after it."""

    name: str
    value: Range
    remaining: Range
    """ratio / (this factor x every earlier one): e.g. the per-chip ratio after the chips factor."""
    a: Range | None
    b: Range | None
    unit: str
    provenance: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Decomposition:
    """The ratio as chips x per-chip quantity x node x residual, for one per-chip quantity."""

    per: str
    factors: tuple[Factor, ...]

    @property
    def residual(self) -> Factor:
        """The last factor: architecture + software."""
        return self.factors[-1]


@dataclass(frozen=True, slots=True)
class CmosComparison:
    """Potential gain from the silicon (per system) and the specialization return."""

    potential_a: Potential
    potential_b: Potential
    potential_gain: Range
    specialization_return: Range


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why B is ``ratio`` times faster than A, in factors, with the caveats that apply."""

    a: Subject
    b: Subject
    ratio: Range
    decompositions: tuple[Decomposition, ...]
    figures_a: tuple[Figure, ...]
    figures_b: tuple[Figure, ...]
    gains: dict[str, Range]
    """Per denominator (``factors.DENOMINATORS``) present for both: B's gain over A."""
    cmos: CmosComparison | None
    warnings: tuple[str, ...]

    @property
    def main(self) -> Decomposition:
        """The per-transistor decomposition."""
        return self.decompositions[0]


def explain(a: Subject, b: Subject) -> Explanation:
    """Explain speed(B) / speed(A); UserError when the two subjects measure different work."""
    _check_comparable(a, b)
    ratio = Range.point(b.speed / a.speed)
    warnings: list[str] = []
    decompositions = tuple(_decompose(a, b, ratio, variant, warnings) for variant in VARIANTS)
    figures_a, figures_b = figures(a), figures(b)
    by_per = {f.per: f for f in figures_b}
    gains = {f.per: _gain(f, by_per[f.per], _same_chip(a.chip, b.chip)) for f in figures_a if f.per in by_per}
    cmos = _cmos(a, b, ratio, warnings)
    notes = [*_scale_warnings(a, b), *_rule_warnings(a, b), *_availability_warnings(a, b)]
    notes += [f"{s.id}: {note}" for s in (a, b) for note in s.notes]
    return Explanation(
        a=a,
        b=b,
        ratio=ratio,
        decompositions=decompositions,
        figures_a=figures_a,
        figures_b=figures_b,
        gains=gains,
        cmos=cmos,
        warnings=(*notes, *warnings),
    )


def _check_comparable(a: Subject, b: Subject) -> None:
    if a.kind != b.kind:
        raise UserError(f"cannot compare {a.id} ({a.kind}) with {b.id} ({b.kind})")
    if a.benchmark != b.benchmark:
        raise UserError(f"cannot compare {a.id} ({a.benchmark}) with {b.id} ({b.benchmark}): different work")


def _decompose(
    a: Subject, b: Subject, ratio: Range, variant: tuple[str, ...], warnings: list[str]
) -> Decomposition:
    per, attribute, name, quantity = variant
    steps = [
        _step("chips", *_counts(a, b), "chips", "measured", "chip count unknown"),
        _fact_step(name, a.chip, b.chip, attribute),
        _node_step(a.chip, b.chip, quantity, warnings),
    ]
    factors: list[Factor] = []
    for step in steps:
        value, a_value, b_value, unit, provenance, note, step_name = step
        remaining = ratio / product([*(f.value for f in factors), value])
        factors.append(
            Factor(
                name=step_name,
                value=value,
                remaining=remaining,
                a=a_value,
                b=b_value,
                unit=unit,
                provenance=provenance,
                note=note,
            )
        )
    residual = ratio / product([f.value for f in factors])
    provenance = weakest("measured", *(f.provenance for f in factors))
    factors.append(
        Factor(
            name=RESIDUAL,
            value=residual,
            remaining=Range.point(1.0),
            a=None,
            b=None,
            unit="",
            provenance=provenance,
        )
    )
    return Decomposition(per, tuple(factors))


def _step(name: str, a: Range | None, b: Range | None, unit: str, provenance: str, unknown: str) -> Step:
    """(value B/A, a, b, unit, provenance, note, name); value 1 with a note when an input is unknown."""
    if a is None or b is None:
        return Range.point(1.0), a, b, unit, "estimate", f"{unknown}: folded into the residual", name
    return b / a, a, b, unit, provenance, "", name


def _counts(a: Subject, b: Subject) -> tuple[Range | None, Range | None]:
    """Both chip counts; on one chip their estimates rest on the same assumption (vCPUs as threads or as
    cores) and cancel in the ratio, so they enter as their central values."""
    same = _same_chip(a.chip, b.chip)
    counted = [(Range.point(s.count) if same else s.counted) if s.count > 0 else None for s in (a, b)]
    return counted[0], counted[1]


def _fact_step(name: str, a: Chip | None, b: Chip | None, attribute: str) -> Step:
    fact_a: Fact | None = getattr(a, attribute, None) if a else None
    fact_b: Fact | None = getattr(b, attribute, None) if b else None
    unit = {"transistors": "transistors", "die_area_mm2": "mm2", "tdp_w": "W"}[attribute]
    if fact_a is None or fact_b is None:
        return _step(name, None, None, unit, "estimate", f"{name} unknown for {_missing(a, b, attribute)}")
    provenance = weakest(fact_a.provenance, fact_b.provenance)
    if _same_chip(a, b):
        return Range.point(1.0), fact_a.value, fact_b.value, unit, provenance, SAME_CHIP, name
    return _step(name, fact_a.value, fact_b.value, unit, provenance, "")


def _same_chip(a: Chip | None, b: Chip | None) -> bool:
    """True for one chip on both sides: its uncertain facts are the same number twice and cancel."""
    return a is not None and b is not None and a.key == b.key


def _gain(a: Figure, b: Figure, same_chip: bool) -> Range:
    if same_chip:  # the per-chip quantity cancels exactly: the gain is the per-chip gain
        return Range.point(a.value.central / b.value.central)
    return gain(a, b)


def _missing(a: Chip | None, b: Chip | None, attribute: str) -> str:
    names = [
        c.key if c else "an unmatched chip" for c in (a, b) if c is None or getattr(c, attribute) is None
    ]
    return " and ".join(names)


def _node_step(a: Chip | None, b: Chip | None, quantity: str, warnings: list[str]) -> Step:
    label = (
        "process node (gate delay)" if quantity == "gate_latency_ps" else "process node (switching energy)"
    )
    unit = "ps" if quantity == "gate_latency_ps" else "fJ"
    credit = None
    if a is not None and b is not None:
        try:
            credit = chip_node_credit(a, b, quantity)
        except NodeOutOfTable as exc:
            _once(warnings, f"node credit refused: {exc}")
    if credit is None:
        return _step(label, None, None, unit, "estimate", "node credit unavailable")
    old = Range.point(credit.old.value)
    new = Range.point(credit.new.value)
    value = Range.point(1.0) if _same_chip(a, b) else credit.value
    return value, old, new, unit, credit.provenance, credit.source, label


def _cmos(a: Subject, b: Subject, ratio: Range, warnings: list[str]) -> CmosComparison | None:
    if a.chip is None or b.chip is None or a.count <= 0 or b.count <= 0:
        return None
    try:
        potential_a, potential_b = cmos_potential(a.chip), cmos_potential(b.chip)
    except (PotentialUnavailable, NodeOutOfTable) as exc:
        _once(warnings, f"CMOS potential not computed: {exc}")
        return None
    for potential in (potential_a, potential_b):
        if potential.extrapolated:
            outside = ", ".join(potential.extrapolated)
            _once(warnings, f"CMOS potential of {potential.chip_key} extrapolates Rankine's fits ({outside})")
    if _same_chip(a.chip, b.chip):
        system_gain = Range.point(b.count / a.count)  # one chip: the count estimates cancel (``_counts``)
    else:
        system_gain = (b.counted * potential_b.throughput) / (a.counted * potential_a.throughput)
    return CmosComparison(potential_a, potential_b, system_gain, ratio / system_gain)


def _scale_warnings(a: Subject, b: Subject) -> list[str]:
    if a.count <= 0 or b.count <= 0:
        return []
    big, small = max(a.count, b.count), min(a.count, b.count)
    if big / small <= SCALE_WARNING_RATIO:
        return []
    return [
        f"scales differ {big / small:.1f}x ({a.count:g} vs {b.count:g} chips): per-chip figures penalize the "
        "larger system (bigger global batches need more epochs, communication costs more); compare at equal "
        "scale where possible"
    ]


def _rule_warnings(a: Subject, b: Subject) -> list[str]:
    if not (a.round and b.round) or a.benchmark != "mlperf-training/resnet":
        return []
    early, late = sorted((round_version(a.round), round_version(b.round)))
    found = []
    if early < (0, 6) <= late:
        found += [QUALITY_TARGET_CHANGE, TIMING_RULE_CHANGE]
    if early < (1, 0) <= late:
        found.append(RCP_CHANGE)
    return found


def _availability_warnings(a: Subject, b: Subject) -> list[str]:
    return [
        f"{s.id} is in the {s.availability!r} category (not a generally available system)"
        for s in (a, b)
        if s.availability.lower() in ("preview", "research")
    ]


def _once(warnings: list[str], text: str) -> None:
    if text not in warnings:
        warnings.append(text)


def ratio_check(decomposition: Decomposition) -> float:
    """The product of the central values of every factor: equals the measured ratio."""
    total = 1.0
    for factor in decomposition.factors:
        total *= factor.value.central
    return total
