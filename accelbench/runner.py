"""Plan the cells of a run, execute each in its own process, store each result as it finishes, resume.

The runner owns the order of work: one cell at a time (the machine is shared; parallel cells would time
each other), stacks that are unavailable here are recorded without starting a process, and one failing
cell never stops the run. ``--resume RUN_ID`` replays the stored configuration and skips finished cells.

The run's input seed (``accelbench.cell.seeds``) is drawn when the cells start, unless the configuration
carries one (``--input-seed``), and stored with the run's configuration only when they stopped: a stack
can read the store's folder, so the seed is on disk only once no cell of the run is measuring. A resumed
run draws a fresh one (the interrupted part's seed was stored), and each result keeps its own cell's.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from accelbench import registry
from accelbench.cell import isolation, seeds
from accelbench.cell.pipeline import run_cell
from accelbench.cellspec import PlannedCell
from accelbench.config import RunConfig
from accelbench.errors import UserError
from accelbench.generation import workload as generation_workload
from accelbench.hardware.detect import Machine, machine_to_dict
from accelbench.meters import reference_probe
from accelbench.probe.peaks_file import run_fp32_peak
from accelbench.results import Cell, Result
from accelbench.scenarios.rules import LOADGEN_SCENARIOS
from accelbench.store import Store

log = logging.getLogger(__name__)

_DEVICE = re.compile(r"^(cpu|cuda:\d+)$")


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def plan(config: RunConfig) -> list[PlannedCell]:
    """Every (workload, stack, device, scenario) cell of the configuration, names resolved.

    Each workload declares its driver (``accelbench.registry.DRIVERS``) and its scenarios; the driver's
    plan (``PLANS``) picks its stacks. With ``config.variants`` = N each canonical cell of the ``loadgen``
    driver is followed by its N variant cells (not for stacks that do not compute, such as the null stack:
    their time does not depend on the model). A generative workload (driver ``tokens``) runs on the
    generating stacks among ``config.generation_stacks`` (or ``config.stacks``), in its scenarios among
    ``config.generation_scenarios`` (or ``config.scenarios``), canonical only. A workload without a cell is
    left out (a training workload outside train-to-quality, an LLM without a generating stack); a plan
    without any cell is a UserError.
    """
    workloads = resolve_names(config)
    cells: list[PlannedCell] = []
    declared = {name: _declared(ref) for name, ref in workloads.items()}
    for name, ref in workloads.items():
        cells += PLANS.get(declared[name].driver, _inference_cells)(config, name, ref, declared[name])
    if not cells:
        why = "; ".join(f"{name}: {_why_none(config, d)}" for name, d in declared.items())
        raise UserError(f"no cell to run ({why})")
    return cells


def resolve_names(config: RunConfig) -> dict[str, str]:
    """The workloads of ``config`` by name (their references), once every workload, stack and device
    name is known: an unknown one is a UserError. Nothing is imported: the CLI checks the names before it
    starts the cell template, whose imports a refused run would otherwise wait for."""
    workloads = registry.resolve("workload", config.workloads)
    registry.resolve_any_stack(config.stacks + config.generation_stacks)
    bad = [d for d in config.devices if not _DEVICE.match(d)]
    if bad:
        raise UserError(f"unknown device {', '.join(bad)}; use cpu or cuda:N")
    return workloads


@dataclass(frozen=True, slots=True)
class Declared:
    """What a workload declares of its cells: its driver (name and reference) and its scenarios."""

    driver: str
    driver_ref: str
    scenarios: tuple[str, ...]


def _declared(workload_ref: str) -> Declared:
    driver = registry.driver_of(workload_ref)
    try:
        scenarios = tuple(registry.instantiate(workload_ref).scenarios)
    except Exception:  # a workload that does not load is recorded per cell, in the LoadGen scenarios
        scenarios = LOADGEN_SCENARIOS
    return Declared(driver, registry.table("driver")[driver], scenarios)


def _inference_cells(
    config: RunConfig, workload: str, workload_ref: str, declared: Declared
) -> list[PlannedCell]:
    stacks = {name: ref for name, ref in registry.table("stack").items() if name in config.stacks}
    cells = _cells(
        config,
        workload,
        declared,
        stacks=[stack for stack in config.stacks if stack in stacks],
        scenarios=lambda stack: config.scenarios,
        variants=lambda stack: _variants(config, stacks[stack]),
    )
    return [
        PlannedCell(cell, workload_ref, stacks[cell.stack], _driver_ref(declared, stacks[cell.stack]))
        for cell in cells
    ]


def _generative_cells(
    config: RunConfig, workload: str, workload_ref: str, declared: Declared
) -> list[PlannedCell]:
    scenarios = config.generation_scenarios or config.scenarios
    generating = {**registry.table("generating stack"), **registry.table("endpoint stack")}
    cells = _cells(
        config,
        workload,
        declared,
        stacks=[stack for stack in config.generation_stacks or config.stacks if stack in generating],
        scenarios=lambda stack: _scenarios_of(stack, scenarios),
        variants=lambda stack: ("canonical",),
    )
    return [
        PlannedCell(
            cell,
            workload_ref,
            generating[cell.stack],
            _sessions_or(config, generating[cell.stack], _driver_ref(declared, generating[cell.stack])),
        )
        for cell in cells
    ]


def _cells(
    config: RunConfig,
    workload: str,
    declared: Declared,
    *,
    stacks: Sequence[str],
    scenarios: Callable[[str], Sequence[str]],
    variants: Callable[[str], Sequence[str]],
) -> Iterator[Cell]:
    """The cells of ``workload`` at the run's size, one by one: each of ``stacks`` on each device, in each of
    its ``scenarios`` that the workload declares, for each of its ``variants``."""
    return (
        Cell(
            workload=workload,
            stack=stack,
            scenario=scenario,
            device=device,
            size=config.size,
            variant=variant,
        )
        for stack in stacks
        for device in config.devices
        for scenario in scenarios(stack)
        if scenario in declared.scenarios
        for variant in variants(stack)
    )


def _scenarios_of(stack: str, scenarios: tuple[str, ...]) -> list[str]:
    """The generative scenarios a stack runs: an endpoint stack (``llm@...``) measures its whole curve
    once, under the first of them."""
    known = [s for s in scenarios if s in generation_workload.SCENARIOS]
    return known[:1] if stack.startswith("llm@") else known


def _sessions_or(config: RunConfig, stack_ref: str, driver_ref: str) -> str:
    """The sessions driver for an endpoint stack's cell when the run asks for sessions (``--sessions``:
    agentic multi-turn sessions instead of the curve, ``accelbench.sessions``; or ``--session-rate``), else
    ``driver_ref``."""
    loads = config.knobs["sessions"] or config.knobs["session_rates"]
    if loads and registry.stack_driver(stack_ref) == "endpoint":
        return registry.resolve("driver", ("sessions",))["sessions"]
    return driver_ref


def _driver_ref(declared: Declared, stack_ref: str) -> str:
    """The driver of a (workload, stack) cell: the stack's own when it names one, else the workload's."""
    name = registry.stack_driver(stack_ref)
    return registry.resolve("driver", (name,))[name] if name else declared.driver_ref


PLANS: Mapping[str, Callable[[RunConfig, str, str, Declared], list[PlannedCell]]] = {
    "loadgen": _inference_cells,
    "train-to-quality": _inference_cells,
    "tokens": _generative_cells,
}
"""How each driver's cells are planned (a driver not listed: as ``loadgen``'s, on the inference stacks)."""


def _why_none(config: RunConfig, declared: Declared) -> str:
    if declared.driver == "tokens":
        stacks = ", ".join(config.generation_stacks or config.stacks)
        scenarios = ", ".join(config.generation_scenarios or config.scenarios)
        return (
            f"it runs on generating stacks ({', '.join(registry.table('generating stack'))}) in "
            f"{', '.join(declared.scenarios)}; asked: stacks {stacks}, scenarios {scenarios}"
        )
    return f"none of the stacks {', '.join(config.stacks)} runs it in {', '.join(config.scenarios)}"


def _variants(config: RunConfig, stack_ref: str) -> tuple[str, ...]:
    """``canonical`` then the run's variant names (none for a stack that does not compute)."""
    from accelbench import variants

    if not config.variants:
        return (variants.CANONICAL,)
    if config.variant_seed is None:
        raise UserError("a run with variants needs a variant seed (accelbench.config.with_variant_seed)")
    if not registry.is_builtin(stack_ref):  # never imported in the runner, which holds the run's seed
        computes = registry.plugin_declarations(stack_ref)[1]
    else:
        try:
            computes = bool(registry.instantiate(stack_ref).computes)
        except Exception:  # a stack that does not load is recorded unavailable, once per cell
            computes = True
    names = variants.variant_names(config.variant_seed, config.variants) if computes else ()
    return (variants.CANONICAL, *names)


