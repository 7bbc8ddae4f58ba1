"""Per-stack generalization figures of a run with variants: Goodhart gap, spread, success rate.

Performance is FLOP-normalised, so a variant that is simply bigger or smaller does not count as better or
worse: achieved FLOP/s = FLOPs per sample x samples per second (LoadGen's scenario throughput). FLOPs
come from each variant's ``variant_info`` (its ``flops`` and the ``canonical_flops`` it was drawn
against). For each (workload, stack, device, scenario):

* ``goodhart_gap`` = canonical FLOP/s / median variant FLOP/s; above 1 the stack is tuned to the canonical
  model. Its CI resamples the variants (``stats.ratio_ci``; the canonical figure is one measurement).
* ``spread`` = interquartile range / median of the variants' FLOP/s, with a bootstrap CI.
* ``success_rate`` = variants that ran and passed the quality gate / variants planned (an ``unstable``,
  ``invalid`` or ``unverified`` variant counts: it ran and answered right, though it gives no speed).
* ``compile_growth`` = median variant ``compile_s`` / canonical ``compile_s`` (None when the stack does not
  compile: a canonical compile time of 0).

Only ``ok`` results contribute performance (a result that failed the quality gate is never a speed).
A (workload, stack, device, scenario) with a ``disqualified`` cell, or without any verified one, has no
row in the table or the heatmap: it is listed under ``excluded`` with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from accelbench import stats
from accelbench.results import Result
from accelbench.sections import VariantMutation

CANONICAL = "canonical"
ANSWERED_RIGHT = ("ok", "unverified", "invalid", "unstable")
"""Statuses of a cell that ran and passed the quality gate (only ``ok`` gives performance)."""


@dataclass(frozen=True, slots=True)
class Group:
    """The cells compared with each other: one (workload, stack, device, scenario), every variant."""

    workload: str
    stack: str
    device: str
    scenario: str

    def to_dict(self) -> dict[str, str]:
        """The group's keys, as every row of the document starts."""
        return {
            "workload": self.workload,
            "stack": self.stack,
            "device": self.device,
            "scenario": self.scenario,
        }


@dataclass(frozen=True, slots=True)
class StackGeneralization:
    """One group's figures (see the module docstring); a CI is (low, high), None without enough cells."""

    group: Group
    goodhart_gap: float | None
    gap_ci: tuple[float, float] | None
    spread: float | None
    spread_ci: tuple[float, float] | None
    success_rate: float
    variants_ok: int
    variants_total: int
    compile_growth: float | None

    def to_dict(self) -> dict[str, Any]:
        """The row of ``stacks`` in the generalization document."""
        return {
            **self.group.to_dict(),
            "goodhart_gap": self.goodhart_gap,
            "gap_ci": None if self.gap_ci is None else list(self.gap_ci),
            "spread": self.spread,
            "spread_ci": None if self.spread_ci is None else list(self.spread_ci),
            "success_rate": self.success_rate,
            "variants_ok": self.variants_ok,
            "variants_total": self.variants_total,
            "compile_growth": self.compile_growth,
        }


@dataclass(frozen=True, slots=True)
class VariantRow:
    """One (workload, variant) seen: its mutations and FLOPs, absolute and relative to the canonical
    model's (None: not counted, a record stored without it)."""

    workload: str
    variant: str
    mutations: tuple[VariantMutation, ...]
    flops: int | None
    flops_ratio: float | None

    def to_dict(self) -> dict[str, Any]:
        """The row of ``variants`` in the generalization document."""
        return {
            "workload": self.workload,
            "variant": self.variant,
            "mutations": [{"kind": m.kind, "detail": m.detail} for m in self.mutations],
            "flops": self.flops,
            "flops_ratio": self.flops_ratio,
        }


