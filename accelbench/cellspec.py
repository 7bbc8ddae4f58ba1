"""The cell's records: a ``PlannedCell`` (what the runner plans) and the ``CellSpec`` its process gets.

The parent (``accelbench.cell.pipeline``) writes a ``CellSpec`` as JSON (without its input seed, which
the cell process gets through the fork's arguments: ``accelbench.cell.isolation``), starts the cell
process and reads back the child's outcome document from ``result_path``. References (``module:Class``)
are resolved by the parent, so the child imports exactly what was planned, plugins and planted test
stacks included. The spec is the common head every driver reads plus the driver's own settings record
(``accelbench.settings``), built by the parent from the run's ``RunConfig``; a ``spec.json`` written
before that record (its knobs as flat fields) reads through ``upgrade``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench import registry, settings
from accelbench.results import Cell
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
class CellSpec:
    """Everything a cell process needs to measure one cell."""

    run_id: str
    cell: Cell
    workload_ref: str
    stack_ref: str
    driver_ref: str
    """The driver the cell process calls (``PlannedCell.driver_ref``)."""
    rules: str
    threads: int
    seed: int
    """Seed of the model's weights (``ModelSpec.seed``: a stack may see it)."""
    input_seed: int
    """Seed of every input the cell times or audits (``accelbench.cell.seeds``); never written to the
    cell's folder nor handed to a stack (``public_dict``)."""
    samples: int
    cell_dir: str
    """Private folder of this cell (LoadGen logs, stderr); relative paths are stored against run_dir."""
    run_dir: str
    cache_dir: str
    result_path: str
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
    store_cache_dir: str = ""
    """The results store's cache folder, kept across runs (the LLM models and their conversions); empty:
    ``cache_dir``."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (in memory and pipes only: it holds the input seed); the settings are
        tagged by their driver's name (``accelbench.settings.to_dict``)."""
        document = {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {
            **document,
            "cell": dataclasses.asdict(self.cell),
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
        document from before the settings record (``upgrade``) is read too."""
        fields = upgrade(data)
        if input_seed is not None:
            fields["input_seed"] = input_seed
        fields["cell"] = Cell(**fields["cell"])
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


def upgrade(data: Mapping[str, Any]) -> dict[str, Any]:
    """A spec document in the current form: a flat one (its driver knobs as fields of their own, before
    ``settings``) gets the settings record its driver builds from those knobs, the knobs removed; a
    current one is copied. UserError when its ``driver_ref`` names no driver (none: ``loadgen``, the
    only driver before there were several)."""
    document = dict(data)
    if "settings" in document:
        return document
    names = [f.name for f in dataclasses.fields(FlatKnobs)]
    knobs = {name: document.pop(name) for name in names if name in document}
    lists = {name: tuple(value) for name, value in knobs.items() if isinstance(value, list)}
    flat = FlatKnobs(**{**knobs, **lists})
    document.setdefault("driver_ref", registry.DRIVERS[registry.DEFAULT_DRIVER])  # before drivers: LoadGen
    driver = registry.driver_name(str(document["driver_ref"]))
    document["settings"] = settings.to_dict(settings.from_config(driver, flat))
    return document
