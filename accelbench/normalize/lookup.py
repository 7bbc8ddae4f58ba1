"""Resolve what the normalization commands name: subject ids, history rows with figures, the store folder.

A subject id is either an MLPerf history entry id (``v0.5/nvidia/dgx1_multi_ngc18.11_mxnet``; see
``accelbench.mlperf.history``) or a local result id ``RUN_ID/CELL_KEY``, e.g.
``20261130-1512-ab12/resnet50/tiny/canonical/torch-eager/cpu/offline`` (run ids contain no ``/``).
Prefix ``mlperf:`` or ``local:`` to say which; without one, an id found in both is refused as ambiguous.
This module reads the store and files; ``accelbench.normalize`` stays pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from accelbench.errors import UserError
from accelbench.hardware.chips import ChipTable
from accelbench.hardware.detect import machine_from_dict
from accelbench.hardware.match import ChipMatch, match_device
from accelbench.mlperf.history import History, HistoryEntry
from accelbench.mlperf.importer import load_history
from accelbench.normalize.factors import Figure, figures
from accelbench.normalize.subjects import Subject, from_history, from_result
from accelbench.results import Result
from accelbench.store import open_store
from accelbench.store.sqlite import DB_NAME


def subject(text: str, folder: Path, chips: ChipTable) -> Subject:
    """The subject an id names (an MLPerf entry or a local result); UserError when unknown or ambiguous."""
    kind, _, rest = text.partition(":")
    if kind in ("mlperf", "local") and rest:
        return _mlperf(rest, folder, chips) if kind == "mlperf" else _local(rest, folder, chips)
    entry = load_history(folder).get(text)
    local = _local_exists(text, folder)
    if entry is not None and local:
        raise UserError(
            f"{text!r} is both an MLPerf entry and a local result; prefix it with mlperf: or local:"
        )
    if entry is not None:
        return from_history(entry, chips)
    if local:
        return _local(text, folder, chips)
    try:
        return from_history(load_history(folder).require(text), chips)
    except UserError as err:
        raise UserError(f"{err}; nor is it a local result RUN_ID/CELL_KEY in the store {folder}") from None


def history_rows(
    folder: Path, chips: ChipTable, benchmark: str
) -> list[tuple[HistoryEntry, tuple[Figure, ...]]]:
    """Every history entry of a benchmark (bundled + imported) with its normalized figures."""
    history: History = load_history(folder)
    rows = []
    for entry in history:
        if entry.benchmark != benchmark:
            continue
        found = figures(from_history(entry, chips)) if entry.time_s is not None else ()
        rows.append((entry, found))
    if not rows:
        raise UserError(f"no MLPerf history for benchmark {benchmark!r} (known: resnet)")
    return rows


def result_figures(
    result: Result, machine_document: Mapping[str, Any], chips: ChipTable, match: ChipMatch | None = None
) -> tuple[Figure, ...]:
    """Normalized figures of one stored result (for ``show --json``); () without a measured throughput.

    ``match``: the chip already matched (and its count narrowed by a measured peak); else matched here.
    """
    if result.head.status != "ok" or not result.qps:
        return ()
    if match is None:
        try:
            machine = machine_from_dict(machine_of(result, machine_document))
        except (ValueError, TypeError, KeyError):
            return ()
        match = match_device(machine, result.cell.device, chips)
    return figures(from_result(f"{result.run_id}/{result.cell.key}", result, match))


def machine_of(result: Result, run_machine: Mapping[str, Any]) -> Mapping[str, Any]:
    """The machine record of the machine that measured ``result``: the fleet node's own record when the
    result came from a fleet (``settings.fleet_node.machine``), else the run's machine."""
    node_machine = result.node_machine
    return dict(node_machine) if node_machine is not None else run_machine


def _mlperf(entry_id: str, folder: Path, chips: ChipTable) -> Subject:
    return from_history(load_history(folder).require(entry_id), chips)


def _local_exists(text: str, folder: Path) -> bool:
    run_id, _, cell_key = text.partition("/")
    if not cell_key or not (folder / DB_NAME).exists():
        return False
    with open_store(folder, read_only=True) as store:
        return run_id in store.run_ids() and cell_key in store.finished_cell_keys(run_id)


def _local(text: str, folder: Path, chips: ChipTable) -> Subject:
    run_id, _, cell_key = text.partition("/")
    if not cell_key:
        raise UserError(f"local result id {text!r} is not RUN_ID/CELL_KEY")
    if not (folder / DB_NAME).exists():
        raise UserError(f"no result store at {folder} (choose one with --store)")
    with open_store(folder, read_only=True) as store:
        run = store.run(run_id)
        result = next((r for r in store.results(run_id) if r.cell.key == cell_key), None)
    if result is None:
        raise UserError(f"run {run_id} has no result for cell {cell_key!r}")
    try:
        machine = machine_from_dict(machine_of(result, run.machine))
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"run {run_id}: the stored machine cannot be read ({exc})") from None
    return from_result(text, result, match_device(machine, result.cell.device, chips))
