"""Result records: the immutable outcome of one cell, and its stored (JSON) form.

A result is a driver's outcome (``accelbench.outcome``: head and body) plus the run facts, the driver's
name among them: ``Result.head`` is the outcome's ``Head`` (``accelbench.head``), the body's sections are
``Result``'s own fields, typed records (``accelbench.sections``, ``SECTIONS``; the ``generation`` key's
record is the one its driver writes, ``GENERATION``). The stored document is flat (``STORED_KEYS``: the
head's keys beside the run facts and the sections, as every schema stored them); older documents are
upgraded (``result_upgrade``).

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
from dataclasses import dataclass
from typing import Any

from accelbench.audit_section import AuditSection
from accelbench.curve import EndpointFigures
from accelbench.head import HEAD_KEYS, Head, record_of
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
class Result:
    """The immutable record of one cell: the run facts, the driver's head (``head``, ``accelbench.head``)
    and the sections of its body.

    The head's 13 fields are read through ``head`` (``result.head.status``), so no field is declared
    twice. Construct with ``head=Head(...)``; change one with
    ``dataclasses.replace(result, head=dataclasses.replace(result.head, status=...))``.
    """

    run_id: str
    cell: Cell
    head: Head
    latency: Latency | None = None
    loadgen: LoadgenVerdict | None = None
    trial_p50_s: tuple[float, ...] = ()
    machine_fingerprint: str = ""
    started_at: str = ""
    wall_s: float = 0.0
    stderr_tail: str = ""
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
        if self.head.status not in STATUSES:
            raise ValueError(f"unknown result status {self.head.status!r}")
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
        node = self.head.settings.get("fleet_node")
        return str(node.get("node_id", "")) if isinstance(node, Mapping) else ""

    @property
    def node_machine(self) -> Mapping[str, Any] | None:
        """The fleet node's machine record (``settings.fleet_node.machine``), None for a local cell."""
        node = self.head.settings.get("fleet_node")
        machine = node.get("machine") if isinstance(node, Mapping) else None
        return machine if isinstance(machine, Mapping) else None

    @property
    def rules_setting(self) -> str:
        """The rule set in the cell's settings (``settings.rules``), "" when not recorded."""
        value = self.head.settings.get("rules")
        return value if isinstance(value, str) else ""

    @property
    def batch_size(self) -> int | None:
        """Samples per call the cell settled on (``settings.batch_size``), None when not recorded."""
        value = self.head.settings.get("batch_size")
        return value if isinstance(value, int) else None

    @property
    def threads(self) -> int | None:
        """The threads the cell ran with (``settings.threads``), None when not recorded."""
        value = self.head.settings.get("threads")
        return value if isinstance(value, int) else None

    @property
    def headline(self) -> tuple[str, float] | None:
        """The scenario's MLPerf figure ``(metric, value)``; schema <5 results fall back to LoadGen's QPS."""
        if self.figures is not None:
            return self.figures.metric, self.figures.value
        return ("qps", self.loadgen.qps) if self.loadgen else None


STORED_KEYS = (
    "run_id",
    "cell",
    "status",
    "reason",
    "latency",
    "loadgen",
    "trial_p50_s",
    "quality",
    "sanity",
    "effective_precision",
    "compile_s",
    "peak_rss_bytes",
    "noise",
    "warnings",
    "versions",
    "settings",
    "machine_fingerprint",
    "started_at",
    "wall_s",
    "stderr_tail",
    "energy",
    "device_memory",
    "variant_info",
    "audit",
    "training",
    "figures",
    "server_search",
    "generation",
    "driver",
    "schema_version",
)
"""The keys of the stored document in their order: flat, the head's among the run facts and the body's
sections (the order of every schema since 1, kept so stored documents do not change)."""


def to_dict(result: Result) -> dict[str, Any]:
    """The stored JSON document of a result: flat (``STORED_KEYS``), the head's keys beside the others; its
    ``generation`` key: the one of ``decode``, ``curve`` and ``session_ladder`` it holds."""
    held = (result.decode, result.curve, result.session_ladder)
    flat = dataclasses.asdict(result)
    flat.update(flat.pop("head"))
    flat["generation"] = next((record.to_dict() for record in held if record is not None), None)
    doc = {key: flat[key] for key in STORED_KEYS}
    doc["versions"] = dict(result.head.versions)
    doc["settings"] = dict(result.head.settings)
    if result.head.energy is not None:
        doc["energy"]["domains"] = dict(result.head.energy.domains)
    for name in SECTIONS:
        record = getattr(result, name)
        doc[name] = None if record is None else record.to_dict()
    return doc


def from_dict(doc: Mapping[str, Any]) -> Result:
    """Rebuild a result from its stored document (versions 1-8 are upgraded); ValueError on an unknown
    schema, and on a ``generation`` section of a driver that writes none."""
    version = doc.get("schema_version")
    if version in (1, 2, 3, 4, 5, 6, 7, 8):
        doc = upgrade(doc, SCHEMA_VERSION)
    elif version != SCHEMA_VERSION:
        raise ValueError(f"result schema_version {version!r} is not {SCHEMA_VERSION} (or 1-8, upgraded)")
    data = {key: value for key, value in doc.items() if key not in HEAD_KEYS}
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
    data["figures"] = record_of(Figures, data.get("figures"))
    for name, load in SECTIONS.items():
        section = data.get(name)
        data[name] = None if section is None else load(section)
    data["trial_p50_s"] = tuple(data.get("trial_p50_s", ()))
    return Result(head=Head.from_dict(doc), **data)
