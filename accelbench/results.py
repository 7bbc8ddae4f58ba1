"""Result records: the immutable outcome of one cell, and its stored (JSON) form.

A result is a driver's outcome (``accelbench.outcome``: head and body) plus the run facts, the driver's
name among them; its sections are typed records (``accelbench.sections``, ``SECTIONS``; the
``generation`` key's record is the one its driver writes, ``GENERATION``), older documents upgraded
(``result_upgrade``).

Schema history (bump ``SCHEMA_VERSION`` and add a line for every change of the stored document):
    1  first format: cell, status, latency, throughput, LoadGen verdict, quality, precision,
       compile time, memory, noise probe, machine, versions, settings.
    2  ``energy`` (an ``Energy`` record: joules of the timed trials with their provenance) and
       ``device_memory`` (peak accelerator memory), both optional, before ``schema_version``.
       ``from_dict`` upgrades a version-1 document by setting both to null.
    3  three optional sections, plain JSON mappings owned by the module that writes them:
       ``variant_info`` (the variant's mutation record and FLOPs, ``accelbench.variants``),
       ``audit`` (caching / alternate-seed audit figures, ``accelbench.audits``) and
       ``training`` (time-to-quality runs, ``accelbench.training``). Older documents get null.
    4  the status follows the audits: new statuses ``disqualified`` (an audit failed), ``unverified``
       (an audit was inconclusive), ``invalid`` (LoadGen INVALID) and ``unstable`` (noise guard); each
       ``audit`` entry carries ``verdict`` (pass / fail / inconclusive) and a one-line ``reason``
       instead of ``flagged``, and the section adds ``output`` and ``repeat`` (in-run audits). A
       version-3 document is upgraded by deriving its status the same way from what it stored: a
       flagged audit disqualifies, an INVALID LoadGen verdict makes it ``invalid``, a drifted noise
       probe ``unstable`` (so an old cheating result never ranks either).
    5  ``figures`` (a ``Figures`` record): LoadGen's own headline of the scenario (single-stream p90,
       multi-stream p99 per query, offline samples/s, server searched max QPS), with its percentiles,
       early-stopping estimate, the mean and 95% interval across trials, the batch size and the
       SUT-timer diagnostic with its ratio to LoadGen's figure; and ``server_search`` (the probes of
       the server QPS search). Older documents get null for both (their headline is ``loadgen.qps``).
    6  ``generation`` (the LLM decode cells' section). Older documents get null.
    7  the noise record is the guard's whole evidence (issue 34): ``steal_cores``, ``threshold`` (the
       drift limit from the run's noise floor), ``floor``, ``samples_shift``, ``samples_shifted`` and
       ``reason``, ``other_load_after_cores``; ``other_load_cores`` counts only processes outside the
       run's process tree. Older records load with 0, 5% (the fixed limit they were judged by), null,
       null, false, "" and null.
    8  the quality gate judges every sample (issue 40): ``quality`` (and ``sanity``) add ``wrong`` (judged
       samples over the sample budget), ``sample_budget`` and ``worst_sample_error``. Older records
       load with null for the three and are judged by their metric alone.
    9  ``driver``: the name of the driver that measured the cell (``accelbench.registry.DRIVERS``); it says
       which record the ``generation`` section is (``GENERATION``: a decode cell's, an endpoint's curve or
       a sessions ladder), read into ``Result.decode``, ``Result.curve`` or ``Result.session_ladder``.
       Older documents get the driver their sections show (a ``generation`` section with a
       ``sessions_ladder``: ``sessions``, with a ``curve``: ``endpoint``, else ``tokens``; a ``training``
       section: ``train-to-quality``; LoadGen's latency or verdict: ``loadgen``), "" when they hold none
       (a cell that measured nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.curve import EndpointFigures
from accelbench.loadgen_figures import Figures, Latency, LoadgenVerdict
from accelbench.result_upgrade import upgrade
from accelbench.sections import GenerationFigures, ServerSearch, TrainingFigures, VariantInfo
from accelbench.session_figures import SessionFigures

SCHEMA_VERSION = 9

SECTIONS: Mapping[str, Callable[[Mapping[str, Any]], Any]] = {
    "audit": AuditSection.from_dict,
    "variant_info": VariantInfo.from_dict,
    "training": TrainingFigures.from_dict,
    "server_search": ServerSearch.from_dict,
}
"""The typed sections' loaders (``accelbench.sections``; ``to_dict`` writes each)."""

