"""Result records: the immutable outcome of one cell.

A result is a driver's outcome (``accelbench.outcome``: head and body) plus the run facts, the driver's
name among them (``RUN_FACTS``): ``Result.head`` is the outcome's ``Head`` (``accelbench.head``),
``Result.body`` the driver's body record as the driver made it (``Body``; ``registry.BODIES`` names each
driver's), its sections read through ``Result``'s properties (``result.curve``: None where the driver
writes none). The stored document (``accelbench.stored``) is flat: the head's keys beside the run facts
and the body's sections, as every schema stored them; older documents are upgraded (``result_upgrade``).

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
       which body the document's sections are (``registry.BODIES``), and so which record the
       ``generation`` section is (a decode cell's, an endpoint's curve or a sessions ladder: read as
       ``Result.decode``, ``Result.curve`` or ``Result.session_ladder``).
       Older documents get the driver their sections show (a ``generation`` section with a
       ``sessions_ladder``: ``sessions``, with a ``curve``: ``endpoint``, else ``tokens``; a ``training``
       section: ``train-to-quality``; any other section, LoadGen's latency, verdict or figures, the
       audits, the variant's record: ``loadgen``), "" when they hold none (a cell that measured nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self

from accelbench.audit_section import AuditSection
from accelbench.curve import EndpointFigures
from accelbench.head import Head
from accelbench.loadgen_figures import Figures, Latency, LoadgenVerdict
from accelbench.sections import GenerationFigures, ServerSearch, TrainingFigures, VariantInfo
from accelbench.session_figures import SessionFigures

SCHEMA_VERSION = 9

RUN_FACTS = (
    "run_id",
    "cell",
    "machine_fingerprint",
    "started_at",
    "wall_s",
    "stderr_tail",
    "driver",
    "schema_version",
)
"""The keys of a stored result that are neither the head's nor the body's: what the parent observed."""


class Body(Protocol):
    """A driver's own part of the outcome: its sections of the stored document (a frozen dataclass whose
    field names are ``Result``'s properties: ``latency``, ``curve``, ...)."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        """The body's keys of the stored document."""
        ...

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Self:
        """The body of an outcome document (the head's keys are ignored)."""
        ...


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
    and its body (``body``, ``Body``).

    The head's 13 fields are read through ``head`` (``result.head.status``) and the body's sections through
    the properties below (``result.curve``), so no field is declared twice. Construct with
    ``head=Head(...)`` and ``body=EndpointBody(...)``; change one with ``dataclasses.replace(result,
    head=dataclasses.replace(result.head, status=...))``.
    """

    run_id: str
    cell: Cell
    head: Head
    body: Body | None = None
    """The driver's body (``registry.BODIES[driver]``); None when the cell measured nothing."""
    machine_fingerprint: str = ""
    started_at: str = ""
    wall_s: float = 0.0
    stderr_tail: str = ""
    driver: str = ""
    """The driver that measured the cell (``accelbench.registry.DRIVERS``); "" in a document stored before
    schema 9 that holds no section to tell it by."""
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.head.status not in STATUSES:
            raise ValueError(f"unknown result status {self.head.status!r}")

    def _section(self, name: str) -> Any:
        """The body's section ``name``, None when the body has no such field (or there is no body)."""
        return getattr(self.body, name, None)

    @property
    def latency(self) -> Latency | None:
        """The SUT's latency summary (LoadGen driver)."""
        return self._section("latency")

    @property
    def loadgen(self) -> LoadgenVerdict | None:
        """LoadGen's verdict of the scored run (LoadGen and token drivers)."""
        return self._section("loadgen")

    @property
    def figures(self) -> Figures | None:
        """LoadGen's headline of the scenario (LoadGen and token drivers)."""
        return self._section("figures")

    @property
    def trial_p50_s(self) -> tuple[float, ...]:
        """Each trial's median latency (LoadGen driver); empty for the others."""
        return tuple(self._section("trial_p50_s") or ())

    @property
    def server_search(self) -> ServerSearch | None:
        """The probes of the server QPS search (``accelbench.scenarios.server_search``)."""
        return self._section("server_search")

    @property
    def variant_info(self) -> VariantInfo | None:
        """The variant's mutation record (``accelbench.variants``)."""
        return self._section("variant_info")

    @property
    def audit(self) -> AuditSection | None:
        """The audits' section (``accelbench.audits``)."""
        return self._section("audit")

    @property
    def training(self) -> TrainingFigures | None:
        """The train-to-quality driver's ``training`` section."""
        return self._section("training")

    @property
    def decode(self) -> GenerationFigures | None:
        """The ``tokens`` driver's ``generation`` section: an in-process LLM cell's decode figures."""
        return self._section("decode")

    @property
    def curve(self) -> EndpointFigures | None:
        """The ``endpoint`` driver's ``generation`` section: a served LLM's curve (``accelbench.curve``)."""
        return self._section("curve")

    @property
    def session_ladder(self) -> SessionFigures | None:
        """The ``sessions`` driver's ``generation`` section: a served LLM's agentic session ladder."""
        return self._section("session_ladder")

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
