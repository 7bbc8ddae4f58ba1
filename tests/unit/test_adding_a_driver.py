"""A new cell driver takes the places ``docs/adding-a-driver.md`` counts, and no other: checked by adding one.

``tests.unit.example_driver`` is what a developer writes (its settings record with a knob, its function and
body, and a workload that names it); the fixture adds its three rows to ``accelbench.registry``. From there
on the harness's own code does the rest: the ``run`` option of its knob, the planner's choice of the driver,
the settings across the process boundary, the typed outcome, the stored result and the leaderboard's rule.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from accelbench import registry, runner, stored
from accelbench.cell import pipeline, process
from accelbench.cellspec import CellSpec
from accelbench.cli import knob_options
from accelbench.config import RunConfig, with_overrides
from accelbench.errors import UserError
from accelbench.normalize import ranking
from accelbench.outcome import Outcome
from tests.unit import example_driver
from tests.unit.example_driver import NAME, NO_AUDIT, WallClockBody, WallClockSettings

WORKLOAD = "wall-clock-minilm"
RUN_ID = "20261207-040000-abcd"


@pytest.fixture
def with_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver's three rows in the registry, and its workload as a plugin's entry point."""
    from accelbench.cli import app

    assert app is not None  # the real ``run`` command's options are made first, from the real declarations
    module = example_driver.__name__
    monkeypatch.setitem(registry.DRIVERS, NAME, f"{module}:measure")  # a line in each table, as in the doc
    monkeypatch.setitem(registry.SETTINGS, NAME, f"{module}:WallClockSettings")
    monkeypatch.setitem(registry.BODIES, NAME, f"{module}:WallClockBody")
    plugin = EntryPoint(WORKLOAD, f"{module}:WallClockMiniLM", "accelbench.workloads")
    real = registry.entry_points
    monkeypatch.setattr(
        registry, "entry_points", lambda group: [plugin] if group == plugin.group else real(group=group)
    )


def _config(**knobs: Any) -> RunConfig:
    base = {"suite": "tiny", "workloads": (WORKLOAD, "resnet50"), "stacks": ("torch-eager", "null")}
    return RunConfig.from_dict(
        {**base, "scenarios": ("single-stream",), "size": "tiny", "rules": "quick", **knobs}
    )


def test_its_knob_is_an_option_of_run_and_is_checked(
    with_wall_clock: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli_main = sys.modules["accelbench.cli.main"]
    seen: dict[str, RunConfig] = {}
    monkeypatch.setattr(
        cli_main,
        "_run_or_resume",
        lambda chosen, overrides, *rest: seen.update(config=with_overrides(chosen, overrides)),
    )
    app = typer.Typer(add_completion=False)
    app.command("run")(knob_options.with_knob_options(cli_main.run, after="timeout_s"))
    assert CliRunner().invoke(app, ["--wall-clock-calls", "5", "--no-probe"]).exit_code == 0
    assert seen["config"].knobs["wall_clock_calls"] == 5
    refused = CliRunner().invoke(app, ["--wall-clock-calls", "1", "--no-probe"])
    assert isinstance(refused.exception, UserError)
    assert str(refused.exception) == "wall-clock calls must be from 2 to 1000, got 1"


def test_the_planner_gives_its_workloads_cells_to_it_and_the_others_to_theirs(with_wall_clock: None) -> None:
    drivers = {
        (p.cell.workload, p.cell.stack): registry.driver_name(p.driver_ref) for p in runner.plan(_config())
    }
    assert drivers == {
        (WORKLOAD, "torch-eager"): NAME,
        (WORKLOAD, "null"): NAME,
        ("resnet50", "torch-eager"): "loadgen",
        ("resnet50", "null"): "loadgen",
    }


def test_a_cell_is_measured_stored_and_never_ranked(with_wall_clock: None, tmp_path: Path) -> None:
    """The cell process's path, in this process (a child would not see the fixture's rows): the spec and
    the outcome cross as JSON, as they do between the processes."""
    config = _config(wall_clock_calls=6)
    (planned,) = [
        p for p in runner.plan(config) if p.cell.key.startswith(WORKLOAD) and p.cell.stack == "torch-eager"
    ]
    spec = pipeline.cell_spec(RUN_ID, config, planned, tmp_path / "runs" / RUN_ID)
    crossed = CellSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert crossed.settings == WallClockSettings(calls=6)
    document = json.loads(json.dumps(process.outcome_of(crossed).to_dict()))
    outcome = Outcome.from_dict(NAME, document)
    assert isinstance(outcome.body, WallClockBody), document
    result = pipeline.result_of(RUN_ID, planned, outcome, "fp", pipeline.now(), 1.0, "")
    read = stored.from_dict(json.loads(json.dumps(stored.to_dict(result))))
    assert read == result and read.driver == NAME
    assert read.head.status == "unverified" and read.head.reason == NO_AUDIT
    assert read.latency is not None and read.latency.samples == 6
    assert 0 < read.latency.min_s <= read.latency.p50_s <= read.latency.p90_s
    assert read.head.effective_precision == "fp32" and "torch" in read.head.versions
    assert not ranking.is_rankable(read, include_unverified=False)