GENERATION: Mapping[str, tuple[str, Callable[[Mapping[str, Any]], Any]]] = {
    "tokens": ("decode", GenerationFigures.from_dict),
    "endpoint": ("curve", EndpointFigures.from_dict),
    "sessions": ("session_ladder", SessionFigures.from_dict),
}
"""The stored ``generation`` key by the name of the driver that writes it: the ``Result`` field that holds
it and the field's loader (``accelbench.sections``, ``accelbench.curve``, ``accelbench.session_figures``;
``to_dict`` writes each). The document's ``driver`` says which."""

STATUSES = (
    "ok",
    "disqualified",
    "quality_failed",
    "unverified",
    "invalid",
    "unstable",
    "unsupported",
    "unavailable",
    "crashed",
    "timeout",
    "oom",
)
UNVERIFIED_STATUSES = ("disqualified", "unverified", "invalid", "unstable")
"""Measured cells that do not rank: an audit failed or could not conclude, LoadGen said INVALID, or the
machine drifted. They are listed apart, with their reason (``accelbench.normalize.ranking``)."""

ENERGY_PROVENANCES = ("measured", "polled", "estimated")
"""``measured``: a hardware energy counter (RAPL, NVML, amdsmi); ``polled``: power sampled in a background
thread and integrated; ``estimated``: no counter, a model (its ``formula`` says which)."""


@dataclass(frozen=True, slots=True)
class Cell:
    """One (workload, variant, stack, device, scenario) to measure, at a workload size."""

    workload: str
    stack: str
    scenario: str
    device: str = "cpu"
    size: str = "standard"
    variant: str = "canonical"

    @property
    def key(self) -> str:
        """Stable identity of the cell inside a run."""
        return "/".join((self.workload, self.size, self.variant, self.stack, self.device, self.scenario))


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


@dataclass(frozen=True, slots=True)
class DeviceMemory:
    """Peak accelerator memory of the cell during the timed trials, and how it was read."""

    peak_bytes: int
    source: str


@dataclass(frozen=True, slots=True)
class Result:
    """The immutable record of one cell."""

    run_id: str
    cell: Cell
    status: str
    reason: str = ""
    latency: Latency | None = None
    loadgen: LoadgenVerdict | None = None
    trial_p50_s: tuple[float, ...] = ()
    quality: Quality | None = None
    sanity: Quality | None = None
    effective_precision: str = ""
    compile_s: float | None = None
    peak_rss_bytes: int | None = None
    noise: NoiseProbe | None = None
    warnings: tuple[str, ...] = ()
    versions: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    machine_fingerprint: str = ""
    started_at: str = ""
    wall_s: float = 0.0
    stderr_tail: str = ""
    energy: Energy | None = None
    device_memory: DeviceMemory | None = None
    variant_info: VariantInfo | None = None
    audit: AuditSection | None = None
    training: TrainingFigures | None = None
    figures: Figures | None = None
    server_search: ServerSearch | None = None
    """The probes of the server QPS search (``accelbench.scenarios.server_search``)."""
    decode: GenerationFigures | None = None
    """The ``tokens`` driver's ``generation`` section: an in-process LLM cell's decode figures
    (``accelbench.generation.figures``)."""
    curve: EndpointFigures | None = None
    """The ``endpoint`` driver's ``generation`` section: a served LLM's curve (``accelbench.curve``)."""
    session_ladder: SessionFigures | None = None
    """The ``sessions`` driver's ``generation`` section: a served LLM's agentic session ladder."""
    driver: str = ""
    """The driver that measured the cell (``accelbench.registry.DRIVERS``); "" in a document stored before
    schema 9 that holds no section to tell it by."""
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown result status {self.status!r}")
        held = [name for name, _ in GENERATION.values() if getattr(self, name) is not None]
        if len(held) > 1:
            raise ValueError(f"a result holds one generation section, not {' and '.join(held)}")

    @property
    def qps(self) -> float | None:
        """LoadGen's scenario throughput, when the cell was measured (server: the searched max QPS)."""
        if self.figures is not None:
            return self.figures.value if self.figures.metric == "max_qps" else self.figures.qps
        return self.loadgen.qps if self.loadgen else None

    @property
    def node_id(self) -> str:
        """The fleet node that measured the cell (``settings.fleet_node.node_id``); "" for a local cell."""
        node = self.settings.get("fleet_node")
        return str(node.get("node_id", "")) if isinstance(node, Mapping) else ""

    @property
    def node_machine(self) -> Mapping[str, Any] | None:
        """The fleet node's machine record (``settings.fleet_node.machine``), None for a local cell."""
        node = self.settings.get("fleet_node")
        machine = node.get("machine") if isinstance(node, Mapping) else None
        return machine if isinstance(machine, Mapping) else None

    @property
    def rules_setting(self) -> str:
        """The rule set in the cell's settings (``settings.rules``), "" when not recorded."""
        value = self.settings.get("rules")
        return value if isinstance(value, str) else ""

    @property
    def batch_size(self) -> int | None:
        """Samples per call the cell settled on (``settings.batch_size``), None when not recorded."""
        value = self.settings.get("batch_size")
        return value if isinstance(value, int) else None

    @property
    def threads(self) -> int | None:
        """The threads the cell ran with (``settings.threads``), None when not recorded."""
        value = self.settings.get("threads")
        return value if isinstance(value, int) else None

    @property
    def headline(self) -> tuple[str, float] | None:
        """The scenario's MLPerf figure ``(metric, value)``; schema <5 results fall back to LoadGen's QPS."""
        if self.figures is not None:
            return self.figures.metric, self.figures.value
        return ("qps", self.loadgen.qps) if self.loadgen else None


