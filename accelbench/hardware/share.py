"""The share of a CPU socket a machine used, decided from evidence, and the datasheet peak it can reach.

A cloud VM's vCPUs are either whole cores or SMT sibling threads of a host socket, and the guest cannot be
trusted to say which (a 2-vCPU EPYC VM reports 2 cores of 1 thread either way). Two models are weighed:

    SMT siblings  vCPUs / threads per core cores of the socket (the low count);
    whole cores   one core per vCPU (the high count).

Each model has a datasheet peak at each clock the chip's facts give (``base``, ``all-core boost``,
``max boost``): cores x clock x FP32 FLOP/cycle. The peak a share is judged against (its *ceiling*) is the
one its cores can reach: ``max boost`` when few cores of the socket are busy (at most
``FEW_CORES_SHARE``), else ``all-core boost``; a missing clock falls back to the next one that is known.

The decision, in order (``decide``): a measured GEMM peak above the SMT-sibling ceiling rules SMT siblings
out (a part cannot beat its own datasheet), so whole cores are counted; else a guest that shows sibling
threads is taken at its word; else both models remain and the low count is kept with the range up to the
high one, while the datasheet share is judged against whole cores, the larger model (nothing is lost: a
rate above the smaller model's peak is above the measured peak, and marked there). Only a measured peak
above the ceiling of the model left is unexplained: ``failed`` then names the assumption that failed (the
chip match or its FLOP per cycle). Pure functions; no formatting beyond the evidence sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from accelbench.hardware.chips import SOURCE_CLASSES, Chip, Fact

FEW_CORES_SHARE = 0.25
"""Up to this share of a socket's cores busy, the ceiling is the max boost clock (the rest of the socket is
idle or lightly loaded on a rented VM); above it, the all-core boost clock."""
CLOCKS = ("base", "all-core boost", "max boost")
_CLOCK_FIELDS = {"base": "base_clock_hz", "all-core boost": "all_core_boost_hz", "max boost": "max_boost_hz"}


@dataclass(frozen=True, slots=True)
class ClockPeak:
    """The datasheet FP32 FLOP/s of some cores at one clock, with the weakest source class behind it."""

    name: str
    """One of ``CLOCKS``, or ``datasheet figure`` when the chip has no clocks and FLOP/cycle."""
    clock_hz: float | None
    cores: float
    flops_per_s: float
    source_class: str
    source: str


@dataclass(frozen=True, slots=True)
class ShareDecision:
    """How much of a chip was counted and why: the model, its range, the clock judged against."""

    model: str
    """``whole cores``, ``SMT siblings`` or ``SMT siblings (whole cores not ruled out)``."""
    count: float
    count_low: float
    count_high: float
    cores: float
    ceiling: ClockPeak
    """The peak of the judged cores at the clock they can reach: the denominator of "% datasheet". The
    judged cores are ``cores``, except when undecided: then whole cores (the larger model), so a correct
    share is never above 100% and a share above the smaller model's peak is already above the measured
    peak (marked there)."""
    peaks: tuple[ClockPeak, ...]
    """The judged cores at every known clock."""
    smt_peaks: tuple[ClockPeak, ...]
    """The SMT-sibling cores at every known clock (empty when the chip has no SMT or the count is exact)."""
    measured_per_s: float | None
    evidence: tuple[str, ...]
    failed: str = ""
    """Empty when a model explains the measured peak; else which assumption failed."""

    def summary(self) -> str:
        """One line: the model, the count and the clock used (for ``count_basis``)."""
        ghz = f" {self.ceiling.clock_hz / 1e9:.2f} GHz" if self.ceiling.clock_hz else ""
        span = ""
        if self.count_high > self.count_low:
            span = f" (range {self.count_low:.4g}-{self.count_high:.4g})"
        return (
            f"{self.model}: {self.cores:g} cores = {self.count:.4g} chips{span}, judged at "
            f"{self.ceiling.name}{ghz} ({self.ceiling.flops_per_s / 1e9:.1f} GFLOP/s, "
            f"{self.ceiling.source_class}); " + "; ".join(self.evidence)
        )


def clock_aware(chip: Chip | None) -> bool:
    """True when the chip's facts give cores, FP32 FLOP/cycle and at least one clock."""
    if chip is None or chip.cores is None or chip.fp32_flop_per_cycle is None:
        return False
    return any(getattr(chip, field) is not None for field in _CLOCK_FIELDS.values())


