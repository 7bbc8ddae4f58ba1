"""The ``accelbench`` command line (typer + rich): run, list, show, export, hw, probe.

Bad input raises ``UserError`` anywhere below; the error boundary (``boundary``, entered by
``accelbench.cli.main``) turns it into one line on stderr and exit code 2.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from accelbench import registry, runner
from accelbench.cli import bundle as cli_bundle
from accelbench.cli import knob_options as cli_knobs
from accelbench.cli import listing as cli_list
from accelbench.cli import normalize as cli_normalize
from accelbench.cli import progress as cli_progress
from accelbench.cli import report as cli_report
from accelbench.cli import resume as cli_resume
from accelbench.cli import serving as cli_serving
from accelbench.cli import store as cli_store
from accelbench.cli import summary as cli_summary
from accelbench.cli import tune as cli_tune
from accelbench.cli.options import (
    ConfigOption,
    FleetOption,
    InputSeedOption,
    JsonOption,
    StoreOption,
    UnverifiedOption,
    VariantSeedOption,
    VariantsOption,
    chosen_run,
    chosen_store,
)
from accelbench.config import RunConfig, load_toml, suite, with_overrides, with_variant_seed
from accelbench.errors import UserError
from accelbench.hardware.detect import Machine, detect_machine, machine_to_dict
from accelbench.hardware.match import ChipMatch
from accelbench.inputs import MAX_PROBE_BUDGET_S, RANGES, check_names, positive_finite
from accelbench.meters.cost import user_rate
from accelbench.report import terminal
from accelbench.results import Result
from accelbench.store import Store

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="accelbench: a fair, open, hard-to-game benchmark for AI acceleration.",
)
console = Console(width=None if sys.stdout.isatty() else 180)  # pipes get full tables
err_console = Console(stderr=True)


def _names(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise UserError("an empty list was given")
    return check_names(names)


def run(
    suite_name: Annotated[
        str, typer.Option("--suite", help="default | llm | agentic | quick | tiny")
    ] = "default",
    workloads: Annotated[str | None, typer.Option(help="Comma-separated workload names.")] = None,
    stacks: Annotated[str | None, typer.Option(help="Comma-separated stack names, or all.")] = None,
    scenarios: Annotated[str | None, typer.Option(help="single-stream,offline,multi-stream,server")] = None,
    rules: Annotated[str | None, typer.Option(help="quick | standard | official")] = None,
    size: Annotated[str | None, typer.Option(help="tiny | standard")] = None,
    devices: Annotated[str | None, typer.Option(help="Comma-separated devices: cpu, cuda:0, ...")] = None,
    threads: Annotated[int | None, typer.Option(help="Threads per stack (default: usable CPUs).")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the models' weights.")] = None,
    input_seed: InputSeedOption = None,
    timeout_s: Annotated[float | None, typer.Option("--timeout-s", help="Wall-clock limit per cell.")] = None,
    config_file: ConfigOption = None,
    resume: Annotated[str | None, typer.Option(help="Finish an interrupted run.")] = None,
    variants: VariantsOption = None,
    variant_seed: VariantSeedOption = None,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Skip the roofline probes.")] = False,
    fleet: FleetOption = None,
    serve: cli_serving.ServeOption = None,
    serve_url: cli_serving.ServeUrlOption = None,
    serve_hardware: cli_serving.ServeHardwareOption = None,
    serve_cluster: cli_serving.ServeClusterOption = None,
    api_key_env: cli_serving.ApiKeyEnvOption = None,
    store_path: StoreOption = None,
    as_json: JsonOption = False,
    include_unverified: UnverifiedOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar or progress lines.")] = False,
    **knobs: Any,
) -> None:
    """Benchmark the suite on every available stack and print the results."""
    listed = {"workloads": workloads, "stacks": stacks, "scenarios": scenarios, "devices": devices}
    scalars = {"rules": rules, "size": size, "threads": threads, "seed": seed, "timeout_s": timeout_s}
    per_run = {"variants": variants, "variant_seed": variant_seed, "input_seed": input_seed}
    named = {k: _names(v) for k, v in listed.items()}
    served = cli_serving.served_settings(serve_url, serve_cluster, api_key_env, serve_hardware)
    drivers = cli_serving.session_loads(cli_knobs.parsed(knobs))  # the drivers' knobs (accelbench.knobs)
    given = _overrides({**named, **scalars, **per_run, **drivers, **served}, config_file)
    overrides = cli_serving.with_trace(given)
    chosen = suite(suite_name)
    llm = cli_serving.generative(overrides.get("workloads") or chosen.workloads)
    overrides = cli_serving.served_overrides(overrides, chosen.stacks, _names(serve) or (), llm)
    shown = cli_progress.chosen_mode(quiet or as_json), as_json, include_unverified
    _run_or_resume(chosen, overrides, resume, input_seed, not no_probe, fleet, store_path, shown)


app.command("run")(cli_knobs.with_knob_options(run, after="timeout_s"))


def _run_or_resume(
    chosen: RunConfig,
    overrides: dict[str, Any],
    resume: str | None,
    input_seed: int | None,
    probe: bool,
    fleet: str | None,
    store_path: Path | None,
    shown: tuple[cli_progress.Mode, bool, bool],
) -> None:
    """A new run of ``chosen`` with ``overrides`` (or the run ``resume`` finished) in the store, its results
    printed (``shown``: the progress mode, JSON, unverified cells too)."""
    mode, as_json, include_unverified = shown
    machine = detect_machine()
    with _fleet_executor(fleet) as executor, chosen_store(store_path) as store:
        if resume:  # the resumed run's inputs: --input-seed, else (None) a fresh seed
            config = with_overrides(
                cli_resume.stored_config(store, resume, machine), {"input_seed": input_seed}
            )
            if cli_resume.already_complete(store, resume, config, err_console):
                cli_summary.print_results(store, resume, as_json, include_unverified)
                return
        else:
            config = with_variant_seed(with_overrides(chosen, overrides))
        if executor is None:  # cells run here: their template imports while the run is planned
            runner.resolve_names(config)  # a refused name ends the run before the template starts
            runner.start_cells(config)
        run_id = resume or _start(store, config, machine, probe=probe and executor is None, mode=mode)
        results = _execute_with_progress(store, run_id, config, machine, mode, executor)
        cli_summary.print_results(store, run_id, as_json, include_unverified)
    if not results and not resume:
        raise UserError("the run planned no cells")


def _start(store: Store, config: RunConfig, machine: Machine, probe: bool, mode: cli_progress.Mode) -> str:
    """A new run of ``config`` in ``store`` (its names checked before anything is stored), with the
    roofline probes of this machine first when ``probe`` (not for a fleet: its nodes have their own)."""
    runner.plan(config)
    run_id = runner.start_run(store, config, machine)
    if probe:
        runner.cells_ready()  # the template's imports (``runner.start_cells``) end before the probes measure
        _probe(store.run_dir(run_id), config, machine, mode)
    return run_id


def _overrides(given: dict[str, Any], config_file: Path | None) -> dict[str, Any]:
    """The options given on the command line over the TOML file's; ``--stacks all`` expanded."""
    overrides = given
    if config_file:
        overrides = {**load_toml(config_file), **{k: v for k, v in given.items() if v is not None}}
    if overrides.get("stacks") in (("all",), ["all"]):
        overrides["stacks"] = registry.all_stack_names()
    return overrides


