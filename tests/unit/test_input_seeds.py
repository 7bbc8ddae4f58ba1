"""Secret input seeds: no stack-visible field lets a stack regenerate the inputs a cell times or audits.

The seed oracle of the planted cheaters (``tests.e2e.planted.oracle_table``) regenerates every sample it
can from the integers of ``ModelSpec``, ``CellContext``, the spec file in the cell's folder and the run
id; under the old layout (weights seed = input seed, fixed index ranges) it recognised every timed
input, now it must recognise none.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from accelbench import registry, runner, variants
from accelbench.audits.feed import AuditFeed
from accelbench.cell import pipeline, seeds, trial
from accelbench.cell.pipeline import now, result_of
from accelbench.cell.samples import SampleSets
from accelbench.cellspec import CellSpec, PlannedCell
from accelbench.config import RunConfig
from accelbench.errors import UserError
from accelbench.hardware.detect import detect_machine
from accelbench.outcome import Outcome
from accelbench.results import Cell, Result
from accelbench.scenarios.rules import get_rules
from accelbench.store import Store, open_store
from accelbench.sut import host
from tests.e2e.planted import _key, oracle_table

CELL = Cell("resnet50", "torch-eager", "single-stream", "cpu", "tiny")


def _spec(tmp_path: Path, run_seed: int, cell: Cell = CELL) -> CellSpec:
    config = RunConfig(
        "tiny", ("resnet50",), ("torch-eager",), ("single-stream",), "tiny", "quick", input_seed=run_seed
    )
    planned = PlannedCell(
        cell,
        registry.table("workload")["resnet50"],
        registry.table("stack")["torch-eager"],
        registry.DRIVERS["loadgen"],
    )
    return pipeline.cell_spec("20261204-080000-abcd", config, planned, tmp_path)


def _visible(spec: CellSpec) -> tuple[object, object]:
    """What the stack is handed (``ModelSpec``, ``CellContext``), with the spec file in its folder."""
    Path(spec.folders.cell_dir).mkdir(parents=True, exist_ok=True)
    (Path(spec.folders.cell_dir) / "spec.json").write_text(json.dumps(spec.public_dict()))
    workload = registry.instantiate(spec.refs.workload)
    example = variants.make_sample(workload, "tiny", spec.seed, 0, None)
    request = trial._prepare_request(spec, workload, 1)
    return host.model_spec_of(request, example), host.context_of(request)


def test_a_stack_that_regenerates_inputs_from_every_field_it_sees_finds_no_match(tmp_path: Path) -> None:
    spec = _spec(tmp_path, run_seed=12345)
    model_spec, context = _visible(spec)
    table = oracle_table(model_spec, context)  # type: ignore[arg-type]
    workload = registry.instantiate(spec.refs.workload)
    old_layout = [variants.make_sample(workload, "tiny", spec.seed, i, None) for i in range(1032)]
    assert all(_key(x) in table for x in old_layout)  # the oracle works: it beat the old layout
    sets = SampleSets(workload, spec, None, (0, 0))
    feed: AuditFeed = sets.feed(get_rules("quick"), 1)
    audited = [*feed.groups.hot, *[feed.make_audit_sample(k) for k in range(64)]]
    drawn = [*sets.timed, *sets.calibration, *sets.example(1), *audited, *sets.alternate(13)]
    assert len(drawn) > 1100 and not [x for x in drawn if _key(x) in table]


def test_the_spec_file_holds_no_input_seed_and_the_seed_is_passed_apart(tmp_path: Path) -> None:
    spec = _spec(tmp_path, run_seed=7)
    public = spec.public_dict()
    assert "input_seed" not in public and str(spec.input_seed) not in json.dumps(public)
    assert CellSpec.from_dict(public, input_seed=spec.input_seed) == spec


def test_each_cell_and_each_trial_draws_inputs_of_its_own(tmp_path: Path) -> None:
    first, again = _spec(tmp_path, 99), _spec(tmp_path, 99)
    other_cell = _spec(tmp_path, 99, Cell("resnet50", "onnxruntime", "single-stream", "cpu", "tiny"))
    other_run = _spec(tmp_path, 100)
    assert first.input_seed == again.input_seed  # --input-seed replays
    assert len({first.input_seed, other_cell.input_seed, other_run.input_seed, 99}) == 4
    workload = registry.instantiate(first.refs.workload)
    trial0, trial1 = SampleSets(workload, first, None, (0, 0)), SampleSets(workload, first, None, (0, 1))
    keys0 = {_key(x) for x in trial0.timed[:64]}
    assert not keys0 & {_key(x) for x in trial1.timed[:64]}
    assert not keys0 & {_key(x) for x in SampleSets(workload, other_cell, None, (0, 0)).timed[:64]}
    assert not keys0 & {_key(x) for x in trial0.example(4)}


@pytest.mark.parametrize("bad", [-1, 1 << 63, "7", 1.5, True])
def test_a_bad_input_seed_is_a_one_line_user_error(bad: object) -> None:
    with pytest.raises(UserError, match="input seed must be a whole number"):
        seeds.checked(bad)


def test_the_cell_seed_is_a_keyed_hash_of_the_cell_key() -> None:
    assert seeds.cell_seed(1, "a") != seeds.cell_seed(2, "a") != seeds.cell_seed(1, "b")
    assert 0 <= seeds.cell_seed((1 << 63) - 1, "a") < 1 << 63


@dataclasses.dataclass
class _Peeking:
    """An executor that looks at the store while the cells run, as a stack could (the store's folder is
    reachable through ``store_cache_dir``)."""

    store: Store
    seen: list[object] = dataclasses.field(default_factory=list)
    spans_machines: bool = False

    def results(self, run_id: str, config: RunConfig, pending: list[PlannedCell]) -> Iterator[Result]:
        for planned in pending:
            self.seen.append((config.input_seed, self.store.run(run_id).config.get("input_seed")))
            yield result_of(run_id, planned, Outcome.failed("unavailable", "x"), FINGERPRINT, now(), 0, "")


FINGERPRINT = detect_machine(probe_gpus=False).fingerprint


@pytest.mark.parametrize("given", [None, 424242])
def test_the_run_seed_reaches_the_store_only_when_the_run_ended(tmp_path: Path, given: int | None) -> None:
    here = detect_machine(probe_gpus=False)
    config = RunConfig(
        "tiny", ("resnet50",), ("null",), ("single-stream",), "tiny", "quick", input_seed=given
    )
    with open_store(tmp_path / "store") as store:
        run_id = runner.start_run(store, config, here)
        peeking = _Peeking(store)
        runner.execute(store, run_id, config, here, executor=peeking)
        stored = store.run(run_id).config["input_seed"]
        resumed = runner.resume_config(store, run_id, here)
    ((handed, on_disk),) = peeking.seen
    assert on_disk is None and isinstance(handed, int) and stored == handed
    assert handed == given if given is not None else 0 <= handed < 1 << 63
    assert resumed.input_seed is None  # the rest of a resumed run draws a fresh one