def clock_peaks(chip: Chip, cores: float) -> tuple[ClockPeak, ...]:
    """``cores`` of ``chip`` at every clock its facts give: cores x clock x FP32 FLOP/cycle."""
    per_cycle = chip.fp32_flop_per_cycle
    assert per_cycle is not None  # callers check clock_aware
    peaks = []
    for name in CLOCKS:
        clock: Fact | None = getattr(chip, _CLOCK_FIELDS[name])
        if clock is None:
            continue
        hz, flop = clock.value.central, per_cycle.value.central
        peaks.append(
            ClockPeak(
                name=name,
                clock_hz=hz,
                cores=cores,
                flops_per_s=cores * hz * flop,
                source_class=_weakest(clock.source_class, per_cycle.source_class),
                source=(
                    f"{cores:g} cores x {hz / 1e9:.2f} GHz {name} ({clock.source_class}: {clock.source}) "
                    f"x {flop:g} FP32 FLOP/cycle ({per_cycle.source_class}: {per_cycle.source})"
                ),
            )
        )
    return tuple(peaks)


def ceiling(peaks: tuple[ClockPeak, ...], socket_cores: float) -> ClockPeak:
    """The peak the cores can reach: max boost with few cores busy, else all-core boost (fallbacks next)."""
    few = peaks[0].cores <= FEW_CORES_SHARE * socket_cores
    order = ("max boost", "all-core boost", "base") if few else ("all-core boost", "max boost", "base")
    by_name = {p.name: p for p in peaks}
    return next(by_name[name] for name in order if name in by_name)


def decide(
    chip: Chip,
    count_low: float,
    count_high: float,
    measured_per_s: float | None,
    guest_threads_per_core: float | None = None,
) -> ShareDecision:
    """Whole cores or SMT siblings, from the guest's report and the measured FP32 GEMM peak."""
    assert chip.cores is not None
    socket = chip.cores.value.central
    evidence = [_guest_evidence(guest_threads_per_core)] if guest_threads_per_core is not None else []
    smt_peaks = clock_peaks(chip, count_low * socket) if count_high > count_low else ()
    model, count = "whole cores", count_high
    if smt_peaks:
        smt_ceiling = ceiling(smt_peaks, socket)
        if measured_per_s is not None and measured_per_s > smt_ceiling.flops_per_s:
            evidence.append(
                f"the measured FP32 GEMM peak {_g(measured_per_s)} is above the SMT-sibling peak "
                f"({smt_ceiling.cores:g} cores at {smt_ceiling.name}, {_g(smt_ceiling.flops_per_s)}): "
                "SMT siblings are ruled out"
            )
        elif guest_threads_per_core is not None and guest_threads_per_core > 1:
            model, count = "SMT siblings", count_low
        else:
            model, count = "SMT siblings (whole cores not ruled out)", count_low
            seen = "no measured peak" if measured_per_s is None else f"the measured peak {_g(measured_per_s)}"
            evidence.append(
                f"{seen} is within the SMT-sibling peak ({_g(smt_ceiling.flops_per_s)} at "
                f"{smt_ceiling.name}): both models remain, the low count is used"
            )
    undecided = model.endswith("(whole cores not ruled out)")
    if undecided:  # judged against the larger model: an undecided share is never above 100% when correct
        evidence.append("the datasheet share is judged against whole cores, the larger model")
    peaks = clock_peaks(chip, (count_high if undecided else count) * socket)
    top = ceiling(peaks, socket)
    failed = ""
    if measured_per_s is not None and measured_per_s > top.flops_per_s:
        failed = (
            f"the measured FP32 GEMM peak {_g(measured_per_s)} is above the datasheet peak of {model} "
            f"({top.cores:g} cores at {top.name}, {_g(top.flops_per_s)}): the chip match ({chip.key}) or "
            "its FP32 FLOP/cycle is wrong"
        )
    return ShareDecision(
        model=model,
        count=count,
        count_low=count if model == "whole cores" else count_low,
        count_high=count_high,
        cores=count * socket,
        ceiling=top,
        peaks=peaks,
        smt_peaks=smt_peaks,
        measured_per_s=measured_per_s,
        evidence=tuple(evidence),
        failed=failed,
    )


def _guest_evidence(threads_per_core: float) -> str:
    if threads_per_core > 1:
        return f"the guest shows {threads_per_core:g} threads per core (sibling threads)"
    return "the guest shows 1 thread per core (not proof: a hypervisor may map vCPUs to sibling threads)"


def _weakest(*classes: str) -> str:
    return max(classes, key=lambda c: SOURCE_CLASSES.index(c) if c in SOURCE_CLASSES else len(SOURCE_CLASSES))


def _g(flops_per_s: float) -> str:
    return f"{flops_per_s / 1e9:.1f} GFLOP/s"
