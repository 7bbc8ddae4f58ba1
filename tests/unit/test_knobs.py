"""A driver knob is declared once, on its driver's settings record (``accelbench.knobs``): the ``run``
option, the TOML key, the stored configuration and the cell's settings all follow from that one field.

The proof of the count (docs/adding-a-driver.md, "A new knob of a driver"): ``WarmupTraining`` is what a
developer writes to add ``--warmups`` to the training driver (the field, in its settings module); the
reader is the test's last line (``settings.warmups``). No other file changes, and the value goes from the
command line and from a TOML file into the cell's ``CellSpec.settings``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from accelbench import registry, settings
from accelbench.cell import pipeline
from accelbench.cellspec import CellSpec, PlannedCell
from accelbench.cli import knob_options
from accelbench.config import SUITES, RunConfig, load_toml, with_overrides
from accelbench.errors import UserError
from accelbench.knobs import knob
from accelbench.results import Cell
from accelbench.training.settings import TrainingSettings


def _cli_module() -> Any:
    """The module ``accelbench.cli.main`` (``accelbench.cli.app`` loads it and keeps the package's ``main``
    the console entry point, which the fuzz harness calls)."""
    from accelbench.cli import app

    assert app is not None
    return sys.modules["accelbench.cli.main"]


def _warmups_problem(value: Any) -> str | None:
    return None if 0 <= value <= 10 else f"warmups must be from 0 to 10, got {value}"


@dataclasses.dataclass(frozen=True, slots=True)
class WarmupTraining(TrainingSettings):
    """``TrainingSettings`` with the one field a developer adds for a new knob."""

    warmups: int = knob(
        2, flag="--warmups", help="train-to-quality: untimed runs first (2).", check=_warmups_problem
    )


@pytest.fixture
def with_warmups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The training driver's settings record is ``WarmupTraining`` (as if its module declared the knob)."""
    _cli_module()  # the real ``run`` command's options are made first, from the real declarations
    reference = f"{__name__}:WarmupTraining"
    monkeypatch.setattr(registry, "SETTINGS", {**registry.SETTINGS, "train-to-quality": reference})


def _cell_settings(config: RunConfig, tmp_path: Path) -> Any:
    """The settings the parent gives a training cell of ``config``, read back as the cell process does."""
    planned = PlannedCell(
        Cell("tiny-mlp", "torch-eager", "train-to-quality", "cpu", "tiny"),
        registry.table("workload")["resnet50"],
        registry.table("stack")["torch-eager"],
        registry.DRIVERS["train-to-quality"],
    )
    spec = pipeline.cell_spec("20261206-060000-abcd", config, planned, tmp_path)
    return CellSpec.from_dict(spec.to_dict()).settings


def _run_command(monkeypatch: pytest.MonkeyPatch) -> tuple[typer.Typer, dict[str, Any]]:
    """The ``run`` command with its options generated now, and what it would run (instead of running)."""
    seen: dict[str, Any] = {}
    cli_main = _cli_module()

    def planned(chosen: RunConfig, overrides: dict[str, Any], *rest: Any) -> None:
        seen["config"] = with_overrides(chosen, overrides)

    monkeypatch.setattr(cli_main, "_run_or_resume", planned)
    app = typer.Typer(add_completion=False)
    app.command("run")(knob_options.with_knob_options(cli_main.run, after="timeout_s"))
    return app, seen


def _options(app: typer.Typer) -> dict[str, str | None]:
    """The help of each option of ``app``'s one command, by flag (what ``--help`` lists)."""
    return {option: param.help for param in typer.main.get_command(app).params for option in param.opts}