def start_cells(config: RunConfig) -> None:
    """Start the cell template (``accelbench.cell.isolation``) with the modules of ``config``'s workloads
    and stacks and every driver, named in the registry's tables (no workload imported here: planning
    imports them meanwhile; accelbench's own stack classes are, to ask whether one reads the ONNX file),
    and the ONNX exporter's modules when one does.
    The local executor waits for it (``isolation.ready``) before its first measurement."""
    names = {*config.workloads, *config.stacks, *config.generation_stacks}
    kinds = ("workload", "stack", "generating stack", "endpoint stack")  # a name may be in several
    refs = [ref for kind in kinds for name, ref in registry.table(kind).items() if name in names]
    stacks = [ref for name, ref in registry.table("stack").items() if name in names]
    isolation.start_template([*refs, *registry.DRIVERS.values()], exporter=_reads_onnx(stacks))


def reads_onnx(stack_ref: str) -> bool | None:
    """Whether the stack ``stack_ref`` runs the model's ONNX file as it is (``Stack.reads_onnx``, asked of
    its class); None when its module does not load (its cells record why when they run)."""
    try:
        return bool(registry.load(stack_ref).reads_onnx)
    except Exception:
        return None


def _reads_onnx(stack_refs: list[str]) -> bool:
    """Whether one of accelbench's own stacks among ``stack_refs`` reads the model's ONNX file (its
    module is light; a plugin's is never imported here: its import-time code runs in its cells only)."""
    return any(reads_onnx(ref) for ref in stack_refs if ref.startswith(isolation.PRELOAD_PREFIX))