@dataclass(frozen=True, slots=True)
class HeatmapCell:
    """One cell's FLOP/s relative to its group's canonical cell (None when either was not measured)."""

    group: Group
    variant: str
    relative: float | None
    status: str

    def to_dict(self) -> dict[str, Any]:
        """The row of ``heatmap`` in the generalization document."""
        return {
            **self.group.to_dict(),
            "variant": self.variant,
            "relative": self.relative,
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A group without figures and why: a disqualified cell, or no verified one."""

    group: Group
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """The row of ``excluded`` in the generalization document."""
        return {**self.group.to_dict(), "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Generalization:
    """A run's generalization figures: the variant seed, per-group figures, the variants, the heatmap
    cells and the groups left out."""

    variant_seed: int | None
    stacks: tuple[StackGeneralization, ...]
    variants: tuple[VariantRow, ...]
    heatmap: tuple[HeatmapCell, ...]
    excluded: tuple[Exclusion, ...]

    def to_dict(self) -> dict[str, Any]:
        """The ``generalization`` document of ``show --json``."""
        return {
            "variant_seed": self.variant_seed,
            "stacks": [row.to_dict() for row in self.stacks],
            "variants": [row.to_dict() for row in self.variants],
            "heatmap": [cell.to_dict() for cell in self.heatmap],
            "excluded": [row.to_dict() for row in self.excluded],
        }


def generalization_figures(results: Sequence[Result]) -> Generalization:
    """The run's generalization figures (see the module docstring); empty without variants."""
    groups = _groups(results)
    admitted = {key: members for key, members in groups.items() if not _exclusion(members)}
    return Generalization(
        variant_seed=_variant_seed(results),
        stacks=tuple(_stack_figures(key, members) for key, members in admitted.items()),
        variants=_variant_rows(results),
        heatmap=tuple(cell for key, members in admitted.items() for cell in _heatmap_cells(key, members)),
        excluded=tuple(
            Exclusion(key, why) for key, members in groups.items() if (why := _exclusion(members))
        ),
    )


def _exclusion(members: Sequence[Result]) -> str:
    """Why a group has no generalization figures ("" when it has): a disqualified or no verified cell."""
    disqualified = next((r for r in members if r.head.status == "disqualified"), None)
    if disqualified is not None:
        return f"{disqualified.cell.variant} disqualified: {disqualified.head.reason}"
    if not any(r.head.status == "ok" for r in members):
        return "no verified cell"
    return ""


def has_variants(results: Sequence[Result]) -> bool:
    """Whether any result is a variant cell."""
    return any(r.cell.variant != CANONICAL for r in results)


def flop_rate(result: Result, flops: int | None) -> float | None:
    """Achieved FLOP/s of an ``ok`` result: ``flops`` per sample x LoadGen's samples per second."""
    if result.head.status != "ok" or not flops or not result.qps:
        return None
    return float(flops) * result.qps


def _groups(results: Sequence[Result]) -> dict[Group, list[Result]]:
    """Results by (workload, stack, device, scenario), only groups holding at least one variant."""
    groups: dict[Group, list[Result]] = {}
    for result in results:
        cell = result.cell
        groups.setdefault(Group(cell.workload, cell.stack, cell.device, cell.scenario), []).append(result)
    return {
        key: members
        for key, members in groups.items()
        if any(r.cell.variant != CANONICAL for r in members)
        and not all(r.head.status == "unavailable" for r in members)
    }


def _canonical_flops(members: Sequence[Result]) -> int | None:
    flops = [r.variant_info.canonical_flops for r in members if r.variant_info]
    return int(flops[0]) if flops and flops[0] is not None else None


def _flops(result: Result, canonical_flops: int | None) -> int | None:
    if result.cell.variant == CANONICAL:
        return canonical_flops
    flops = result.variant_info.flops if result.variant_info else None
    return int(flops) if flops is not None else None


def _stack_figures(key: Group, members: Sequence[Result]) -> StackGeneralization:
    canonical = next((r for r in members if r.cell.variant == CANONICAL), None)
    variants = [r for r in members if r.cell.variant != CANONICAL]
    canonical_flops = _canonical_flops(members)
    rates = [rate for r in variants if (rate := flop_rate(r, _flops(r, canonical_flops))) is not None]
    canonical_rate = flop_rate(canonical, canonical_flops) if canonical else None
    gap, gap_ci = _gap(canonical_rate, rates)
    spread, spread_ci = _spread(rates)
    passed = sum(1 for r in variants if r.head.status in ANSWERED_RIGHT)
    return StackGeneralization(
        group=key,
        goodhart_gap=gap,
        gap_ci=gap_ci,
        spread=spread,
        spread_ci=spread_ci,
        success_rate=passed / len(variants),
        variants_ok=passed,
        variants_total=len(variants),
        compile_growth=_compile_growth(canonical, variants),
    )


def _gap(canonical_rate: float | None, rates: list[float]) -> tuple[float | None, tuple[float, float] | None]:
    if canonical_rate is None or not rates:
        return None, None
    gap, (low, high) = stats.ratio_ci([canonical_rate], rates)
    return gap, (low, high)


def relative_spread(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile range / median along ``axis`` (vectorised, for the bootstrap)."""
    q25, median, q75 = np.percentile(values, [25, 50, 75], axis=axis)
    return np.asarray((q75 - q25) / median)


def _spread(rates: list[float]) -> tuple[float | None, tuple[float, float] | None]:
    if len(rates) < 2:
        return None, None
    value = float(relative_spread(np.asarray(rates)))
    low, high = stats.bootstrap_ci(rates, relative_spread)
    return value, (low, high)


def _compile_growth(canonical: Result | None, variants: Sequence[Result]) -> float | None:
    times = [r.head.compile_s for r in variants if r.head.status == "ok" and r.head.compile_s is not None]
    if canonical is None or not canonical.head.compile_s or not times:
        return None
    return float(np.median(times)) / canonical.head.compile_s


def _variant_seed(results: Sequence[Result]) -> int | None:
    seeds = {seed for r in results if r.variant_info and (seed := r.variant_info.drawn_seed) is not None}
    return min(seeds) if seeds else None


def _variant_rows(results: Sequence[Result]) -> tuple[VariantRow, ...]:
    """One row per (workload, variant) seen, the canonical model first (mutations (), ratio 1)."""
    rows: dict[tuple[str, str], VariantRow] = {}
    for result in results:
        info = result.variant_info
        if not info:
            continue
        workload = result.cell.workload
        rows.setdefault((workload, CANONICAL), _row(workload, CANONICAL, (), info.canonical_flops, 1.0))
        rows.setdefault(
            (workload, result.cell.variant),
            _row(workload, result.cell.variant, info.mutations, info.flops, info.flops_ratio),
        )
    return tuple(rows[key] for key in sorted(rows, key=lambda k: (k[0], k[1] != CANONICAL, k[1])))


def _row(
    workload: str, variant: str, mutations: Sequence[VariantMutation], flops: Any, ratio: Any
) -> VariantRow:
    return VariantRow(
        workload=workload,
        variant=variant,
        mutations=tuple(mutations),
        flops=None if flops is None else int(flops),  # None: not counted (a record stored without it)
        flops_ratio=None if ratio is None else float(ratio),
    )


def _heatmap_cells(key: Group, members: Sequence[Result]) -> list[HeatmapCell]:
    """Each cell's FLOP/s relative to the canonical cell's (None when either was not measured)."""
    canonical_flops = _canonical_flops(members)
    canonical = next((r for r in members if r.cell.variant == CANONICAL), None)
    base = flop_rate(canonical, canonical_flops) if canonical else None
    cells = []
    for result in sorted(members, key=lambda r: (r.cell.variant != CANONICAL, r.cell.variant)):
        rate = flop_rate(result, _flops(result, canonical_flops))
        relative = rate / base if rate is not None and base else None
        cells.append(HeatmapCell(key, result.cell.variant, relative, result.head.status))
    return cells