@contextlib.contextmanager
def _fleet_executor(address: str | None) -> Iterator[runner.Executor | None]:
    """The fleet's executor while the run lasts (None: run here); joining fails before anything is stored."""
    if address is None:
        yield None
        return
    from accelbench import fleet

    cluster = fleet.connect(address)
    try:
        yield fleet.FleetExecutor(cluster)
    finally:
        cluster.disconnect()


def _execute_with_progress(
    store: Store,
    run_id: str,
    config: RunConfig,
    machine: Machine,
    mode: cli_progress.Mode,
    executor: runner.Executor | None = None,
) -> list[Result]:
    total = runner.pending_count(store, run_id, config)
    with cli_progress.cell_progress(mode, err_console, run_id, total) as progress:
        try:
            done, started = progress.ended, progress.started
            return runner.execute(store, run_id, config, machine, done, executor, on_start=started)
        except KeyboardInterrupt:
            store.set_run_status(run_id, "interrupted")
            err_console.print(f"interrupted; finish with: accelbench run --resume {run_id}")
            raise typer.Exit(130) from None


def _probe(run_dir: Path, config: RunConfig, machine: Machine, mode: cli_progress.Mode) -> None:
    """Measure this machine's peaks (GEMM, bandwidth) once per run; kept in the run folder."""
    from accelbench.config import effective_threads
    from accelbench.probe.peaks_file import save_peaks
    from accelbench.probe.roofline import measure_peaks

    budget_s = 4.0 if config.size == "tiny" else 10.0  # the tiny suite is for quick checks
    with cli_progress.phase(mode, "measuring this machine's peaks (roofline probes; skip with --no-probe)"):
        peaks = measure_peaks(effective_threads(config), budget_s=budget_s, machine=machine)
    save_peaks(run_dir, peaks)


