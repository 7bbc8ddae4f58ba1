"""Plain progress lines for a log (a pipe, a file, CI): one line as each cell starts and one as it ends.

A terminal gets rich's progress bar instead (``accelbench.cli.progress``); these lines are what a reader
of ``make run | tee log`` sees as the run goes. Each line stands alone (no colour, no carriage return)::

    [2/19] start bert-base/standard/canonical/onnxruntime/cpu/single-stream
    [2/19] end bert-base/standard/canonical/onnxruntime/cpu/single-stream: ok, p90 8.12 ms, 41.3 s
"""

from __future__ import annotations

from accelbench.report.columns import headline_text
from accelbench.results import Result


def cell_started_line(key: str, number: int, total: int) -> str:
    """``[2/19] start <cell key>``."""
    return f"[{number}/{total}] start {key}"


def cell_ended_line(result: Result, number: int, total: int) -> str:
    """``[2/19] end <cell key>: <status>, <headline>, <seconds> s``; a node's id where a fleet ran it."""
    node = result.node_id
    where = f" (node {node[:8]})" if node else ""
    shown = headline_text(result)
    figure = f", {shown}" if shown != "-" else ""
    ended = f"{result.head.status}{figure}, {result.wall_s:.1f} s"
    return f"[{number}/{total}] end {result.cell.key}{where}: {ended}"


def phase_started_line(name: str) -> str:
    """``<name> ...``: a phase of the run outside the cells (the roofline probes)."""
    return f"{name} ..."


def phase_ended_line(name: str, seconds: float) -> str:
    """``<name>: done in 12.3 s``."""
    return f"{name}: done in {seconds:.1f} s"
