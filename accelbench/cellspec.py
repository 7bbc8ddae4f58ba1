"""The cell's records: a ``PlannedCell`` (what the runner plans) and the ``CellSpec`` its process gets.

The parent (``accelbench.cell.pipeline``) writes a ``CellSpec`` as JSON (without its input seed, which
the cell process gets through the fork's arguments: ``accelbench.cell.isolation``), starts the cell
process and reads back the child's outcome document from ``result_path``. References (``module:Class``)
are resolved by the parent, so the child imports exactly what was planned, plugins and planted test
stacks included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accelbench.results import Cell


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
    runs: int = 5
    """Timed runs of a ``train-to-quality`` cell."""
    nproc: int = 1
    """Data-parallel processes of a ``train-to-quality`` cell."""
    batch: int | None = None
    """Samples per call of offline and multi-stream cells; None: the stack's default."""
    batch_sweep: tuple[int, ...] = ()
    """Batch sizes to sweep before the scored trials (offline, multi-stream); the best verified runs."""
    serve_url: str | None = None
    """The remote v2 server of the ``<stack>@url`` stacks (``--serve-url``), else None."""
    serve_cluster: str | None = None
    """The Ray cluster of the Ray Serve stacks (``--serve-cluster``), else None (a local Ray)."""
    concurrency: tuple[int, ...] = ()
    """Endpoint cells (``accelbench.endpoint``): the concurrencies of the curve (empty: automatic)."""
    endpoint_requests: int = 0
    """Endpoint cells: requests per point at least (0: max(10, 2 x concurrency))."""
    output_tokens: int = 0
    """Endpoint cells: tokens per reply (0: ``accelbench.endpoint.cell.DEFAULT_OUTPUT_TOKENS``)."""
    api_key_env: str = ""
    """Endpoint cells: the environment variable holding the API key (empty: ``ACCELBENCH_API_KEY``)."""
    endpoint_api: str = ""
    """Endpoint cells: ``chat`` or ``completions`` (empty: ``chat``)."""
    arrivals: str = ""
    """Endpoint cells: ``poisson`` also searches the max QPS under Poisson arrivals (empty: the curve)."""
    sessions: tuple[int, ...] = ()
    """Endpoint cells: the session ladder (``accelbench.sessions``); empty: the curve."""
    session_turns: int = 0
    """Sessions cells: turns per session (0: ``accelbench.sessions.cell.DEFAULT_TURNS``)."""
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
        """Plain JSON-able form (in memory and pipes only: it holds the input seed)."""
        return dataclasses.asdict(self)

    def public_dict(self) -> dict[str, Any]:
        """``to_dict`` without the input seed: the form that may be written to the cell's folder."""
        document = self.to_dict()
        del document["input_seed"]
        return document

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], input_seed: int | None = None) -> CellSpec:
        """Inverse of ``to_dict``; of ``public_dict`` with the ``input_seed`` passed apart."""
        fields = dict(data)
        if input_seed is not None:
            fields["input_seed"] = input_seed
        fields["cell"] = Cell(**fields["cell"])
        fields["batch_sweep"] = tuple(fields.get("batch_sweep", ()))
        fields["concurrency"] = tuple(fields.get("concurrency", ()))
        fields["sessions"] = tuple(fields.get("sessions", ()))
        return cls(**fields)