def cells_ready() -> None:
    """Wait until the cell template started by ``start_cells`` has imported its modules, so that none
    of its imports runs beside what is measured next (the roofline probes, the host's noise floor)."""
    isolation.ready()


def start_run(store: Store, config: RunConfig, machine: Machine) -> str:
    """Register a new run in the store and return its id (the input seed is stored when the run ends)."""
    run_id = new_run_id()
    stored = dataclasses.replace(config, input_seed=None).to_dict()
    store.create_run(run_id, stored, machine_to_dict(machine), machine.fingerprint)
    return run_id


def resume_config(store: Store, run_id: str, machine: Machine) -> RunConfig:
    """The stored configuration of ``run_id`` without its input seed (the stored one was readable on disk:
    the rest of the run draws a fresh one); refuses to resume on another machine."""
    record = store.run(run_id)
    if record.machine_fingerprint != machine.fingerprint:
        raise UserError(f"run {run_id} was made on another machine ({record.machine_fingerprint})")
    return dataclasses.replace(RunConfig.from_dict(record.config), input_seed=None)


class Executor(Protocol):
    """Runs planned cells somewhere and yields each result as it finishes (in any order)."""

    @property
    def spans_machines(self) -> bool:
        """The results come from other machines than this one (a fleet's nodes), each stamped with the
        fingerprint of the machine that measured it."""
        ...

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        """Results of ``pending``, one per cell; the caller stores each as it arrives."""
        ...


@dataclass(frozen=True, slots=True)
class LocalExecutor:
    """The default: one cell at a time on this machine, each in its own process."""

    store: Store
    machine: Machine
    spans_machines: bool = False
    on_start: Callable[[PlannedCell], None] = lambda planned: None
    """Called as each cell starts (progress lines); a fleet's executor has no such moment here."""

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        """Run the cells in plan order, one after the other, after taking the run's noise floor here
        (measured, or an earlier run's on this host reused once fresh pairs agree:
        ``reference_probe.host_floor``), handed to every cell in its spec."""
        isolation.preload(ref for p in pending for ref in (p.workload_ref, p.stack_ref, p.driver_ref))
        if pending:
            isolation.ready()  # the template's imports (started with ``start_cells``) end before the floor
        floor = reference_probe.host_floor(reference_probe.user_cache()) if pending else None
        peak = run_fp32_peak(self.store.run_dir(run_id)) if pending else None  # read before any cell runs
        for planned in pending:
            self.on_start(planned)
            run_dir = self.store.run_dir(run_id).resolve()
            fingerprint = self.machine.fingerprint
            yield run_cell(
                planned,
                run_id,
                config,
                run_dir,
                fingerprint,
                noise_floor=floor,
                measured_fp32_flops_per_s=peak,
            )


def execute(
    store: Store,
    run_id: str,
    config: RunConfig,
    machine: Machine,
    on_result: Callable[[Result], None] = lambda result: None,
    executor: Executor | None = None,
    on_start: Callable[[PlannedCell], None] = lambda planned: None,
) -> list[Result]:
    """Run the planned cells not yet finished in ``run_id``; return the new results.

    ``executor`` decides where cells run (default: ``LocalExecutor``, sequentially on this machine;
    ``accelbench.fleet.FleetExecutor`` spreads them over a Ray cluster). Each result is stored as soon
    as it arrives, so an interruption loses nothing already finished. ``on_start`` is called as each
    cell starts here (the local executor only: a fleet's cells start on its nodes). The run's input
    seed (``config.input_seed``, else a fresh one) is stored once the cells stopped, however they stopped.
    """
    done = store.finished_cell_keys(run_id)
    pending = [p for p in plan(config) if p.cell.key not in done]
    if config.input_seed is None:
        config = dataclasses.replace(config, input_seed=seeds.draw())
    store.set_run_status(run_id, "running")
    chosen = executor if executor is not None else LocalExecutor(store, machine, on_start=on_start)
    stream = chosen.results(run_id, config, pending)
    results = []
    try:
        for result in stream:
            store.add_result(result, any_machine=chosen.spans_machines)
            results.append(result)
            on_result(result)
    finally:  # an interruption closes the executor now (a fleet cancels its queued cells)
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        store.set_run_config(run_id, config.to_dict())
    store.set_run_status(run_id, "complete")
    return results


def pending_count(store: Store, run_id: str, config: RunConfig) -> int:
    """How many planned cells of ``run_id`` have no result yet."""
    done = store.finished_cell_keys(run_id)
    return sum(1 for p in plan(config) if p.cell.key not in done)
