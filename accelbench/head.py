"""The head of a cell's outcome: what every driver reports of a cell, whatever it measured, and the
records it is made of.

``Head`` (status, reason, quality, precision, compile time, peak memory, noise, energy, device memory,
warnings, versions, settings) is the common part of a driver's ``accelbench.outcome.Outcome`` and of the
stored ``accelbench.results.Result`` (``Result.head``); ``Quality`` (the quality gate), ``NoiseProbe``
(the noise guard's evidence), ``Energy`` and ``DeviceMemory`` are its records. ``record_of``
(and ``accelbench.sections.plain``) turn such records into their stored (JSON) form and back. This
module imports only ``sections``' ``plain``, so both ``results`` and ``outcome`` build on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from accelbench.sections import plain

ENERGY_PROVENANCES = ("measured", "polled", "estimated")
"""``measured``: a hardware energy counter (RAPL, NVML, amdsmi); ``polled``: power sampled in a background
thread and integrated; ``estimated``: no counter, a model (its ``formula`` says which)."""


@dataclass(frozen=True, slots=True)
class Quality:
    """The quality gate: outputs sampled during the timed run vs the fp32 reference."""

    metric: str
    value: float
    threshold: float
    passed: bool
    samples_checked: int
    detail: str = ""
    wrong: int | None = None
    """Judged samples whose relative L2 error exceeds ``sample_budget`` (``accelbench.meters.quality``);
    None in records stored before schema 8 (judged by their metric alone)."""
    sample_budget: float | None = None
    """The largest relative L2 error one sample was allowed (None before schema 8)."""
    worst_sample_error: float | None = None
    """The largest relative L2 error of a judged sample (None before schema 8)."""


@dataclass(frozen=True, slots=True)
class NoiseProbe:
    """The noise guard's record (``accelbench.meters.noise``): a reference probe before and after, other
    processes' load and steal, the timed samples' own shift, and the verdict."""

    before_s: float
    after_s: float
    drift: float
    loadavg_before: float
    loadavg_after: float
    other_load_cores: float
    """CPU time used by processes outside the run's process tree during the measurement, per second of
    wall time (before the tree was counted: outside the cell process, so its trial processes too)."""
    unstable: bool
    """The guard's evidence says the measurement was disturbed (``reason`` says which)."""
    steal_cores: float = 0.0
    """Hypervisor steal during the measurement, in cores (0 in records stored before it was kept)."""
    threshold: float = 0.05
    """The drift limit applied: from the run's noise floor (a fixed 5% before the floor was kept)."""
    floor: float | None = None
    """The run's probe noise floor: median drift of idle pairs of probes at the run's start."""
    samples_shift: float | None = None
    """Median of the last third of the timed samples / the first third's - 1; None: too few samples."""
    samples_shifted: bool = False
    """That shift is beyond the samples' own dispersion (``accelbench.meters.noise.samples_shift``)."""
    reason: str = ""
    """Why the guard judged the measurement disturbed ("" when it did not, and in older records)."""
    other_load_after_cores: float | None = None
    """Other processes' load during the closing probe: a disturbance still going on is not measured
    again (``accelbench.meters.noise.worth_retrying``)."""
    outside_view: str = ""
    """What the guard could not watch: a served model on another machine (its load, steal and drift are
    not this machine's); "" when the whole measurement ran here."""
    retried: str = ""
    """Why the cell's first attempt was measured once more (its guard's reason, the attempt discarded);
    "" when it was measured once (and in older records)."""


