"""How ``accelbench run`` shows its progress: a rich bar on a terminal, plain lines in any log, or nothing.

On a terminal (stdout and stderr both) the bar is drawn on stderr. Otherwise (``make run | tee log``, CI,
a remote shell, a file) each cell gets a line as it starts and one as it ends, and each long phase
(the roofline probes) a line as it starts and ends (``accelbench.report.progress``). The lines go to
stdout when stdout is not a terminal, so they land in the same log as the tables, else to stderr; each
is flushed at once. ``--quiet`` (and ``--json``, whose stdout is one document) turns both off.
"""

from __future__ import annotations

import contextlib
import enum
import sys
import time
from collections.abc import Iterator
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from accelbench.cellspec import PlannedCell
from accelbench.report import progress as lines
from accelbench.results import Result


class Mode(enum.Enum):
    """What the run shows while it goes."""

    OFF = "off"
    BAR = "bar"
    LINES = "lines"


def chosen_mode(quiet: bool) -> Mode:
    """OFF when asked; BAR when stdout and stderr are both terminals; LINES otherwise."""
    if quiet:
        return Mode.OFF
    return Mode.BAR if sys.stdout.isatty() and sys.stderr.isatty() else Mode.LINES


def _stream() -> TextIO:
    """Where plain lines go: stdout when it is a log, else stderr (stdout is then the terminal)."""
    return sys.stdout if not sys.stdout.isatty() else sys.stderr


def say(mode: Mode, line: str) -> None:
    """Write one progress line now (nothing when OFF)."""
    if mode is Mode.OFF:
        return
    stream = _stream() if mode is Mode.LINES else sys.stderr
    stream.write(line + "\n")
    stream.flush()


@contextlib.contextmanager
def phase(mode: Mode, name: str) -> Iterator[None]:
    """A line as a long phase starts and one with its seconds as it ends."""
    say(mode, lines.phase_started_line(name))
    start = time.perf_counter()
    yield
    say(mode, lines.phase_ended_line(name, time.perf_counter() - start))


class CellProgress:
    """Receives each cell's start and result and shows them in the chosen mode."""

    def __init__(self, mode: Mode, progress: Progress | None, task: TaskID | None, total: int) -> None:
        self._mode, self._progress, self._task, self._total = mode, progress, task, total
        self._started = 0
        self._ended = 0

    def started(self, planned: PlannedCell) -> None:
        """A cell is about to run here."""
        self._started += 1
        if self._mode is Mode.LINES:
            say(self._mode, lines.cell_started_line(planned.cell.key, self._started, self._total))

    def ended(self, result: Result) -> None:
        """A cell's result has been stored."""
        self._ended += 1
        if self._mode is Mode.LINES:
            say(self._mode, lines.cell_ended_line(result, self._ended, self._total))
        elif self._progress is not None and self._task is not None:
            node = result.node_id
            where = f"node {node[:8]} " if node else ""
            description = f"{where}{result.cell.key}: {result.head.status}"
            self._progress.update(self._task, advance=1, description=description)


@contextlib.contextmanager
def cell_progress(mode: Mode, console: Console, run_id: str, total: int) -> Iterator[CellProgress]:
    """The receiver of a run's cell events while the run lasts (the bar drawn and closed around it)."""
    if mode is not Mode.BAR:
        yield CellProgress(mode, None, None, total)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(f"run {run_id}", total=total)
        yield CellProgress(mode, bar, task, total)
