"""Subjects: the things ``explain`` and the normalized figures compare.

A subject is one measured piece of work on some chips: an MLPerf history entry (a training run to
quality; chips = ``accelerator_count``, time = the entry's minutes) or a local result (throughput from
``Result.qps``; chips = the matched chip's share used, e.g. 2/96 of a 96-core socket, or 1 GPU). Both are
reduced to ``seconds per unit of work`` so the same figures apply: a training run's time to train, or a
query's share of a second (1 / QPS).
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.errors import UserError
from accelbench.hardware.chips import Chip, ChipTable
from accelbench.hardware.match import ChipMatch
from accelbench.mlperf.history import HistoryEntry
from accelbench.ranges import Range
from accelbench.results import Result
from accelbench.sections import TrainingFigures

KINDS = ("time-to-train", "throughput")
MEASURED_ENERGY = ("measured", "polled")
"""Energy provenances of a result that count as measured (an ``estimated`` energy is a TDP model)."""


@dataclass(frozen=True, slots=True)
class Subject:
    """One measured piece of work: what it was, on which chip, how many, and how long per unit of work."""

    id: str
    label: str
    kind: str
    """``time-to-train`` (MLPerf entries) or ``throughput`` (local results)."""
    benchmark: str
    """What was run; only subjects with the same benchmark compare."""
    seconds_per_work: float
    """Time to train (s) for a training run, 1 / QPS for a throughput measurement."""
    work_unit: str
    chip: Chip | None
    count: float
    """Chips used (a share of a socket for a local CPU result); 0 when unknown."""
    count_basis: str
    count_high: float | None = None
    """The largest count the match allows (``ChipMatch.count_high``); None when ``count`` is exact."""
    round: str = ""
    availability: str = ""
    energy_j: float | None = None
    """Measured energy per unit of work, when a meter measured it."""
    time_basis: str = ""
    notes: tuple[str, ...] = ()

    @property
    def counted(self) -> Range:
        """Chips used as a range, ``count`` central (a point unless the count is an estimate)."""
        return Range.up_to(self.count, self.count_high)

    @property
    def speed(self) -> float:
        """Units of work per second (higher is better)."""
        return 1.0 / self.seconds_per_work


def from_history(entry: HistoryEntry, chips: ChipTable) -> Subject:
    """A subject from an MLPerf entry; UserError when the entry has no time to train."""
    time_s = entry.time_s
    if time_s is None:
        raise UserError(f"MLPerf entry {entry.id} has no time to train (logs absent, no official score)")
    chip = chips.get(entry.chip_key)
    notes = () if chip else (f"chip {entry.chip_key!r} is not in the chips table: per-chip facts unknown",)
    if entry.accelerator_count == 0:
        notes = (*notes, "the entry gives no accelerator count (CPU-only system): per-chip figures unknown")
    return Subject(
        id=entry.id,
        label=f"{entry.round} {entry.submitter} {entry.system_name}",
        kind="time-to-train",
        benchmark=f"mlperf-training/{entry.benchmark}",
        seconds_per_work=time_s,
        work_unit="training run to quality",
        chip=chip,
        count=float(entry.accelerator_count),
        count_basis="accelerator_count of the MLPerf entry",
        round=entry.round,
        availability=entry.availability,
        time_basis=entry.time_basis,
        notes=notes,
    )


def from_result(result_id: str, result: Result, match: ChipMatch) -> Subject:
    """A subject from a stored local result and the chip its device was matched to."""
    if result.training is not None:
        return _from_training(result_id, result, result.training, match)
    if result.head.status != "ok" or not result.qps:
        raise UserError(f"result {result_id} has no measured throughput (status {result.head.status})")
    cell = result.cell
    unit = "sample" if cell.scenario == "offline" else "query"
    energy = result.head.energy
    measured = energy is not None and energy.provenance in MEASURED_ENERGY
    energy_j = float(energy.energy_per_query_j) if measured and energy is not None else None
    return Subject(
        id=result_id,
        label=f"{cell.stack} on {cell.device} ({match.detected or 'unknown'})",
        kind="throughput",
        benchmark=f"{cell.workload}/{cell.size}/{cell.variant}/{cell.scenario}",
        seconds_per_work=1.0 / result.qps,
        work_unit=f"{unit} ({cell.scenario})",
        chip=match.chip,
        count=match.count,
        count_basis=_count_basis(match),
        count_high=match.count_high,
        availability="local",
        energy_j=energy_j,
        time_basis="LoadGen scenario throughput",
        notes=match.notes,
    )


def _from_training(result_id: str, result: Result, training: TrainingFigures, match: ChipMatch) -> Subject:
    """A time-to-train subject from a local ``train-to-quality`` result (its olympic mean)."""
    olympic_s = training.olympic_mean_s
    if result.head.status != "ok" or not olympic_s:
        raise UserError(f"result {result_id} did not train to quality (status {result.head.status})")
    cell = result.cell
    energy = result.head.energy
    measured = energy is not None and energy.provenance in MEASURED_ENERGY
    nproc = training.nproc
    return Subject(
        id=result_id,
        label=f"{cell.stack} on {cell.device} x{nproc} process(es) ({match.detected or 'unknown'})",
        kind="time-to-train",
        benchmark=f"accelbench-training/{cell.workload}/{cell.size}",
        seconds_per_work=float(olympic_s),
        work_unit="training run to quality",
        chip=match.chip,
        count=match.count,
        count_basis=_count_basis(match),
        count_high=match.count_high,
        availability="local",
        energy_j=float(training.energy_j) if measured and training.energy_j else None,
        time_basis="olympic mean of run_start..run_stop",
        notes=match.notes,
    )


def _count_basis(match: ChipMatch) -> str:
    """How the chip was found and, when known, the arithmetic of the count (an estimate on a VM)."""
    found = f"{match.basis}: {match.detected}"
    return f"{found}; {match.count_basis}" if match.count_basis else found