@dataclass(frozen=True, slots=True)
class Energy:
    """Energy of the timed trials: one meter window from before the first trial to after the last.

    ``energy_per_query_j`` divides by the samples completed in the window (a single-stream query is one
    sample; an offline query holds many, and this is per sample). ``domains`` splits ``energy_j`` by where
    it was counted (``package-0``, ``dram-0``, ``gpu0``, or the parts of an estimate).
    """

    energy_j: float
    power_w: float
    energy_per_query_j: float
    samples_per_j: float
    window_s: float
    samples: int
    provenance: str
    meter: str
    formula: str
    domains: Mapping[str, float] = field(default_factory=dict)
    idle_power_w: float | None = None
    """Device power measured while idle just before the window (GPU meters), else None."""
    idle_subtracted: bool = False
    """True when ``idle_power_w x window_s`` was taken off ``energy_j``."""

    def __post_init__(self) -> None:
        if self.provenance not in ENERGY_PROVENANCES:
            raise ValueError(f"unknown energy provenance {self.provenance!r}")
        if not self.formula:
            raise ValueError("an energy figure needs the formula or counter it comes from")

    @classmethod
    def of_window(
        cls,
        *,
        energy_j: float,
        window_s: float,
        provenance: str,
        meter: str,
        formula: str,
        domains: Mapping[str, float] | None = None,
        idle_power_w: float | None = None,
        idle_subtracted: bool = False,
    ) -> Energy:
        """What one meter window consumed (``accelbench.meters``), its average power, before it is divided
        by the samples completed in it (``samples`` 0: ``for_samples``)."""
        return cls(
            energy_j=energy_j,
            power_w=energy_j / window_s if window_s > 0 else 0.0,
            energy_per_query_j=0.0,
            samples_per_j=0.0,
            window_s=window_s,
            samples=0,
            provenance=provenance,
            meter=meter,
            formula=formula,
            domains=dict(domains or {}),
            idle_power_w=idle_power_w,
            idle_subtracted=idle_subtracted,
        )

    def for_samples(self, samples: int) -> Energy:
        """This window's energy over the ``samples`` completed in it: per sample and samples per joule."""
        return replace(
            self,
            samples=samples,
            energy_per_query_j=self.energy_j / samples if samples > 0 else 0.0,
            samples_per_j=samples / self.energy_j if self.energy_j > 0 else 0.0,
        )


@dataclass(frozen=True, slots=True)
class DeviceMemory:
    """Peak accelerator memory of the cell during the timed trials, and how it was read."""

    peak_bytes: int
    source: str


@dataclass(frozen=True, slots=True)
class Head:
    """What every driver reports of a cell, whatever it measured."""

    status: str
    reason: str = ""
    quality: Quality | None = None
    sanity: Quality | None = None
    effective_precision: str = ""
    compile_s: float | None = None
    peak_rss_bytes: int | None = None
    noise: NoiseProbe | None = None
    energy: Energy | None = None
    device_memory: DeviceMemory | None = None
    warnings: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The head's keys of the stored document."""
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("quality", "sanity", "noise", "energy", "device_memory"):
            record = document[name]
            document[name] = None if record is None else plain(dataclasses.asdict(record))
        document["warnings"] = list(self.warnings)
        document["versions"] = dict(self.versions)
        document["settings"] = plain(self.settings)
        return document

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Head:
        """The head of an outcome document (other keys are the body's, ignored here)."""
        return cls(
            status=document["status"],
            reason=document.get("reason", ""),
            quality=record_of(Quality, document.get("quality")),
            sanity=record_of(Quality, document.get("sanity")),
            effective_precision=document.get("effective_precision", ""),
            compile_s=document.get("compile_s"),
            peak_rss_bytes=document.get("peak_rss_bytes"),
            noise=record_of(NoiseProbe, document.get("noise")),
            energy=record_of(Energy, document.get("energy")),
            device_memory=record_of(DeviceMemory, document.get("device_memory")),
            warnings=tuple(document.get("warnings", ())),
            versions=dict(document.get("versions", {})),
            settings=dict(document.get("settings", {})),
        )


HEAD_KEYS = frozenset(f.name for f in dataclasses.fields(Head))
"""The head's keys of an outcome document: one holding no other key has no body."""


def record_of(kind: type, value: Mapping[str, Any] | None) -> Any:
    """The record ``kind`` of a stored mapping (lists as tuples), or None for None."""
    if value is None:
        return None
    fields = dict(value)
    for name, current in fields.items():
        if isinstance(current, list):
            fields[name] = tuple(current)
    return kind(**fields)
