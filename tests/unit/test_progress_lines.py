"""Progress in any log: the plain lines a piped run prints per cell and phase, and when it prints them."""

from __future__ import annotations

import io
import sys

import pytest
from rich.console import Console

from accelbench.cell.loadgen_body import LoadgenBody
from accelbench.cellspec import PlannedCell
from accelbench.cli import progress
from accelbench.head import Head
from accelbench.report.progress import cell_ended_line, cell_started_line, phase_ended_line
from accelbench.results import Cell, Result
from tests.unit.report_cases import result


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _streams(monkeypatch: pytest.MonkeyPatch, out_tty: bool, err_tty: bool) -> tuple[_Stream, _Stream]:
    out, err = _Stream(out_tty), _Stream(err_tty)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    return out, err


def test_an_ended_cell_line_has_key_status_headline_and_seconds() -> None:
    shown = Result(
        "r1",
        result("onnxruntime").cell,
        Head("ok"),
        LoadgenBody(figures=result("onnxruntime").figures),
        driver="loadgen",
        wall_s=41.26,
    )
    line = cell_ended_line(shown, 2, 19)
    assert (
        line == "[2/19] end resnet50/tiny/canonical/onnxruntime/cpu/single-stream: ok, p90 20.00 ms, 41.3 s"
    )
    crashed = Result("r1", Cell("bert-base", "tvm", "offline"), Head("crashed", "boom"), wall_s=3.0)
    assert cell_ended_line(crashed, 3, 19).endswith("offline: crashed, 3.0 s")  # no figure: none shown
    assert cell_started_line("k", 1, 2) == "[1/2] start k"
    assert phase_ended_line("probes", 9.96) == "probes: done in 10.0 s"


@pytest.mark.parametrize(
    ("out_tty", "err_tty", "quiet", "mode"),
    [
        (True, True, False, progress.Mode.BAR),
        (False, True, False, progress.Mode.LINES),  # make run | tee log
        (True, False, False, progress.Mode.LINES),  # 2> log
        (False, False, False, progress.Mode.LINES),  # CI
        (False, False, True, progress.Mode.OFF),
        (True, True, True, progress.Mode.OFF),
    ],
)
def test_the_mode_follows_the_terminals_and_quiet(
    monkeypatch: pytest.MonkeyPatch, out_tty: bool, err_tty: bool, quiet: bool, mode: progress.Mode
) -> None:
    _streams(monkeypatch, out_tty, err_tty)
    assert progress.chosen_mode(quiet) is mode


def test_lines_go_to_the_log_one_per_start_and_end(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = _streams(monkeypatch, out_tty=False, err_tty=True)
    cell = Cell("resnet50", "null", "offline", size="tiny")
    mode = progress.chosen_mode(quiet=False)
    console = Console(file=io.StringIO())
    with progress.phase(mode, "measuring"), progress.cell_progress(mode, console, "r1", 1) as shown:
        shown.started(PlannedCell(cell, "workload:ref", "stack:ref", "driver:ref"))
        shown.ended(Result("r1", cell, Head("unverified"), wall_s=1.5))
    lines = out.getvalue().splitlines()
    assert lines[0] == "measuring ..." and lines[1] == f"[1/1] start {cell.key}"
    assert lines[2] == f"[1/1] end {cell.key}: unverified, 1.5 s" and lines[3].startswith(
        "measuring: done in"
    )
    assert err.getvalue() == ""
    out, err = _streams(monkeypatch, out_tty=True, err_tty=False)  # the terminal is stdout: lines to stderr
    progress.say(progress.chosen_mode(quiet=False), "x")
    assert (out.getvalue(), err.getvalue()) == ("", "x\n")
    progress.say(progress.chosen_mode(quiet=True), "y")
    assert (out.getvalue(), err.getvalue()) == ("", "x\n")