@app.command("list")
def list_entries(
    kind: Annotated[str, typer.Argument(help="workloads | stacks | scenarios")],
    as_json: JsonOption = False,
) -> None:
    """List workloads, stacks or scenarios, with availability and the reason when unavailable."""
    builders = {
        "workloads": cli_list.workload_rows,
        "stacks": cli_list.stack_rows,
        "scenarios": cli_list.scenario_rows,
    }
    if kind not in builders:
        raise UserError(f"unknown list {kind}; use one of: {', '.join(builders)}")
    rows = builders[kind]()
    if as_json:
        terminal.print_json(rows)
    else:
        console.print(terminal.availability_table(kind, rows))


@app.command()
def show(
    run_id: Annotated[str | None, typer.Argument(help="Run id (default: the latest run).")] = None,
    store_path: StoreOption = None,
    as_json: JsonOption = False,
    include_unverified: UnverifiedOption = False,
    price_per_hour: Annotated[
        float | None,
        typer.Option("--price-per-hour", help="USD per hour of the serving machine: $ per M output tokens."),
    ] = None,
) -> None:
    """Show the results of a run: the leaderboard of verified cells, then the unverified ones apart."""
    if price_per_hour is not None:
        positive_finite("--price-per-hour", price_per_hour)
    rate = user_rate(price_per_hour) if price_per_hour is not None else None
    with chosen_store(store_path, read_only=True) as store:
        chosen = chosen_run(store, run_id)
        cli_summary.print_results(store, chosen, as_json, include_unverified, rate)


@app.command()
def hw(as_json: JsonOption = False) -> None:
    """Show what was detected about this machine."""
    from accelbench.hardware.match import match_machine

    machine = detect_machine()
    match = match_machine(machine)
    if match.count_high is not None:  # what a run's figures use is decided by its measured GEMM peak
        counts = f"{match.count:.3g} or {match.count_high:.3g} chips"
        decided = "decided by its measured GEMM peak (whole cores or SMT siblings)"
        note = f"a run counts {counts}, {decided}: its '% datasheet' caption says which"
        match = dataclasses.replace(match, notes=(*match.notes, note))
    document = {**machine_to_dict(machine), "fingerprint": machine.fingerprint}
    if as_json:
        terminal.print_json({**document, "chip": _chip_document(match)})
    else:
        console.print(terminal.machine_table(document, match))


def _chip_document(match: ChipMatch) -> dict[str, Any]:
    """The ``chip`` of ``hw --json``: the matched chip, its basis, the chips counted and the notes."""
    return {
        "key": match.chip.key if match.chip else None,
        "basis": match.basis,
        "count": match.count,
        "count_high": match.count_high,
        "count_basis": match.count_basis,
        "notes": list(match.notes),
    }


@app.command()
def probe(
    threads: Annotated[int | None, typer.Option(help="Threads (default: usable CPUs).")] = None,
    budget_s: Annotated[
        float | None, typer.Option("--budget-s", help="Seconds of measurement (default 10).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Measure this machine's peak GEMM FLOP/s and memory bandwidth, each next to the best library's."""
    from accelbench.probe.roofline import DEFAULT_BUDGET_S, measure_peaks  # imports torch
    from accelbench.report import roofline as roofline_report

    chosen = threads if threads is not None else len(os.sched_getaffinity(0))
    budget = DEFAULT_BUDGET_S if budget_s is None else budget_s
    if not 1 <= chosen <= RANGES["threads"][1]:
        raise UserError(f"--threads must be from 1 to {RANGES['threads'][1]:g}, got {chosen}")
    positive_finite("--budget-s", budget, MAX_PROBE_BUDGET_S)
    peaks = measure_peaks(chosen, budget)
    if as_json:
        terminal.print_json(peaks.to_dict())
        return
    console.print(roofline_report.peaks_table(peaks))
    console.print(roofline_report.measurements_table(peaks))
    console.print(roofline_report.libraries_table(peaks))
    for line in peaks.warnings:
        console.print(f"[yellow]warning[/] {line}")


cli_normalize.register(app)  # explain, history, import-mlperf
cli_tune.register(app)  # tune
cli_report.register(app)  # report, export
cli_store.register(app)  # store check
cli_bundle.register(app)  # bundle, verify
