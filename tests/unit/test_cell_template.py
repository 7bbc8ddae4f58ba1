"""The cell template started while the run is planned (``runner.start_cells``): it is handed the run's
workloads, stacks and every driver by their registry references, and imports accelbench's own modules
only (a plugin's import-time code never runs in the process every cell is forked from)."""

from __future__ import annotations

import importlib
import os
import sys
from multiprocessing import forkserver
from pathlib import Path

import pytest

from accelbench import registry, runner
from accelbench.cell import isolation, template_imports
from accelbench.config import RunConfig
from accelbench.errors import UserError


def test_start_cells_names_the_runs_modules_and_every_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[str] = []
    monkeypatch.setattr(isolation, "start_template", lambda refs, exporter: handed.extend(refs))
    config = RunConfig(
        suite="t",
        workloads=("resnet50", "smollm2-135m"),
        stacks=("null", "torch-eager"),
        scenarios=("single-stream",),
        size="tiny",
        rules="quick",
    )
    runner.start_cells(config)
    named = [registry.table("workload")[n] for n in ("resnet50", "smollm2-135m")]
    named += [registry.table("stack")[n] for n in ("null", "torch-eager")]
    named += [registry.table("generating stack")["torch-eager"]]  # one name, two tables: both modules
    assert set(named) <= set(handed)
    assert set(registry.DRIVERS.values()) <= set(handed)


@pytest.mark.parametrize(
    ("stacks", "exporter"),
    [(("null", "torch-eager"), False), (("torch-eager", "onnxruntime"), True), (("tvm",), True)],
)
def test_the_template_imports_the_exporter_when_a_stack_reads_the_onnx_file(
    monkeypatch: pytest.MonkeyPatch, stacks: tuple[str, ...], exporter: bool
) -> None:
    asked: list[bool] = []
    monkeypatch.setattr(isolation, "start_template", lambda refs, exporter: asked.append(exporter))
    config = RunConfig("t", ("resnet50",), stacks, ("single-stream",), "tiny", "quick")
    runner.start_cells(config)
    assert asked == [exporter]


def _template_modules(monkeypatch: pytest.MonkeyPatch, refs: list[str], exporter: bool) -> list[str]:
    """What the template would import for ``refs`` (its start recorded, not made): the preload it is
    given and the module names it reads from its environment."""
    started: list[tuple[list[str], str]] = []
    monkeypatch.setattr(isolation, "_context", None)
    monkeypatch.setattr(forkserver._forkserver, "_preload_modules", forkserver._forkserver._preload_modules)
    monkeypatch.setattr(isolation.hardening, "make_undumpable", lambda: None)
    monkeypatch.setattr(isolation.cputime, "adopt_orphans", lambda: None)
    variable = template_imports.MODULES_VARIABLE
    monkeypatch.setattr(
        "multiprocessing.forkserver.ensure_running",
        lambda: started.append((forkserver._forkserver._preload_modules, os.environ[variable])),
    )
    isolation.start_template(refs, exporter=exporter)
    ((preload, names),) = started
    assert preload == [template_imports.__name__] and variable not in os.environ
    return names.split(",")


def test_the_exporter_is_preloaded_beside_the_modules_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    refs = ["accelbench.stacks.onnxruntime:OnnxRuntime", "vendor.fast:Stack"]
    names = _template_modules(monkeypatch, refs, exporter=True)
    assert {"onnx", "onnxscript", "torch", "mlperf_loadgen", "accelbench.stacks.onnxruntime"} <= set(names)
    assert "vendor.fast" not in names and len(names) == len(set(names))
    names = _template_modules(monkeypatch, ["accelbench.stacks.null:NullStack"], exporter=False)
    assert "accelbench.stacks.null" in names and not {"onnx", "onnxscript"} & set(names)


def test_the_template_survives_a_module_that_raises_on_import(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The template survives only an ImportError of what it preloads itself; what it imports through
    ``template_imports`` may raise anything (the cell that needs it fails on its own, with its status)."""
    (tmp_path / "exploding.py").write_text("raise RuntimeError('a broken build')\n")
    (tmp_path / "after_it.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(template_imports.MODULES_VARIABLE, "exploding,,no_such_module,after_it")
    importlib.reload(template_imports)
    assert "after_it" in sys.modules and "exploding" not in sys.modules
    assert template_imports.MODULES_VARIABLE not in os.environ  # no cell forked from it inherits it
    del sys.modules["after_it"]


def test_the_template_preloads_accelbench_modules_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "_extra", ())
    isolation.preload(["vendor_stack.fast:Stack", "accelbench.workloads.resnet50:ResNet50", "torch:x"])
    assert isolation._extra == ("accelbench.workloads.resnet50",)


def _run_cli(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str
) -> tuple[BaseException | None, list[str]]:
    """``accelbench run ARGS`` in this process (what it raised, None if nothing) and the order of the
    template's start, the wait for it, the roofline probes and the cells (recorded, none started)."""
    from typer.testing import CliRunner

    from accelbench.cli import app

    cli_main = sys.modules["accelbench.cli.main"]  # the package's ``main`` is the console entry point
    events: list[str] = []
    monkeypatch.setattr(isolation, "start_template", lambda refs, exporter: events.append("template"))
    monkeypatch.setattr(isolation, "ready", lambda: events.append("ready"))
    monkeypatch.setattr(cli_main, "_probe", lambda *a, **k: events.append("probe"))
    monkeypatch.setattr(cli_main, "_execute_with_progress", lambda *a, **k: events.append("cells") or [1])
    monkeypatch.setattr(cli_main.cli_summary, "print_results", lambda *a, **k: None)
    result = CliRunner().invoke(app, ["run", "--suite", "tiny", *args, "--store", str(tmp_path / "s")])
    return result.exception if result.exit_code else None, events


@pytest.mark.parametrize(
    "refused",
    [("--stacks", "nosuchstack"), ("--workloads", "nosuchnet"), ("--devices", "tpu")],
)
def test_a_refused_name_ends_the_run_before_the_template_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, refused: tuple[str, str]
) -> None:
    """A refused run used to wait for the template's imports (3-7 s) before its error line came out."""
    raised, events = _run_cli(monkeypatch, tmp_path, *refused)
    assert isinstance(raised, UserError) and refused[1] in str(raised) and events == []


def test_the_roofline_probes_wait_for_the_templates_imports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    chosen = ("--workloads", "resnet50", "--stacks", "null")
    assert _run_cli(monkeypatch, tmp_path, *chosen) == (None, ["template", "ready", "probe", "cells"])
    unprobed = _run_cli(monkeypatch, tmp_path, *chosen, "--no-probe")
    assert unprobed == (None, ["template", "cells"])  # the executor waits for it before the floor
