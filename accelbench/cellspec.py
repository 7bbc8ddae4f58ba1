"""The cell's records: a ``PlannedCell`` (what the runner plans) and the ``CellSpec`` its process gets.

The parent (``accelbench.cell.pipeline``) writes a ``CellSpec`` as JSON (without its input seed, which
the cell process gets through the fork's arguments: ``accelbench.cell.isolation``), starts the cell
process and reads back the child's outcome document from ``Folders.result_path``. References
(``module:Class``, a ``Refs``) are resolved by the parent, so the child imports exactly what was planned,
plugins and planted test stacks included. The spec is the common head every driver reads (run, cell,
refs, folders, threads, seeds) plus the driver's own settings record (``accelbench.settings``), built by
the parent from the run's ``RunConfig``; a ``spec.json`` written before those records (its knobs, refs
and folders as flat fields) reads through ``upgrade``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench import registry, settings
from accelbench.knobs import Knobs
from accelbench.results import Cell
from accelbench.served_options import ServedOptions
from accelbench.settings import DriverSettings


@dataclass(frozen=True, slots=True)
class PlannedCell:
    """A cell with the references its process will import: its workload, its stack and the driver that
    measures it (``accelbench.registry.DRIVERS``, resolved once by the planner)."""

    cell: Cell
    workload_ref: str
    stack_ref: str
    driver_ref: str


@dataclass(frozen=True, slots=True)
class Refs:
    """The ``module:Class`` (or ``module:function``) references a cell process imports, resolved by the
    planner (``PlannedCell``)."""

    workload: str
    stack: str
    driver: str
    """The driver the cell process calls (``PlannedCell.driver_ref``)."""

    @classmethod
    def of(cls, planned: PlannedCell) -> Refs:
        """The references of a planned cell."""
        return cls(planned.workload_ref, planned.stack_ref, planned.driver_ref)


@dataclass(frozen=True, slots=True)
class Folders:
    """Where a cell process reads and writes: its own folder, the run's, the caches and its outcome file."""

    cell_dir: str
    """Private folder of this cell (LoadGen logs, stderr); relative paths are stored against run_dir."""
    run_dir: str
    cache_dir: str
    """The run's cache folder, shared by the run's cells."""
    result_path: str
    """The outcome document the cell process writes (``accelbench.cell.process``)."""
    store_cache_dir: str = ""
    """The results store's cache folder, kept across runs (the LLM models and their conversions); empty:
    ``cache_dir``."""

    @property
    def model_cache_dir(self) -> str:
        """Where models and their conversions are kept: the store's cache (they outlive the run), else the
        run's."""
        return self.store_cache_dir or self.cache_dir


@dataclass(frozen=True, slots=True)
class CellSpec:
    """Everything a cell process needs to measure one cell."""

    run_id: str
    cell: Cell
    refs: Refs
    rules: str
    threads: int
    seed: int
    """Seed of the model's weights (``ModelSpec.seed``: a stack may see it)."""
    input_seed: int
    """Seed of every input the cell times or audits (``accelbench.cell.seeds``); never written to the
    cell's folder nor handed to a stack (``public_dict``)."""
    samples: int
    folders: Folders
    settings: DriverSettings
    """The driver's own settings (``accelbench.settings``), built by the parent from the run's
    ``RunConfig``: the knobs only that driver reads."""
    noise_floor: dict[str, Any] | None = None
    """The run's noise floor (``reference_probe.floor_to_dict``), taken by the parent: the cell reads its
    drift limit from here, never from a file a stack could write; None: the cell measures one."""
    measured_fp32_flops_per_s: float | None = None
    """The run's measured FP32 GEMM peak (``accelbench.probe.peaks_file.run_fp32_peak``), read by the parent
    before the first cell: the CPU energy estimate decides its share of the socket from it as the
    per-chip figures do (``accelbench.hardware.share``); None: no probe ran (undecided, the low count)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (in memory and pipes only: it holds the input seed); the settings are
        tagged by their driver's name (``accelbench.settings.to_dict``)."""
        document = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {
            **document,
            "cell": dataclasses.asdict(self.cell),
            "refs": dataclasses.asdict(self.refs),
            "folders": dataclasses.asdict(self.folders),
            "settings": settings.to_dict(self.settings),
        }

    def public_dict(self) -> dict[str, Any]:
        """``to_dict`` without the input seed: the form that may be written to the cell's folder."""
        document = self.to_dict()
        del document["input_seed"]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], input_seed: int | None = None) -> CellSpec:
        """Inverse of ``to_dict``; of ``public_dict`` with the ``input_seed`` passed apart. A flat
        document from before the refs, folders and settings records (``upgrade``) is read too."""
        fields = upgrade(data)
        if input_seed is not None:
            fields["input_seed"] = input_seed
        fields["cell"] = Cell(**fields["cell"])
        fields["refs"] = Refs(**fields["refs"])
        fields["folders"] = Folders(**fields["folders"])
        fields["settings"] = settings.from_dict(fields["settings"])
        return cls(**fields)


@dataclass(frozen=True, slots=True)
class FlatKnobs:
    """The driver knobs a spec document carried as fields of its own before ``CellSpec.settings``, with
    the defaults they had then (the names are ``RunConfig``'s, so a driver's ``from_config`` reads them)."""

    runs: int = 5
    nproc: int = 1
    batch: int | None = None
    batch_sweep: tuple[int, ...] = ()
    serve_url: str | None = None
    serve_cluster: str | None = None
    concurrency: tuple[int, ...] = ()
    endpoint_requests: int = 0
    output_tokens: int = 0
    api_key_env: str = ""
    endpoint_api: str = ""
    arrivals: str = ""
    sessions: tuple[int, ...] = ()
    session_turns: int = 0

    @property
    def served(self) -> ServedOptions:
        """The run's served options among them (what ``from_config`` reads as ``RunConfig.served``)."""
        return ServedOptions(url=self.serve_url, api_key_env=self.api_key_env, cluster=self.serve_cluster)

    @property
    def knobs(self) -> Knobs:
        """The knobs among them by run-setting name (what ``settings.knob_values`` reads)."""
        return Knobs.of({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})


FLAT_REFS = {"workload_ref": "workload", "stack_ref": "stack", "driver_ref": "driver"}
"""The flat fields a spec document carried before ``CellSpec.refs``, and their names in ``Refs``."""


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """A spec document in the current form: a flat one (its references and folders as fields of their
    own, before ``refs`` and ``folders``) gets those records; one from before ``settings`` (its driver
    knobs as fields) gets the settings record its driver builds from those knobs, the knobs removed; a
    current one is copied. UserError when its driver reference names no driver (none: ``loadgen``, the
    only driver before there were several)."""
    document = dict(data)
    if "refs" not in document:
        document.setdefault(
            "driver_ref", registry.DRIVERS[registry.DEFAULT_DRIVER]
        )  # before drivers: LoadGen
        document["refs"] = {name: document.pop(flat) for flat, name in FLAT_REFS.items() if flat in document}
    if "folders" not in document:
        names = [f.name for f in dataclasses.fields(Folders)]
        document["folders"] = {name: document.pop(name) for name in names if name in document}
    if "settings" in document:
        return document
    names = [f.name for f in dataclasses.fields(FlatKnobs)]
    knobs = {name: document.pop(name) for name in names if name in document}
    lists = {name: tuple(value) for name, value in knobs.items() if isinstance(value, list)}
    flat = FlatKnobs(**{**knobs, **lists})
    driver = registry.driver_name(str(document["refs"]["driver"]))
    document["settings"] = settings.to_dict(settings.from_config(driver, flat))
    return document