def test_a_new_knob_goes_from_its_option_to_the_cells_settings(
    with_warmups: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    app, seen = _run_command(monkeypatch)
    assert _options(app)["--warmups"] == "train-to-quality: untimed runs first (2)."
    result = CliRunner().invoke(app, ["--warmups", "7", "--runs", "3", "--no-probe"])
    assert result.exit_code == 0, result.output
    config = seen["config"]
    assert config.knobs["warmups"] == 7 and config.knobs["runs"] == 3
    assert _cell_settings(config, tmp_path) == WarmupTraining(runs=3, nproc=1, warmups=7)
    assert _cell_settings(config, tmp_path).warmups == 7  # the reader: the knob's second place
    refused = CliRunner().invoke(app, ["--warmups", "11", "--no-probe"])
    assert isinstance(refused.exception, UserError)  # the CLI's boundary prints it: one line, exit 2
    assert str(refused.exception) == "warmups must be from 0 to 10, got 11"


def test_a_new_knob_not_given_takes_its_declared_default(
    with_warmups: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    app, seen = _run_command(monkeypatch)
    assert CliRunner().invoke(app, ["--no-probe"]).exit_code == 0
    assert _cell_settings(seen["config"], tmp_path) == WarmupTraining(runs=5, nproc=1, warmups=2)


def test_a_new_knob_is_read_from_a_toml_run_table_and_checked_there(
    with_warmups: None, tmp_path: Path
) -> None:
    path = tmp_path / "run.toml"
    path.write_text("[run]\nwarmups = 4\n")
    config = with_overrides(SUITES["default"], load_toml(path))
    assert _cell_settings(config, tmp_path) == WarmupTraining(warmups=4)
    path.write_text("[run]\nwarmups = 11\n")
    with pytest.raises(UserError, match=r"^config .*: warmups must be from 0 to 10, got 11$"):
        load_toml(path)
    path.write_text('[run]\nwarmups = "four"\n')
    with pytest.raises(UserError, match=r"warmups must be int, got 'four'"):
        load_toml(path)


def test_a_new_knob_is_stored_flat_and_an_older_configuration_reads_with_its_default(
    with_warmups: None,
) -> None:
    config = with_overrides(SUITES["default"], {"warmups": 3})
    stored = config.to_dict()
    assert stored["warmups"] == 3 and stored["runs"] == 5 and "knobs" not in stored
    assert RunConfig.from_dict(stored) == config
    older = {k: v for k, v in stored.items() if k != "warmups"}  # stored before the knob was declared
    assert RunConfig.from_dict(older).knobs["warmups"] == 2


def test_a_knob_declared_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = f"{__name__}:WarmupTraining"
    monkeypatch.setattr(
        registry, "SETTINGS", {**registry.SETTINGS, "tokens": reference, "train-to-quality": reference}
    )
    with pytest.raises(TypeError, match="declared twice"):
        settings.declared_knobs()


def test_every_declared_knob_is_an_option_of_run_with_its_help() -> None:
    cli_main = _cli_module()
    run = typer.main.get_command(cli_main.app).commands["run"]  # type: ignore[attr-defined]
    options = {option: param.help for param in run.params for option in param.opts}
    declared = settings.declared_knobs()
    assert {"runs", "nproc", "batch_sweep", "concurrency", "session_rates", "session_trace_sha256"} <= set(
        declared
    )
    for name, found in declared.items():
        assert (
            found.name == name == (found.knob.setting or found.knob.flag.removeprefix("--").replace("-", "_"))
        )
        if found.knob.flag:
            assert options[found.knob.flag] == found.knob.help, name
    assert declared["session_rates"].knob.flag == "--session-rate"  # stored under its older plural name
    assert not any(p.name == "session_trace_sha256" for p in run.params)  # no flag: the run reads the file


def test_a_knob_options_text_goes_through_its_parse() -> None:
    assert knob_options.parsed({"batch_sweep": "1, 2,8", "runs": 3, "batch": None}) == {
        "batch_sweep": (1, 2, 8),
        "runs": 3,
        "batch": None,
    }
    with pytest.raises(UserError, match=r"^--batch-sweep takes comma-separated whole numbers, got 'x'$"):
        knob_options.parsed({"batch_sweep": "x"})


def test_a_shared_knob_is_one_option_that_each_driver_resolves_to_its_own_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from accelbench.endpoint.settings import OUTPUT_TOKENS, EndpointSettings
    from accelbench.sessions.settings import SessionSettings

    app, seen = _run_command(monkeypatch)
    assert _options(app)["--output-tokens"] == OUTPUT_TOKENS.help  # one option for both drivers
    assert CliRunner().invoke(app, ["--output-tokens", "9", "--no-probe"]).exit_code == 0
    given = seen["config"]
    assert (given.knobs["output_tokens"], given.to_dict()["output_tokens"]) == (9, 9)  # stored once
    endpoint, sessions = EndpointSettings.from_config(given), SessionSettings.from_config(given)
    assert endpoint.max_tokens == sessions.max_tokens == 9
    assert CliRunner().invoke(app, ["--no-probe"]).exit_code == 0
    unset = seen["config"]
    assert unset.knobs["output_tokens"] == 0  # the run's 0 stands for each record's default
    endpoint, sessions = EndpointSettings.from_config(unset), SessionSettings.from_config(unset)
    assert (endpoint.max_tokens, sessions.max_tokens) == (128, 16)
    refused = CliRunner().invoke(app, ["--output-tokens", "-1", "--no-probe"])
    assert str(refused.exception) == "output_tokens must be >= 0"


@dataclasses.dataclass(frozen=True, slots=True)
class OwnOutputTokens(TrainingSettings):
    """A record that declares ``output_tokens`` again instead of taking the shared declaration."""

    tokens: int = knob(0, flag="--output-tokens", help="another declaration", unset=0)


def test_a_shared_knob_declared_again_rather_than_shared_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    reference = f"{__name__}:OwnOutputTokens"
    monkeypatch.setattr(registry, "SETTINGS", {**registry.SETTINGS, "train-to-quality": reference})
    with pytest.raises(TypeError, match="output_tokens is declared twice"):
        settings.declared_knobs()