def to_dict(result: Result) -> dict[str, Any]:
    """The stored JSON document of a result (its ``generation`` key: the one of ``decode``, ``curve`` and
    ``session_ladder`` it holds)."""
    held = (result.decode, result.curve, result.session_ladder)
    generation = next((record.to_dict() for record in held if record is not None), None)
    doc: dict[str, Any] = {}
    for name, value in dataclasses.asdict(result).items():
        if name not in _GENERATION_FIELDS:
            doc[name] = value
        elif "generation" not in doc:
            doc["generation"] = generation
    doc["versions"] = dict(result.versions)
    doc["settings"] = dict(result.settings)
    if result.energy is not None:
        doc["energy"]["domains"] = dict(result.energy.domains)
    for name in SECTIONS:
        record = getattr(result, name)
        doc[name] = None if record is None else record.to_dict()
    return doc


_GENERATION_FIELDS = frozenset(name for name, _ in GENERATION.values())


def json_plain(value: Any) -> Any:
    """``value`` with mappings as dicts and tuples as lists, as JSON stores it."""
    if isinstance(value, Mapping):
        return {str(k): json_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_plain(v) for v in value]
    return value


def from_dict(doc: Mapping[str, Any]) -> Result:
    """Rebuild a result from its stored document (versions 1-8 are upgraded); ValueError on an unknown
    schema, and on a ``generation`` section of a driver that writes none."""
    version = doc.get("schema_version")
    if version in (1, 2, 3, 4, 5, 6, 7, 8):
        doc = upgrade(doc, SCHEMA_VERSION)
    elif version != SCHEMA_VERSION:
        raise ValueError(f"result schema_version {version!r} is not {SCHEMA_VERSION} (or 1-8, upgraded)")
    data = dict(doc)
    generation = data.pop("generation", None)
    if generation is not None:
        driver = data.get("driver", "")
        if driver not in GENERATION:
            raise ValueError(f"a generation section in a {driver!r} cell's result (no such driver writes it)")
        name, load_section = GENERATION[driver]
        data[name] = load_section(generation)
    data["cell"] = Cell(**data["cell"])
    data["latency"] = record_of(Latency, data.get("latency"))
    data["loadgen"] = record_of(LoadgenVerdict, data.get("loadgen"))
    data["quality"] = record_of(Quality, data.get("quality"))
    data["sanity"] = record_of(Quality, data.get("sanity"))
    data["noise"] = record_of(NoiseProbe, data.get("noise"))
    data["energy"] = record_of(Energy, data.get("energy"))
    data["device_memory"] = record_of(DeviceMemory, data.get("device_memory"))
    data["figures"] = record_of(Figures, data.get("figures"))
    for name, load in SECTIONS.items():
        section = data.get(name)
        data[name] = None if section is None else load(section)
    data["trial_p50_s"] = tuple(data.get("trial_p50_s", ()))
    data["warnings"] = tuple(data.get("warnings", ()))
    return Result(**data)


def record_of(kind: type, value: Mapping[str, Any] | None) -> Any:
    """The record ``kind`` of a stored mapping (lists as tuples), or None for None."""
    if value is None:
        return None
    fields = dict(value)
    for name, current in fields.items():
        if isinstance(current, list):
            fields[name] = tuple(current)
    return kind(**fields)
